package corpus

import (
	"fmt"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
)

// ModuleProfile is p's part of module tag as a profile of that module
// alone, for the same-run oracle of a whole-process run (decision 81): its
// records (function ids made local, each a root: block counts do not
// depend on the tree), its partials and fork prefixes, and one MODULES
// entry, tag 0, with the module's build-id. nil when p has no such module.
func ModuleProfile(p *cct.Profile, tag uint32) *cct.Profile {
	var mod *cct.Module
	for i := range p.Modules {
		if p.Modules[i].Tag == tag {
			mod = &p.Modules[i]
		}
	}
	if mod == nil && !(tag == 0 && p.Modules == nil) {
		return nil
	}
	q := &cct.Profile{Version: p.Version, Flags: p.Flags, PID: p.PID, TimeNS: p.TimeNS, Metrics: p.Metrics, LatencyMetric: p.LatencyMetric, Stats: p.Stats}
	if mod != nil {
		q.BuildID = mod.BuildID
		q.Modules = []cct.Module{{Tag: 0, Flags: cct.ModuleFlagExecutable, Bias: mod.Bias, Path: mod.Path, BuildID: mod.BuildID}}
	} else {
		q.BuildID = p.BuildID
	}
	mine := func(fid uint32) bool { return cct.FidTag(fid) == tag }
	for _, th := range p.Threads {
		nt := cct.Thread{TID: th.TID}
		index := make([]int, len(th.Records))
		root := map[uint32]int{} // function → its one record here
		for i, r := range th.Records {
			index[i] = -1
			if !mine(r.Func) {
				continue
			}
			f := cct.FidLocal(r.Func)
			k, ok := root[f]
			if !ok {
				k = len(nt.Records)
				root[f] = k
				nt.Records = append(nt.Records, cct.Record{Func: f, Parent: -1})
			}
			index[i] = k
			nt.Records[k].Calls += r.Calls
			nt.Records[k].Paths = addPaths(nt.Records[k].Paths, r.Paths)
		}
		keep := func(ps []cct.Partial) []cct.Partial {
			var out []cct.Partial
			for _, x := range ps {
				if !mine(x.Func) {
					continue
				}
				x.Func = cct.FidLocal(x.Func)
				if x.Record >= 0 {
					x.Record = index[x.Record]
				}
				out = append(out, x)
			}
			return out
		}
		nt.Partials, nt.Prefixes = keep(th.Partials), keep(th.Prefixes)
		q.Threads = append(q.Threads, nt)
	}
	return q
}

// ModuleRun is the same-run oracle's outcome for one module of a
// whole-process run.
type ModuleRun struct {
	Module cct.Module
	File   string // the instrumented copy that ran
	SameRun
}

// CheckSameRunModules runs the same-run oracle (CheckSameRun) on every
// module of the whole-process profile p: files maps each module's tag to
// its instrumented copy, and cgDir holds callgrind's output of the very
// run that wrote p (Options.OutDir kept, SplitAfter = WriteDone).
func CheckSameRunModules(p *cct.Profile, files map[uint32]string, cgDir string) ([]ModuleRun, error) {
	var out []ModuleRun
	for _, m := range p.Modules {
		file, ok := files[m.Tag]
		if !ok {
			return nil, fmt.Errorf("module %s (tag %d): no file", m.Name(), m.Tag)
		}
		cg, err := callgrind.CollectObject(cgDir, file, WriteDone)
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", m.Name(), err)
		}
		if cg == nil {
			return nil, fmt.Errorf("module %s: callgrind's run never names %s", m.Name(), file)
		}
		s, err := checkSameRun(file, []*cct.Profile{ModuleProfile(p, m.Tag)}, cg)
		if err != nil {
			return nil, fmt.Errorf("module %s: %w", m.Name(), err)
		}
		out = append(out, ModuleRun{Module: m, File: file, SameRun: s})
	}
	return out, nil
}

// addPaths adds path counts b into a (both sorted by ID).
func addPaths(a, b []cct.Path) []cct.Path {
	if len(a) == 0 {
		return append([]cct.Path(nil), b...)
	}
	out := make([]cct.Path, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].ID < b[j].ID:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].ID < a[i].ID:
			out = append(out, b[j])
			j++
		default:
			x := a[i]
			x.Metrics = append([]uint64(nil), x.Metrics...)
			x.Count += b[j].Count
			for m := range x.Metrics {
				if m < len(b[j].Metrics) {
					x.Metrics[m] += b[j].Metrics[m]
				}
			}
			x.Latency = cct.MergeLatency(x.Latency, b[j].Latency)
			out = append(out, x)
			i++
			j++
		}
	}
	return out
}
