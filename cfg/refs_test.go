package cfg

import (
	"cmp"
	"math/rand"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
)

// serialSweep is the plain sweep that sweepChunks must reproduce.
func serialSweep(code []byte, addr uint64) *refIndex {
	var rf refFacts
	var facts []sweepFact
	for off := 0; off < len(code); {
		off, facts = sweepStep(x86.NewDecoder(), code, addr, off, facts[:0])
		rf.add(addr, facts)
	}
	ri := &refIndex{}
	rf.index(ri)
	return ri
}

// TestSweepChunks checks that sweeping chunks apart and joining them
// finds what one sweep from the start finds, for chunk sizes that cut
// instructions everywhere, on real code and on random bytes.
func TestSweepChunks(t *testing.T) {
	inputs := map[string][]byte{}
	rng := rand.New(rand.NewSource(1))
	junk := make([]byte, 50000)
	rng.Read(junk)
	inputs["random"] = junk
	if data, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libc.so.6"); err == nil {
		if b, err := Load(data); err == nil {
			for _, s := range b.Sections() {
				if s.Exec && s.Size > 100000 {
					inputs["libc "+s.Name] = b.Code(s.Addr)[:min(len(b.Code(s.Addr)), 400000)]
				}
			}
		}
	}
	for name, code := range inputs {
		want := serialSweep(code, 0x1000)
		for _, chunk := range []int{1, 3, 16, 61, 4096, 1 << 20} {
			if chunk == 1 && len(code) > 60000 {
				continue
			}
			var rf refFacts
			rf.sweepChunks(code, 0x1000, chunk)
			got := &refIndex{}
			rf.index(got)
			if !reflect.DeepEqual(got.set, want.set) || !reflect.DeepEqual(got.calls, want.calls) ||
				!reflect.DeepEqual(got.branches, want.branches) || !reflect.DeepEqual(got.from, want.from) {
				t.Errorf("%s, chunks of %d: the joined sweep differs from the serial one", name, chunk)
			}
		}
	}
}

// TestBranches: Branches answers what a map from each destination to
// its sources, in sweep order, would.
func TestBranches(t *testing.T) {
	data, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Skip(err)
	}
	b, err := Load(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[uint64][]uint64{}
	var facts []sweepFact
	for _, s := range b.Sections() {
		if !s.Exec {
			continue
		}
		code := b.Code(s.Addr)
		for off := 0; off < len(code); {
			off, facts = sweepStep(x86.NewDecoder(), code, s.Addr, off, facts[:0])
			for _, f := range facts {
				if f.kind == factFrom {
					want[f.val] = append(want[f.val], s.Addr+uint64(f.off))
				}
			}
		}
	}
	br := b.BranchSources()
	n, last := 0, uint64(0)
	for to, from := range br.All() {
		if n > 0 && to <= last {
			t.Fatalf("All: %#x after %#x", to, last)
		}
		n, last = n+1, to
		if !reflect.DeepEqual(from, want[to]) || !reflect.DeepEqual(br.Sources(to), want[to]) {
			t.Fatalf("%#x: sources %x, Sources %x, want %x", to, from, br.Sources(to), want[to])
		}
		if br.Sources(to+1) == nil && want[to+1] != nil || br.Sources(to-1) == nil && want[to-1] != nil {
			t.Fatalf("%#x: a neighbour's sources are missing", to)
		}
	}
	if n != len(want) || n == 0 {
		t.Fatalf("%d destinations, want %d", n, len(want))
	}
	if s := br.Sources(0); s != nil && want[0] == nil {
		t.Fatalf("sources of 0: %x", s)
	}
}

// TestNewBranches compares newBranches with a sort by destination, then
// source, on pairs whose sources rise (the sweep's order, radix sorted)
// and on shuffled ones, with destinations that share their high bytes,
// repeat, or differ anywhere. Leaving out the passes of the highest
// bytes fails it.
func TestNewBranches(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{0, 1, 5, 255, 256, 1000, 100000} {
		for _, shuffle := range []bool{false, true} {
			to := make([]uint64, n)
			from := make([]uint64, n)
			src := uint64(0x400000)
			for i := range to {
				switch rng.Intn(4) {
				case 0:
					to[i] = rng.Uint64() // data decoded as code
				case 1:
					to[i] = 0x400000 + uint64(rng.Intn(64)) // a few hot targets
				default:
					to[i] = 0x400000 + uint64(rng.Intn(1<<24))
				}
				src += 1 + uint64(rng.Intn(15))
				from[i] = src
			}
			if shuffle {
				rng.Shuffle(n, func(i, j int) { from[i], from[j] = from[j], from[i] })
			}
			type pair struct{ to, from uint64 }
			want := make([]pair, n)
			for i := range want {
				want[i] = pair{to[i], from[i]}
			}
			slices.SortFunc(want, func(a, b pair) int {
				if a.to != b.to {
					return cmp.Compare(a.to, b.to)
				}
				return cmp.Compare(a.from, b.from)
			})
			br := newBranches(to, from)
			for i := range want {
				if br.to[i] != want[i].to || br.from[i] != want[i].from {
					t.Fatalf("n %d, shuffled %v: pair %d is (%#x, %#x), want (%#x, %#x)", n, shuffle, i, br.to[i], br.from[i], want[i].to, want[i].from)
				}
			}
		}
	}
}
