package pathnum

import (
	"errors"
	"testing"
	"time"
)

// benchGraphs are large procedures: a reducible CFG and a random DAG of
// about 20k nodes (both overflow 1<<62 and exercise the split policy), a
// chain of 5000 loops (20k nodes, few paths) and 70 diamonds (2^70 paths).
func benchGraphs() []struct {
	name string
	g    *Graph
} {
	return []struct {
		name string
		g    *Graph
	}{
		{"structured-20k", structuredCFG(newRand(42), 20000)},
		{"dag-20k", randomDAG(newRand(42), 20000)},
		{"loops-20k", loopChain(5000)},
		{"diamonds-70", diamonds(70)},
	}
}

func BenchmarkNumber(b *testing.B) {
	for _, bg := range benchGraphs() {
		b.Run(bg.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Number(bg.g, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(bg.g.NumNodes), "nodes")
			b.ReportMetric(float64(len(bg.g.Edges)), "edges")
		})
	}
}

func BenchmarkRegenerate(b *testing.B) {
	g := structuredCFG(newRand(42), 20000)
	num, err := Number(g, Options{})
	if err != nil {
		b.Fatal(err)
	}
	rng := newRand(1)
	for b.Loop() {
		if _, err := num.Regenerate(rng.Uint64N(num.NumPaths)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLargeGraphSpeed keeps the 100 ms budget for a 20k-node procedure in
// the ordinary test run (generously: the race detector or a loaded machine
// must not make it flaky).
func TestLargeGraphSpeed(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, bg := range benchGraphs() {
		start := time.Now()
		num, err := Number(bg.g, Options{})
		if err != nil {
			t.Fatalf("%s: %v", bg.name, err)
		}
		d := time.Since(start)
		t.Logf("%s: %d nodes, %d edges, %d paths (split %v): %v", bg.name, bg.g.NumNodes, len(bg.g.Edges), num.NumPaths, num.Split, d)
		if d > time.Second {
			t.Errorf("%s took %v", bg.name, d)
		}
		checkNumbering(t, bg.g, num, checkOpts{})
	}
}

// Tiny limits on large graphs fail, and fail fast: the cap ladder and the
// bounded greedy fallback stay cheap.
func TestLargeGraphTinyLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, bg := range benchGraphs()[:3] {
		start := time.Now()
		_, err := Number(bg.g, Options{MaxPaths: 10})
		d := time.Since(start)
		t.Logf("%s: %v in %v", bg.name, err, d)
		if !errors.Is(err, ErrPathLimit) {
			t.Errorf("%s: %v, want ErrPathLimit", bg.name, err)
		}
		if d > 5*time.Second {
			t.Errorf("%s took %v", bg.name, d)
		}
	}
}
