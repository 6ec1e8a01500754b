package rewriter_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// dispatchFixtures are the jump-table fixtures of issue 23 and the
// functions whose jumps only the table analysis of decision 66 resolves:
// cgoto.c's replicated computed-goto dispatch (one table, a dozen jumps,
// no bounds check), switchcall.c's switches whose table base lives in a
// callee-saved register across calls.
var dispatchFixtures = []struct {
	src   string
	funcs []string
}{
	// cgoto.c's table holds absolute addresses, which a PIE relocates
	// at load time: its copy counts entries from the base register
	// (decision 72).
	{src: "cgoto.c", funcs: []string{"run"}},
	// cgoto96.c's 95 dispatch jumps share their path ends per handler
	// (decision 134).
	{src: "cgoto96.c", funcs: []string{"run"}},
	{src: "switchcall.c", funcs: []string{"tokens", "classify"}},
	// unguarded.c's switches have no bounds check (Lua's collector's
	// shape) or impossible cases inside their range, which clang aims
	// past the function's end (decision 98).
	{src: "unguarded.c", funcs: []string{"mark", "kind", "step", "color"}},
	// constjump.c's classify jumps through a register that holds one
	// label on one side of its range check (glibc's vfprintf); taken
	// for a tail call, its target ran uncounted.
	{src: "constjump.c", funcs: []string{"classify", "classify_back"}},
	// cgslot.c reloads its table's address from a frame slot before
	// every dispatch (decision 168): gcc's PIE loads overwrite their
	// base, and clang folds the index into the address (lea
	// (%rax,%rcx,8),%rax; jmp *(%rax)), so a PIE's copy of the table
	// counts each entry from itself.
	{src: "cgslot.c", funcs: []string{"run"}},
	// leajump.c adds the table's base to the entry with lea, keeping
	// the flags the cases read (decision 168); taken for an indirect
	// tail call, its cases ran uncounted. Its trap_dispatch has a dead
	// case outside the function that runs into ud2.
	{src: "leajump.c", funcs: []string{"lea_dispatch", "trap_dispatch"}},
}

// dispatchConfigs are the stripped gcc and clang builds at -O2 and -O3,
// PIE and not.
func dispatchConfigs() []fixture.Config {
	var cs []fixture.Config
	for _, cc := range []string{"gcc", "clang"} {
		for _, opt := range []string{"-O2", "-O3"} {
			for _, pie := range []bool{true, false} {
				cs = append(cs, fixture.Config{CC: cc, Opt: opt, PIE: pie, Strip: true})
			}
		}
		// With CET every label and case starts with endbr64: the
		// handlers of cgoto.c are table targets that begin with it
		// (decision 98: it writes no register, so the table base stays
		// known across it).
		for _, pie := range []bool{true, false} {
			cs = append(cs, fixture.Config{CC: cc, Opt: "-O2", PIE: pie, Strip: true, Extra: []string{"-fcf-protection=full"}})
		}
	}
	return cs
}

// TestDispatchTables rewrites each dispatch fixture in every configuration,
// requires identical behaviour, the dispatch functions instrumented (a
// function left out fails the test), and every block count of every
// instrumented function equal to callgrind's.
func TestDispatchTables(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range dispatchConfigs() {
		c := c
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, fx := range dispatchFixtures {
				want := map[string]bool{}
				for _, fn := range fx.funcs {
					want[fn] = true
				}
				checkFixtureFuncs(t, fx.src, c, want)
			}
		})
	}
}

// checkFixtureFuncs rewrites fixture src built in configuration c,
// requires its behaviour and every block count equal to callgrind's
// (checkExact), and each function named in want instrumented or not as
// want says.
func checkFixtureFuncs(t *testing.T, src string, c fixture.Config, want map[string]bool) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	entries, tab := exactFixtureMeta(t, src, c, names)
	for name, entry := range entries {
		found := false
		for _, mf := range tab.Funcs {
			if mf.Entry != entry {
				continue
			}
			found = true
			if mf.Instrumented != want[name] {
				t.Errorf("%s %s: %s (%#x) instrumented: %v, want %v (%s)", src, c, name, entry, mf.Instrumented, want[name], mf.Reason)
			}
		}
		if !found {
			t.Errorf("%s %s: %s (%#x) is not in the metadata", src, c, name, entry)
		}
	}
}

// exactFixtureMeta rewrites fixture src built in configuration c after
// checkExact, and returns the addresses of the named function symbols
// (from an unstripped build) and the rewritten binary's metadata.
func exactFixtureMeta(t *testing.T, src string, c fixture.Config, names []string) (map[string]uint64, *meta.Table) {
	t.Helper()
	twin := c
	twin.Strip = false
	addrs := funcAddrs(t, fixture.Build(t, src, twin), names...)
	checkExact(t, src, c)
	_, inst := rewriteTo(t, src, c, t.TempDir())
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	return addrs, tab
}

// luaCollector are the functions of Lua 5.4's collector whose switches
// (switch (o->tt), other values impossible) clang compiles to tables
// without a bounds check whose impossible cases lead past the function
// (decision 98). Inlining decides which of them exist in a build.
var luaCollector = []string{"propagatemark", "reallymarkobject", "traverseephemeron", "luaC_barrierback_", "genlink"}

// TestLuaCollector rewrites Lua interpreters and runs luagc.lua, a
// collector-heavy script, under the same-run oracle: output identical to
// the original's, every block count equal to callgrind's. Debian's
// lua5.4 (gcc) must have no function left out for an indirect jump; Lua
// built with clang from the source blpp-bench --pgo fetches (or
// BLPP_LUA_SRC) must have its collector functions instrumented.
func TestLuaCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Lua under callgrind")
	}
	fixture.RequireTool(t, "valgrind", "valgrind")
	script := filepath.Join(fixture.Root(t), "testdata", "luagc.lua")
	t.Run("debian", func(t *testing.T) {
		lua := "/usr/bin/lua5.4"
		if _, err := os.Stat(lua); err != nil {
			fixture.RequireTool(t, "lua5.4", "lua5.4")
		}
		checkLua(t, lua, script, nil)
	})
	t.Run("clang", func(t *testing.T) {
		src := luaSource()
		if src == "" {
			t.Skip("no Lua 5.4 source: set BLPP_LUA_SRC, or run blpp-bench --pgo once to fetch it")
		}
		cc := fixture.RequireTool(t, "clang-16", "clang-16")
		exe := filepath.Join(t.TempDir(), "lua")
		args := []string{"-O2", "-DLUA_USE_LINUX", "-I" + src, "-o", exe}
		for _, f := range []string{"lapi", "lcode", "lctype", "ldebug", "ldo", "ldump", "lfunc", "lgc", "llex", "lmem",
			"lobject", "lopcodes", "lparser", "lstate", "lstring", "ltable", "ltm", "lundump", "lvm", "lzio",
			"lauxlib", "lbaselib", "lcorolib", "ldblib", "liolib", "lmathlib", "loadlib", "loslib", "lstrlib",
			"ltablib", "lutf8lib", "linit", "lua"} {
			args = append(args, filepath.Join(src, f+".c"))
		}
		if out, err := exec.Command(cc, append(args, "-lm", "-ldl")...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cc, err, out)
		}
		checkLua(t, exe, script, luaCollector)
	})
}

// luaSource finds Lua 5.4's src directory: BLPP_LUA_SRC, or the copy
// blpp-bench --pgo keeps in the user's cache directory.
func luaSource() string {
	cands := []string{os.Getenv("BLPP_LUA_SRC")}
	if dir, err := os.UserCacheDir(); err == nil {
		m, _ := filepath.Glob(filepath.Join(dir, "blpp-bench", "lua5.4", "lua-5.4.*", "src"))
		cands = append(cands, m...)
	}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(c, "lgc.c")); err == nil {
			return c
		}
		if _, err := os.Stat(filepath.Join(c, "src", "lgc.c")); err == nil {
			return filepath.Join(c, "src")
		}
	}
	return ""
}

// checkLua rewrites lua, requires no function left out for an indirect
// jump and each of want that the binary has instrumented, and runs
// script under the same-run oracle.
func checkLua(t *testing.T, lua, script string, want []string) {
	dir := t.TempDir()
	inst := rewriteBinary(t, lua, filepath.Join(dir, "lua.blpp"))
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	names := map[string]bool{}
	for _, mf := range tab.Funcs {
		names[mf.Name] = mf.Instrumented
		if !mf.Instrumented && strings.Contains(mf.Reason, "indirect jump") {
			t.Errorf("%s: %s (%#x) left out: %s", lua, mf.Name, mf.Entry, mf.Reason)
		}
	}
	found := 0
	for _, n := range want {
		if inst, ok := names[n]; ok {
			found++
			if !inst {
				t.Errorf("%s: %s is not instrumented", lua, n)
			}
		}
	}
	if len(want) > 0 && found == 0 {
		t.Errorf("%s: none of %v is a function of the build", lua, want)
	}
	native, err := exec.Command(lua, script, "3000").Output()
	if err != nil {
		t.Fatalf("%s: %v", lua, err)
	}
	sr, cg, err := corpus.RunSameRun(inst, filepath.Join(dir, "samerun"), callgrind.Options{Args: []string{script, "3000"}, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatalf("same run: %v", err)
	}
	if cg.ExitCode != 0 || !bytes.Equal(cg.Stdout, native) {
		t.Errorf("rewritten %s: exit %d, output %q, want %q", lua, cg.ExitCode, cg.Stdout, native)
	}
	if sr.Blocks == 0 || len(sr.Partial) > 0 {
		t.Errorf("same run: %d blocks compared, partial %v", sr.Blocks, sr.Partial)
	}
	for i, d := range sr.Diffs {
		if i == 10 {
			break
		}
		t.Errorf("same run: %s %s: blpp %d, callgrind %d %s", d.Func, d.Addr, d.Blpp, d.Callgrind, d.Note)
	}
}

// TestPIELoadFlagsLive: in a PIE, a load of an absolute table that
// overwrites its base becomes an add of the entry to the base only where
// the flags are dead after it (decision 168). leajump.c's flags_dispatch
// reads, in one case, the carry set before the jump: it stays out, with
// that reason, and the program behaves as the original; in a
// position-dependent build, which needs no add, it is instrumented.
func TestPIELoadFlagsLive(t *testing.T) {
	for _, pie := range []bool{true, false} {
		c := fixture.Config{CC: "gcc", Opt: "-O2", PIE: pie}
		orig := fixture.Build(t, "leajump.c", c)
		inst := filepath.Join(t.TempDir(), "prog.blpp")
		sum := rewriteSum(t, orig, inst, rewriter.Options{})
		var left *rewriter.Skipped
		for i := range sum.Skipped {
			if sum.Skipped[i].Name == "flags_dispatch" {
				left = &sum.Skipped[i]
			}
		}
		switch {
		case pie && (left == nil || !strings.Contains(left.Detail, "flags are live")):
			t.Errorf("%s: flags_dispatch left out: %+v, want it out because the flags are live after its load", c, left)
		case !pie && left != nil:
			t.Errorf("%s: flags_dispatch left out (%s), want it instrumented", c, left.Detail)
		}
		want, werr := exec.Command(orig).Output()
		run := exec.Command(inst)
		run.Env = append(os.Environ(), "BLPP_PROFILE="+filepath.Join(t.TempDir(), "prof"))
		got, err := run.Output()
		if werr != nil || err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: rewritten %q (%v), original %q (%v)", c, got, err, want, werr)
		}
	}
}

// TestComputedGoto rewrites the fixtures of decision 169 in every
// dispatch configuration: behaviour identical and every block equal to
// callgrind's. threaded.c is a direct-threaded interpreter whose handlers
// jump through the address each translated instruction holds: in a PIE
// the labels' relocations name the targets and run must be instrumented;
// an executable that is not position-independent stores the labels'
// addresses without relocations, and run must stay out. bsetjmp.c's
// guarded calls __builtin_setjmp, whose receiver only a longjmp from
// two functions down reaches; it must be instrumented everywhere.
// coldcase.c's classify (see below) is decision 169's third finding.
// offsetgoto.c threads its code as OCaml's interpreter does.
func TestComputedGoto(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	pie := func(c fixture.Config) bool { return c.PIE }
	cases := []struct {
		src, fn string
		want    func(fixture.Config) bool // whether fn must be instrumented
	}{
		{"threaded.c", "run", pie},
		// offsetgoto.c's handlers add a loaded offset (or a call's
		// result) to the first handler's label (decision 170).
		{"offsetgoto.c", "run", pie},
		{"bsetjmp.c", "guarded", func(fixture.Config) bool { return true }},
		// coldcase.c's unguarded table leads into the stripped .cold
		// fragment and back: an escape that joins the fragment. Without
		// PIE the fragment's address sits in the table like a pointer
		// stored in data, and it is not taken for a fragment; clang
		// keeps the case in the function.
		{"coldcase.c", "classify", func(c fixture.Config) bool { return c.PIE || c.CC == "clang" }},
	}
	for _, c := range dispatchConfigs() {
		c := c
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, fx := range cases {
				checkFixtureFuncs(t, fx.src, c, map[string]bool{fx.fn: fx.want(c)})
			}
		})
	}
}

// TestOffsetDispatch: asmvm.c's interpreter is a block of assembly laid
// out as LuaJIT's: one FDE mid-frame throughout, a dispatch table built
// at run time from the block's start plus 16-bit offsets, entered by a
// jump and a call into its middle (decision 174). The block, with those
// two places as its entries (vm_enter is the lowest), and the functions
// that jump and call there must be instrumented, with every block
// exact, in PIE builds by gcc (whose assembler moves the block's first
// rules into a CIE of its own) and clang. With one jump into it the block
// is taken for run_vm's fragment; the call into it then makes a second
// entry of run_vm.
func TestOffsetDispatch(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true, Strip: true}, {CC: "clang", Opt: "-O2", PIE: true, Strip: true}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			names := []string{"vm_block", "vm_enter", "run_vm", "vm_pcall"}
			addrs, tab := exactFixtureMeta(t, "asmvm.c", c, names)
			// Each place starts a block of an instrumented function.
			for _, name := range names {
				found := false
				for _, mf := range tab.Funcs {
					for _, b := range mf.Blocks {
						found = found || mf.Instrumented && b.Addr == addrs[name]
					}
				}
				if !found {
					t.Errorf("asmvm.c %s: %s (%#x) starts no block of an instrumented function", c, name, addrs[name])
				}
			}
		})
	}
}

// TestDataInText: tablejump.c's sum_tab keeps a table in .text right
// after itself whose bytes the linear sweep reads as a jno into the
// function's body, behind a byte that does not decode. That is data, not
// code branching in: sum_tab must be instrumented, and exact (decision
// 172). twin_add is followed by code of no function that decodes and
// jumps into its body: it must stay out.
func TestDataInText(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true, Strip: true}, {CC: "clang", Opt: "-O2", Strip: true}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			checkFixtureFuncs(t, "tablejump.c", c, map[string]bool{"sum_tab": true, "twin_add": false})
		})
	}
}

// TestConstSlotJump: constslot.c's functions jump through single entries
// of their jump tables in .rodata, a fixed word whose address is in the
// instruction (gcc's grokdeclarator in cc1plus). Both must be
// instrumented, with every block exact: left out, the one with a frame
// ran uncounted; the frameless one's jump could pass for a tail call.
func TestConstSlotJump(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", Strip: true}, {CC: "clang", Opt: "-O2", Strip: true}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			checkFixtureFuncs(t, "constslot.c", c, map[string]bool{"slotjump": true, "slotleaf": true})
		})
	}
}

// TestPadRun rewrites padrun.c, whose checked_sum runs through the nops
// after its FDE's range into sum3, as glibc's __memcpy_chk variants run
// into __memcpy (decision 178): both instrumented, and checkExact finds
// every instruction callgrind ran in checked_sum's range, the nops
// among them, in a block of it with callgrind's count.
func TestPadRun(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2"}, {CC: "gcc", Opt: "-O2", Strip: true}, {CC: "clang", Opt: "-O2", Strip: true}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			checkFixtureFuncs(t, "padrun.c", c, map[string]bool{"checked_sum": true, "sum3": true})
		})
	}
}

// TestPartlyUnwound rewrites partunwind.c, whose triple_sum has an FDE
// for its first two instructions only: it stays uninstrumented, found so
// before the layout (leavePartlyUnwound names the addresses; the code
// generator's refusal, which costs a second layout round, does not),
// and the program runs as before with its other functions exact.
func TestPartlyUnwound(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	// Stripped of its symbols the function ends where its FDE does, and
	// falls off that end: the symbol's size is what makes it whole.
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2"}, {CC: "clang", Opt: "-O2", PIE: true}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			checkFixtureFuncs(t, "partunwind.c", c, map[string]bool{"triple_sum": false, "tidy": true})
			data, err := os.ReadFile(fixture.Build(t, "partunwind.c", c))
			if err != nil {
				t.Fatal(err)
			}
			_, sum, err := rewriter.Rewrite(data, rewriter.Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("%#x", funcAddrs(t, fixture.Build(t, "partunwind.c", c), "triple_sum")["triple_sum"])
			found := false
			for _, s := range sum.Skipped {
				if s.Entry != want {
					continue
				}
				found = true
				if s.Reason != "code generation" || !strings.Contains(s.Detail, "covers only part of the function (0x") {
					t.Errorf("triple_sum left out as %q: %q, want the layout's check (code generation: unwind information covers only part of the function (ADDR, not ADDR))", s.Reason, s.Detail)
				}
			}
			if !found {
				t.Errorf("triple_sum (%s) is not among the functions left out: %+v", want, sum.Skipped)
			}
		})
	}
}

// TestIPARA rewrites ipara.c, whose dispatch_sum keeps its jump table's
// base in %r11 across a call to weight (gcc's -fipa-ra does this with
// local functions that leave the register alone): the table resolves,
// dispatch_sum is instrumented and exact. With every call taken to
// clobber the caller-saved registers it stays out (decision 180).
func TestIPARA(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2"}, {CC: "gcc", Opt: "-O2", PIE: true, Strip: true}} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			checkFixtureFuncs(t, "ipara.c", c, map[string]bool{"dispatch_sum": true, "weight": true})
		})
	}
}
