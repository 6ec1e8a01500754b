package x86

import (
	"debug/elf"
	"testing"
)

// BenchmarkSweepLLVM decodes libLLVM's .text once, linearly, through a
// Decoder: a library whose distinct instructions do not fit the
// processor's caches, so the tables' look-ups miss.
func BenchmarkSweepLLVM(b *testing.B) {
	f, err := elf.Open("/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1")
	if err != nil {
		b.Skip("needs libLLVM-16.so.1 (Debian package libllvm16)")
	}
	s := f.Section(".text")
	code, err := s.Data()
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	d := NewDecoder()
	defer d.Release()
	var in Info
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(code); {
			if d.DecodeInfoTo(&in, code[off:], s.Addr+uint64(off)) != nil || in.Len == 0 {
				off++
				continue
			}
			n++
			off += in.Len
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "insts/op")
}
