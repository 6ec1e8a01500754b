package meta

import "testing"

// BenchmarkDecode decodes a table of 2000 functions of 100 blocks, 150
// edges and 20 call sites each, the graphs of a whole-process report's
// functions.
func BenchmarkDecode(b *testing.B) {
	t := &Table{MaxPaths: 1 << 20}
	for i := range 2000 {
		f := Func{Name: "f", Entry: uint64(0x400000 + i*0x1000), Size: 0x1000, Instrumented: true, NumPaths: 1 << 20}
		for j := range 100 {
			a := f.Entry + uint64(j*16)
			f.Blocks = append(f.Blocks, Block{Addr: a, End: a + 16, Insts: 4, LoopDepth: uint32(j % 3)})
		}
		for j := range 150 {
			f.Edges = append(f.Edges, Edge{From: int32(j % 100), To: int32((j*7)%101) - 1})
		}
		for j := range 20 {
			f.CallSites = append(f.CallSites, f.Entry+uint64(j*40))
		}
		t.Funcs = append(t.Funcs, f)
	}
	data := Encode(t)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
