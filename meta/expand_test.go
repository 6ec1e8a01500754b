package meta

import "testing"

// checkExpansion checks the laws of an expansion of f: consecutive blocks
// are joined by one of its edges, the edges are real edges of f between
// blocks of the expansion, and Insns is the blocks' instructions.
func checkExpansion(t *testing.T, what string, f *Func, e *Expansion) {
	t.Helper()
	if len(e.Blocks) == 0 {
		t.Fatalf("%s: no blocks", what)
	}
	on := map[int]bool{}
	var insns uint64
	for i, b := range e.Blocks {
		on[b] = true
		insns += uint64(f.Blocks[b].Insts)
		if i == 0 {
			continue
		}
		joined := false
		for _, k := range e.Edges {
			if int(f.Edges[k].From) == e.Blocks[i-1] && int(f.Edges[k].To) == b {
				joined = true
			}
		}
		if !joined {
			t.Errorf("%s: blocks %v: no edge of the expansion joins %d to %d (edges %v)", what, e.Blocks, e.Blocks[i-1], b, e.Edges)
		}
	}
	for _, k := range e.Edges {
		if k < 0 || k >= len(f.Edges) || !on[int(f.Edges[k].From)] {
			t.Errorf("%s: edge %d does not leave a block of %v", what, k, e.Blocks)
		}
	}
	if insns != e.Insns {
		t.Errorf("%s: Insns %d, blocks give %d", what, e.Insns, insns)
	}
}

func TestExpandPath(t *testing.T) {
	tab := sample()
	f := &tab.Funcs[0]
	seen := map[string]bool{}
	for id := uint64(0); id < f.NumPaths; id++ {
		e, err := tab.ExpandPath(0, id)
		if err != nil {
			t.Fatal(err)
		}
		checkExpansion(t, "path", f, e)
		key := ""
		for _, b := range e.Blocks {
			key += string(rune('0' + b))
		}
		if e.Blocks[0] != 0 && e.Blocks[0] != 1 {
			t.Errorf("path %d starts at block %d, neither the entry nor the loop head", id, e.Blocks[0])
		}
		seen[key+string(rune('a'+len(e.Edges)))] = true
		if again, _ := tab.ExpandPath(0, id); again != e {
			t.Errorf("path %d expanded twice", id)
		}
	}
	if len(seen) != int(f.NumPaths) {
		t.Errorf("%d paths give %d distinct expansions", f.NumPaths, len(seen))
	}
	if _, err := tab.ExpandPath(0, f.NumPaths); err == nil {
		t.Error("a path id out of range expanded")
	}
	if _, err := tab.ExpandPath(1, 0); err == nil {
		t.Error("a path of an uninstrumented function expanded")
	}
	if _, err := tab.ExpandPath(2, 0); err == nil {
		t.Error("a path of a function out of range expanded")
	}
}

func TestExpandPartial(t *testing.T) {
	tab := sample()
	f := &tab.Funcs[0]
	found := 0
	for v := range f.Blocks {
		for reg := int64(-64); reg <= 64; reg++ {
			e, err := tab.ExpandPartial(0, uint32(v), reg)
			if err != nil {
				t.Fatal(err)
			}
			if e == nil {
				continue // the pair names no prefix
			}
			found++
			checkExpansion(t, "prefix", f, e)
			if e.Blocks[len(e.Blocks)-1] != v {
				t.Errorf("prefix at block %d, register %d: blocks %v do not end there", v, reg, e.Blocks)
			}
		}
	}
	if found == 0 {
		t.Error("no (block, register) pair names a prefix")
	}
	if _, err := tab.ExpandPartial(0, uint32(len(f.Blocks)), 0); err == nil {
		t.Error("a partial path at a block out of range expanded")
	}
}
