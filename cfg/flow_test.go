package cfg

import (
	"math/rand"
	"reflect"
	"testing"
)

// TestFlowLoops checks that a Flow made from a graph's edge list alone,
// as the reports make one from the metadata, finds the graph's own loops,
// and that edges naming no block are ignored rather than followed.
func TestFlowLoops(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for iter := 0; iter < 500; iter++ {
		n := 1 + r.Intn(20)
		var g *Graph
		if iter%2 == 0 {
			g = anRandomGraph(r, n)
		} else {
			g = anReducibleGraph(r, n, r.Intn(n+1), iter%4 == 1)
		}
		g.FindLoops()
		edges := make([]FlowEdge, 0, len(g.Edges)+3)
		for _, e := range g.Edges {
			edges = append(edges, FlowEdge{e.From, e.To})
		}
		// Hostile edges after the real ones, so the real IDs stay.
		edges = append(edges, FlowEdge{BlockID(n), 0}, FlowEdge{-3, 0}, FlowEdge{0, BlockID(n + 5)})
		got, err := NewFlow(n, edges).Loops()
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		if len(got) == 0 && len(g.Loops) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, g.Loops) {
			t.Fatalf("iter %d: from the edge list %+v, from the graph %+v", iter, got, g.Loops)
		}
	}
	if ls, err := NewFlow(0, nil).Loops(); ls != nil || err != nil {
		t.Errorf("empty flow: %v, %v", ls, err)
	}
}
