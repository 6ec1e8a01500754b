package cfg

import (
	"math/rand"
	"slices"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
)

// TestCoverOrder checks that makeBlocks' order read off the cover arrays
// lists every instruction once, by address, across ranges given out of
// order and with an instruction past a skipped lock prefix, and that it
// gives up (makeBlocks then sorts) where it cannot vouch for that.
func TestCoverOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		// Two ranges, the fragment below the body, each filled with
		// instructions of 1 to 15 bytes and gaps.
		ranges := []Range{{Addr: 0x2000, Size: 300}, {Addr: 0x1000, Size: 200}}
		bd := &builder{ranges: ranges, unlocked: map[uint64]int32{}}
		var want []uint64
		for _, r := range ranges {
			cov := make([]int32, r.Size)
			bd.cover = append(bd.cover, cov)
			for off := uint64(0); off < r.Size; {
				n := uint64(1 + rng.Intn(15))
				if off+n > r.Size || rng.Intn(5) == 0 {
					off++
					continue
				}
				bd.insts = append(bd.insts, x86.Info{Addr: r.Addr + off, Len: int(n)})
				for k := off; k < off+n; k++ {
					cov[k] = int32(len(bd.insts))
				}
				if n > 1 && len(bd.unlocked) == 0 && rng.Intn(4) == 0 {
					// Its twin without the lock prefix, one byte in.
					bd.insts = append(bd.insts, x86.Info{Addr: r.Addr + off + 1, Len: int(n - 1)})
					bd.unlocked[r.Addr+off+1] = int32(len(bd.insts) - 1)
				}
				off += n
			}
		}
		for _, in := range bd.insts {
			want = append(want, in.Addr)
		}
		slices.Sort(want)
		got := bd.coverOrder(nil)
		if len(got) != len(bd.insts) {
			t.Fatalf("trial %d: %d of %d instructions", trial, len(got), len(bd.insts))
		}
		for k, x := range got {
			if x.addr != want[k] || bd.insts[x.i].Addr != x.addr {
				t.Fatalf("trial %d: entry %d is %#x (instruction %d at %#x), want %#x", trial, k, x.addr, x.i, bd.insts[x.i].Addr, want[k])
			}
		}
		// An instruction the cover does not hold: not vouched for.
		bd.insts = append(bd.insts, x86.Info{Addr: 0x5000, Len: 1})
		if got := bd.coverOrder(nil); len(got) == len(bd.insts) {
			t.Fatalf("trial %d: an instruction outside the cover was listed", trial)
		}
		bd.insts = bd.insts[:len(bd.insts)-1]
		// Overlapping ranges: not vouched for.
		bd.ranges = []Range{{Addr: 0x2000, Size: 300}, {Addr: 0x1000, Size: 0x1001}}
		bd.cover[1] = append(bd.cover[1], make([]int32, 0x1001-200)...)
		if got := bd.coverOrder(nil); len(got) != 0 {
			t.Fatalf("trial %d: overlapping ranges gave %d instructions", trial, len(got))
		}
	}
}
