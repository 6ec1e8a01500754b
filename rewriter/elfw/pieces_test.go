package elfw

import (
	"bytes"
	"math/rand"
	"testing"
)

// TestPutPatches: patches merged into runs of the original give the
// file that putting each patch alone gives, for patches near and far
// apart, at the ends of the original and past it.
func TestPutPatches(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		base := make([]byte, 1+rng.Intn(3*patchGap))
		rng.Read(base)
		type pa struct {
			off  uint64
			data []byte
		}
		var ps []pa
		for off := uint64(rng.Intn(2)); ; {
			n := 1 + rng.Intn(8)
			if off+uint64(n) > uint64(len(base))+16 {
				break
			}
			d := make([]byte, n)
			rng.Read(d)
			ps = append(ps, pa{off, d})
			gap := rng.Intn(16)
			if rng.Intn(8) == 0 {
				gap = patchGap - 2 + rng.Intn(4)
			}
			off += uint64(n + gap)
		}
		size := int64(len(base)) + 32
		want := &Pieces{Size: size}
		want.put(0, base)
		for _, p := range ps {
			want.put(p.off, p.data)
		}
		got := &Pieces{Size: size}
		got.put(0, base)
		orig := append([]byte(nil), base...)
		got.putPatches(base, len(ps), func(i int) (uint64, []byte) { return ps[i].off, ps[i].data })
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("round %d: %d patches over %d bytes: merged runs give other bytes", round, len(ps), len(base))
		}
		if !bytes.Equal(base, orig) {
			t.Fatalf("round %d: putPatches changed the original", round)
		}
		if len(ps) > 8 && len(got.pieces) > len(ps)/2 {
			t.Errorf("round %d: %d pieces for %d patches: not merged", round, len(got.pieces), len(ps))
		}
	}
}
