package corpus

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter/addrmap"
)

// WriteDone are the runtime functions that return once an exit profile
// has been written: the exit hook (runtime.SymFini) and the leave hook,
// which writes the final profile again before an exit_group system call
// made by instrumented code (decision 71: static libc's exit path after
// the exit hook is counted). The same-run oracle runs callgrind with
// Options.SplitAfter set to them, and compares the profile with what ran
// up to the last of them.
var WriteDone = []string{"blpp_fini", "blpp_rt_leave"}

// LateFunc is an instrumented function whose relocated code ran after
// the profile was written: its executions there are in no profile.
type LateFunc struct {
	Func  string
	Insts uint64 // instructions executed after the write
}

// SameRun is the outcome of the same-run oracle: the block counts of a
// profile against callgrind's counts of the run that wrote it.
type SameRun struct {
	Funcs, Blocks int // instrumented functions and blocks compared
	// Diffs are blocks whose counts differ, and original instructions of
	// instrumented functions that ran (Note says so): relocated code must
	// never fall into them.
	Diffs []BlockDiff
	// Partial are functions with partial paths of unknown location
	// (their executed prefix is in no block count): their blocks are
	// compared as lower bounds, a block over callgrind's count is a Diff,
	// and Missing sums what they count less.
	Partial []string
	Missing uint64
	// Late are the instrumented functions that ran after the profile
	// was written (static libc's exit path: _IO_cleanup, free,
	// call_fini, ...), with what they executed then; the comparison uses
	// the counts from before the write.
	Late []LateFunc
	// Prefix counts the executions of original instructions before a
	// moved entry jump (decision 67): they run in place, in no block.
	Prefix uint64
	// Execs counts the profiles of processes that ended in an exec
	// (compared up to the exec, where the leave hook wrote them and
	// callgrind dumped).
	Execs int
	// ForkCharged counts the blocks of a fork function (callgrind's
	// IsForkFunc) that end at its system call, whose callgrind count
	// includes each child's: callgrind dumps before the function, and a
	// child inherits what the parent ran between that dump and the
	// system call. Such a block is not compared; callgrind's count of it
	// must equal that of the instruction after the system call, which
	// the parent and every child run (decision 133).
	ForkCharged int
}

// Exact reports whether every compared block matched and no original
// instruction ran.
func (s SameRun) Exact() bool { return len(s.Diffs) == 0 }

// CheckSameRun is the same-run exactness oracle (issue 23): cg is
// callgrind's run of the instrumented binary inst itself, made with
// Options.SplitAfter = WriteDone, and profiles are the files the
// processes of that very run wrote. Through the address map (.blpp.map)
// the execution count of each block's first original instruction is the
// sum of callgrind's counts of its copies, which is compared with the
// block count of the profile, for every block of every instrumented
// function. Behaviour that depends on addresses, time, the environment,
// CPUID or the thread schedule is the same on both sides, so nothing is
// left out for varying between runs.
func CheckSameRun(inst string, profiles []string, cg *callgrind.Profile) (SameRun, error) {
	var s SameRun
	var ps []*cct.Profile
	for _, name := range profiles {
		// A profile flagged exec is the snapshot the leave hook wrote
		// before an exec: callgrind dumped that process's counts right
		// there too (SplitAfter includes blpp_rt_leave), so it is
		// compared like the rest.
		p, err := cct.ReadFile(name)
		if err != nil {
			return s, err
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return s, fmt.Errorf("no profile")
	}
	return checkSameRun(inst, ps, cg)
}

// CheckSameRunProfile is CheckSameRun on a profile already read (one
// module's part of a whole-process profile: ModuleProfile).
func CheckSameRunProfile(inst string, p *cct.Profile, cg *callgrind.Profile) (SameRun, error) {
	return checkSameRun(inst, []*cct.Profile{p}, cg)
}

// checkSameRun is CheckSameRun on profiles already read.
func checkSameRun(inst string, ps []*cct.Profile, cg *callgrind.Profile) (SameRun, error) {
	var s SameRun
	for _, p := range ps {
		if p.Flags&cct.FlagExec != 0 {
			s.Execs++
		}
	}
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		return s, err
	}
	defer f.Close()
	am, err := addrmap.FromELF(f)
	if err != nil {
		return s, fmt.Errorf("%s: %w", inst, err)
	}
	p, err := cct.Merge(ps...)
	if err != nil {
		return s, err
	}
	doc, err := report.MakePaths(inst, tab, p)
	if err != nil {
		return s, err
	}
	blockEnd := map[uint64]uint64{} // each block's end, by its address
	for _, mf := range tab.Funcs {
		for _, b := range mf.Blocks {
			blockEnd[b.Addr] = b.End
		}
	}
	byEntry := map[string]*addrmap.Func{}
	for i := range am.Funcs {
		byEntry[fmt.Sprintf("%#x", am.Funcs[i].Entry)] = &am.Funcs[i]
	}
	// The other entries of procedures joined from several (decision
	// 85): each has an entry jump of its own.
	others := map[string]map[uint64]bool{}
	for _, mf := range tab.Funcs {
		for _, e := range mf.Edges {
			resume := e.Kind == meta.EdgeKind(cfg.EdgeResume) || e.Kind == meta.EdgeKind(cfg.EdgeReceiver)
			if (e.Kind == meta.EdgeKind(cfg.EdgeEntry) || resume) && e.To >= 0 && int(e.To) < len(mf.Blocks) {
				k := fmt.Sprintf("%#x", mf.Entry)
				if others[k] == nil {
					others[k] = map[uint64]bool{}
				}
				others[k][mf.Blocks[e.To].Addr] = true
				if resume {
					// A label's jump may follow its endbr64, which
					// then runs too (decision 169).
					others[k][mf.Blocks[e.To].Addr+4] = true
				}
			}
		}
	}
	// executions is how often the instruction at addr ran: callgrind
	// counts a rep-prefixed string instruction once per pass, and each
	// pass but the last jumps to itself [internal/testsupport/callgrind doc].
	executions := func(prof *callgrind.Profile, addr uint64) uint64 {
		if prof == nil {
			return 0
		}
		n := prof.Exec[addr]
		if j, ok := prof.Jumps[[2]uint64{addr, addr}]; ok && j.Count <= n {
			n -= j.Count
		}
		return n
	}
	instrumented := 0
	for _, fn := range doc.Functions {
		if !fn.Instrumented {
			continue
		}
		instrumented++
		af := byEntry[fn.Entry]
		if af == nil {
			return s, fmt.Errorf("%s: %s (%s) is not in the address map", inst, fn.Name, fn.Entry)
		}
		entry, _ := parseAddr(fn.Entry)
		// Original code of an instrumented function never runs, except
		// its entry jump and, where the entry jump was moved past
		// instructions that other code branches over (decision 67), the
		// prefix before it: the graph starts at the moved entry, its
		// first block.
		jump := entry
		if len(fn.Blocks) > 0 {
			if a, err := parseAddr(fn.Blocks[0].Addr); err == nil && a > entry {
				jump = a
			}
		}
		for _, in := range af.Insts {
			if others[fn.Entry][in.Addr] {
				continue // an entry jump
			}
			if in.Addr >= entry && in.Addr <= jump {
				if in.Addr < jump {
					s.Prefix += cg.Exec[in.Addr] + executions(cg.After, in.Addr)
				}
				continue
			}
			if n := cg.Exec[in.Addr] + executions(cg.After, in.Addr); n > 0 {
				s.Diffs = append(s.Diffs, BlockDiff{Func: fn.Name, Addr: fmt.Sprintf("%#x", in.Addr), Callgrind: n, Note: "original code ran"})
			}
		}
		var late uint64
		for _, in := range af.Insts {
			for _, c := range in.Copies {
				late += executions(cg.After, c)
			}
		}
		if late > 0 {
			s.Late = append(s.Late, LateFunc{Func: fn.Name, Insts: late})
		}
		partial := fn.PartialUnknown > 0
		if partial {
			s.Partial = append(s.Partial, fn.Name)
		} else {
			s.Funcs++
		}
		for _, b := range fn.Blocks {
			addr, err := parseAddr(b.Addr)
			if err != nil {
				return s, fmt.Errorf("%s: block address %q: %w", fn.Name, b.Addr, err)
			}
			in := af.Inst(addr)
			if in == nil {
				return s, fmt.Errorf("%s: block %s has no copy in the address map", fn.Name, b.Addr)
			}
			// A copy left out at a join runs as often as what
			// starts there (addrmap.Inst.Joins).
			var w uint64
			for _, c := range append(in.Copies[:len(in.Copies):len(in.Copies)], in.Joins...) {
				w += executions(cg, c)
			}
			if partial && w >= b.Count {
				s.Missing += w - b.Count
				continue
			}
			if !partial {
				s.Blocks++
			}
			if end := blockEnd[addr]; w > b.Count && end != 0 && callgrind.IsForkFunc(cfg.BaseName(fn.Name)) && endsInSyscall(f, end) {
				if next := af.Inst(end); next != nil && len(next.Copies) > 0 && executions(cg, next.Copies[0]) == w {
					s.ForkCharged++
					continue
				}
			}
			if w != b.Count {
				s.Diffs = append(s.Diffs, BlockDiff{Func: fn.Name, Addr: b.Addr, Blpp: b.Count, Callgrind: w})
			}
		}
	}
	if instrumented != len(am.Funcs) {
		return s, fmt.Errorf("%s: the address map has %d functions, the profile's metadata %d instrumented ones", inst, len(am.Funcs), instrumented)
	}
	sort.Slice(s.Late, func(i, j int) bool { return s.Late[i].Insts > s.Late[j].Insts })
	return s, nil
}

func parseAddr(s string) (uint64, error) {
	return strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
}

// RunSameRun runs the instrumented binary inst under callgrind (opts: its
// arguments, input, environment, directory; SplitAfter is set here) with
// its profiles written to profDir, and checks the profiles against that
// run with CheckSameRun. It returns callgrind's profile too, for the
// program's exit status and output.
func RunSameRun(inst, profDir string, opts callgrind.Options) (SameRun, *callgrind.Profile, error) {
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		return SameRun{}, nil, err
	}
	prof := filepath.Join(profDir, "blpp.out")
	opts.Env = append(opts.Env[:len(opts.Env):len(opts.Env)], "BLPP_PROFILE="+prof)
	opts.SplitAfter = WriteDone
	cg, err := callgrind.Run(inst, opts)
	if err != nil {
		return SameRun{}, nil, err
	}
	if !cg.Folded {
		return SameRun{}, cg, fmt.Errorf("callgrind: the relocated code of %s could not be placed (no load bias)", inst)
	}
	files, _ := filepath.Glob(prof + "*")
	var keep []string
	for _, f := range files {
		if !strings.Contains(filepath.Base(f), ".tmp.") {
			keep = append(keep, f)
		}
	}
	s, err := CheckSameRun(inst, keep, cg)
	return s, cg, err
}

// endsInSyscall reports whether the original code of f has a syscall
// instruction (0f 05) just before address a.
func endsInSyscall(f *elf.File, a uint64) bool {
	if a < 2 {
		return false
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || a-2 < p.Vaddr || a > p.Vaddr+p.Filesz {
			continue
		}
		var b [2]byte
		if _, err := p.ReadAt(b[:], int64(a-2-p.Vaddr)); err == nil {
			return b == [2]byte{0x0f, 0x05}
		}
	}
	return false
}
