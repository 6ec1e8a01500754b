package rewriter_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// Frames of relocated code have no DWARF; what names them is the symbols
// the rewriter adds for each instrumented copy (rewriter/symbols.go):
// .dynsym entries for glibc's dladdr, which backtrace_symbols uses, and
// .symtab entries for gdb. Unwinding through them takes the .eh_frame the
// rewriter writes for relocated code.

// namesConfigs build testdata/names.c with -rdynamic, so that dladdr (and
// so backtrace_symbols) can name the original's functions too.
var namesConfigs = []fixture.Config{
	{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-rdynamic"}},
	{CC: "gcc", Opt: "-O0", Extra: []string{"-rdynamic"}},
	{CC: "clang", Opt: "-O2", PIE: true, Strip: true, Extra: []string{"-rdynamic"}},
}

// btLine matches one frame printed by backtrace_symbols_fd,
// "path(name+0xoff) [0xaddr]", capturing the name ("" when dladdr found
// none).
var btLine = regexp.MustCompile(`(?m)^[^(\n]*\(([^+)]*)(?:\+0x[0-9a-f]+)?\) ?\[0x[0-9a-f]+\]$`)

// btNames splits a printed backtrace into its function names and the
// other lines.
func btNames(out []byte) (names []string, rest string) {
	for _, m := range btLine.FindAllSubmatch(out, -1) {
		names = append(names, string(m[1]))
	}
	return names, btLine.ReplaceAllString(string(out), "")
}

// TestBacktraceNames runs "names bt" (backtrace() and
// backtrace_symbols_fd three calls deep) original and rewritten: the
// rewritten program prints the same function names for the same number
// of frames, and inner, middle and outer run instrumented.
func TestBacktraceNames(t *testing.T) {
	for _, c := range namesConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			orig, inst := rewriteTo(t, "names.c", c, t.TempDir())
			want := runProc(t, orig, []string{"bt"})
			got := runProc(t, inst, []string{"bt"}, "BLPP_PROFILE="+filepath.Join(t.TempDir(), "blpp.out"))
			wantNames, wantRest := btNames(want.stdout)
			gotNames, gotRest := btNames(got.stdout)
			if len(wantNames) < 4 || strings.Join(wantNames[:4], " ") != "inner middle outer main" {
				t.Fatalf("original backtrace:\n%s", want)
			}
			if strings.Join(gotNames, " ") != strings.Join(wantNames, " ") || gotRest != wantRest ||
				got.code != want.code || got.sig != want.sig {
				t.Errorf("rewritten backtrace names %q, want %q\nrewritten: %s\noriginal: %s", gotNames, wantNames, got, want)
			}
			checkInstrumented(t, inst, "inner", "middle", "outer")
		})
	}
}

// checkInstrumented requires .symtab and .dynsym of the rewritten
// binary to name each function's relocated copy: a symbol of that name in
// .blpp.text, so the names seen in its frames come from relocated code.
func checkInstrumented(t *testing.T, inst string, names ...string) {
	t.Helper()
	f, err := elf.Open(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".blpp.text")
	if text == nil {
		t.Fatal("no .blpp.text")
	}
	for what, read := range map[string]func() ([]elf.Symbol, error){".symtab": f.Symbols, ".dynsym": f.DynamicSymbols} {
		syms, err := read()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for _, n := range names {
			found := false
			for _, s := range syms {
				found = found || s.Name == n && s.Value >= text.Addr && s.Value < text.Addr+text.Size && s.Size > 0
			}
			if !found {
				t.Errorf("%s: no symbol for the relocated copy of %s", what, n)
			}
		}
	}
}

// gdbFrame matches a frame line of gdb's backtrace, with or without debug
// information: "#1  0x... in middle ()" or "#0  inner (mode=2) at ...".
var gdbFrame = regexp.MustCompile(`(?m)^#(\d+)\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][\w.]*) \(`)

// TestGDBNames runs "names segv" under gdb: at the fault, three calls
// deep in relocated code, gdb's backtrace names inner, middle, outer and
// main, as it does for the original.
func TestGDBNames(t *testing.T) {
	gdb := fixture.RequireTool(t, "gdb", "gdb")
	for _, c := range []fixture.Config{
		{CC: "gcc", Opt: "-O2"},
		{CC: "gcc", Opt: "-O0", PIE: true},
		{CC: "gcc", Opt: "-O2", Static: true},
		{CC: "clang", Opt: "-O2", PIE: true, Strip: true, Extra: []string{"-rdynamic"}},
	} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig, inst := rewriteTo(t, "names.c", c, dir)
			bt := func(prog string) []string {
				cmd := exec.Command(gdb, "-nx", "-batch", "-ex", "run", "-ex", "bt", "--args", prog, "segv")
				cmd.Env = append(cmd.Environ(), "LC_ALL=C", "BLPP_PROFILE="+filepath.Join(dir, "blpp.out"))
				out, _ := cmd.CombinedOutput()
				if !strings.Contains(string(out), "SIGSEGV") {
					t.Fatalf("%s under gdb: no SIGSEGV:\n%s", prog, out)
				}
				var names []string
				for _, m := range gdbFrame.FindAllStringSubmatch(string(out), -1) {
					names = append(names, m[2])
				}
				if len(names) < 4 {
					t.Errorf("%s: backtrace:\n%s", prog, out)
				}
				return names
			}
			want, got := bt(orig), bt(inst)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("gdb bt of the rewritten program: %q, want %q", got, want)
			}
		})
	}
}

// gdbConfigs are the builds of names.c the tests of what gdb sees of the
// runtime and of entries run: a PIE, a static binary (no loader: the
// runtime's own start), and a stripped clang PIE whose names come from
// .dynsym (-rdynamic).
var gdbConfigs = []fixture.Config{
	{CC: "gcc", Opt: "-O2", PIE: true},
	{CC: "gcc", Opt: "-O0", Static: true},
	{CC: "clang", Opt: "-O2", PIE: true, Strip: true, Extra: []string{"-rdynamic"}},
}

// TestGDBRuntimeFrames stops gdb in the runtime's C and requires its
// backtrace to leave the runtime for the program's frames (decision 159):
//   - in blpp_rt_enter, which the blpp_enter stub calls at a function's
//     first entry in a new context: at one of its stops the backtrace goes
//     through the stub into inner, middle, outer and main, by the runtime's
//     own FDEs, which the rewriter moves into the output's .eh_frame;
//   - in blpp_rt_signal at "names segv" (the fault passed to the program,
//     whose action is the default): the backtrace goes through
//     blpp_sig_entry and the signal frame, which gdb knows by the
//     restorer's name, into inner, middle, outer and main.
//
// Without the FDEs gdb stops at the stub or wanders into garbage; without
// the restorer's name it stops at the signal frame.
func TestGDBRuntimeFrames(t *testing.T) {
	eachGDBConfig(t, func(t *testing.T, gdb, dir, inst string, _ fixture.Config) {
		stacks, out := gdbStacks(t, gdb, dir, "break blpp_rt_enter\ncommands\nbt\ncontinue\nend\nrun\n", inst)
		if !hasStack(stacks, "blpp_rt_enter blpp_enter inner middle outer main") {
			t.Errorf("no backtrace from blpp_rt_enter reaches main through inner, middle and outer; gdb saw:\n%s", out)
		}
		stacks, out = gdbStacks(t, gdb, dir, "handle SIGSEGV nostop noprint pass\nbreak blpp_rt_signal\nrun\nbt\n", inst, "segv")
		if !hasStack(stacks, "blpp_rt_signal blpp_sig_entry inner middle outer main") || !strings.Contains(out, "<signal handler called>") {
			t.Errorf("the backtrace from blpp_rt_signal does not go through the signal frame to inner, middle, outer and main; gdb saw:\n%s", out)
		}
	})
}

// eachGDBConfig runs check in parallel for each of gdbConfigs, with gdb's
// path, a directory of the subtest's own and names.c rewritten into it
// (context mode).
func eachGDBConfig(t *testing.T, check func(t *testing.T, gdb, dir, inst string, c fixture.Config)) {
	gdb := fixture.RequireTool(t, "gdb", "gdb")
	for _, c := range gdbConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			_, inst := rewriteTo(t, "names.c", c, dir)
			check(t, gdb, dir, inst, c)
		})
	}
}

// TestGDBBreakFunction sets gdb's breakpoint on inner by name (gdbConfigs,
// context and flow-only): in the rewritten program it must stop there, with inner, middle, outer and main
// on the stack. inner's copy is entered by middle's direct call past the
// copy's first checks, so the breakpoint fires only because the direct
// entry carries a symbol of inner's name too (relocatedSymbols); without
// it gdb's locations are the original, which never runs, and the copy's
// start, and the program runs to its end.
func TestGDBBreakFunction(t *testing.T) {
	eachGDBConfig(t, func(t *testing.T, gdb, dir, inst string, c fixture.Config) {
		for _, mode := range []string{"context", "flow-only"} {
			prog := inst
			if mode == "flow-only" {
				prog = filepath.Join(dir, "names.flow")
				rewriteWith(t, fixture.Build(t, "names.c", c), prog, rewriter.Options{NoContext: true})
			}
			stacks, out := gdbStacks(t, gdb, dir, "break inner\nrun\nbt\n", prog)
			if !gdbStopped.MatchString(out) || !hasStack(stacks, "inner middle outer main") {
				t.Errorf("%s: gdb's breakpoint on inner did not stop there with middle, outer and main below it:\n%s", mode, out)
			}
		}
	})
}

// gdbStopped matches gdb's report of a stop at breakpoint 1 (any of its
// locations).
var gdbStopped = regexp.MustCompile(`(?m)^Breakpoint 1(\.\d+)?, `)

// gdbStacks runs prog under gdb with a command script and returns the
// function names of each backtrace printed (a stack per frame #0), and
// gdb's output.
func gdbStacks(t *testing.T, gdb, dir, script, prog string, args ...string) ([]string, string) {
	t.Helper()
	file := filepath.Join(dir, "gdb.cmd")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gdb, append([]string{"-nx", "-batch", "-x", file, "--args", prog}, args...)...)
	cmd.Env = append(cmd.Environ(), "LC_ALL=C", "BLPP_PROFILE="+filepath.Join(dir, "blpp.out"))
	out, _ := cmd.CombinedOutput()
	var stacks, cur []string
	for _, m := range gdbFrame.FindAllStringSubmatch(string(out), -1) {
		if m[1] == "0" && len(cur) > 0 {
			stacks = append(stacks, strings.Join(cur, " "))
			cur = nil
		}
		cur = append(cur, m[2])
	}
	if len(cur) > 0 {
		stacks = append(stacks, strings.Join(cur, " "))
	}
	return stacks, string(out)
}

// hasStack reports whether one of stacks starts with the names of want.
func hasStack(stacks []string, want string) bool {
	for _, s := range stacks {
		if s == want || strings.HasPrefix(s, want+" ") {
			return true
		}
	}
	return false
}
