package rewriter_test

// Binary kinds and code that runs before the runtime is ready (issue 6):
// IFUNC resolvers (dynamic PIE, non-PIE, static), DT_PREINIT_ARRAY and
// .init_array entries placed in every way the toolchain allows, a shared
// library's constructor calling back into the executable, -static-pie,
// hardening and ABI flags (-fcf-protection=full, -fstack-clash-protection,
// -mno-red-zone, -fno-omit-frame-pointer), alias symbols, hand-written
// assembly with several entry points, the static C library, and a Rust
// program. Each is built from testdata/kinds, rewritten, run, compared
// with the original (stdout, stderr, exit status) and, for every
// instrumented function, with callgrind's block counts, exactly.

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// kindCase is one binary kind: how to build it, and what to check.
type kindCase struct {
	name string
	// build returns the executable built in configuration c into dir
	// (plus, for a library, the environment the run needs).
	build   func(t *testing.T, c fixture.Config, dir string) string
	configs []fixture.Config
	// own must be instrumented and exact in every configuration.
	own []string
	// ownOnly compares only own (static binaries: see checkExact).
	ownOnly func(c fixture.Config) bool
	// exclude are functions whose counts are known to differ, and why.
	exclude map[string]string
	// sameRun: the rewritten program behaves differently from the
	// original, by blpp's own doing (Rust's std skips its stack-overflow
	// handler set-up where it finds blpp's handler installed): callgrind's
	// run of the original is compared for own only, and every function
	// by the same-run oracle, against the rewritten program's own run.
	sameRun bool
	// check runs further checks on the rewrite's output.
	check func(t *testing.T, what string, c fixture.Config, orig, inst string, sum *rewriter.Summary, prof *cct.Profile)
}

// kindRow is a line of the summary table TestKinds logs.
type kindRow struct {
	kind, config        string
	instrumented, funcs int
	ok                  bool
}

var (
	kindRowsMu sync.Mutex
	kindRows   []kindRow
)

func fixtureBuild(name string) func(t *testing.T, c fixture.Config, dir string) string {
	return func(t *testing.T, c fixture.Config, dir string) string {
		return fixture.Build(t, name, c)
	}
}

// buildCC compiles srcs (relative to testdata) with c's compiler and flags
// plus extra into dir/out; no cache (the multi-file fixtures are small).
func buildCC(t *testing.T, c fixture.Config, dir, out string, srcs []string, extra ...string) string {
	t.Helper()
	cc := c.CC
	if cc == "" {
		cc = "gcc"
	}
	cc = fixture.RequireTool(t, cc, cc)
	root := filepath.Join(fixture.Root(t), "testdata")
	args := append(append([]string(nil), c.Flags()...), "-o", filepath.Join(dir, out))
	for _, s := range srcs {
		args = append(args, filepath.Join(root, s))
	}
	args = append(args, extra...) // libraries after the objects that use them
	if b, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, b)
	}
	return filepath.Join(dir, out)
}

// rustc finds rustc in PATH or in ~/.cargo/bin.
func rustc(t *testing.T) string {
	if p, err := exec.LookPath("rustc"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, ".cargo", "bin", "rustc")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return fixture.RequireTool(t, "rustc", "rustc")
}

func kindCases() []kindCase {
	both := func(link ...fixture.Config) []fixture.Config {
		var out []fixture.Config
		for _, cc := range []string{"gcc", "clang"} {
			for _, opt := range []string{"-O0", "-O2"} {
				for _, l := range link {
					l.CC, l.Opt = cc, opt
					out = append(out, l)
				}
			}
		}
		return out
	}
	pie, nopie, static, staticPIE := fixture.Config{PIE: true}, fixture.Config{}, fixture.Config{Static: true}, fixture.Config{PIE: true, Static: true}
	isStatic := func(c fixture.Config) bool { return c.Static }
	// Debian's crt*.o carry no IBT/SHSTK property, so the linker would
	// drop the bits; -z ibt -z shstk sets them as a CET-enabled
	// distribution's toolchain would.
	hardFlags := []string{"-fcf-protection=full", "-fstack-clash-protection", "-mno-red-zone", "-fno-omit-frame-pointer", "-Wl,-z,ibt,-z,shstk"}
	var hardened []fixture.Config
	for _, c := range both(pie, nopie) {
		c.Extra = hardFlags
		hardened = append(hardened, c)
	}
	return []kindCase{
		// The resolver is named by the IFUNC symbol, whose value is the
		// resolver's address.
		{name: "ifunc", build: fixtureBuild("kinds/ifunc.c"), configs: both(pie, nopie, static),
			own: []string{"main", "pick", "sum_ifunc"}, ownOnly: isStatic, check: checkEarly},
		{name: "init", build: fixtureBuild("kinds/init.c"), configs: both(pie, nopie, static),
			own: []string{"main", "work", "preinit", "by_section", "by_ctors", "ctor_plain", "ctor_101", "ctor_last", "dtor_plain", "dtor_200"}, ownOnly: isStatic,
			check: checkEarly},
		{name: "ctor", configs: both(pie, nopie), own: []string{"main", "hook"}, check: checkEarly,
			build: func(t *testing.T, c fixture.Config, dir string) string {
				lc := c
				lc.PIE, lc.Static = false, false
				lc.Extra = []string{"-fPIC", "-shared"}
				lib := buildCC(t, lc, dir, "libctor.so", []string{"ctor/lib.c"})
				return buildCC(t, c, dir, "ctor", []string{"ctor/main.c"}, lib, "-rdynamic", "-Wl,-rpath,"+dir)
			}},
		{name: "static", build: fixtureBuild("kinds/static.c"), configs: both(static, staticPIE),
			own: []string{"main", "by_length"}, ownOnly: isStatic},
		{name: "hardened", build: fixtureBuild("kinds/hardened.c"), configs: hardened,
			own:   []string{"main", "op_add", "op_sub", "op_mul", "op_xor", "classify", "big_frame", "vla", "leaf"},
			check: checkCETNote},
		{name: "alias", build: fixtureBuild("kinds/alias.c"), configs: both(pie, nopie), own: []string{"main"}},
		{name: "asm", configs: both(pie, nopie), own: []string{"main", "twice"}, check: checkAsm,
			build: func(t *testing.T, c fixture.Config, dir string) string {
				return buildCC(t, c, dir, "multi", []string{"kinds/multi_main.c", "kinds/multi.S"})
			}},
		{name: "rust", configs: []fixture.Config{{CC: "rustc", Opt: "-O0", PIE: true}, {CC: "rustc", Opt: "-O2", PIE: true}},
			own: []string{"main"}, sameRun: true,
			build: func(t *testing.T, c fixture.Config, dir string) string {
				rc := rustc(t)
				out := filepath.Join(dir, "rust")
				args := []string{"-C", "opt-level=" + strings.TrimPrefix(c.Opt, "-O"), "-o", out, filepath.Join(fixture.Root(t), "testdata", "kinds", "rust.rs")}
				if b, err := exec.Command(rc, args...).CombinedOutput(); err != nil {
					t.Fatalf("rustc %v: %v\n%s", args, err, b)
				}
				return out
			}},
	}
}

// TestKinds builds, rewrites and runs every binary kind, requires the
// original's behaviour and exact block counts, and logs a table of the
// results.
func TestKinds(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	t.Cleanup(func() { logKindTable(t) })
	for _, k := range kindCases() {
		for _, c := range k.configs {
			k, c := k, c
			t.Run(k.name+"/"+c.String(), func(t *testing.T) {
				t.Parallel()
				name := c
				name.Extra = nil
				row := kindRow{kind: k.name, config: name.String()}
				if len(c.Extra) > 0 {
					row.config += "+flags"
				}
				defer func() {
					row.ok = !t.Failed()
					kindRowsMu.Lock()
					kindRows = append(kindRows, row)
					kindRowsMu.Unlock()
				}()
				what := k.name + " " + c.String()
				dir := t.TempDir()
				orig := k.build(t, c, dir)
				data, err := os.ReadFile(orig)
				if err != nil {
					t.Fatal(err)
				}
				out, sum, err := rewriter.Rewrite(data, rewriter.Options{})
				if err != nil {
					t.Fatalf("%s: rewrite: %v", what, err)
				}
				row.instrumented, row.funcs = sum.Instrumented, sum.Functions
				inst := filepath.Join(dir, "prog.blpp")
				if err := os.WriteFile(inst, out, 0o755); err != nil {
					t.Fatal(err)
				}
				want := runProc(t, orig, nil)
				profPath := filepath.Join(dir, "blpp.out")
				got := runProc(t, inst, nil, "BLPP_PROFILE="+profPath)
				sameBehaviour(t, what, want, got)
				prof, err := cct.ReadFile(profPath)
				if err != nil {
					t.Fatalf("%s: profile: %v", what, err)
				}
				if k.check != nil {
					k.check(t, what, c, orig, inst, sum, prof)
				}
				cg := callgrindOf(t, what, orig, nil, want)
				ownOnly := k.ownOnly != nil && k.ownOnly(c)
				exclude := map[string]string{}
				for n, why := range k.exclude {
					exclude[n] = why
				}
				if k.sameRun {
					ownOnly = true
					sr, _, err := corpus.RunSameRun(inst, filepath.Join(dir, "samerun"), callgrind.Options{})
					if err != nil {
						t.Fatalf("%s: same run: %v", what, err)
					}
					if sr.Blocks == 0 || len(sr.Partial) > 0 || len(sr.Late) > 0 {
						t.Errorf("%s: same run: %d blocks compared, partial %v, late %v", what, sr.Blocks, sr.Partial, sr.Late)
					}
					for i, d := range sr.Diffs {
						if i == 10 {
							break
						}
						t.Errorf("%s: same run: %s %s: blpp %d, callgrind %d %s", what, d.Func, d.Addr, d.Blpp, d.Callgrind, d.Note)
					}
				}
				check := countCheck{own: k.own, ownOnly: ownOnly, exclude: exclude}
				if c.Static {
					// Static glibc's exit path runs after the exit hook
					// (the last .fini_array entry): _fini, flushing stdio,
					// _exit. The profile is written once more at _exit's
					// exit_group, so all of it is counted.
					check.own = append(check.own[:len(check.own):len(check.own)], staticExitPath...)
					check.ended = map[string]uint64{"_Exit": 1}
				}
				compareCounts(t, what, inst, prof, cg, check)
			})
		}
	}
}

func logKindTable(t *testing.T) {
	kindRowsMu.Lock()
	defer kindRowsMu.Unlock()
	sort.Slice(kindRows, func(i, j int) bool {
		if kindRows[i].kind != kindRows[j].kind {
			return kindRows[i].kind < kindRows[j].kind
		}
		return kindRows[i].config < kindRows[j].config
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%-9s %-28s %-20s %s\n", "kind", "config", "instrumented", "result")
	for _, r := range kindRows {
		res := "ok"
		if !r.ok {
			res = "FAIL"
		}
		share := 0.0
		if r.funcs > 0 {
			share = 100 * float64(r.instrumented) / float64(r.funcs)
		}
		fmt.Fprintf(&b, "%-9s %-28s %4d/%-4d %6.1f%%     %s\n", r.kind, r.config, r.instrumented, r.funcs, share, res)
	}
	t.Logf("binary kinds:\n%s", b.String())
}

// checkCETNote: a binary built with -fcf-protection=full carries the IBT
// and SHSTK bits in its .note.gnu.property; the rewritten one keeps them,
// without a warning, and every indirect-branch target of its new code
// starts with endbr64 (decision 95, ibtcheck_test.go).
func checkCETNote(t *testing.T, what string, c fixture.Config, orig, inst string, sum *rewriter.Summary, prof *cct.Profile) {
	t.Helper()
	before, ok := x86Features(t, orig)
	if !ok || before&3 != 3 {
		t.Fatalf("%s: the original's x86 feature bits are %#x (found %v), want IBT and SHSTK", what, before, ok)
	}
	after, ok := x86Features(t, inst)
	if !ok || after&3 != 3 {
		t.Errorf("%s: the rewritten binary's x86 feature bits are %#x (found %v), want IBT and SHSTK kept", what, after, ok)
	}
	if len(sum.Warnings) > 0 {
		t.Errorf("%s: the summary warns %q", what, sum.Warnings)
	}
	if st := requireIBT(t, what, orig, inst); st.Relocated == 0 || st.TableTargets == 0 {
		t.Errorf("%s: IBT check found no relocated entry or no jump table: %+v", what, st)
	}
}

// x86Features reads GNU_PROPERTY_X86_FEATURE_1_AND from the file's
// .note.gnu.property section.
func x86Features(t *testing.T, path string) (uint32, bool) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.gnu.property")
	if s == nil {
		return 0, false
	}
	d, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	const featureAnd = 0xc0000002
	for len(d) >= 16 {
		namesz, descsz := binary.LittleEndian.Uint32(d), binary.LittleEndian.Uint32(d[4:])
		desc := d[12+(namesz+3)&^3:]
		if uint32(len(desc)) < descsz {
			break
		}
		for p := desc[:descsz]; len(p) >= 8; {
			typ, sz := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
			if typ == featureAnd && sz >= 4 && len(p) >= 12 {
				return binary.LittleEndian.Uint32(p[8:]), true
			}
			next := 8 + (sz+7)&^7
			if uint32(len(p)) < next {
				break
			}
			p = p[next:]
		}
		if uint32(len(desc)) < (descsz+7)&^7 {
			break
		}
		d = desc[(descsz+7)&^7:]
	}
	return 0, false
}

// staticExitPath are static glibc's functions (Debian 12) that run after
// the exit hook when a program returns from main having printed.
var staticExitPath = []string{"__run_exit_handlers", "call_fini", "_IO_cleanup", "_IO_flush_all_lockp", "_IO_file_write", "new_do_write", "_Exit"}

// checkEarly: in a dynamic executable ld.so runs IFUNC resolvers,
// DT_PREINIT_ARRAY and shared libraries' constructors before the entry
// point; the runtime starts counting at the first of them (early_init),
// says so in the profile's statistics, and loses nothing. A static
// binary runs them after the entry point, where blpp_init has run.
func checkEarly(t *testing.T, what string, c fixture.Config, orig, inst string, sum *rewriter.Summary, prof *cct.Profile) {
	t.Helper()
	want := uint64(1)
	if c.Static {
		want = 0
	}
	if got := prof.Stats["early_start"]; got != want {
		t.Errorf("%s: stats early_start = %d, want %d", what, got, want)
	}
	if got := prof.Stats["early_uncounted"]; got != 0 {
		t.Errorf("%s: stats early_uncounted = %d, want 0", what, got)
	}
}

// checkAsm: of multi.S's entry points, sum_all jumps into the middle of
// sum_from: the two are one procedure with two entries (decision 85),
// instrumented. once is 4 bytes long, left alone with its reason. twice
// falls through into once, a tail call to a function entry: it is
// instrumented.
func checkAsm(t *testing.T, what string, c fixture.Config, orig, inst string, sum *rewriter.Summary, prof *cct.Profile) {
	t.Helper()
	want := map[string]string{"once": "too short"}
	for _, s := range sum.Skipped {
		if s.Name == "sum_all" || s.Name == "sum_from" {
			t.Errorf("%s: %s left alone because %q; want it instrumented with the other", what, s.Name, s.Reason)
		}
		if r, ok := want[s.Name]; ok {
			if s.Reason != r {
				t.Errorf("%s: %s left alone because %q, want %q", what, s.Name, s.Reason, r)
			}
			delete(want, s.Name)
		}
	}
	for n, r := range want {
		t.Errorf("%s: %s is instrumented; want it left alone (%s)", what, n, r)
	}
}
