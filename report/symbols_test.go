package report

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// oldSyms is the symbol list as NewSymbols and merge made it before they
// were sped up: the first of each address and size, in input order, then
// sorted stably by address. dedupeSyms and mergeSyms must agree with it.
func oldSyms(in []elfSym) []elfSym {
	seen := map[[2]uint64]bool{}
	var out []elfSym
	for _, y := range in {
		k := [2]uint64{y.addr, y.size}
		if !seen[k] {
			seen[k] = true
			out = append(out, y)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].addr < out[j].addr })
	return out
}

// randSyms returns n symbols over few addresses and sizes, so that runs
// of equal addresses (some longer than dedupeSyms's quadratic search)
// and duplicates are common; names tell the symbols apart.
func randSyms(r *rand.Rand, n, addrs int, tag string) []elfSym {
	out := make([]elfSym, n)
	for i := range out {
		out[i] = elfSym{name: tag + string(rune('a'+i%26)) + string(rune('a'+i/26%26)), addr: uint64(r.IntN(addrs)), size: uint64(1 + r.IntN(4)), global: r.IntN(2) == 0}
	}
	return out
}

func TestSymbolsDedupeMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		n, addrs := r.IntN(60), 1+r.IntN(20)
		if iter%50 == 0 {
			n, addrs = 200, 2 // runs of many symbols at one address
		}
		a := randSyms(r, n, addrs, "a")
		b := randSyms(r, r.IntN(60), addrs, "b")
		da := dedupeSyms(sortSyms(a))
		if want := oldSyms(a); !slices.Equal(da, want) {
			t.Fatalf("dedupeSyms(%v) = %v, want %v", a, da, want)
		}
		db := oldSyms(b)
		got := mergeSyms(da, db)
		if want := oldSyms(append(slices.Clone(da), db...)); !slices.Equal(got, want) {
			t.Fatalf("mergeSyms(%v, %v) = %v, want %v", da, db, got, want)
		}
		if s := (&Symbols{syms: da}).merge(b); len(b) > 0 && !slices.Equal(s.list(), got) {
			t.Fatalf("merge = %v, want %v", s.list(), got)
		}
	}
}
