package rewriter_test

// Helpers of the tests of processes made by code the program does not
// instrument (spawn_test.go): running a configuration the way blpp rewrite
// or blpp run does, the same-run oracle per process, and the native
// comparison of a parent's profile with the one it writes when its
// children are made forks (decision 101).

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/testsupport/asfork"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/wholerun"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"
)

// spawnSetup is one way of running an instrumented program: prog with
// pre before the program's own arguments (the instrumented executable
// itself, or the loader's command line of a whole-process run).
type spawnSetup struct {
	orig string // the original executable
	inst string // the instrumented executable
	prog string
	pre  []string
	// libc: the C library is instrumented too (a static binary, or
	// every library of a whole-process run): every function of it is
	// compared, in the same run under callgrind and natively.
	libc bool
	// launcher: prog is the loader (callgrind.Options.Launcher).
	launcher bool
}

// args are the command-line arguments that run the program with its own
// arguments args.
func (s spawnSetup) args(args []string) []string {
	return append(append([]string(nil), s.pre...), args...)
}

// wholeSetup prepares a whole-process run of orig as blpp run makes it
// (decision 82): orig's copy and every start library instrumented with
// opts in a cache under dir, the loader with the auditor. argv[0] is the
// executable's copy, so a process the program starts from it (posix_spawn
// of argv[0]) runs the copy alone, through the system's loader.
func wholeSetup(t *testing.T, orig, dir string, opts rewriter.Options) spawnSetup {
	t.Helper()
	loader, err := wholerun.Interpreter(orig)
	if err != nil || loader == "" {
		t.Fatalf("%s: no interpreter (%v)", orig, err)
	}
	mode := "context"
	if opts.NoContext {
		mode = "flow"
	}
	c := &wholerun.Cache{Root: filepath.Join(dir, "cache")}
	exe := opts
	exe.NoSlots = true // as blpp run's copy of the executable (decision 81)
	inst, err := c.Module(orig, exe, mode)
	if err != nil {
		t.Fatal(err)
	}
	wp, err := c.Prepare(wholerun.Setup{Loader: loader, Prog: orig, Opts: opts, Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wp.Close() })
	if len(wp.Skipped) > 0 {
		t.Fatalf("libraries not instrumented: %v", wp.Skipped)
	}
	cmd := wp.Command(inst, inst, nil)
	return spawnSetup{orig: orig, inst: inst, prog: cmd.Path, pre: cmd.Args[1:], libc: true, launcher: true}
}

// profilesIn waits until dir holds n profiles (a daemon's child may still
// be writing its own when its parent has ended) and returns their names;
// temporary files of a write in progress are not profiles.
func profilesIn(t *testing.T, what, dir string, n int) []string {
	t.Helper()
	var names []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		names = names[:0]
		for _, name := range dirNames(t, dir) {
			if !strings.Contains(name, ".tmp.") {
				names = append(names, name)
			}
		}
		if len(names) == n || time.Now().After(deadline) {
			break
		}
	}
	if len(names) != n {
		t.Fatalf("%s: profiles %q, want %d (one per process that runs the program)", what, names, n)
	}
	return names
}

// pidOf is the pid a profile file prof.PID is named by.
func pidOf(t *testing.T, name string) int {
	t.Helper()
	pid, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "prof."), "%c"))
	if err != nil {
		t.Fatalf("profile file %s: not named by a pid", name)
	}
	return pid
}

// sameRunEach runs the program with args under callgrind and checks each
// process's profile against callgrind's counts of that process (the
// same-run oracle, decision 69), every instrumented function of every
// module: the C library's too. Valgrind makes a vfork or a clone with
// CLONE_VM a fork, so this checks the profiles of forks; nProfiles is how
// many processes write one.
func sameRunEach(t *testing.T, what string, s spawnSetup, args []string, want procResult, nProfiles int) {
	t.Helper()
	dir := t.TempDir()
	cgDir, profDir := filepath.Join(dir, "cg"), filepath.Join(dir, "prof")
	if err := os.Mkdir(profDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cg, err := callgrind.Run(s.prog, callgrind.Options{Args: s.args(args), Env: []string{"BLPP_PROFILE=" + filepath.Join(profDir, "prof.%p")},
		OutDir: cgDir, SplitAfter: corpus.WriteDone, DumpBefore: []string{runtime.SymDark}, Timeout: 3 * time.Minute, Launcher: s.launcher})
	if err != nil {
		t.Fatalf("%s: callgrind: %v", what, err)
	}
	if cg.ExitCode != want.code || string(cg.Stdout) != string(want.stdout) {
		t.Fatalf("%s: under callgrind: exit %d, stdout %q; natively %s", what, cg.ExitCode, cg.Stdout, want)
	}
	for _, name := range profilesIn(t, what+" under callgrind", profDir, nProfiles) {
		pid := pidOf(t, name)
		p, err := cct.ReadFile(filepath.Join(profDir, name))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		pidDir := cgOfPID(t, cgDir, pid)
		type part struct {
			file string
			prof *cct.Profile
		}
		parts := []part{{s.inst, p}}
		if len(p.Modules) > 1 {
			parts = parts[:0]
			for _, m := range p.Modules {
				file := m.Path
				if m.Tag == 0 {
					file = s.inst
				}
				parts = append(parts, part{file, corpus.ModuleProfile(p, m.Tag)})
			}
		}
		var runs []corpus.ModuleRun
		for _, pt := range parts {
			c := collectOf(t, what, cgDir, pidDir, pt.file)
			sr, err := corpus.CheckSameRunProfile(pt.file, pt.prof, c)
			if err != nil {
				t.Fatalf("%s: pid %d: %s: %v", what, pid, pt.file, err)
			}
			runs = append(runs, corpus.ModuleRun{File: pt.file, SameRun: sr})
		}
		role := "parent"
		if p.Stats["fork_child"] != 0 {
			role = "child"
		}
		what := fmt.Sprintf("%s: %s pid %d", what, role, pid)
		compared := 0
		for _, r := range runs {
			compared += r.Blocks
			if role == "child" {
				orig := wholerun.Origin(r.File)
				if r.File == s.inst {
					orig = s.orig
				}
				r.Diffs = forkBlockDrop(t, orig, r.Diffs)
			}
			for i, d := range r.Diffs {
				if i == 10 {
					t.Errorf("%s: %s: ... %d differences in all", what, filepath.Base(r.File), len(r.Diffs))
					break
				}
				t.Errorf("%s (same run): %s %s block %s: blpp %d, callgrind %d %s", what, filepath.Base(r.File), d.Func, d.Addr, d.Blpp, d.Callgrind, d.Note)
			}
		}
		if compared == 0 {
			t.Errorf("%s: no block compared", what)
		}
	}
}

// forkBlockDrop takes out of a fork child's differences (in the module
// whose original is file) the one block
// callgrind counts once more than blpp where it holds the system call
// that made the child: callgrind adds up a block when control leaves it,
// which both processes do, and dumps before the C library's fork and
// _Fork (callgrind.ValgrindArgs), not at the system call, so the child's
// counters start with the parent's block. blpp's child records where
// each activation stood at the system call (decision 101) and counts
// only what runs after it.
func forkBlockDrop(t *testing.T, file string, diffs []corpus.BlockDiff) []corpus.BlockDiff {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := diffs[:0]
	dropped := false
	for _, d := range diffs {
		addr, err := strconv.ParseUint(strings.TrimPrefix(d.Addr, "0x"), 16, 64)
		if err == nil && !dropped && d.Note == "" && d.Callgrind == d.Blpp+1 && runsIntoFork(f, addr) {
			dropped = true
			continue
		}
		out = append(out, d)
	}
	return out
}

// runsIntoFork reports whether the code at addr runs straight into a
// system call that makes a process (clone, fork, clone3: mov $nr,%eax;
// syscall), within a few instructions and no branch.
func runsIntoFork(f *elf.File, addr uint64) bool {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || addr < s.Addr || addr >= s.Addr+s.Size {
			continue
		}
		code := make([]byte, 64)
		n, _ := s.ReadAt(code, int64(addr-s.Addr))
		code = code[:n]
		for _, nr := range []uint32{56, 57, 435} {
			pat := []byte{0xb8, byte(nr), byte(nr >> 8), 0, 0, 0x0f, 0x05}
			if i := bytes.Index(code, pat); i >= 0 {
				return straight(code[:i], addr)
			}
		}
	}
	return false
}

// straight reports whether code decodes to instructions none of which
// branches.
func straight(code []byte, addr uint64) bool {
	for a := 0; a < len(code); {
		in, err := x86.Decode(code[a:], addr+uint64(a))
		if err != nil || in.Kind != x86.Other {
			return false
		}
		a += in.Len
	}
	return true
}

// collectOf is callgrind's count of the object file in the files of one
// process (pidDir), its code in the new segments folded in: with the load
// bias measured in all of the run's files (cgDir) where the process's
// own show none (a fork child that made no call into them).
func collectOf(t *testing.T, what, cgDir, pidDir, file string) *callgrind.Profile {
	t.Helper()
	c, err := callgrind.CollectObject(pidDir, file, corpus.WriteDone)
	if err != nil || c == nil {
		t.Fatalf("%s: callgrind's counts of %s in %s: %v", what, file, pidDir, err)
	}
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	pie := f.Type == elf.ET_DYN
	f.Close()
	if c.Folded || !pie {
		return c
	}
	all, err := callgrind.CollectObject(cgDir, file, corpus.WriteDone)
	if err != nil || all == nil || !all.Folded {
		t.Fatalf("%s: the load bias of %s: not in the run's counts (%v)", what, file, err)
	}
	if err := c.FoldUnknownAt(file, all.Bias); err != nil {
		t.Fatal(err)
	}
	return c
}

// cgOfPID links callgrind's files of process pid in cgDir into a
// directory of their own, for callgrind.CollectObject.
func cgOfPID(t *testing.T, cgDir string, pid int) string {
	t.Helper()
	out := filepath.Join(cgDir, fmt.Sprintf("pid%d", pid))
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(cgDir, fmt.Sprintf("cg.%d*", pid)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		base := filepath.Base(f)
		if rest := strings.TrimPrefix(base, fmt.Sprintf("cg.%d", pid)); rest != "" && rest[0] != '.' {
			continue // another pid with this one as its prefix
		}
		if err := os.Link(f, filepath.Join(out, base)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

// nativeAsFork runs the program natively twice under asfork, as it is and
// with the processes it makes in its memory made forks (as under
// valgrind, whose run sameRunEach checks), and requires the parent's
// profiles to hold the same counts, record for record: the child that
// shares the parent's memory changes nothing of the parent's. The first
// run's profile says it had such a child (STATS vm_children); the second
// had none.
func nativeAsFork(t *testing.T, what string, s spawnSetup, args []string, want procResult, suffix string) {
	t.Helper()
	var parents [2]*cct.Profile
	for i, fork := range []bool{false, true} {
		dir := t.TempDir()
		r, err := asfork.Run(s.prog, asfork.Options{Args: s.args(args), Fork: fork,
			Env: []string{"BLPP_PROFILE=" + filepath.Join(dir, "prof.%p"+suffix)}})
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if r.Code != want.code || string(r.Stdout) != string(want.stdout) || string(r.Stderr) != string(want.stderr) {
			t.Fatalf("%s (forks %v): exit %d, stdout %q, stderr %q; natively %s", what, fork, r.Code, r.Stdout, r.Stderr, want)
		}
		if (r.Forked > 0) != fork {
			t.Fatalf("%s (forks %v): %d calls made forks", what, fork, r.Forked)
		}
		p, err := cct.ReadFile(filepath.Join(dir, fmt.Sprintf("prof.%d", r.PID)))
		if err != nil {
			t.Fatalf("%s (forks %v): the parent's profile: %v", what, fork, err)
		}
		parents[i] = p
		if n, wantN := p.Stats["vm_children"], map[bool]uint64{false: 1, true: 0}[fork]; n != wantN {
			t.Errorf("%s (forks %v): stats vm_children = %d, want %d", what, fork, n, wantN)
		}
	}
	a, b := countsOf(parents[0]), countsOf(parents[1])
	var diffs []string
	for k, n := range a {
		if b[k] != n {
			diffs = append(diffs, fmt.Sprintf("%s: %d, %d as forks", k, n, b[k]))
		}
	}
	for k, n := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: 0, %d as forks", k, n))
		}
	}
	sort.Strings(diffs)
	for i, d := range diffs {
		if i == 10 {
			t.Errorf("%s: ... %d differences in all", what, len(diffs))
			break
		}
		t.Errorf("%s: the parent's profile differs natively: %s", what, d)
	}
	if len(a) < 10 {
		t.Errorf("%s: only %d counts compared", what, len(a))
	}
}

// countsOf flattens a profile's counts: each record's calls and path
// counts, partials, fork prefixes and folded calls, keyed by thread
// (in order) and the record's chain of (function, call site) from its
// root.
func countsOf(p *cct.Profile) map[string]uint64 {
	out := map[string]uint64{}
	for ti, th := range p.Threads {
		chain := make([]string, len(th.Records))
		for i, r := range th.Records {
			c := fmt.Sprintf("%d:%x@%d", ti, r.Func, r.CallSite)
			if r.Parent >= 0 && r.Parent < i {
				c = chain[r.Parent] + "/" + c
			}
			chain[i] = c
			out[c+" calls"] += r.Calls
			for _, pa := range r.Paths {
				out[fmt.Sprintf("%s path %d", c, pa.ID)] += pa.Count
			}
		}
		at := func(rec int) string {
			if rec >= 0 && rec < len(chain) {
				return chain[rec]
			}
			return fmt.Sprintf("%d:-", ti)
		}
		for _, x := range th.Partials {
			out[fmt.Sprintf("%s partial %x %d %d", at(x.Record), x.Func, x.Block, x.Reg)] += x.Count
		}
		for _, x := range th.Prefixes {
			out[fmt.Sprintf("%s prefix %x %d %d", at(x.Record), x.Func, x.Block, x.Reg)] += x.Count
		}
		for _, x := range th.Folded {
			out[fmt.Sprintf("%s folded @%d to %s", at(x.From), x.CallSite, at(x.To))] += x.Count
		}
	}
	return out
}
