package cfg

import (
	"os"
	"sort"
	"testing"
)

// codeProgram wraps raw bytes as the code of one procedure at 0x1000 in a
// synthetic binary, with a second procedure entry after it so that tail
// calls and fall-through into a neighbour are exercised.
func codeProgram(code []byte) (*Binary, *Program, *Function) {
	const base = 0x1000
	text := append(append([]byte(nil), code...), 0xc3) // neighbour: ret
	b := &Binary{sections: []Section{{Name: ".text", Addr: base, Size: uint64(len(text)), Exec: true, data: text}},
		relative: map[uint64]uint64{}, slotSym: map[uint64]string{}}
	f := &Function{Name: "f", Addr: base, Size: uint64(len(code)), Source: FromSymtab}
	n := &Function{Name: "next", Addr: base + uint64(len(code)), Size: 1, Source: FromSymtab}
	p := &Program{Binary: b, Funcs: []*Function{f, n}, byEntry: map[uint64]*Function{f.Addr: f, n.Addr: n},
		noRet: map[uint64]bool{}, funcsIdx: map[*Function]int{f: 0, n: 1}}
	return b, p, f
}

// checkGraph asserts the structural invariants every built graph keeps.
func checkGraph(t *testing.T, g *Graph) {
	t.Helper()
	for i, b := range g.Blocks {
		if b.Addr >= b.End || b.Insts <= 0 || b.Last < b.Addr || b.Last >= b.End {
			t.Fatalf("block %d has bad bounds %#x-%#x last %#x insts %d", i, b.Addr, b.End, b.Last, b.Insts)
		}
		if i > 1 && g.Blocks[i-1].End > b.Addr {
			t.Fatalf("blocks %d and %d overlap or are out of order", i-1, i)
		}
		if id, ok := g.BlockAt(b.Addr); !ok || int(id) != i {
			t.Fatalf("BlockAt(%#x) = %d, %v; want %d", b.Addr, id, ok, i)
		}
	}
	for i, e := range g.Edges {
		if int(e.From) < 0 || int(e.From) >= len(g.Blocks) || e.To != Exit && (int(e.To) < 0 || int(e.To) >= len(g.Blocks)) {
			t.Fatalf("edge %d: %d -> %d out of range", i, e.From, e.To)
		}
		if (e.To == Exit) != e.Kind.LeavesProcedure() {
			t.Fatalf("edge %d: kind %v to %d", i, e.Kind, e.To)
		}
	}
	if g.Instrumentable() {
		for i := range g.Blocks {
			if len(g.Succs(BlockID(i))) == 0 {
				t.Fatalf("instrumentable graph has block %d without successors", i)
			}
		}
	}
	depth := make([]int, len(g.Blocks))
	for _, l := range g.Loops {
		if !sort.SliceIsSorted(l.Blocks, func(i, j int) bool { return l.Blocks[i] < l.Blocks[j] }) {
			t.Fatalf("loop blocks not sorted")
		}
		for _, b := range l.Blocks {
			depth[b]++
		}
	}
	for i, b := range g.Blocks {
		if b.LoopDepth != depth[i] {
			t.Fatalf("block %d: LoopDepth %d, in %d loops", i, b.LoopDepth, depth[i])
		}
	}
}

// FuzzBuildGraph feeds arbitrary bytes to the decoder and CFG builder as
// the code of one procedure: no panic, and the graph invariants hold.
func FuzzBuildGraph(f *testing.F) {
	for _, seed := range [][]byte{
		{0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3},                   // push rbp; mov rbp,rsp; pop rbp; ret
		{0x85, 0xff, 0x74, 0x03, 0x31, 0xc0, 0xc3, 0xeb, 0xf7}, // test; je; xor; ret; jmp back
		{0xf3, 0x0f, 0x1e, 0xfa, 0x83, 0xff, 0x03, 0x77, 0x0a, 0x48, 0x8d, 0x05, 0x00, 0x00, 0x00, 0x00, 0xff, 0xe0, 0xc3},
		{0xe8, 0x00, 0x00, 0x00, 0x00, 0xc3}, // call next; ret
		{0x0f, 0x0b},                         // ud2
		{0x90, 0x90, 0x90},                   // falls into the neighbour
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		if len(code) == 0 || len(code) > 4096 {
			return
		}
		b, p, fn := codeProgram(code)
		g := buildGraph(b, p, fn)
		if len(g.Blocks) > 0 {
			g.FindLoops()
			g.ComputeFlagsLiveness()
		}
		checkGraph(t, g)
	})
}

// FuzzLoad feeds mutated ELF files to Load and then to the whole
// analysis: every input is refused with an error or analysed without a
// panic.
func FuzzLoad(f *testing.F) {
	for _, path := range []string{"/usr/bin/true", "/bin/true"} {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
			break
		}
	}
	f.Add([]byte("\x7fELF\x02\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Load(data)
		if err != nil {
			if b != nil {
				t.Fatal("Load returned a binary and an error")
			}
			return
		}
		p := Analyze(b, Options{Workers: 1})
		for _, g := range p.Graphs {
			checkGraph(t, g)
		}
	})
}
