package elfw

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

func readFixture(t testing.TB, src string, cfg fixture.Config) []byte {
	t.Helper()
	b, err := os.ReadFile(fixture.Build(t, src, cfg))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	pieCfg    = fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}
	staticCfg = fixture.Config{CC: "gcc", Opt: "-O2", Static: true}
)

func TestPlanLayout(t *testing.T) {
	for _, cfg := range []fixture.Config{pieCfg, staticCfg, {CC: "clang", Opt: "-O2", Strip: true}} {
		t.Run(cfg.String(), func(t *testing.T) {
			orig := readFixture(t, "loops.c", cfg)
			im, err := parse(orig)
			if err != nil {
				t.Fatal(err)
			}
			l, err := PlanLayout(orig)
			if err != nil {
				t.Fatal(err)
			}
			free, err := NextFreeAddr(orig)
			if err != nil || free != l.FreeAddr {
				t.Fatalf("NextFreeAddr %#x, %v; layout says %#x", free, err, l.FreeAddr)
			}
			top := alignUp(im.lastLoadEnd(), PageSize)
			switch {
			case l.FreeAddr%PageSize != 0:
				t.Errorf("FreeAddr %#x not page-aligned", l.FreeAddr)
			case l.PhdrAddr < top:
				t.Errorf("table at %#x shares a page with the image (ends %#x)", l.PhdrAddr, top)
			case l.PhdrOff < uint64(len(orig)):
				t.Errorf("table at file offset %#x inside the original %#x bytes", l.PhdrOff, len(orig))
			case l.PhdrOff%PageSize != l.PhdrAddr%PageSize:
				t.Errorf("table offset %#x and address %#x differ mod page", l.PhdrOff, l.PhdrAddr)
			case l.FreeAddr < alignUp(l.PhdrAddr+uint64(l.PhdrCap)*phdrSize, PageSize)+PageSize:
				t.Errorf("no unmapped page between the table and FreeAddr: %v", l)
			case l.PhdrCap != len(im.progs)+1+MaxSegments+extraPhdrs:
				t.Errorf("PhdrCap %d", l.PhdrCap)
			}
			first := im.progs[im.loads[0]]
			if l.Mirrored != (l.PhdrAddr-(first.Addr-first.Off) == l.PhdrOff) {
				t.Errorf("Mirrored %v disagrees with %v", l.Mirrored, l)
			}
			u := im.plan(-1)
			if u.Mirrored || u.PhdrAddr != top || u.PhdrOff%PageSize != 0 {
				t.Errorf("unmirrored layout %v", u)
			}
		})
	}
}

// TestMirrorPadding checks the mirrored layout of a binary whose .bss
// reaches far beyond the end of its file: the table's file offset follows
// the address space, and the gap is zeros.
func TestMirrorPadding(t *testing.T) {
	if _, err := os.Stat("/bin/gzip"); err != nil {
		t.Skip("/bin/gzip missing (install the Debian package \"gzip\")")
	}
	orig, err := os.ReadFile("/bin/gzip")
	if err != nil {
		t.Fatal(err)
	}
	im, err := parse(orig)
	if err != nil {
		t.Fatal(err)
	}
	l := im.plan(defaultMirrorPad)
	top := alignUp(im.lastLoadEnd(), PageSize)
	if !l.Mirrored || l.PhdrAddr != top || l.PhdrOff <= uint64(len(orig)) {
		t.Fatalf("layout %v, image top %#x, file %#x bytes", l, top, len(orig))
	}
	small := im.plan(int64(l.PhdrOff-uint64(len(orig))) - 1)
	if small.Mirrored {
		t.Errorf("mirrored beyond the padding limit: %v", small)
	}
	out, err := Write(orig, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.File[len(orig):l.PhdrOff], make([]byte, l.PhdrOff-uint64(len(orig)))) {
		t.Errorf("padding is not zero")
	}
}

// TestPatchFileOffset patches a function found through the symbol table
// and reads it back both through the section that holds it and through
// the PT_LOAD that maps it.
func TestPatchFileOffset(t *testing.T) {
	for _, cfg := range []fixture.Config{pieCfg, staticCfg, {CC: "clang", Opt: "-O0"}} {
		t.Run(cfg.String(), func(t *testing.T) {
			orig := readFixture(t, "loops.c", cfg)
			f, err := elf.NewFile(bytes.NewReader(orig))
			if err != nil {
				t.Fatal(err)
			}
			syms, err := f.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			var patches []Patch
			for _, s := range syms {
				if s.Name == "step" || s.Name == "nested2" {
					patches = append(patches, Patch{Addr: s.Value, Bytes: []byte{0xe9, byte(len(s.Name)), 2, 3, 4, 0xcc}})
				}
			}
			if len(patches) != 2 {
				t.Fatalf("found %d of the symbols", len(patches))
			}
			out, err := Write(orig, Options{Patches: patches})
			if err != nil {
				t.Fatal(err)
			}
			g, err := elf.NewFile(bytes.NewReader(out.File))
			if err != nil {
				t.Fatal(err)
			}
			text := g.Section(".text")
			for _, p := range patches {
				got := make([]byte, len(p.Bytes))
				if _, err := text.ReadAt(got, int64(p.Addr-text.Addr)); err != nil || !bytes.Equal(got, p.Bytes) {
					t.Errorf("section read at %#x: % x (%v), want % x", p.Addr, got, err, p.Bytes)
				}
				found := false
				for _, ph := range g.Progs {
					if ph.Type == elf.PT_LOAD && p.Addr >= ph.Vaddr && p.Addr < ph.Vaddr+ph.Filesz {
						found = true
						if _, err := ph.ReadAt(got, int64(p.Addr-ph.Vaddr)); err != nil || !bytes.Equal(got, p.Bytes) {
							t.Errorf("segment read at %#x: % x (%v)", p.Addr, got, err)
						}
					}
				}
				if !found {
					t.Errorf("no PT_LOAD maps %#x", p.Addr)
				}
			}
		})
	}
}

// TestNoSectionHeaders rewrites a binary whose section header table was
// removed: Write makes one with the null entry, the new sections and a
// name table.
func TestNoSectionHeaders(t *testing.T) {
	orig := append([]byte(nil), readFixture(t, "loops.c", pieCfg)...)
	copy(orig[offShoff:], make([]byte, 8))
	copy(orig[offShnum:], []byte{0, 0, 0, 0})
	free, err := NextFreeAddr(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Write(orig, Options{
		Segments: []Segment{{Addr: free, Data: []byte{0xc3}, Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"}},
		Sections: []Section{{Name: ".blpp.meta", Data: []byte("meta")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(bytes.NewReader(out.File))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range f.Sections {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != ",.blpp.text,.blpp.phdr,.blpp.meta,.shstrtab" {
		t.Errorf("sections %s", got)
	}
}

// TestAutoPlacement leaves segment addresses to Write.
func TestAutoPlacement(t *testing.T) {
	orig := readFixture(t, "loops.c", pieCfg)
	free, _ := NextFreeAddr(orig)
	out, err := Write(orig, Options{Segments: []Segment{
		{Data: []byte{1}, MemSize: 3 * PageSize, Flags: elf.PF_R | elf.PF_W, Name: ".a"},
		{Addr: free + 4*PageSize, Data: []byte{0xc3}, Flags: elf.PF_R | elf.PF_X, Name: ".b"},
		{MemSize: 10, Flags: elf.PF_R | elf.PF_W, Name: ".c"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint64{free + 5*PageSize, free + 4*PageSize, free + 8*PageSize}
	for i, p := range out.Segments {
		if p.Addr != want[i] {
			t.Errorf("segment %d at %#x, want %#x", i, p.Addr, want[i])
		}
	}
	f, err := elf.NewFile(bytes.NewReader(out.File))
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Section(".c"); s == nil || s.Type != elf.SHT_NOBITS || s.Size != 10 {
		t.Errorf(".c: %+v", s)
	}
	if s := f.Section(".a.bss"); s == nil || s.Type != elf.SHT_NOBITS || s.Addr != want[0]+1 {
		t.Errorf(".a.bss: %+v", s)
	}
}

func TestOrigFini(t *testing.T) {
	if a, ok := OrigFini(readFixture(t, "loops.c", staticCfg)); ok {
		t.Errorf("static binary has DT_FINI %#x", a)
	}
	orig := readFixture(t, "loops.c", pieCfg)
	f, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	fini := f.Section(".fini")
	if a, ok := OrigFini(orig); !ok || fini == nil || a != fini.Addr {
		t.Errorf("OrigFini %#x, %v; .fini at %+v", a, ok, fini)
	}
	if _, ok := OrigFini([]byte("garbage")); ok {
		t.Error("OrigFini on garbage")
	}
}

func TestWriteErrors(t *testing.T) {
	pie := readFixture(t, "loops.c", pieCfg)
	static := readFixture(t, "loops.c", staticCfg)
	lay, err := PlanLayout(pie)
	if err != nil {
		t.Fatal(err)
	}
	free := lay.FreeAddr
	f, err := elf.NewFile(bytes.NewReader(pie))
	if err != nil {
		t.Fatal(err)
	}
	sec := func(name string) *elf.Section {
		s := f.Section(name)
		if s == nil {
			t.Fatalf("no %s", name)
		}
		return s
	}
	text, data, bss, rodata := sec(".text"), sec(".data"), sec(".bss"), sec(".rodata")
	rx := func(addr uint64, n int) Segment {
		return Segment{Addr: addr, Data: make([]byte, n), Flags: elf.PF_R | elf.PF_X, Name: ".x"}
	}
	code := rx(free, 64)
	noFiniSlot := fillDynamic(t, pie)

	tests := []struct {
		name string
		orig []byte
		opts Options
		want error
	}{
		{"below free", pie, Options{Segments: []Segment{rx(free-PageSize, 8)}}, ErrBelowFree},
		{"below image", pie, Options{Segments: []Segment{rx(PageSize, 8)}}, ErrBelowFree},
		{"unaligned", pie, Options{Segments: []Segment{rx(free+8, 8)}}, ErrUnaligned},
		{"overlap", pie, Options{Segments: []Segment{rx(free, PageSize+1), rx(free+PageSize, 8)}}, ErrOverlap},
		{"same page", pie, Options{Segments: []Segment{rx(free, 8), {Addr: free, MemSize: 8, Flags: elf.PF_R | elf.PF_W, Name: ".d"}}}, ErrOverlap},
		{"writable code", pie, Options{Segments: []Segment{{Addr: free, Data: []byte{1}, Flags: elf.PF_R | elf.PF_W | elf.PF_X, Name: ".wx"}}}, ErrBadSegment},
		{"no flags", pie, Options{Segments: []Segment{{Addr: free, Data: []byte{1}, Name: ".n"}}}, ErrBadSegment},
		{"memsize below data", pie, Options{Segments: []Segment{{Addr: free, Data: []byte{1, 2}, MemSize: 1, Flags: elf.PF_R, Name: ".m"}}}, ErrBadSegment},
		{"empty segment", pie, Options{Segments: []Segment{{Addr: free, Flags: elf.PF_R, Name: ".e"}}}, ErrBadSegment},
		{"no name", pie, Options{Segments: []Segment{{Addr: free, Data: []byte{1}, Flags: elf.PF_R}}}, ErrBadSegment},
		{"beyond user space", pie, Options{Segments: []Segment{{Addr: maxUserAddr, Data: []byte{1}, MemSize: 2 * PageSize, Flags: elf.PF_R, Name: ".h"}}}, ErrBadSegment},
		{"too many", pie, Options{Segments: make([]Segment, MaxSegments+1)}, ErrTooManySegments},
		{"patch in bss", pie, Options{Patches: []Patch{{Addr: bss.Addr, Bytes: []byte{1}}}}, ErrNotFileBacked},
		{"patch past data into bss", pie, Options{Patches: []Patch{{Addr: data.Addr + data.Size - 1, Bytes: make([]byte, 64)}}}, ErrNotFileBacked},
		{"patch across segments", pie, Options{Patches: []Patch{{Addr: text.Addr + text.Size - 2, Bytes: make([]byte, 8192)}}}, ErrNotFileBacked},
		{"patch unmapped", pie, Options{Patches: []Patch{{Addr: free, Bytes: []byte{1}}}}, ErrNotFileBacked},
		{"patch in new segment", pie, Options{Segments: []Segment{code}, Patches: []Patch{{Addr: free, Bytes: []byte{1}}}}, ErrNotFileBacked},
		{"patch wraps", pie, Options{Patches: []Patch{{Addr: ^uint64(0) - 1, Bytes: []byte{1, 2, 3}}}}, ErrNotFileBacked},
		{"empty patch", pie, Options{Patches: []Patch{{Addr: text.Addr}}}, ErrNotFileBacked},
		{"patch ELF header", pie, Options{Patches: []Patch{{Addr: 0x10, Bytes: []byte{1}}}}, ErrOverlap},
		{"patches overlap", pie, Options{Patches: []Patch{{Addr: text.Addr, Bytes: make([]byte, 5)}, {Addr: text.Addr + 4, Bytes: []byte{1}}}}, ErrOverlap},
		{"patch DT_FINI", pie, Options{Segments: []Segment{code}, Fini: free, Patches: []Patch{{Addr: dynFiniAddr(t, pie), Bytes: []byte{1}}}}, ErrOverlap},
		{"entry in data", pie, Options{Entry: rodata.Addr}, ErrNotExecutable},
		{"entry in bss", pie, Options{Entry: bss.Addr}, ErrNotExecutable},
		{"entry unmapped", pie, Options{Entry: free}, ErrNotFileBacked},
		{"entry in zero tail", pie, Options{Segments: []Segment{{Addr: free, Data: []byte{0xc3}, MemSize: 64, Flags: elf.PF_R | elf.PF_X, Name: ".x"}}, Entry: free + 8}, ErrNotFileBacked},
		{"entry in new data", pie, Options{Segments: []Segment{{Addr: free, Data: []byte{0xc3}, Flags: elf.PF_R | elf.PF_W, Name: ".d"}}, Entry: free}, ErrNotExecutable},
		{"fini in data", pie, Options{Fini: data.Addr}, ErrNotExecutable},
		{"fini static", static, Options{Fini: 0x401000}, ErrStatic},
		{"fini no slot", noFiniSlot, Options{Segments: []Segment{code}, Fini: free}, ErrNoFiniSlot},
		{"section name", pie, Options{Sections: []Section{{Name: "a\x00b"}}}, ErrBadSection},
		{"section no name", pie, Options{Sections: []Section{{Data: []byte{1}}}}, ErrBadSection},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Write(tt.orig, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if out != nil {
				t.Errorf("output returned with an error")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("%T is not an *Error", err)
			}
			t.Log(err)
		})
	}
}

// dynFiniAddr returns the virtual address of the DT_FINI entry.
func dynFiniAddr(t *testing.T, b []byte) uint64 {
	im, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	off, _, err := im.finiSlot()
	if err != nil {
		t.Fatal(err)
	}
	d := im.progs[im.dyn]
	return d.Addr + off - d.Off
}

// slotTag returns the tag in slot i of the dynamic table at off, before
// its terminator or after it: these tests edit spare slots too.
func slotTag(b []byte, off uint64, i int) elf.DynTag {
	return elf.DynTag(le.Uint64(b[off+uint64(i)*dynSize:]))
}

// fillDynamic returns a copy of b whose DT_FINI is gone and whose only
// DT_NULL is the last slot, by giving the spare slots a harmless tag.
func fillDynamic(t *testing.T, b []byte) []byte {
	b = append([]byte(nil), b...)
	im, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	off, n, err := im.dynTable()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n-1; i++ {
		if tag := slotTag(b, off, i); tag == elf.DT_NULL || tag == elf.DT_FINI {
			le.PutUint64(b[off+uint64(i)*dynSize:], uint64(elf.DT_DEBUG))
		}
	}
	return b
}

func TestMalformed(t *testing.T) {
	good := readFixture(t, "loops.c", pieCfg)
	im, err := parse(good)
	if err != nil {
		t.Fatal(err)
	}
	edit := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	ph := func(i int) uint64 { return im.phoff + uint64(i)*phdrSize }
	load0, load1 := ph(im.loads[0]), ph(im.loads[1])
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"empty", nil, ErrMalformed},
		{"short", good[:40], ErrMalformed},
		{"not ELF", edit(func(b []byte) { b[0] = 'X' }), ErrUnsupported},
		{"32-bit", edit(func(b []byte) { b[elf.EI_CLASS] = byte(elf.ELFCLASS32) }), ErrUnsupported},
		{"big-endian", edit(func(b []byte) { b[elf.EI_DATA] = byte(elf.ELFDATA2MSB) }), ErrUnsupported},
		{"aarch64", edit(func(b []byte) { le.PutUint16(b[offMachine:], uint16(elf.EM_AARCH64)) }), ErrUnsupported},
		{"relocatable", edit(func(b []byte) { le.PutUint16(b[offType:], uint16(elf.ET_REL)) }), ErrUnsupported},
		{"phdrs outside", edit(func(b []byte) { le.PutUint64(b[offPhoff:], uint64(len(good))-8) }), ErrMalformed},
		{"phoff huge", edit(func(b []byte) { le.PutUint64(b[offPhoff:], ^uint64(0)-7) }), ErrMalformed},
		{"no phdrs", edit(func(b []byte) { le.PutUint16(b[offPhnum:], 0) }), ErrMalformed},
		{"phentsize", edit(func(b []byte) { le.PutUint16(b[offPhentsize:], 32) }), ErrMalformed},
		{"load beyond file", edit(func(b []byte) { le.PutUint64(b[load1+32:], uint64(len(good))) }), ErrMalformed},
		{"filesz > memsz", edit(func(b []byte) { le.PutUint64(b[load0+40:], 1) }), ErrMalformed},
		{"unsorted", edit(func(b []byte) {
			x := append([]byte(nil), b[load0:load0+phdrSize]...)
			copy(b[load0:], b[load1:load1+phdrSize])
			copy(b[load1:], x)
		}), ErrMalformed},
		{"offset vs address", edit(func(b []byte) { le.PutUint64(b[load1+16:], le.Uint64(b[load1+16:])+8) }), ErrMalformed},
		{"shdrs outside", edit(func(b []byte) { le.PutUint64(b[offShoff:], uint64(len(good))) }), ErrMalformed},
		{"shstrndx", edit(func(b []byte) { le.PutUint16(b[offShstrndx:], 0xfff0) }), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Write(tt.in, Options{})
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Errorf("%T is not a *FormatError", err)
			}
			if _, err := PlanLayout(tt.in); err == nil {
				t.Errorf("PlanLayout accepts it")
			}
		})
	}
}

// FuzzWrite feeds mutated executables to Write with a typical request. It
// must not panic, and whatever it accepts must parse again with the new
// segment, section and entry in place.
func FuzzWrite(f *testing.F) {
	for _, p := range []string{"/bin/true"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(readFixture(f, "loops.c", fixture.Config{CC: "gcc", Opt: "-O2", Strip: true}))
	f.Fuzz(func(t *testing.T, b []byte) {
		OrigFini(b)
		im, err := parse(b)
		if err != nil {
			return
		}
		// A small padding limit keeps mutated .bss sizes from making
		// every output tens of megabytes; both layouts stay reachable.
		const maxPad = 1 << 20
		free := im.plan(maxPad).FreeAddr
		opts := Options{
			Segments: []Segment{
				{Addr: free, Data: []byte{0xc3}, Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"},
				{Data: []byte{1, 2, 3}, MemSize: 100, Flags: elf.PF_R | elf.PF_W, Name: ".blpp.data"},
			},
			Entry:    free,
			Sections: []Section{{Name: ".blpp.meta", Data: []byte("m")}},
			Symbols:  []Symbol{{Name: "f", Addr: free, Size: 1}},
		}
		if _, ok := OrigFini(b); ok {
			opts.Fini = free
		}
		out, err := writeFile(b, opts, maxPad)
		if err != nil {
			var fe *FormatError
			var e *Error
			if !errors.As(err, &fe) && !errors.As(err, &e) {
				t.Fatalf("unlocated error: %v", err)
			}
			return
		}
		om, err := parse(out.File)
		if err != nil {
			t.Fatalf("output does not parse: %v", err)
		}
		if om.entry != free || om.phoff != out.Layout.PhdrOff || len(om.progs) != len(im.progs)+3 {
			t.Fatalf("entry %#x, phoff %#x, %d program headers", om.entry, om.phoff, len(om.progs))
		}
		if !bytes.Equal(out.File[ehdrSize:len(b)], b[ehdrSize:]) && opts.Fini == 0 {
			t.Fatalf("original bytes changed")
		}
	})
}

// writeFile is write (with the given mirror padding) with the file
// assembled, as Write returns it.
func writeFile(orig []byte, opts Options, maxPad int64) (*Output, error) {
	out, err := write(orig, opts, maxPad)
	if err == nil {
		out.File = out.Pieces.Bytes()
	}
	return out, err
}

// TestPiecesWriteTo: a file written from Plan's pieces is Write's, holes
// reading as zeros (the gap before the mirrored program header table,
// /bin/gzip's, is one), whether nothing was written before, the
// original's bytes, or those and a segment's arrays at SegmentOff's
// offset (the pieces as laid out, or the file assembled); a span
// written early that neither is a piece nor lies in one is an error.
func TestPiecesWriteTo(t *testing.T) {
	if _, err := os.Stat("/bin/gzip"); err != nil {
		t.Skip("/bin/gzip missing (install the Debian package \"gzip\")")
	}
	orig, err := os.ReadFile("/bin/gzip")
	if err != nil {
		t.Fatal(err)
	}
	free, err := NextFreeAddr(orig)
	if err != nil {
		t.Fatal(err)
	}
	code := [][]byte{bytes.Repeat([]byte{0xcc}, 3000), nil, bytes.Repeat([]byte{0x90}, 7000)}
	segs := []Segment{
		{Addr: free, Data: bytes.Repeat([]byte{0xc3}, 300), Flags: elf.PF_R | elf.PF_X, Name: ".blpp.rt"},
		{Addr: free + 0x1000, Data: bytes.Repeat([]byte{1}, 5000), MemSize: 9000, Flags: elf.PF_R | elf.PF_W, Name: ".blpp.data"},
		{Addr: free + 0x5000, Chunks: code, Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"},
		{Addr: free + 0x9000, Data: []byte("tables"), Flags: elf.PF_R, Name: ".blpp.eh"},
	}
	opts := Options{Segments: segs, Patches: []Patch{}, Sections: []Section{{Name: ".blpp.meta", Data: []byte("meta")}}}
	want, err := Write(orig, opts)
	if err != nil {
		t.Fatal(err)
	}
	codeOff, ok, err := SegmentOff(orig, segs[:2], segs[2])
	if err != nil || !ok || codeOff != want.Segments[2].Off {
		t.Fatalf("SegmentOff = %#x, %v, %v; Write put the segment at %#x", codeOff, ok, err, want.Segments[2].Off)
	}
	var codeSpans []Span
	off := codeOff
	for _, a := range code {
		codeSpans = append(codeSpans, Span{off, a})
		off += uint64(len(a))
	}
	for _, early := range []string{"nothing", "original", "original and code", "original and code, file assembled", "a span that is no piece"} {
		out, err := Plan(orig, opts)
		if err != nil {
			t.Fatal(err)
		}
		if early == "original and code, file assembled" {
			out.Pieces = Whole(out.Pieces.Bytes())
		}
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		var written []Span
		switch early {
		case "original":
			written = []Span{{0, orig}}
		case "original and code", "original and code, file assembled":
			written = append([]Span{{0, orig}}, codeSpans...)
		case "a span that is no piece":
			written = []Span{{0, orig}, {uint64(len(want.File)) - 10, make([]byte, 20)}}
		}
		for _, s := range written {
			if _, err := f.WriteAt(s.Data, int64(s.Off)); err != nil {
				t.Fatal(err)
			}
		}
		err = out.Pieces.WriteTo(f, written...)
		f.Close()
		if early == "a span that is no piece" {
			if err == nil {
				t.Errorf("early %s: no error", early)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.File) || int64(len(got)) != out.Pieces.Size {
			t.Errorf("early %s: the written file (%d bytes) is not Write's (%d bytes)", early, len(got), len(want.File))
		}
	}
}

// TestSegmentOff: the offset SegmentOff promises for a segment is
// Plan's, however many segments follow it, for executables and
// libraries of the system whose table's end falls on one page.
func TestSegmentOff(t *testing.T) {
	var files []string
	for _, f := range []string{"/bin/gzip", "/bin/ls", "/usr/bin/gawk", "/usr/bin/python3.11", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libm.so.6"} {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Skip("no system binaries (install the Debian packages \"gzip\" and \"coreutils\")")
	}
	known := 0
	for _, name := range files {
		orig, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		free, err := NextFreeAddr(orig)
		if err != nil {
			t.Fatal(err)
		}
		for rtSize := 100; rtSize < 20000; rtSize += 4567 {
			segs := []Segment{
				{Addr: free, Data: make([]byte, rtSize), Flags: elf.PF_R | elf.PF_X, Name: ".blpp.rt"},
				{Addr: free + 0x6000, Data: make([]byte, 3*rtSize), Flags: elf.PF_R | elf.PF_W, Name: ".blpp.data"},
				{Addr: free + 0x1a000, Chunks: [][]byte{make([]byte, 100)}, Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"},
			}
			off, ok, err := SegmentOff(orig, segs[:2], segs[2])
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				continue
			}
			known++
			for above := 0; above <= 3; above++ {
				all := append([]Segment(nil), segs...)
				for k := 0; k < above; k++ {
					all = append(all, Segment{Addr: free + 0x20000 + uint64(k)*0x1000, Data: []byte("x"), Flags: elf.PF_R, Name: fmt.Sprintf(".blpp.x%d", k)})
				}
				out, err := Plan(orig, Options{Segments: all, Patches: []Patch{}})
				if err != nil {
					t.Fatal(err)
				}
				if got := out.Segments[2].Off; got != off {
					t.Errorf("%s, runtime %d bytes, %d segments above: SegmentOff %#x, Plan %#x", name, rtSize, above, off, got)
				}
			}
		}
	}
	if known == 0 {
		t.Error("SegmentOff knew no offset")
	}
}
