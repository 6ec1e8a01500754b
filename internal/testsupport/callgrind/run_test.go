package callgrind

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// The tests in this file run valgrind on fixture programs and check the
// counts against facts that follow from the programs' source alone (how
// often each function must be entered) and from the binaries as objdump
// reads them, never against callgrind itself.

const runTimeout = 2 * time.Minute

func requireValgrind(t *testing.T) {
	t.Helper()
	fixture.RequireTool(t, "valgrind", "valgrind")
}

// syms maps the names of an executable's function symbols to the symbols.
type syms map[string]elf.Symbol

func loadSyms(t *testing.T, exe string) syms {
	t.Helper()
	m := syms{}
	for _, s := range fixture.FuncSymbols(t, exe) {
		if _, ok := m[s.Name]; !ok && s.Size > 0 {
			m[s.Name] = s
		}
	}
	return m
}

func (m syms) addr(t *testing.T, name string) uint64 {
	t.Helper()
	s, ok := m[name]
	if !ok {
		t.Fatalf("no function symbol %q", name)
	}
	return s.Value
}

// owner names the function whose symbol covers addr, or "?".
func (m syms) owner(addr uint64) string {
	for name, s := range m {
		if addr >= s.Value && addr-s.Value < s.Size {
			return name
		}
	}
	return "?"
}

// callers groups the calls callgrind saw arrive at target by the function
// holding the call site; calls from other objects count under the object's
// base name in brackets.
func callers(p *Profile, m syms, target uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, n := range p.Calls {
		if k[1] == target {
			out[m.owner(k[0])] += n
		}
	}
	for a, n := range p.External {
		if a.To == (Loc{p.Object, target}) {
			out["["+filepath.Base(a.From.Object)+"]"] += n
		}
	}
	return out
}

// checkEntries checks that fn is entered want times and that the calls
// come from the given callers.
func checkEntries(t *testing.T, p *Profile, m syms, fn string, want uint64, from map[string]uint64) {
	t.Helper()
	a := m.addr(t, fn)
	if got := p.Exec[a]; got != want {
		t.Errorf("%s: first instruction %#x executed %d times, want %d", fn, a, got, want)
	}
	if from == nil {
		return
	}
	got := callers(p, m, a)
	if fmt.Sprint(got) != fmt.Sprint(from) {
		t.Errorf("%s: calls by caller = %v, want %v", fn, got, from)
	}
}

// checkEntryFlow checks a conservation law at function entries: nothing
// falls into a function's first instruction, so it executes exactly as
// often as calls and jumps arrive there.
func checkEntryFlow(t *testing.T, p *Profile, m syms, fns []string) {
	t.Helper()
	for _, fn := range fns {
		a := m.addr(t, fn)
		in := p.CallsTo(a)
		for k, j := range p.Jumps {
			if k[1] == a {
				in += j.Count
			}
		}
		if p.Exec[a] != in {
			t.Errorf("%s: entry %#x executed %d times, but %d calls and jumps arrive there", fn, a, p.Exec[a], in)
		}
	}
}

var insnRE = regexp.MustCompile(`^\s*([0-9a-f]+):\t`)

// instructionStarts returns the address of every instruction objdump
// disassembles in exe.
func instructionStarts(t *testing.T, exe string) map[uint64]bool {
	t.Helper()
	objdump := fixture.RequireTool(t, "objdump", "binutils")
	out, err := exec.Command(objdump, "-d", "-w", "--no-show-raw-insn", exe).Output()
	if err != nil {
		t.Fatalf("objdump %s: %v", exe, err)
	}
	starts := map[uint64]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := insnRE.FindStringSubmatch(sc.Text()); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			starts[a] = true
		}
	}
	return starts
}

// checkAddresses checks that the main object's addresses are ELF virtual
// addresses: every executed address is an instruction objdump sees in an
// executable section, the executable's PLT shows up at its ELF address
// after folding, and nothing of it is left in UnknownExec.
func checkAddresses(t *testing.T, exe string, p *Profile) {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !p.Folded {
		t.Fatalf("FoldUnknown did not establish the load bias")
	}
	if f.Type == elf.ET_EXEC && p.Bias != 0 {
		t.Errorf("ET_EXEC: Bias = %#x, want 0", p.Bias)
	}
	if f.Type == elf.ET_DYN && (p.Bias == 0 || p.Bias%0x1000 != 0) {
		t.Errorf("PIE: Bias = %#x, want a non-zero page multiple", p.Bias)
	}
	t.Logf("%s: load bias %#x, %d instructions executed", f.Type, p.Bias, len(p.Exec))

	starts := instructionStarts(t, exe)
	sectionOf := func(a uint64) *elf.Section {
		for _, s := range f.Sections {
			if s.Flags&elf.SHF_EXECINSTR != 0 && a >= s.Addr && a-s.Addr < s.Size {
				return s
			}
		}
		return nil
	}
	bad, plt := 0, 0
	for a := range p.Exec {
		s := sectionOf(a)
		switch {
		case s == nil:
			bad++
			if bad <= 5 {
				t.Errorf("executed address %#x is in no executable section", a)
			}
			continue
		case !starts[a]:
			bad++
			if bad <= 5 {
				t.Errorf("executed address %#x (%s) is not an instruction start", a, s.Name)
			}
		}
		if strings.HasPrefix(s.Name, ".plt") {
			plt++
		}
	}
	if plt == 0 {
		t.Errorf("no executed address in the executable's .plt sections")
	}
	for a := range p.UnknownExec {
		if a >= p.Bias {
			for _, pr := range f.Progs {
				if pr.Type == elf.PT_LOAD && pr.Flags&elf.PF_X != 0 && a-p.Bias >= pr.Vaddr && a-p.Bias-pr.Vaddr < pr.Memsz {
					t.Errorf("UnknownExec still holds %#x, which is the executable's %#x", a, a-p.Bias)
				}
			}
		}
	}
}

func runProfile(t *testing.T, exe string, opts Options) *Profile {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = runTimeout
	}
	start := time.Now()
	p, err := Run(exe, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("valgrind ran %s in %v", filepath.Base(exe), time.Since(start).Round(time.Millisecond))
	return p
}

// ackermannCalls counts the activations of ackermann(m, n) as written in
// recursion.c.
func ackermannCalls(m, n int) (calls uint64) {
	var a func(m, n int) int
	a = func(m, n int) int {
		calls++
		if m == 0 {
			return n + 1
		}
		if n == 0 {
			return a(m-1, 1)
		}
		return a(m-1, a(m, n-1))
	}
	a(m, n)
	return calls
}

// stepCalls returns, per caller, how often loops.c calls step() when run
// without arguments (vol_n = 7), following the source.
func stepCalls() map[string]uint64 {
	const n = 7
	cb := uint64(0) // continue_break(n*4, 300)
	acc := 0
	for i := 0; i < n*4; i++ {
		v := (i*7 + 3) & 0xff
		cb++
		if v&1 != 0 {
			continue
		}
		if acc > 300 {
			break
		}
		acc += v
	}
	noLoop := uint64(1) // step(7) = 52 is even: no second call
	if ((7*7+3)&0xff)&1 != 0 {
		noLoop = 2
	}
	return map[string]uint64{
		"no_loop":         noLoop,
		"simple_loop":     n,
		"nested2":         n * (n - 2),
		"nested3":         (n - 3) * (n - 4) * (n - 2),
		"nested3_guarded": (n - 3) * (n - 4) * (n - 2), // the second call has k = 0
		"two_loops":       2 * n,
		"outer_two_inner": (n - 2) * 2 * (n - 3),
		"continue_break":  cb,
		"do_while":        n,
	}
}

func TestRun(t *testing.T) {
	requireValgrind(t)
	type check func(t *testing.T, exe string, m syms, p *Profile)
	recursion := func(t *testing.T, exe string, m syms, p *Profile) {
		const out = "fib 610\nackermann 9\ngcd 315\nis_even 0 1\nis_odd 1\ndepth_sum 290\n"
		if string(p.Stdout) != out {
			t.Errorf("stdout = %q, want %q", p.Stdout, out)
		}
		checkEntries(t, p, m, "depth_sum", 61, map[string]uint64{"main": 1, "depth_sum": 60})
		// Tail jumps between is_even and is_odd are calls to callgrind.
		checkEntries(t, p, m, "is_even", 40, map[string]uint64{"main": 2, "is_odd": 38})
		checkEntries(t, p, m, "is_odd", 39, map[string]uint64{"main": 1, "is_even": 38})
	}
	recursionO0 := func(t *testing.T, exe string, m syms, p *Profile) {
		// fib(15) is entered 2*fib(16)-1 times; at -O0 every entry is a
		// call.
		checkEntries(t, p, m, "fib", 2*987-1, map[string]uint64{"main": 1, "fib": 2*987 - 2})
		ack := ackermannCalls(2, 3)
		checkEntries(t, p, m, "ackermann", ack, map[string]uint64{"main": 1, "ackermann": ack - 1})
		// gcd(16065, 6930) -> (6930, 2205) -> (2205, 315) -> (315, 0).
		checkEntries(t, p, m, "gcd", 4, map[string]uint64{"main": 1, "gcd": 3})
	}
	loops := func(t *testing.T, exe string, m syms, p *Profile) {
		want := stepCalls()
		var total uint64
		for _, n := range want {
			total += n
		}
		checkEntries(t, p, m, "step", total, want)
		checkEntries(t, p, m, "nested3_guarded", 2, map[string]uint64{"main": 2})
		checkEntries(t, p, m, "vector_sum", 2, map[string]uint64{"main": 2})
	}
	switches := func(t *testing.T, exe string, m syms, p *Profile) {
		checkEntries(t, p, m, "dense", 15, map[string]uint64{"main": 15})
		checkEntries(t, p, m, "sparse", 9, map[string]uint64{"main": 9})
		checkEntries(t, p, m, "op0", 2, map[string]uint64{"dense": 1, "sparse": 1})
		checkEntries(t, p, m, "op8", 1, map[string]uint64{"dense": 1})
		// dense(-1), dense(5), dense(12), dense(13); sparse(5), sparse(-3).
		checkEntries(t, p, m, "opdef", 6, map[string]uint64{"dense": 4, "sparse": 2})
		// dense(0..11) go through the jump table: one indirect jump with
		// 12 targets taken once each.
		targets := map[uint64]map[uint64]Jump{}
		for k, j := range p.Jumps {
			if m.owner(k[0]) == "dense" {
				if targets[k[0]] == nil {
					targets[k[0]] = map[uint64]Jump{}
				}
				targets[k[0]][k[1]] = j
			}
		}
		found := false
		for src, tg := range targets {
			if len(tg) != 12 {
				continue
			}
			found = true
			for to, j := range tg {
				if j.Count != 1 || j.Conditional {
					t.Errorf("jump table %#x -> %#x: %+v, want one unconditional jump", src, to, j)
				}
			}
		}
		if !found {
			t.Errorf("no jump in dense with 12 targets")
		}
	}

	tests := []struct {
		src    string
		cfg    fixture.Config
		checks []check
	}{
		{"recursion.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}, []check{recursion}},
		{"recursion.c", fixture.Config{CC: "clang", Opt: "-O0"}, []check{recursion, recursionO0}},
		{"recursion.c", fixture.Config{CC: "gcc", Opt: "-O2", Static: true}, []check{recursion}},
		{"loops.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}, []check{loops}},
		{"loops.c", fixture.Config{CC: "clang", Opt: "-O2"}, []check{loops}},
		{"switch.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}, []check{switches}},
		{"switch.c", fixture.Config{CC: "clang", Opt: "-O0"}, []check{switches}},
	}
	for _, tc := range tests {
		t.Run(tc.src+"/"+tc.cfg.String(), func(t *testing.T) {
			t.Parallel()
			exe := fixture.Build(t, tc.src, tc.cfg)
			p := runProfile(t, exe, Options{})
			if p.ExitCode != 0 || p.Signal != 0 {
				t.Fatalf("exit status %d, signal %v; stderr:\n%s", p.ExitCode, p.Signal, p.Stderr)
			}
			m := loadSyms(t, exe)
			mainCaller := "[libc.so.6]"
			if tc.cfg.Static {
				// libc is part of the executable.
				mainCaller = "__libc_start_call_main"
			}
			checkEntries(t, p, m, "main", 1, map[string]uint64{mainCaller: 1})
			ex, ok := fixture.ExpectFor(tc.src)
			if !ok {
				t.Fatalf("no expectations for %s", tc.src)
			}
			checkEntryFlow(t, p, m, append(ex.Names(), "main"))
			checkAddresses(t, exe, p)
			checkObjectIr(t, p, tc.cfg.Static)
			for _, c := range tc.checks {
				c(t, exe, m, p)
			}
		})
	}
}

// checkObjectIr: the per-object totals hold the main object's
// instructions (those of Exec that were not filed under ??? before
// FoldUnknown), and in a dynamic program libc's and the loader's too.
func checkObjectIr(t *testing.T, p *Profile, static bool) {
	t.Helper()
	var exec, all uint64
	for _, n := range p.Exec {
		exec += n
	}
	for _, n := range p.ObjectIr {
		all += n
	}
	if main := p.ObjectIr[p.Object]; main == 0 || main > exec || exec > main+p.ObjectIr[UnknownObject] {
		t.Errorf("ObjectIr: main object %d, ??? %d; Exec sums to %d", main, p.ObjectIr[UnknownObject], exec)
	}
	var libc, loader uint64
	for ob, n := range p.ObjectIr {
		switch base := filepath.Base(ob); {
		case strings.HasPrefix(base, "libc.so"):
			libc += n
		case strings.HasPrefix(base, "ld-linux"):
			loader += n
		}
	}
	if !static && (libc == 0 || loader == 0) {
		t.Errorf("ObjectIr: libc %d, loader %d instructions; want both > 0 (objects: %v)", libc, loader, p.ObjectIr)
	}
	if static && len(p.ObjectIr) > 2 {
		t.Errorf("ObjectIr of a static program names %d objects: %v", len(p.ObjectIr), p.ObjectIr)
	}
}

// TestRunForkIO checks arguments, environment, standard input, working
// directory and exit status, and that a forked child's file does not
// repeat the parent's work before the fork.
func TestRunForkIO(t *testing.T) {
	requireValgrind(t)
	exe := fixture.Build(t, "../internal/testsupport/callgrind/testdata/forkio.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	m := loadSyms(t, exe)
	dir := t.TempDir()
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, abort := range []bool{false, true} {
		t.Run(fmt.Sprintf("abort=%v", abort), func(t *testing.T) {
			t.Parallel()
			args := []string{"4"}
			if abort {
				args = append(args, "abort")
			}
			p := runProfile(t, exe, Options{
				Args:  args,
				Env:   []string{"FORKIO_CHILD=3"},
				Stdin: []byte("xx-x\n"),
				Dir:   dir,
			})
			if want := fmt.Sprintf("child 3 cwd %s\n", realDir); string(p.Stdout) != want {
				t.Errorf("stdout = %q, want %q", p.Stdout, want)
			}
			if abort {
				if p.Signal != syscall.SIGABRT || p.ExitCode != -1 {
					t.Errorf("exit %d, signal %v; want -1 and SIGABRT", p.ExitCode, p.Signal)
				}
			} else if p.ExitCode != 5 || p.Signal != 0 {
				t.Errorf("exit %d, signal %v; want 5 and none", p.ExitCode, p.Signal)
			}
			if len(p.PIDs) != 2 {
				t.Errorf("PIDs = %v, want parent and child", p.PIDs)
			}
			checkEntries(t, p, m, "main", 1, nil)
			checkEntries(t, p, m, "before", 4, map[string]uint64{"main": 4})
			checkEntries(t, p, m, "child", 3, map[string]uint64{"main": 3})
			checkEntries(t, p, m, "parent", 3, map[string]uint64{"main": 3})
			checkEntryFlow(t, p, m, []string{"main", "before", "child", "parent"})
			checkAddresses(t, exe, p)
		})
	}
}

// TestCompressedForms runs callgrind with its default compression of names
// and positions and checks that the profile reads the same as the plain
// one Run asks for.
func TestCompressedForms(t *testing.T) {
	requireValgrind(t)
	exe := fixture.Build(t, "switch.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	object, err := filepath.EvalSymlinks(exe)
	if err != nil {
		t.Fatal(err)
	}
	object, err = filepath.Abs(object)
	if err != nil {
		t.Fatal(err)
	}
	profiles := make([]*Profile, 2)
	for i, compress := range []bool{false, true} {
		dir := t.TempDir()
		args := ValgrindArgs(dir, false)
		if compress {
			for j, a := range args {
				switch a {
				case "--compress-pos=no":
					args[j] = "--compress-pos=yes"
				case "--compress-strings=no":
					args[j] = "--compress-strings=yes"
				}
			}
		}
		cmd := exec.Command("valgrind", append(args, exe)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("valgrind: %v\n%s", err, out)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "cg.*"))
		if len(files) != 1 {
			t.Fatalf("callgrind wrote %v, want one file", files)
		}
		data, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		if compress != bytes.Contains(data, []byte("\n+")) {
			t.Fatalf("compress=%v, but relative positions present=%v", compress, !compress)
		}
		p, err := ParseFile(files[0], object)
		if err != nil {
			t.Fatal(err)
		}
		p.PIDs = nil
		profiles[i] = p
	}
	compareProfiles(t, profiles[1], profiles[0])
}

// TestRunSeparateThreads checks that per-thread files add up to the same
// counts.
func TestRunSeparateThreads(t *testing.T) {
	requireValgrind(t)
	exe := fixture.Build(t, "recursion.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	dir := t.TempDir()
	p := runProfile(t, exe, Options{SeparateThreads: true, OutDir: dir})
	q := runProfile(t, exe, Options{})
	if files, _ := filepath.Glob(filepath.Join(dir, "cg.*-01")); len(files) != 1 {
		t.Errorf("per-thread files: %v, want one for thread 1", files)
	}
	diffMap(t, "Exec", p.Exec, q.Exec)
	diffMap(t, "Calls", p.Calls, q.Calls)
	diffMap(t, "Jumps", p.Jumps, q.Jumps)
}

func TestRunErrors(t *testing.T) {
	requireValgrind(t)
	t.Run("missing program", func(t *testing.T) {
		if _, err := Run(filepath.Join(t.TempDir(), "nope"), Options{}); err == nil {
			t.Fatal("no error")
		}
	})
	t.Run("not an ELF", func(t *testing.T) {
		script := filepath.Join(t.TempDir(), "s.sh")
		if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		// valgrind traces the shell the script runs in; no file mentions
		// the script itself.
		_, err := Run(script, Options{Timeout: runTimeout})
		if err == nil || !strings.Contains(err.Error(), "no profile") {
			t.Fatalf("err = %v, want ErrNoProfile", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		exe := fixture.Build(t, "../internal/testsupport/callgrind/testdata/forkio.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
		start := time.Now()
		_, err := Run(exe, Options{Timeout: 2 * time.Second, Valgrind: sleeper(t)})
		if time.Since(start) > time.Minute {
			t.Errorf("Run took %v to give up", time.Since(start))
		}
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
	})
}

// sleeper returns a stand-in for valgrind that never finishes.
func sleeper(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "valgrind")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

var pltCallRE = regexp.MustCompile(`^\s*([0-9a-f]+):\s+call\s+([0-9a-f]+) <[^>]*@plt>`)

// TestFoldUnknown checks the bias measurement on a real PIE without
// running valgrind: one call into the PLT at a consistent run-time address
// folds, two that disagree are refused.
func TestFoldUnknown(t *testing.T) {
	exe := fixture.Build(t, "recursion.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	objdump := fixture.RequireTool(t, "objdump", "binutils")
	out, err := exec.Command(objdump, "-d", "-w", "--no-show-raw-insn", exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	var site, plt uint64
	for _, line := range strings.Split(string(out), "\n") {
		if m := pltCallRE.FindStringSubmatch(line); m != nil {
			site, _ = strconv.ParseUint(m[1], 16, 64)
			plt, _ = strconv.ParseUint(m[2], 16, 64)
			break
		}
	}
	if site == 0 {
		t.Fatal("no call into the PLT")
	}
	const bias = 0x108000
	mk := func(biases ...uint64) *Profile {
		p := newProfile("/x/prog")
		for _, b := range biases {
			p.External[Arc{Loc{p.Object, site}, Loc{UnknownObject, plt + b}}]++
		}
		p.UnknownExec[plt+bias] = 7
		p.UnknownExec[0x4838030] = 1 // another object's stub
		p.UnknownJumps[[2]uint64{plt + bias, plt + bias + 6}] = Jump{Count: 7}
		return p
	}

	p := mk(bias)
	if err := p.FoldUnknown(exe); err != nil {
		t.Fatal(err)
	}
	if !p.Folded || p.Bias != bias {
		t.Fatalf("Folded %v, Bias %#x; want true, %#x", p.Folded, p.Bias, uint64(bias))
	}
	diffMap(t, "Exec", p.Exec, map[uint64]uint64{plt: 7})
	diffMap(t, "UnknownExec", p.UnknownExec, map[uint64]uint64{0x4838030: 1})
	diffMap(t, "Calls", p.Calls, map[[2]uint64]uint64{{site, plt}: 1})
	diffMap(t, "Jumps", p.Jumps, map[[2]uint64]Jump{{plt, plt + 6}: {Count: 7}})
	if len(p.External) != 0 || len(p.UnknownJumps) != 0 {
		t.Errorf("External %v, UnknownJumps %v; want both empty", p.External, p.UnknownJumps)
	}

	p = mk(bias, 2*bias)
	if err := p.FoldUnknown(exe); !errors.Is(err, ErrBias) {
		t.Fatalf("err = %v, want ErrBias", err)
	}

	// Without a call into the PLT nothing can be folded.
	p = mk()
	if err := p.FoldUnknown(exe); err != nil || p.Folded || len(p.UnknownExec) != 2 {
		t.Fatalf("err %v, Folded %v, UnknownExec %v; want nil, false, untouched", err, p.Folded, p.UnknownExec)
	}
}

// TestCollectObjectOf runs Debian's dash running seq, both of them with
// libc, under callgrind: libc's counts in the shell's process alone must
// fold (each process's .plt code at its own load bias) and hold no more
// instructions than that process ran, while the sum over both processes
// holds more.
func TestCollectObjectOf(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	const libc = "/lib/x86_64-linux-gnu/libc.so.6"
	for _, f := range []string{"/bin/dash", "/usr/bin/seq", libc} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s: %v", f, err)
		}
	}
	dir := t.TempDir()
	p, err := Run("/bin/dash", Options{Args: []string{"-c", "seq 1 2000 >/dev/null; echo done"}, OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if string(p.Stdout) != "done\n" {
		t.Fatalf("stdout %q", p.Stdout)
	}
	own, err := CollectObjectOf(dir, libc, nil, p.PIDs)
	if err != nil {
		t.Fatal(err)
	}
	all, err := CollectObjectOf(dir, libc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := func(m map[uint64]uint64) (n uint64) {
		for _, c := range m {
			n += c
		}
		return n
	}
	// What the shell's process ran in libc, and in code callgrind files
	// under UnknownObject (libc's .plt among it).
	var ran uint64
	for ob, n := range p.ObjectIr {
		if strings.Contains(ob, "libc.so") || ob == UnknownObject {
			ran += n
		}
	}
	if !own.Folded || !all.Folded {
		t.Errorf("libc's .plt code not folded: the shell's process %v, both %v", own.Folded, all.Folded)
	}
	if got := sum(own.Exec); got == 0 || got > ran {
		t.Errorf("libc in the shell's process: %d instructions counted, the process ran %d in libc and unknown code", got, ran)
	}
	if sum(all.Exec) <= sum(own.Exec) {
		t.Errorf("libc over both processes: %d instructions, no more than the shell's %d: seq's process was not read", sum(all.Exec), sum(own.Exec))
	}
}
