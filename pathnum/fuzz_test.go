package pathnum

import (
	"errors"
	"math"
	"testing"
)

// fuzzLimits are the MaxPaths values a fuzz input can pick.
var fuzzLimits = [...]uint64{0, 1, 2, 3, 5, 10, 50, 1000}

// decodeGraph turns fuzz bytes into a small graph: a flag byte (bit 0: raw
// mode, where node numbers are taken as signed bytes and may be out of
// range; bits 1-3: the MaxPaths choice), NumNodes, Entry, Exit, then one
// (from, to, weight) triple per edge.
func decodeGraph(data []byte) (*Graph, Options) {
	if len(data) < 4 {
		return &Graph{NumNodes: len(data)}, Options{}
	}
	flags := data[0]
	raw := flags&1 != 0
	opts := Options{MaxPaths: fuzzLimits[flags>>1&7]}
	n := 2 + int(data[1]%14)
	node := func(b byte) int {
		if raw {
			return int(int8(b)) / 8 // mostly in range, sometimes not
		}
		return int(b) % n
	}
	g := &Graph{NumNodes: n, Entry: node(data[2]), Exit: node(data[3])}
	if raw && flags&0x10 != 0 {
		g.NumNodes = int(int8(data[1])) / 8
	}
	rest := data[4:]
	for len(rest) >= 3 && len(g.Edges) < 40 {
		w := float64(rest[2] % 16)
		switch {
		case raw && rest[2] == 0xff:
			w = math.NaN()
		case rest[2] == 0xfe:
			w = math.Inf(1)
		case rest[2] == 0xfd:
			w = math.Inf(-1)
		}
		g.Edges = append(g.Edges, Edge{From: node(rest[0]), To: node(rest[1]), Weight: w})
		rest = rest[3:]
	}
	return g, opts
}

// validGraph decides validity independently of Number: ranges, Exit with
// no successors, every other node reachable from Entry and with at least
// one successor (which, the DAG view being acyclic, is the same as
// reaching Exit there).
func validGraph(g *Graph) bool {
	n := g.NumNodes
	if n < 2 || g.Entry < 0 || g.Entry >= n || g.Exit < 0 || g.Exit >= n || g.Entry == g.Exit {
		return false
	}
	hasOut := make([]bool, n)
	for _, e := range g.Edges {
		if e.From < 0 || e.From >= n || e.To < 0 || e.To >= n || e.From == g.Exit || math.IsNaN(e.Weight) {
			return false
		}
		hasOut[e.From] = true
	}
	seen := make([]bool, n)
	stack := []int{g.Entry}
	seen[g.Entry] = true
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, e := range g.Edges {
			if e.From == u && !seen[e.To] {
				seen[e.To] = true
				stack = append(stack, e.To)
			}
		}
	}
	for v := range n {
		if v != g.Exit && (!seen[v] || !hasOut[v]) {
			return false
		}
	}
	return true
}

func FuzzNumber(f *testing.F) {
	f.Add([]byte{0, 4, 0, 3, 0, 1, 1, 1, 2, 1, 2, 1, 1, 1, 3, 1})
	f.Add([]byte{2, 6, 0, 5, 0, 1, 9, 0, 2, 9, 1, 3, 9, 2, 3, 9, 3, 4, 9, 4, 5, 9, 3, 5, 9})
	f.Add([]byte{10, 3, 0, 2, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 2, 1})
	f.Add([]byte{1, 3, 0, 200, 0, 1, 1})
	f.Add([]byte{0, 5, 1, 4, 1, 2, 3, 2, 3, 3, 3, 2, 3, 2, 4, 3, 1, 0, 3, 0, 3, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		g, opts := decodeGraph(data)
		num, err := Number(g, opts)
		valid := validGraph(g)
		switch {
		case err == nil:
			if !valid {
				t.Fatalf("invalid graph numbered\n%s", graphString(g))
			}
			checkNumbering(t, g, num, checkOpts{maxPaths: min(opts.MaxPaths, maxPathsLimit), prefixes: true})
		case errors.Is(err, ErrInvalidGraph):
			if valid {
				t.Fatalf("valid graph refused: %v\n%s", err, graphString(g))
			}
		case errors.Is(err, ErrPathLimit):
			if !valid || opts.MaxPaths == 0 {
				t.Fatalf("%v on %v\n%s", err, opts, graphString(g))
			}
		default:
			t.Fatalf("unexpected error %v\n%s", err, graphString(g))
		}
	})
}
