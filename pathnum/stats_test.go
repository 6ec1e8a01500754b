package pathnum

import "testing"

func TestStatsTmp(t *testing.T) {
	for fi, f := range families {
		var nodes, paths, back, maxn int
		var maxp uint64
		for seed := range uint64(500) {
			g := f.gen(newRand(seed*31 + uint64(fi)))
			num, err := Number(g, Options{})
			if err != nil {
				t.Fatal(err)
			}
			nodes += g.NumNodes
			maxn = max(maxn, g.NumNodes)
			if num.NumPaths <= enumLimit {
				paths += int(num.NumPaths)
			}
			maxp = max(maxp, num.NumPaths)
			for _, k := range num.Kind {
				if k == Backedge {
					back++
				}
			}
		}
		t.Logf("%s: avg nodes %d max %d, avg paths %d, max paths %d, backedges %d", f.name, nodes/500, maxn, paths/500, maxp, back)
	}
}
