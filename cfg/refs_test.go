package cfg

import (
	"math/rand"
	"os"
	"reflect"
	"testing"
)

// serialSweep is the plain sweep that sweepChunks must reproduce.
func serialSweep(code []byte, addr uint64) *refIndex {
	ri := &refIndex{set: map[uint64]bool{}, calls: map[uint64]bool{}, branches: map[uint64]bool{}, from: map[uint64][]uint64{}}
	var facts []sweepFact
	for off := 0; off < len(code); {
		off, facts = sweepStep(code, addr, off, facts[:0])
		ri.add(addr, facts)
	}
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
			got := &refIndex{set: map[uint64]bool{}, calls: map[uint64]bool{}, branches: map[uint64]bool{}, from: map[uint64][]uint64{}}
			got.sweepChunks(code, 0x1000, chunk)
			if !reflect.DeepEqual(got.set, want.set) || !reflect.DeepEqual(got.calls, want.calls) ||
				!reflect.DeepEqual(got.branches, want.branches) || !reflect.DeepEqual(got.from, want.from) {
				t.Errorf("%s, chunks of %d: the joined sweep differs from the serial one", name, chunk)
			}
		}
	}
}
