package main

// The cfg command's renderings (text, JSON, DOT) against each other and
// against facts the fixtures are known to hold: jump tables, loops and
// the Ball-Larus path-number law checked on the JSON itself.

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// checkCFGText compares the text rendering with the JSON, function by
// function and line by line.
func checkCFGText(t *testing.T, text string, d *cfgDoc) {
	t.Helper()
	fi := -1
	var f *cfgFunc
	var nb, ne, nl, nt int
	finish := func() {
		if f == nil {
			return
		}
		if nb != len(f.Blocks) || ne != len(f.Edges) || nl != len(f.Loops) || nt != len(f.Tables) {
			t.Errorf("%s: text lists %d blocks, %d edges, %d loops, %d jump tables; JSON has %d, %d, %d, %d",
				f.Name, nb, ne, nl, nt, len(f.Blocks), len(f.Edges), len(f.Loops), len(f.Tables))
		}
	}
	for _, line := range strings.Split(text, "\n") {
		if m := cfgHeaderRE.FindStringSubmatch(line); m != nil {
			finish()
			fi++
			if fi >= len(d.Functions) {
				t.Fatalf("text has more functions than the JSON's %d", len(d.Functions))
			}
			f = &d.Functions[fi]
			nb, ne, nl, nt = 0, 0, 0, 0
			paths := "overflow"
			if f.Paths != nil {
				paths = fmt.Sprint(*f.Paths)
			}
			want := []string{f.Name, f.Entry, fmt.Sprint(f.Size), fmt.Sprint(len(f.Blocks)), fmt.Sprint(len(f.Edges)), fmt.Sprint(len(f.Loops)), paths}
			if !slices.Equal(m[1:], want) {
				t.Errorf("header %q, JSON says %q", line, want)
			}
			continue
		}
		if strings.HasPrefix(line, "function ") {
			t.Errorf("malformed function header %q", line)
			continue
		}
		if f == nil {
			if line != "" {
				t.Errorf("line before the first function: %q", line)
			}
			continue
		}
		if strings.Contains(line, "+-") {
			t.Errorf("%s: %q prints a negative increment as \"+-N\"", f.Name, strings.TrimSpace(line))
		}
		if m := cfgBlockRE.FindStringSubmatch(line); m != nil {
			if nb < len(f.Blocks) {
				b := f.Blocks[nb]
				want := []string{fmt.Sprint(b.ID), b.Addr, b.End, fmt.Sprint(b.Insts), fmt.Sprint(b.LoopDepth)}
				if !slices.Equal(m[1:], want) {
					t.Errorf("%s: block line %q, JSON says %q", f.Name, line, want)
				}
			}
			nb++
			continue
		}
		if m := cfgEdgeRE.FindStringSubmatch(line); m != nil {
			if ne < len(f.Edges) {
				e := f.Edges[ne]
				to := "EXIT"
				if e.To >= 0 {
					to = fmt.Sprintf("B%d", e.To)
				}
				mark := ""
				if e.Backedge {
					mark = "backedge"
				} else if e.Broken {
					mark = "broken"
				}
				if m[1] != fmt.Sprint(e.From) || m[2] != to || m[3] != e.Kind || m[4] != e.Target || m[5] != mark || m[6] != fmt.Sprint(e.Val) {
					t.Errorf("%s: edge line %q, JSON says %+v", f.Name, line, e)
				}
				if mark == "" {
					if m[7] != fmt.Sprint(e.Inc) {
						t.Errorf("%s: edge line %q shows increment %q, JSON says %d", f.Name, line, m[7], e.Inc)
					}
				} else if b := cfgBackRE.FindStringSubmatch(m[7]); b == nil || b[1] != fmt.Sprint(e.ExitInc) || b[2] != fmt.Sprint(e.EntryInc) {
					t.Errorf("%s: backedge line %q, JSON says exit_inc %d, entry_inc %d", f.Name, line, e.ExitInc, e.EntryInc)
				}
			}
			ne++
			continue
		}
		if m := cfgLoopRE.FindStringSubmatch(line); m != nil {
			if nl < len(f.Loops) {
				l := f.Loops[nl]
				if m[1] != fmt.Sprint(nl) || m[3] != fmt.Sprint(l.Header) || m[4] != fmt.Sprint(l.Depth) || (m[2] == "loop") == l.Irreducible {
					t.Errorf("%s: loop line %q, JSON says %+v", f.Name, line, l)
				}
			}
			nl++
			continue
		}
		if m := cfgTableRE.FindStringSubmatch(line); m != nil {
			if nt < len(f.Tables) {
				tb := f.Tables[nt]
				if m[1] != tb.Table || m[2] != tb.Jump || m[3] != fmt.Sprint(tb.Entries) || (m[4] == "relative") != tb.Relative {
					t.Errorf("%s: jump table line %q, JSON says %+v", f.Name, line, tb)
				}
			}
			nt++
			continue
		}
		switch {
		case line == "", strings.HasPrefix(line, "  block "), strings.HasPrefix(line, "  edge "),
			strings.HasPrefix(line, "  fragments: "), strings.HasPrefix(line, "  not instrumentable: "):
		default:
			t.Errorf("%s: unexpected line %q", f.Name, line)
		}
	}
	finish()
	if fi+1 != len(d.Functions) {
		t.Errorf("text has %d functions, JSON %d", fi+1, len(d.Functions))
	}
}

// checkCFGModel checks facts every CFG document must satisfy: edge
// endpoints in range, blocks inside the function, loop membership and
// depth agreeing with the blocks' loop_depth.
func checkCFGModel(t *testing.T, d *cfgDoc) {
	t.Helper()
	for _, f := range d.Functions {
		entry, _ := strconv.ParseUint(strings.TrimPrefix(f.Entry, "0x"), 16, 64)
		depth := make([]int, len(f.Blocks))
		for i, b := range f.Blocks {
			if b.ID != i {
				t.Errorf("%s: block %d has id %d", f.Name, i, b.ID)
			}
			addr, _ := strconv.ParseUint(strings.TrimPrefix(b.Addr, "0x"), 16, 64)
			end, _ := strconv.ParseUint(strings.TrimPrefix(b.End, "0x"), 16, 64)
			if end <= addr || b.Insts < 1 || uint64(b.Insts) > end-addr {
				t.Errorf("%s: block B%d %s-%s has %d instructions", f.Name, i, b.Addr, b.End, b.Insts)
			}
			if len(f.Fragments) == 0 && (addr < entry || end > entry+f.Size) {
				t.Errorf("%s: block B%d %s-%s outside the function [%s,%#x)", f.Name, i, b.Addr, b.End, f.Entry, entry+f.Size)
			}
		}
		if len(f.Blocks) > 0 && f.Blocks[0].Addr != f.Entry {
			t.Errorf("%s: B0 at %s, entry at %s", f.Name, f.Blocks[0].Addr, f.Entry)
		}
		for i, e := range f.Edges {
			if e.ID != i || e.From < 0 || e.From >= len(f.Blocks) || e.To < -1 || e.To >= len(f.Blocks) {
				t.Errorf("%s: edge %d %+v out of range", f.Name, i, e)
			}
		}
		for i, l := range f.Loops {
			if l.Parent >= i || (l.Parent < 0) != (l.Depth == 1) || (l.Parent >= 0 && f.Loops[l.Parent].Depth != l.Depth-1) {
				t.Errorf("%s: loop %d has parent %d and depth %d", f.Name, i, l.Parent, l.Depth)
			}
			if !slices.Contains(l.Blocks, l.Header) {
				t.Errorf("%s: loop %d does not contain its header B%d", f.Name, i, l.Header)
			}
			for _, b := range l.Blocks {
				if b >= 0 && b < len(depth) {
					depth[b] = max(depth[b], l.Depth)
				}
			}
		}
		for i, b := range f.Blocks {
			if b.LoopDepth != depth[i] {
				t.Errorf("%s: B%d has loop_depth %d, but the deepest loop containing it has depth %d", f.Name, i, b.LoopDepth, depth[i])
			}
		}
	}
}

var dotEdgeRE = regexp.MustCompile(`(?m)^    f\d+_\d+ -> f\d+_(\d+|exit) \[`)

func TestCFGFormats(t *testing.T) {
	tests := []struct {
		src, fn string // fn: --func, "" for all
		cfg     fixture.Config
	}{
		{"switch.c", "", gccO2PIE},
		{"switch.c", "^dense$", gccO0},
		{"loops.c", "", gccO2PIE},
		{"loops.c", "nested", clangO0},
		{"irreducible.c", "", gccO2PIE},
		{"cold.c", "", gccO2},
		{"interp.c", "^run_vm$", gccO3PIE},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.src, tt.cfg, tt.fn), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			args := []string{bin}
			if tt.fn != "" {
				args = append(args, "--func", tt.fn)
			}
			d := cfgJSON(t, args...)
			if d.Binary != bin {
				t.Errorf("binary = %q, want %q", d.Binary, bin)
			}
			if len(d.Functions) == 0 {
				t.Fatal("no functions")
			}
			if tt.fn != "" {
				rx := regexp.MustCompile(tt.fn)
				for _, f := range d.Functions {
					if !rx.MatchString(f.Name) {
						t.Errorf("--func %s selected %s", tt.fn, f.Name)
					}
				}
			}
			checkCFGModel(t, d)
			// Text is the default format.
			text := mustRun(t, append([]string{"cfg"}, args...)...)
			if explicit := mustRun(t, append([]string{"cfg", "--format", "text"}, args...)...); explicit != text {
				t.Error("--format text differs from the default output")
			}
			checkCFGText(t, text, d)

			dot := mustRun(t, append([]string{"cfg", "--format", "dot"}, args...)...)
			edges := 0
			for _, f := range d.Functions {
				edges += len(f.Edges)
			}
			if got := len(dotEdgeRE.FindAllString(dot, -1)); got != edges {
				t.Errorf("DOT has %d edges, JSON %d", got, edges)
			}
			if strings.Contains(dot, "+-") {
				t.Errorf("DOT labels print a negative increment as \"+-N\"")
			}
			renderDot(t, dot)
		})
	}
}

// renderDot pipes DOT into Graphviz and checks it renders an SVG.
func renderDot(t *testing.T, dot string) {
	t.Helper()
	dotPath := fixture.RequireTool(t, "dot", "graphviz")
	cmd := exec.Command(dotPath, "-Tsvg")
	cmd.Stdin = strings.NewReader(dot)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dot -Tsvg: %v\n%s", err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Errorf("dot -Tsvg warned: %s", stderr.Bytes())
	}
	if !bytes.Contains(stdout.Bytes(), []byte("<svg")) {
		t.Errorf("dot -Tsvg printed no <svg> element:\n%.500s", stdout.Bytes())
	}
}

// TestJumpTable checks the switch fixture's dense(): one jump table whose
// distinct targets are the ones internal/testsupport/fixture records (12: 11 cases and
// the default), one "jumptable" edge per target, and a text line naming
// the table.
func TestJumpTable(t *testing.T) {
	exp, _ := fixture.ExpectFor("switch.c")
	for _, c := range []fixture.Config{gccO0, gccO2PIE, gccO2, gccO3PIE, clangO2PI} {
		t.Run(c.String(), func(t *testing.T) {
			fe, ok := exp.Func("dense", c)
			if !ok || fe.JumpTableTargets == 0 {
				t.Fatalf("internal/testsupport/fixture records no jump table for dense under %s", c)
			}
			bin := fixture.Build(t, "switch.c", c)
			d := cfgJSON(t, bin, "--func", "^dense$")
			if len(d.Functions) != 1 {
				t.Fatalf("--func ^dense$ selected %d functions", len(d.Functions))
			}
			f := &d.Functions[0]
			if len(f.Tables) != 1 {
				t.Fatalf("dense has %d jump tables, want 1", len(f.Tables))
			}
			tb := f.Tables[0]
			targets := map[string]bool{}
			for _, a := range tb.Targets {
				targets[a] = true
			}
			if len(targets) != fe.JumpTableTargets {
				t.Errorf("jump_tables[0] has %d distinct targets, want %d", len(targets), fe.JumpTableTargets)
			}
			if tb.Entries < len(targets) || len(tb.Targets) != tb.Entries {
				t.Errorf("jump table has %d entries and %d targets (%d distinct)", tb.Entries, len(tb.Targets), len(targets))
			}
			edgeTargets := map[string]bool{}
			n := 0
			for _, e := range f.Edges {
				if e.Kind == "jumptable" {
					n++
					edgeTargets[f.Blocks[e.To].Addr] = true
				}
			}
			if n != fe.JumpTableTargets {
				t.Errorf("%d edges of kind jumptable, want %d", n, fe.JumpTableTargets)
			}
			if !sameSet(edgeTargets, targets) {
				t.Errorf("jumptable edges reach %v, the table lists %v", keys(edgeTargets), keys(targets))
			}
			text := mustRun(t, "cfg", bin, "--func", "^dense$")
			want := fmt.Sprintf("jump table at %s for jmp %s: %d ", tb.Table, tb.Jump, tb.Entries)
			if !strings.Contains(text, want) {
				t.Errorf("text output does not mention %q:\n%s", want, text)
			}
		})
	}
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestLoops checks every function internal/testsupport/fixture describes in loops.c:
// the loop depths in the JSON, and that each loop's backedges are edges
// marked "backedge": true into its header (in these reducible graphs the
// numbering's DFS backedges are exactly the loops' backedges).
func TestLoops(t *testing.T) {
	exp, _ := fixture.ExpectFor("loops.c")
	for _, c := range []fixture.Config{gccO0, gccO2PIE, gccO3PIE, clangO2PI} {
		t.Run(c.String(), func(t *testing.T) {
			bin := fixture.Build(t, "loops.c", c)
			d := cfgJSON(t, bin)
			sawNested3 := false
			for _, name := range exp.Names() {
				fe, ok := exp.Func(name, c)
				if !ok {
					continue
				}
				f := cfgFuncNamed(t, d, name)
				sawNested3 = sawNested3 || name == "nested3"
				var depths []int
				for _, l := range f.Loops {
					if l.Irreducible {
						t.Errorf("%s: loop at B%d is irreducible", name, l.Header)
						continue
					}
					depths = append(depths, l.Depth)
				}
				sort.Ints(depths)
				if !slices.Equal(depths, fe.Depths) || len(depths) != fe.Loops {
					t.Errorf("%s: loop depths %v, want %v", name, depths, fe.Depths)
				}
				marked := map[int]bool{}
				for _, e := range f.Edges {
					if e.Backedge {
						marked[e.ID] = true
					}
				}
				inLoops := map[int]bool{}
				for _, l := range f.Loops {
					if len(l.Backedges) == 0 {
						t.Errorf("%s: loop at B%d has no backedges", name, l.Header)
					}
					for _, id := range l.Backedges {
						inLoops[id] = true
						if id < 0 || id >= len(f.Edges) {
							t.Errorf("%s: loop at B%d lists edge %d of %d", name, l.Header, id, len(f.Edges))
							continue
						}
						if e := f.Edges[id]; !e.Backedge || e.To != l.Header {
							t.Errorf("%s: loop backedge %d is %+v, want \"backedge\": true into header B%d", name, id, e, l.Header)
						}
					}
				}
				if len(marked) != len(inLoops) {
					t.Errorf("%s: edges %v are marked backedges, loops list %v", name, marked, inLoops)
				}
			}
			if !sawNested3 {
				t.Error("nested3 was not checked")
			}
		})
	}
}

// TestPathNumbers checks the Ball-Larus law on the CLI's own output: in
// the DAG of non-backedge edges plus, for each backedge v→w, pseudo edges
// ENTRY→w (worth entry_inc) and v→EXIT (worth exit_inc), the sums of inc
// along the ENTRY→EXIT paths are exactly 0..paths-1.
func TestPathNumbers(t *testing.T) {
	tests := []struct {
		src string
		cfg fixture.Config
	}{
		{"loops.c", gccO2PIE},
		{"loops.c", clangO0},
		{"switch.c", gccO2PIE},
		{"early.c", gccO2PIE},
		{"irreducible.c", gccO2PIE},
		{"irreducible.c", clangO2PI},
		{"interp.c", gccO2},
		{"recursion.c", gccO2PIE},
		{"cold.c", gccO2},
		{"hash.c", gccO3PIE},
	}
	for _, tt := range tests {
		t.Run(tt.src+"/"+tt.cfg.String(), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			d := cfgJSON(t, bin)
			checked, backedges := 0, 0
			for _, f := range d.Functions {
				if f.Paths == nil || *f.Paths > 1000 {
					continue
				}
				if err := pathLaw(&f); err != nil {
					t.Errorf("%s: %v", f.Name, err)
				}
				checked++
				for _, e := range f.Edges {
					if e.Backedge {
						backedges++
					}
				}
			}
			if checked == 0 {
				t.Fatal("no function was checked")
			}
			t.Logf("%d functions, %d backedges", checked, backedges)
		})
	}
}

// pathLaw enumerates the ENTRY→EXIT paths of f's DAG view and checks that
// their increment sums are a permutation of 0..paths-1.
func pathLaw(f *cfgFunc) error {
	n := len(f.Blocks)
	exit := n
	type arc struct {
		to  int
		inc int64
	}
	succ := make([][]arc, n+1)
	entryInc := map[int]int64{} // ENTRY→w, shared by all backedges into w
	for _, e := range f.Edges {
		to := e.To
		if to < 0 {
			to = exit
		}
		if !e.Backedge && !e.Broken {
			if e.ExitInc != 0 || e.EntryInc != 0 {
				return fmt.Errorf("DAG edge %d has exit_inc %d, entry_inc %d", e.ID, e.ExitInc, e.EntryInc)
			}
			succ[e.From] = append(succ[e.From], arc{to, e.Inc})
			continue
		}
		if e.To < 0 {
			return fmt.Errorf("edge %d into EXIT is a backedge", e.ID)
		}
		succ[e.From] = append(succ[e.From], arc{exit, e.ExitInc})
		if e.To == 0 {
			// The next path starts at ENTRY like a fresh activation.
			if e.EntryInc != 0 {
				return fmt.Errorf("backedge %d into the entry block restarts at %d, want 0", e.ID, e.EntryInc)
			}
			continue
		}
		if v, ok := entryInc[e.To]; ok && v != e.EntryInc {
			return fmt.Errorf("backedges into B%d restart at %d and %d", e.To, v, e.EntryInc)
		}
		entryInc[e.To] = e.EntryInc
	}
	ws := make([]int, 0, len(entryInc))
	for w := range entryInc {
		ws = append(ws, w)
	}
	sort.Ints(ws)
	for _, w := range ws {
		succ[0] = append(succ[0], arc{w, entryInc[w]})
	}

	want := *f.Paths
	seen := make(map[int64]bool, want)
	onPath := make([]bool, n+1)
	var count uint64
	var walk func(v int, sum int64) error
	walk = func(v int, sum int64) error {
		if v == exit {
			count++
			if count > want {
				return fmt.Errorf("more than %d paths", want)
			}
			if sum < 0 || uint64(sum) >= want {
				return fmt.Errorf("a path sums to %d, outside [0,%d)", sum, want)
			}
			if seen[sum] {
				return fmt.Errorf("two paths sum to %d", sum)
			}
			seen[sum] = true
			return nil
		}
		if onPath[v] {
			return fmt.Errorf("cycle through B%d without a backedge", v)
		}
		onPath[v] = true
		defer func() { onPath[v] = false }()
		for _, a := range succ[v] {
			if err := walk(a.to, sum+a.inc); err != nil {
				return err
			}
		}
		return nil
	}
	if n == 0 {
		return fmt.Errorf("%d paths but no blocks", want)
	}
	if err := walk(0, 0); err != nil {
		return err
	}
	if count != want {
		return fmt.Errorf("%d paths reach EXIT, the output says %d", count, want)
	}
	return nil
}
