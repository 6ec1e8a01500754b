package report

// Activations in flight in a live profile (decision 94). A process that
// dies in continuous mode leaves its live file, which holds every path
// that ended; the activations that were running then had begun (their
// calls are counted) and not ended (their paths are not). Per record,
// they are its calls less the paths that ended it (at a real exit, not a
// backedge) and the activations recorded as partials, plus, in a fork
// child, the fork prefixes (activations its parent began). A thread with
// any was running instrumented code when the process died.

import (
	"fmt"
	"strings"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// InFlight is one function's activations in flight in one thread of a
// profile, at the last update of a live file.
type InFlight struct {
	Thread int    // index in Profile.Threads
	TID    uint64 // its thread id
	Func   uint32 // global function id (tag << cct.FidBits | local)
	Name   string
	Count  uint64
}

// IsLive says whether p was read from a live file (cct.ParseLive).
func IsLive(p *cct.Profile) bool { return p.Stats["live"] != 0 }

// InFlightOf computes the activations in flight of live profile p, the
// threads in file order and the functions of each by id; table gives
// each module's metadata by tag (nil for a module without it, whose
// functions are left out). Records of functions left uninstrumented
// (whose ends are never seen) count none.
func InFlightOf(p *cct.Profile, table func(tag uint32) *meta.Table) ([]InFlight, error) {
	var out []InFlight
	for ti := range p.Threads {
		t := &p.Threads[ti]
		ended := make([]uint64, len(t.Records))
		begun := make([]uint64, len(t.Records))
		for ri := range t.Records {
			r := &t.Records[ri]
			begun[ri] = r.Calls
			tab := table(cct.FidTag(r.Func))
			local := cct.FidLocal(r.Func)
			if tab == nil || int(local) >= len(tab.Funcs) || !tab.Funcs[local].Instrumented {
				ended[ri] = r.Calls
				continue
			}
			for _, pa := range r.Paths {
				e, err := tab.ExpandPath(local, pa.ID)
				if err != nil {
					return nil, fmt.Errorf("thread %d: %w", t.TID, err)
				}
				if e.Ends {
					ended[ri] += pa.Count
				}
			}
		}
		for _, q := range t.Partials {
			if q.Record >= 0 {
				ended[q.Record] += q.Count
			}
		}
		for _, q := range t.Prefixes {
			if q.Record >= 0 {
				begun[q.Record] += q.Count
			}
		}
		// Parents come before children, so the functions come in the
		// order the thread called them (callers first).
		byFunc := map[uint32]uint64{}
		var fns []uint32
		for ri := range t.Records {
			if begun[ri] > ended[ri] {
				f := t.Records[ri].Func
				if _, seen := byFunc[f]; !seen {
					fns = append(fns, f)
				}
				byFunc[f] += begun[ri] - ended[ri]
			}
		}
		for _, f := range fns {
			name := fmt.Sprintf("function %#x", f)
			if tab := table(cct.FidTag(f)); tab != nil && int(cct.FidLocal(f)) < len(tab.Funcs) {
				name = tab.Funcs[cct.FidLocal(f)].Name
			}
			out = append(out, InFlight{Thread: ti, TID: t.TID, Func: f, Name: name, Count: byFunc[f]})
		}
	}
	return out, nil
}

// InFlight is InFlightOf over the model's modules.
func (m *Model) InFlight(p *cct.Profile) ([]InFlight, error) {
	return InFlightOf(p, func(tag uint32) *meta.Table {
		for i := range m.Modules {
			if m.Modules[i].Tag == tag {
				return m.Modules[i].Table
			}
		}
		return nil
	})
}

// LiveNote says, for a profile read from a live file, that the process
// ended without writing its profile and which threads were running what
// then (their activations in flight, whose paths the counts lack); nil
// for any other profile.
func LiveNote(m *Model, p *cct.Profile) ([]string, error) {
	if !IsLive(p) {
		return nil, nil
	}
	fl, err := m.InFlight(p)
	if err != nil {
		return nil, err
	}
	lines := []string{fmt.Sprintf("a live profile (continuous mode): the process (pid %d) ended without writing its profile; every path that ended is counted", p.PID)}
	if len(fl) == 0 {
		return append(lines, "no activation was in flight"), nil
	}
	var b strings.Builder
	for i, f := range fl {
		if i == 0 || fl[i-1].Thread != f.Thread {
			if b.Len() > 0 {
				lines = append(lines, b.String())
				b.Reset()
			}
			fmt.Fprintf(&b, "thread %d was live, with activations in flight (paths not counted): ", f.TID)
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s", f.Name)
		if f.Count > 1 {
			fmt.Fprintf(&b, " (%d)", f.Count)
		}
	}
	return append(lines, b.String()), nil
}
