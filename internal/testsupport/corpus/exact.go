package corpus

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/report"
)

// BlockDiff is a block whose count from the path profile differs from
// callgrind's execution count of its first instruction.
type BlockDiff struct {
	Func, Addr      string
	Blpp, Callgrind uint64
	// Note, when set, says what else is wrong ("original code ran").
	Note string
}

// Exactness is the outcome of comparing a profile's block counts with
// callgrind's counts of the original binary [DESIGN, Invariants].
type Exactness struct {
	Funcs   int // instrumented functions whose blocks were compared
	Blocks  int // blocks compared
	Diffs   []BlockDiff
	Partial []string // functions with partial paths of unknown location: not compared
	Env     []string // functions whose counts depend on the memory map: not compared
	Ignored []string // functions the caller asked to leave out
	// Execs counts the profiles of processes that ended in an exec
	// (cct.FlagExec), left out of the merge: callgrind writes nothing
	// for a process that execs, so its counts have no oracle.
	Execs int
}

// Exact reports whether every compared block matched.
func (e Exactness) Exact() bool { return len(e.Diffs) == 0 }

// CheckExact loads the profiles one run of the instrumented binary inst
// wrote (forked children write their own; they are merged) and compares
// the block counts of every instrumented function with cg, callgrind's
// run of orig (the binary inst was rewritten from) on the same workload.
// This comparison is only meaningful for a program that does the same
// work natively and under valgrind; the same-run oracle (CheckSameRun)
// has no such condition. Functions reading /proc/self/maps
// (ReadsProcMaps) and those named in ignore are left out and listed, and
// so are the profiles of processes that ended in an exec (counted in
// Execs).
func CheckExact(orig, inst string, files []string, cg *callgrind.Profile, ignore map[string]bool) (Exactness, error) {
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		return Exactness{}, err
	}
	defer f.Close()
	execs := 0
	var ps []*cct.Profile
	for _, name := range files {
		p, err := cct.ReadFile(name)
		if err != nil {
			return Exactness{}, err
		}
		if p.Flags&cct.FlagExec != 0 {
			execs++
			continue
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return Exactness{}, fmt.Errorf("no profile")
	}
	p, err := cct.Merge(ps...)
	if err != nil {
		return Exactness{}, err
	}
	doc, err := report.MakePaths(inst, tab, p)
	if err != nil {
		return Exactness{}, err
	}
	env, err := ReadsProcMaps(orig)
	if err != nil {
		return Exactness{}, err
	}
	e, err := CompareBlocks(doc, cg, env, ignore)
	e.Execs = execs
	return e, err
}

// CompareBlocks compares the block counts of doc's instrumented functions
// with cg's execution counts. Functions whose entry is in env, or whose
// name is in ignore, are listed but not compared; so are those with
// partial paths whose stopping block is unknown (their prefix is not
// counted).
func CompareBlocks(doc *report.PathDoc, cg *callgrind.Profile, env map[string]bool, ignore map[string]bool) (Exactness, error) {
	var e Exactness
	for _, fn := range doc.Functions {
		switch {
		case !fn.Instrumented:
			continue
		case env[fn.Entry]:
			e.Env = append(e.Env, fn.Name)
			continue
		case ignore[fn.Name]:
			e.Ignored = append(e.Ignored, fn.Name)
			continue
		case fn.PartialUnknown > 0:
			e.Partial = append(e.Partial, fn.Name)
			continue
		}
		e.Funcs++
		for _, b := range fn.Blocks {
			addr, err := strconv.ParseUint(strings.TrimPrefix(b.Addr, "0x"), 16, 64)
			if err != nil {
				return e, fmt.Errorf("%s: block address %q: %w", fn.Name, b.Addr, err)
			}
			e.Blocks++
			if w := cg.Exec[addr]; w != b.Count {
				e.Diffs = append(e.Diffs, BlockDiff{Func: fn.Name, Addr: b.Addr, Blpp: b.Count, Callgrind: w})
			}
		}
	}
	return e, nil
}

// ReadsProcMaps finds the functions of a binary (by entry address, as
// report.PathFunc.Entry spells it) that refer to the string
// "/proc/self/maps" (gnulib's stack-overflow and memory-map readers):
// their counts depend on the process's memory map, which an instrumented
// binary and valgrind both change.
func ReadsProcMaps(path string) (map[string]bool, error) {
	b, err := cfg.Open(path)
	if err != nil {
		return nil, err
	}
	p := cfg.Analyze(b, cfg.Options{})
	out := map[string]bool{}
	for i, f := range p.Funcs {
		g := p.Graphs[i]
		for k := range g.Blocks {
			for in := range b.Insts(&g.Blocks[k]) {
				if in.RIPRel {
					if s := b.Bytes(in.RIPTarget, 15); s != nil && string(s) == "/proc/self/maps" {
						out[fmt.Sprintf("%#x", f.Addr)] = true
					}
				}
			}
		}
	}
	return out, nil
}
