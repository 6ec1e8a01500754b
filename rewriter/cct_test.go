package rewriter_test

// End-to-end tests of the calling context tree [DESIGN 7; Ammons, Ball,
// Larus 97]: the fixtures under testdata/cct/ (built here only, not part of
// the fixture matrix) are built with gcc and clang at -O0 and -O2,
// rewritten and run, and the tree the runtime wrote is compared with
//
//   - the tree the program's logic gives, written down here per fixture as
//     chains of function names (cctFixtures), summed over threads and
//     thread by thread; the expected trees are themselves checked against
//     callgrind's call counts per (caller, callee) pair;
//   - callgrind's call counts on the original binary: for every call (or
//     tail jump) from an instrumented function to an instrumented
//     function, the calls summed over contexts and threads (tree edges:
//     Record.Calls minus the calls folded onto the record; plus the folded
//     calls) equal callgrind's count for that instruction and target,
//     exactly;
//   - callgrind's instruction counts: block counts expanded per context
//     and summed over the contexts equal the report's, which equal
//     callgrind's execution count of each block's first instruction, and
//     the --no-context rewrite's, exactly;
//   - in each record of a fixture function, Calls equals the paths and
//     partial paths that begin at the function's entry.
//
// How callgrind reports what these fixtures do (valgrind 3.19, measured on
// tailcall.c, signal.c and crt's frame_dummy):
//
//   - A tail jump (f ends with `jmp g`, direct or indirect) is a calls=
//     line from the jump instruction to g's entry, exactly like a call; it
//     is not listed among the jumps. Mutual recursion by tail jumps (ping
//     jmp pong jmp ping) shows as calls between recursion levels ping'2,
//     pong'2, which the callgrind package sums. So a tail-jump edge of the
//     tree is compared with Calls[jump address, target] like a call.
//   - Except where callgrind cannot tell the two functions apart: crt's
//     frame_dummy, register_tm_clones and friends are symbols of size 0,
//     and frame_dummy's `jmp register_tm_clones` is listed as a jump
//     (Jumps), not a call. A jump from one instrumented function to
//     another's entry is therefore counted as a call whichever way
//     callgrind lists it.
//   - A callback from the C library (qsort calling the comparator) is a
//     call from the library's instruction (External), never from the
//     instrumented `call qsort`, so the tree's edge main/sort_all ->
//     cmp_keys at the `call qsort` site has no callgrind counterpart. Such
//     edges are checked against the program's own count instead, and
//     callgrind only confirms that the site enters code outside the
//     instrumented functions. So are main under _start (through
//     __libc_start_main) and crt's init and fini functions.
//   - A signal handler's entry has no caller arc at all; the calls it
//     makes are ordinary calls.
//   - A thread's start routine is called from the C library's start_thread
//     (External).
//
// What the runtime does where a choice exists, and the tests expect: a
// thread's start routine is the root of its thread's tree; a handler of a
// signal raised with raise() is a callback under the call site of raise;
// a direct tail jump makes the callee a child of the jumping function at
// the jump; an indirect tail jump leaves no mark (docs/decisions.md 31),
// so its callee lands under the jumping function's caller, at the call of
// the jumping function (indirectTail).

import (
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// cctConfigs: gcc and clang, unoptimised and -O2, PIE and not.
var cctConfigs = []fixture.Config{
	{CC: "gcc", Opt: "-O0"},
	{CC: "gcc", Opt: "-O2", PIE: true},
	{CC: "clang", Opt: "-O0", PIE: true},
	{CC: "clang", Opt: "-O2"},
}

// A cctTree is a calling context tree written as chains of function
// names, summed over the records that have the same chain (a function
// called from two call sites of its caller has two records, one chain).
//
// A chain starts at an anchor: main, or a thread's root record of a
// fixture function (a thread's start routine); what lies above main
// (_start, the C library calling main back) is left out. Each further
// element is the function called, followed by "(via X)" when the call
// site is not a direct call of that function: X is "*" for an indirect
// call, "jmp" for a direct tail jump, "jmp*" for an indirect one, the
// name of the function called directly at the site when the element was
// reached through it (a callback: "cmp_keys(via qsort)"), and "-" when
// the record has no call site.
type cctTree struct {
	// Calls maps a chain to the activations of its records (Record.Calls,
	// folded recursive calls included).
	Calls map[string]uint64
	// Folded maps "FROM -> STEP = TO" to the calls folded onto an
	// ancestor record: FROM is the caller's chain, STEP the callee as an
	// element (with its via), TO the chain of the record the call was
	// folded onto.
	Folded map[string]uint64
}

func newTree() cctTree { return cctTree{Calls: map[string]uint64{}, Folded: map[string]uint64{}} }

func (t cctTree) add(u cctTree) {
	for k, n := range u.Calls {
		t.Calls[k] += n
	}
	for k, n := range u.Folded {
		t.Folded[k] += n
	}
}

func (t cctTree) empty() bool { return len(t.Calls) == 0 && len(t.Folded) == 0 }

// String lists the tree one entry a line, sorted.
func (t cctTree) String() string {
	var lines []string
	for k, n := range t.Calls {
		lines = append(lines, fmt.Sprintf("%s calls=%d", k, n))
	}
	for k, n := range t.Folded {
		lines = append(lines, fmt.Sprintf("folded %s count=%d", k, n))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// diff describes how got differs from want, one line per entry.
func (want cctTree) diff(got cctTree) string {
	var lines []string
	cmp := func(kind string, w, g map[string]uint64) {
		for k, n := range w {
			if g[k] != n {
				lines = append(lines, fmt.Sprintf("%s %s: got %d, want %d", kind, k, g[k], n))
			}
		}
		for k, n := range g {
			if _, ok := w[k]; !ok {
				lines = append(lines, fmt.Sprintf("%s %s: got %d, want none", kind, k, n))
			}
		}
	}
	cmp("chain", want.Calls, got.Calls)
	cmp("folded", want.Folded, got.Folded)
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// A cctFixture is a program of testdata/cct/ and what its tree must be.
type cctFixture struct {
	src string
	// own are the fixture's functions, main included: each must be
	// instrumented, and no record of one may lie outside an anchored
	// chain.
	own []string
	// tail lists the tail jumps the fixture exists for, as "f>g" (a
	// direct jump from f to g's entry) or "f>*" (an indirect jump out of
	// f): a build without them fails the test. Such fixtures are built
	// at -O2 only. Every other fixture must have no tail jump in its own
	// functions: its expected tree assumes calls.
	tail []string
	// want returns the tree of each thread that runs fixture code, in any
	// order, given the program's standard output.
	want func(t *testing.T, stdout string) []cctTree
}

// one is the want of a single-threaded fixture whose tree does not depend
// on its output.
func one(tr cctTree) func(*testing.T, string) []cctTree {
	return func(*testing.T, string) []cctTree { return []cctTree{tr} }
}

var cctFixtures = []cctFixture{
	{
		// depth(999) from main: 1000 activations, 999 folded; depth(3)
		// from a second site of main: 4 and 3; bottom once at each
		// bottom.
		src: "deeprec.c",
		own: []string{"main", "depth", "bottom"},
		want: one(cctTree{
			Calls: map[string]uint64{
				"main":              1,
				"main/depth":        1000 + 4,
				"main/depth/bottom": 2,
			},
			Folded: map[string]uint64{
				"main/depth -> depth = main/depth": 999 + 3,
			},
		}),
	},
	{
		// is_even(25): is_even for 25, 23, ..., 1 (13), is_odd for 24,
		// ..., 0 (13); the 12 calls back to is_even fold onto
		// main/is_even, while is_odd, not on the chain main/is_even,
		// stays a child. is_odd(7): 4 and 4, 3 folded.
		src: "mutual.c",
		own: []string{"main", "is_even", "is_odd"},
		want: one(cctTree{
			Calls: map[string]uint64{
				"main":                1,
				"main/is_even":        13,
				"main/is_even/is_odd": 13,
				"main/is_odd":         4,
				"main/is_odd/is_even": 4,
			},
			Folded: map[string]uint64{
				"main/is_even/is_odd -> is_even = main/is_even": 12,
				"main/is_odd/is_even -> is_odd = main/is_odd":   3,
			},
		}),
	},
	{
		// dispatch(10) through ops[i % 3]: op_add for i = 0, 3, 6, 9,
		// op_mul for 1, 4, 7 (each calling scale), op_neg for 2, 5, 8;
		// main calls op_add once directly.
		src: "fptable.c",
		own: []string{"main", "dispatch", "op_add", "op_mul", "op_neg", "scale"},
		want: one(cctTree{
			Calls: map[string]uint64{
				"main":                              1,
				"main/dispatch":                     1,
				"main/dispatch/op_add(via *)":       4,
				"main/dispatch/op_mul(via *)":       3,
				"main/dispatch/op_mul(via *)/scale": 3,
				"main/dispatch/op_neg(via *)":       3,
				"main/op_add":                       1,
			},
		}),
	},
	{
		// qsort calls cmp_keys back, under main/sort_all at the call
		// site of qsort; the program prints how often. main calls
		// cmp_keys once directly.
		src: "qsortcb.c",
		own: []string{"main", "sort_all", "cmp_keys", "key_of"},
		want: func(t *testing.T, stdout string) []cctTree {
			n := outputNumber(t, stdout, "comparisons")
			return []cctTree{{
				Calls: map[string]uint64{
					"main":                              1,
					"main/sort_all":                     1,
					"main/sort_all/cmp_keys(via qsort)": n,
					"main/sort_all/cmp_keys(via qsort)/key_of": 2 * n,
					"main/cmp_keys":        1,
					"main/cmp_keys/key_of": 2,
				},
			}}
		},
	},
	{
		// Six rounds of run -> level1 -> level2 -> level3; two of them
		// longjmp from level3 back to run. after and finish come after
		// the jumps, under run and main.
		src: "longjmp.c",
		own: []string{"main", "run", "level1", "level2", "level3", "after", "finish"},
		want: one(cctTree{
			Calls: map[string]uint64{
				"main":                          1,
				"main/run":                      1,
				"main/run/level1":               6,
				"main/run/level1/level2":        6,
				"main/run/level1/level2/level3": 6,
				"main/run/after":                1,
				"main/finish":                   1,
			},
		}),
	},
	{
		// raise() runs the handler before it returns: the handler is
		// entered from uninstrumented code while raiser's call of raise
		// is active, like a callback, so it sits under main/raiser at
		// the call site of raise.
		src: "signal.c",
		own: []string{"main", "raiser", "on_usr1", "in_handler", "after_signals"},
		want: one(cctTree{
			Calls: map[string]uint64{
				"main":                           1,
				"main/raiser":                    1,
				"main/raiser/on_usr1(via raise)": 3,
				"main/raiser/on_usr1(via raise)/in_handler": 3,
				"main/after_signals":                        1,
			},
		}),
	},
	{
		// main calls step once; thread id runs worker, the root of its
		// thread's tree (the C library calls it, with no instrumented
		// caller in that thread): step id+1 times, and for id >= 2
		// down(id), id+1 activations of which id fold.
		src: "pthreads.c",
		own: []string{"main", "worker", "step", "leaf", "down"},
		want: func(*testing.T, string) []cctTree {
			trees := []cctTree{{
				Calls: map[string]uint64{"main": 1, "main/step": 1, "main/step/leaf": 1},
			}}
			for id := uint64(0); id < 4; id++ {
				tr := cctTree{
					Calls:  map[string]uint64{"worker": 1, "worker/step": id + 1, "worker/step/leaf": id + 1},
					Folded: map[string]uint64{},
				}
				if id >= 2 {
					tr.Calls["worker/down"] = id + 1
					tr.Folded["worker/down -> down = worker/down"] = id
				}
				trees = append(trees, tr)
			}
			return trees
		},
	},
	{
		// top jmp mid jmp leaf, five times; ping(6) and pong jump to
		// each other: ping for 6, 4, 2, 0 (the last three folded back
		// onto main/ping), pong for 5, 3, 1. via_ptr's indirect tail
		// jump reaches leaf twice and other twice; the runtime marks
		// only direct tail jumps (docs/decisions.md 31: the call-site
		// list holds calls and direct tail jumps), so leaf and other
		// land where via_ptr's caller left its mark: under main, at
		// main's call of via_ptr ("leaf(via via_ptr)"), not under
		// main/via_ptr at the jump. See indirectTail.
		src:  "tailcall.c",
		own:  []string{"main", "top", "mid", "leaf", "other", "via_ptr", "ping", "pong"},
		tail: []string{"top>mid", "mid>leaf", "via_ptr>*", "ping>pong", "pong>ping"},
		want: one(cctTree{
			Calls: map[string]uint64{
				"main":                                1,
				"main/top":                            5,
				"main/top/mid(via jmp)":               5,
				"main/top/mid(via jmp)/leaf(via jmp)": 5,
				"main/via_ptr":                        4,
				"main/leaf(via via_ptr)":              2,
				"main/other(via via_ptr)":             2,
				"main/ping":                           4,
				"main/ping/pong(via jmp)":             3,
			},
			Folded: map[string]uint64{
				"main/ping/pong(via jmp) -> ping(via jmp) = main/ping": 3,
			},
		}),
	},
}

// outputNumber returns the number after "key " in the program's output.
func outputNumber(t *testing.T, stdout, key string) uint64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(key) + ` ([0-9]+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no line %q in the output:\n%s", key+" N", stdout)
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCCT runs every fixture of testdata/cct/ in every configuration of
// cctConfigs (tail-call fixtures at -O2 only).
func TestCCT(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	fixture.RequireTool(t, "objdump", "binutils")
	for _, fx := range cctFixtures {
		for _, c := range cctConfigs {
			if len(fx.tail) > 0 && c.OptLevel() < 2 {
				continue
			}
			fx, c := fx, c
			t.Run(strings.TrimSuffix(fx.src, ".c")+"/"+c.String(), func(t *testing.T) {
				t.Parallel()
				checkCCT(t, fx, c)
			})
		}
	}
}

func checkCCT(t *testing.T, fx cctFixture, c fixture.Config) {
	what := fx.src + " " + c.String()
	orig := fixture.Build(t, filepath.Join("cct", fx.src), c)
	bin := loadBinary(t, orig)
	bin.checkTailJumps(t, what, fx)

	dir := t.TempDir()
	inst := rewriteBinary(t, orig, filepath.Join(dir, strings.TrimSuffix(fx.src, ".c")+".blpp"))
	native := runProc(t, orig, nil)
	if native.code != 0 || native.sig != 0 {
		t.Fatalf("%s: the original misbehaves: %s", what, native)
	}
	profPath := filepath.Join(dir, "blpp.out")
	got := runProc(t, inst, nil, "BLPP_PROFILE="+profPath)
	sameBehaviour(t, what, native, got)
	prof, err := cct.ReadFile(profPath)
	if err != nil {
		t.Fatalf("%s: profile: %v", what, err)
	}
	cg := callgrindOf(t, what, orig, nil, native)

	wants := fx.want(t, string(native.stdout))
	own := map[string]bool{}
	for _, n := range fx.own {
		own[n] = true
	}
	// The expected tree against callgrind, independently of blpp.
	checkWantAgainstCallgrind(t, what, wants, bin, cg, own)

	// Block counts: the whole profile (report's sum over contexts) and
	// each context expanded on its own, then summed.
	doc := compareCounts(t, what, inst, prof, cg, countCheck{own: fx.own})
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var infos []cct.FuncInfo
	for _, mf := range tab.Funcs {
		infos = append(infos, cct.FuncInfo{NumPaths: mf.NumPaths, NumBlocks: uint32(len(mf.Blocks)), NumCallSites: uint32(len(mf.CallSites))})
	}
	if err := prof.CheckAgainst(infos); err != nil {
		t.Fatalf("%s: the profile does not fit the binary: %v", what, err)
	}
	ctx := newContexts(t, what, tab, prof)
	ctx.checkBlockSums(t, doc)

	if prof.Flags&cct.FlagFlowOnly != 0 || !hasContext(prof) {
		t.Fatalf("%s: the default rewrite wrote a flow-only profile (flags %v), not a calling context tree", what, prof.Flags)
	}
	checkFlowOnly(t, what, orig, dir, doc)

	// The tree itself.
	ctx.checkRecordCalls(t, own)
	trees := ctx.trees(t, bin, own)
	checkTrees(t, what, wants, trees)

	// Calls per call instruction against callgrind.
	ctx.checkSitesAgainstCallgrind(t, bin, cg)
}

// checkFlowOnly rewrites orig with --no-context, runs it, and requires
// its block counts to equal doc's (the context-sensitive profile's, summed
// over contexts) block for block.
func checkFlowOnly(t *testing.T, what, orig, dir string, doc *report.PathDoc) {
	t.Helper()
	inst := rewriteWith(t, orig, filepath.Join(dir, "flow.blpp"), rewriter.Options{NoContext: true})
	profPath := filepath.Join(dir, "flow.out")
	if r := runProc(t, inst, nil, "BLPP_PROFILE="+profPath); r.code != 0 || r.sig != 0 {
		t.Fatalf("%s --no-context: %s", what, r)
	}
	prof, err := cct.ReadFile(profPath)
	if err != nil {
		t.Fatalf("%s --no-context: profile: %v", what, err)
	}
	if prof.Flags&cct.FlagFlowOnly == 0 {
		t.Errorf("%s --no-context: profile flags %v, want flow-only", what, prof.Flags)
	}
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flow, err := report.MakePaths(inst, tab, prof)
	if err != nil {
		t.Fatalf("%s --no-context: report: %v", what, err)
	}
	byName := map[string]*report.PathFunc{}
	for i := range flow.Functions {
		byName[flow.Functions[i].Name] = &flow.Functions[i]
	}
	for _, fn := range doc.Functions {
		g := byName[fn.Name]
		switch {
		case !fn.Instrumented || fn.PartialUnknown > 0:
			continue
		case g == nil || len(g.Blocks) != len(fn.Blocks):
			t.Errorf("%s --no-context: %s has other blocks", what, fn.Name)
			continue
		case g.PartialUnknown > 0:
			t.Errorf("%s --no-context: %s has %d partial activations of unknown location", what, fn.Name, g.PartialUnknown)
			continue
		}
		for i, b := range fn.Blocks {
			if g.Blocks[i] != b {
				t.Errorf("%s: %s block %s: %d summed over contexts, %d flow-only (block %s)", what, fn.Name, b.Addr, b.Count, g.Blocks[i].Count, g.Blocks[i].Addr)
			}
		}
	}
}

// hasContext says whether the profile holds a calling context tree (some
// record has a parent).
func hasContext(p *cct.Profile) bool {
	for _, th := range p.Threads {
		for _, r := range th.Records {
			if r.Parent >= 0 {
				return true
			}
		}
	}
	return false
}

// checkTrees compares the threads' trees with the expected ones: first
// summed over the threads, then thread by thread (as a multiset: thread
// order is the runtime's).
func checkTrees(t *testing.T, what string, wants, gots []cctTree) {
	t.Helper()
	wsum, gsum := newTree(), newTree()
	for _, w := range wants {
		wsum.add(w)
	}
	for _, g := range gots {
		gsum.add(g)
	}
	if d := wsum.diff(gsum); d != "" {
		t.Errorf("%s: calling context tree, summed over threads, differs:\n%s\ngot:\n%s", what, d, gsum)
		return
	}
	var ws, gs []string
	for _, w := range wants {
		ws = append(ws, normTree(w).String())
	}
	for _, g := range gots {
		gs = append(gs, normTree(g).String())
	}
	sort.Strings(ws)
	sort.Strings(gs)
	if !reflect.DeepEqual(ws, gs) {
		t.Errorf("%s: the threads' trees differ (the sums agree)\ngot:\n%s\nwant:\n%s",
			what, strings.Join(gs, "\n--\n"), strings.Join(ws, "\n--\n"))
	}
}

// normTree drops zero entries.
func normTree(t cctTree) cctTree {
	out := newTree()
	for k, n := range t.Calls {
		if n != 0 {
			out.Calls[k] = n
		}
	}
	for k, n := range t.Folded {
		if n != 0 {
			out.Folded[k] = n
		}
	}
	return out
}

// splitStep splits a chain element "f(via X)" into f and X ("" for a
// direct call).
func splitStep(s string) (name, via string) {
	if i := strings.Index(s, "(via "); i >= 0 && strings.HasSuffix(s, ")") {
		return s[:i], s[i+5 : len(s)-1]
	}
	return s, ""
}

// lastStep returns the last element of a chain.
func lastStep(chain string) string {
	return chain[strings.LastIndex(chain, "/")+1:]
}

// transfers says whether a via describes a call or jump of the callee
// itself (direct or indirect), which callgrind sees as a call of it,
// rather than a callback through other code.
func transfers(via string) bool {
	switch via {
	case "", "*", "jmp", "jmp*":
		return true
	}
	return false
}

// indirectTail recognises an element reached "via f" where f is a
// fixture function: instrumented code does not call back, so f reached it
// by an indirect tail jump, which the runtime does not mark
// (docs/decisions.md 31): the callee's record sits under f's caller, at
// the site that called f. It returns f, the function that really made the
// transfer.
func indirectTail(via string, own map[string]bool) (string, bool) {
	return via, own[via]
}

// checkWantAgainstCallgrind compares the calls between fixture functions
// that the expected trees imply (tree edges and folded calls, callbacks
// left out) with callgrind's, summed per (caller, callee) pair. This
// checks the expectations written above against the machine, so that a
// failure of the blpp side is the runtime's.
func checkWantAgainstCallgrind(t *testing.T, what string, wants []cctTree, bin *binaryInfo, cg *callgrind.Profile, own map[string]bool) {
	t.Helper()
	want := map[[2]string]uint64{}
	for _, tr := range wants {
		into := map[string]uint64{} // chain → folded calls onto it
		for k, n := range tr.Folded {
			from, rest, _ := strings.Cut(k, " -> ")
			step, to, _ := strings.Cut(rest, " = ")
			into[to] += n
			callee, via := splitStep(step)
			caller, _ := splitStep(lastStep(from))
			if c, ok := indirectTail(via, own); ok {
				caller = c
			} else if !transfers(via) {
				continue
			}
			want[[2]string{caller, callee}] += n
		}
		for k, n := range tr.Calls {
			i := strings.LastIndex(k, "/")
			if i < 0 {
				continue // an anchor
			}
			callee, via := splitStep(k[i+1:])
			caller, _ := splitStep(lastStep(k[:i]))
			if c, ok := indirectTail(via, own); ok {
				caller = c
			} else if !transfers(via) {
				continue
			}
			if into[k] > n {
				t.Fatalf("%s: expected tree: %d calls folded onto %s, which has %d", what, into[k], k, n)
			}
			want[[2]string{caller, callee}] += n - into[k]
		}
	}
	got := map[[2]string]uint64{}
	for k, n := range cg.Calls {
		caller := bin.funcAt(k[0])
		callee, ok := bin.entries[k[1]]
		if ok && own[caller] && own[callee] {
			got[[2]string{caller, callee}] += n
		}
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: the expected tree has %d calls %s -> %s, callgrind %d", what, n, k[0], k[1], got[k])
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok && n > 0 {
			t.Errorf("%s: callgrind counts %d calls %s -> %s, the expected tree none", what, n, k[0], k[1])
		}
	}
}
