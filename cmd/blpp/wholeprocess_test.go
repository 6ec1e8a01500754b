package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/internal/wholerun"

	"github.com/spf13/pflag"
)

// wholeProgram is a dynamic program run with every shared object it loads
// instrumented (decision 82).
type wholeProgram struct {
	name  string
	prog  string   // path
	args  []string // without argv[0]
	env   []string
	stdin []byte
	// contextOnly leaves the flow-only run out (the programs of
	// TestWholeProcessShare: context is the default and the costlier).
	contextOnly bool
	// forks: the program forks, so each process writes a profile
	// (BLPP_PROFILE with %p) and the oracle compares their merge with
	// callgrind's counts of every process.
	forks bool
}

// wholePrograms are the programs of the whole-process tests: the module
// fixtures (rw_main, whose library librw.so calls back into it, and the
// modules fixture of acceptance 1) and Debian programs whose work is in
// libraries (libbz2, libc's regex, and TestWholeProcessShare's: liblzma
// with threads, zlib, libsqlite3, libjq and libonig, python3 with
// extension modules, libstdc++ and libgcc_s unwinding); libc.so.6 is
// instrumented in all of them.
func wholePrograms(t *testing.T) []wholeProgram {
	lib := fixture.Build(t, "modules/rw_lib.c", fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-shared", "-fPIC", "-Wl,-soname,librw.so"}})
	prog := fixture.Build(t, "modules/rw_main.c", fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-Wl,--no-as-needed", lib}})
	libDir := t.TempDir()
	data, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libDir, "librw.so"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	for i := 0; i < 400; i++ {
		text.WriteString(strings.Repeat("abc", i%7) + " line 42 of the input, 7 times " + string(rune('a'+i%26)) + "\n")
	}
	fx := fixture.BuildModules(t)
	ps := []wholeProgram{
		{name: "rw_main", prog: prog, env: []string{"LD_LIBRARY_PATH=" + libDir}},
		// The modules fixture: a library found through $ORIGIN with
		// callbacks and threads, a C++ library dlopen'ed twice by path
		// that throws to the executable (issue 25, acceptance 1).
		{name: "mod_main", prog: fx.Exe, args: fx.Args()},
		// Coroutines with makecontext and swapcontext, libc's
		// __start_context and uc_link included (decision 122).
		{name: "ucontext", prog: fixture.Build(t, "ucontext.c", fixture.Config{CC: "gcc", Opt: "-O2"})},
		// A fork in the middle of main: the C library's fork and _Fork
		// run on in both processes after the system call (decision 101).
		{name: "fork", prog: fixture.Build(t, "fork.c", fixture.Config{CC: "gcc", Opt: "-O2"}), forks: true},
	}
	for _, p := range []wholeProgram{
		{name: "bzip2", prog: "/usr/bin/bzip2", args: []string{"-c"}, stdin: text.Bytes()},
		{name: "sed", prog: "/bin/sed", args: []string{"-E", `s/([a-c]+) line ([0-9]+)/\2:\1/; /7 times q/d`}, stdin: text.Bytes()},
	} {
		if _, err := os.Stat(p.prog); err == nil {
			ps = append(ps, p)
		}
	}
	for _, p := range sharePrograms(t) {
		if p.name == "bzip2" || p.name == "sed" {
			continue // above, in both modes
		}
		ps = append(ps, wholeProgram{name: strings.ReplaceAll(p.name, " ", "_"), prog: p.argv[0], args: p.argv[1:], stdin: p.stdin, env: p.env, contextOnly: true})
	}
	return ps
}

// TestWholeProcessSameRun runs each program with its shared objects
// instrumented (libc.so.6 included) under callgrind, through the same
// loader and auditor blpp run uses, and checks every block of every
// instrumented function of every module against callgrind's count of
// that very run (the same-run oracle: callgrind's CPU picks other string
// functions than the machine's, so only the same run compares), in
// context and flow-only mode; the output is the original's.
func TestWholeProcessSameRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs programs under callgrind")
	}
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, p := range wholePrograms(t) {
		for _, flow := range []bool{false, true} {
			if flow && p.contextOnly {
				continue
			}
			name := p.name + "/context"
			if flow {
				name = p.name + "/flow"
			}
			t.Run(name, func(t *testing.T) {
				native := exec.Command(p.prog, p.args...)
				native.Env = append(os.Environ(), p.env...)
				native.Stdin = bytes.NewReader(p.stdin)
				want, err := native.Output()
				wantCode := 0
				if ee, ok := err.(*exec.ExitError); ok {
					wantCode = ee.ExitCode()
				} else if err != nil {
					t.Fatalf("%s: %v", p.prog, err)
				}
				for _, e := range p.env {
					k, v, _ := strings.Cut(e, "=")
					t.Setenv(k, v) // the loader's --list sees it too
				}
				inst, wp := setUpWhole(t, p.prog, flow)
				if len(wp.Skipped) > 0 {
					t.Errorf("libraries not instrumented: %v", wp.Skipped)
				}
				dir := t.TempDir()
				prof := filepath.Join(dir, "blpp.out")
				if p.forks {
					prof = filepath.Join(dir, "blpp.%p.out")
				}
				cgDir := filepath.Join(dir, "cg")
				// blpp run's command and environment (p.env is set above)
				run, err := wp.Command(inst, p.prog, p.prog, p.args, append(os.Environ(), "BLPP_PROFILE="+prof))
				if err != nil {
					t.Fatal(err)
				}
				cg, err := callgrind.Run(run.Path, callgrind.Options{Args: run.Args[1:], Stdin: p.stdin, Env: run.Env,
					OutDir: cgDir, SplitAfter: corpus.WriteDone, Timeout: 5 * time.Minute, Launcher: true})
				if err != nil {
					t.Fatal(err)
				}
				if cg.ExitCode != wantCode || !bytes.Equal(cg.Stdout, want) {
					t.Fatalf("instrumented run under callgrind: exit %d (want %d), output %d bytes (want %d, same: %v)\n%s",
						cg.ExitCode, wantCode, len(cg.Stdout), len(want), bytes.Equal(cg.Stdout, want), cg.Stderr)
				}
				pr, err := processProfiles(prof)
				if err != nil {
					t.Fatal(err)
				}
				files := map[uint32]string{}
				var libc bool
				for _, m := range pr.Modules {
					files[m.Tag] = m.Path
					libc = libc || filepath.Base(m.Path) == "libc.so.6"
				}
				if len(pr.Modules) < 2 || !libc {
					t.Errorf("profile modules %v: want the program, its libraries and libc.so.6", pr.Modules)
				}
				runs, err := corpus.CheckSameRunModules(pr, files, cgDir)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range runs {
					t.Logf("%s: %d functions, %d blocks compared, %d differ", r.Module.Name(), r.Funcs, r.Blocks, len(r.Diffs))
					for i, d := range r.Diffs {
						if i == 10 {
							t.Errorf("%s: ... %d differences in all", r.Module.Name(), len(r.Diffs))
							break
						}
						t.Errorf("%s: %s block %s: blpp %d, callgrind %d %s", r.Module.Name(), d.Func, d.Addr, d.Blpp, d.Callgrind, d.Note)
					}
				}
			})
		}
	}
}

// setUpWhole does what blpp run does before it starts prog with every
// library instrumented (flow: --no-context): it returns the executable's
// copy and the loader's set-up, whose directory the test removes.
func setUpWhole(t *testing.T, prog string, flow bool) (string, *wholerun.Process) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	mode := addModeFlags(fs)
	sel := addLibFlags(fs)
	if flow {
		if err := fs.Parse([]string{"--no-context"}); err != nil {
			t.Fatal(err)
		}
	}
	pick, _, err := sel.compile()
	if err != nil {
		t.Fatal(err)
	}
	loader, err := wholerun.Interpreter(prog)
	if err != nil || loader == "" {
		t.Fatalf("%s: no interpreter (%v)", prog, err)
	}
	inst, err := cachedRewrite(prog, mode, true)
	if err != nil {
		t.Fatal(err)
	}
	wp, err := prepareLibs(io.Discard, loader, prog, mode, sel, pick, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wp.Close() })
	return inst, wp
}

// processProfiles reads the profile at prof or, when its name has %p,
// every process's profile merged as blpp merges them (readProfiles).
func processProfiles(prof string) (*cct.Profile, error) {
	if !strings.Contains(prof, "%p") {
		return cct.ReadFile(prof)
	}
	names, err := filepath.Glob(strings.ReplaceAll(prof, "%p", "*"))
	if err != nil {
		return nil, err
	}
	if len(names) < 2 {
		return nil, fmt.Errorf("%d profiles %s, want one per process", len(names), prof)
	}
	return readProfiles(names)
}
