package callgrind

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// This file holds a small callgrind writer that follows callgrind's own
// dump.c rules, so that random profiles can be written in every
// compression mode and read back:
//
//   - a subposition is relative (+d, -d, *) only when compression is on,
//     the previous value is non-zero and |d| < 100, else absolute;
//   - "previous" means the previous self-cost line; the target of calls=,
//     jump= and jcnd= and the position line after them do not update it;
//   - the reference is reset to zero whenever the function changes;
//   - cob= is written only when the callee's object differs from the
//     caller's.

var rtObjects = []string{mainObj, UnknownObject, "/lib/libc.so.6"}

type rtKind uint8

const (
	rtCost rtKind = iota
	rtCall
	rtJump
)

type rtEvent struct {
	kind       rtKind
	addr, line uint64 // cost position, call site or jump source
	ir         uint64 // self cost, or inclusive cost of a call
	cob        int    // call: callee object index
	count      uint64 // calls, or jumps followed
	executed   uint64 // jcnd: executions
	cond       bool
	taddr      uint64
	tline      uint64
}

type rtFunc struct {
	ob     int
	name   string
	events []rtEvent
}

type rtPart []rtFunc

// genParts builds one or two random parts. Addresses cluster so that both
// relative and absolute forms occur.
func genParts(r *rand.Rand) []rtPart {
	addr := func() uint64 {
		base := []uint64{0x1000, 0x1080, 0x5000, 0x109000}[r.IntN(4)]
		return base + uint64(r.IntN(300))
	}
	line := func() uint64 { return uint64(r.IntN(150)) }
	parts := make([]rtPart, 1+r.IntN(2))
	for pi := range parts {
		fns := make(rtPart, 1+r.IntN(6))
		for i := range fns {
			fn := rtFunc{ob: r.IntN(len(rtObjects)), name: fmt.Sprintf("fn%d", r.IntN(5))}
			for range 1 + r.IntN(15) {
				e := rtEvent{addr: addr(), line: line()}
				switch r.IntN(5) {
				case 0, 1, 2:
					e.kind = rtCost
					e.ir = uint64(r.IntN(4)) // 0 happens: callgrind never writes it, others may
				case 3:
					e.kind = rtCall
					e.cob = r.IntN(len(rtObjects))
					e.count = uint64(r.IntN(3))
					e.ir = uint64(r.IntN(1000))
					e.taddr, e.tline = addr(), line()
				case 4:
					e.kind = rtJump
					e.cond = r.IntN(2) == 0
					e.count = uint64(r.IntN(3))
					if e.cond {
						e.executed = e.count + uint64(r.IntN(3))
					}
					e.taddr, e.tline = addr(), line()
				}
				fn.events = append(fn.events, e)
			}
			fns[i] = fn
		}
		parts[pi] = fns
	}
	return parts
}

type rtWriter struct {
	b                     strings.Builder
	compressPos, compress bool
	defined               map[string]int // "space\x00name" -> id
	lastAddr, lastLine    uint64
}

func (w *rtWriter) name(space, key, name string) {
	if !w.compress {
		fmt.Fprintf(&w.b, "%s=%s\n", key, name)
		return
	}
	k := space + "\x00" + name
	if id, ok := w.defined[k]; ok {
		fmt.Fprintf(&w.b, "%s=(%d)\n", key, id)
		return
	}
	id := len(w.defined) + 1
	w.defined[k] = id
	fmt.Fprintf(&w.b, "%s=(%d) %s\n", key, id, name)
}

func (w *rtWriter) sub(v, last uint64) string {
	d := int64(v - last)
	if w.compressPos && last > 0 && d > -100 && d < 100 {
		switch {
		case d > 0:
			return fmt.Sprintf("+%d", d)
		case d == 0:
			return "*"
		default:
			return fmt.Sprintf("%d", d)
		}
	}
	if v == 0 || v%2 == 0 {
		return fmt.Sprintf("%#x", v)
	}
	return fmt.Sprintf("%d", v)
}

func (w *rtWriter) pos(addr, line uint64) string {
	return w.sub(addr, w.lastAddr) + " " + w.sub(line, w.lastLine)
}

func writeParts(parts []rtPart, compressPos, compress bool) string {
	w := &rtWriter{compressPos: compressPos, compress: compress, defined: map[string]int{}}
	w.b.WriteString("# callgrind format\nversion: 1\ncreator: test\npid: 9\ncmd: prog\n")
	for pi, part := range parts {
		fmt.Fprintf(&w.b, "part: %d\n\npositions: instr line\nevents: Ir\n\n", pi+1)
		var total uint64
		curOb := -1
		w.lastAddr, w.lastLine = 0, 0
		for _, fn := range part {
			if fn.ob != curOb {
				w.name("ob", "ob", rtObjects[fn.ob])
				curOb = fn.ob
			}
			w.name("fl", "fl", "file.c")
			w.name("fn", "fn", fn.name)
			w.lastAddr, w.lastLine = 0, 0
			for _, e := range fn.events {
				switch e.kind {
				case rtCost:
					fmt.Fprintf(&w.b, "%s %d\n", w.pos(e.addr, e.line), e.ir)
					w.lastAddr, w.lastLine = e.addr, e.line
					total += e.ir
				case rtCall:
					if e.cob != fn.ob {
						w.name("ob", "cob", rtObjects[e.cob])
					}
					w.name("fn", "cfn", fmt.Sprintf("t%x", e.taddr))
					fmt.Fprintf(&w.b, "calls=%d %s\n", e.count, w.pos(e.taddr, e.tline))
					fmt.Fprintf(&w.b, "%s %d\n", w.pos(e.addr, e.line), e.ir)
				case rtJump:
					if e.cond {
						fmt.Fprintf(&w.b, "jcnd=%d/%d %s\n", e.count, e.executed, w.pos(e.taddr, e.tline))
					} else {
						fmt.Fprintf(&w.b, "jump=%d %s\n", e.count, w.pos(e.taddr, e.tline))
					}
					fmt.Fprintf(&w.b, "%s\n", w.pos(e.addr, e.line))
				}
			}
			w.b.WriteString("\n")
		}
		fmt.Fprintf(&w.b, "totals: %d\n", total)
	}
	return w.b.String()
}

// expectParts computes what Parse must return for parts, straight from the
// model.
func expectParts(parts []rtPart) *Profile {
	p := newProfile(mainObj)
	p.PIDs = []int{9}
	loc := func(ob int, a uint64) Loc { return Loc{rtObjects[ob], a} }
	for _, part := range parts {
		body := false
		for _, fn := range part {
			body = true
			for _, e := range fn.events {
				switch e.kind {
				case rtCost:
					if e.ir == 0 {
						continue
					}
					switch fn.ob {
					case 0:
						p.Exec[e.addr] += e.ir
					case 1:
						p.UnknownExec[e.addr] += e.ir
					}
				case rtCall:
					if e.count == 0 || fn.ob == 2 && e.cob == 2 {
						continue
					}
					if fn.ob == 0 && e.cob == 0 {
						p.Calls[[2]uint64{e.addr, e.taddr}] += e.count
					} else {
						p.External[Arc{loc(fn.ob, e.addr), loc(e.cob, e.taddr)}] += e.count
					}
					if _, ok := p.Names[loc(e.cob, e.taddr)]; !ok {
						p.Names[loc(e.cob, e.taddr)] = fmt.Sprintf("t%x", e.taddr)
					}
				case rtJump:
					if e.count == 0 && e.executed == 0 || fn.ob == 2 {
						continue
					}
					m := p.Jumps
					if fn.ob == 1 {
						m = p.UnknownJumps
					}
					j := m[[2]uint64{e.addr, e.taddr}]
					j.Count += e.count
					j.Executed += e.executed
					j.Conditional = j.Conditional || e.cond
					m[[2]uint64{e.addr, e.taddr}] = j
				}
			}
		}
		if body {
			p.Parts++
		}
	}
	return p
}

// TestRoundTrip writes random profiles in all four compression modes and
// checks that Parse returns exactly the modelled counts.
func TestRoundTrip(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 0x6367))
		parts := genParts(r)
		want := expectParts(parts)
		for _, mode := range []struct{ pos, str bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
			text := writeParts(parts, mode.pos, mode.str)
			got, err := Parse(strings.NewReader(text), mainObj)
			if err != nil {
				if strings.Contains(err.Error(), "does not name object") && !mentionsMain(parts) {
					continue
				}
				t.Fatalf("seed %d, compress-pos=%v compress-strings=%v: %v\n%s", seed, mode.pos, mode.str, err, text)
			}
			compareProfiles(t, got, want)
			if t.Failed() {
				t.Fatalf("seed %d, compress-pos=%v compress-strings=%v:\n%s", seed, mode.pos, mode.str, text)
			}
		}
	}
}

func mentionsMain(parts []rtPart) bool {
	for _, part := range parts {
		for _, fn := range part {
			if fn.ob == 0 {
				return true
			}
			for _, e := range fn.events {
				if e.kind == rtCall && e.cob == 0 && e.cob != fn.ob {
					return true
				}
			}
		}
	}
	return false
}
