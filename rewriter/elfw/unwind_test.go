package elfw

import (
	"bytes"
	"debug/elf"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// namesCfg builds testdata/names.c so that backtrace_symbols can name its
// functions (-rdynamic puts them in .dynsym).
var namesCfg = fixture.Config{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-rdynamic"}}

// btFrame matches one line of backtrace_symbols_fd output,
// "path(name+0xoff)[0xaddr]", and captures the name (empty when dladdr
// found none).
var btFrame = regexp.MustCompile(`(?m)^[^(\n]*\(([^+)]*)(?:\+0x[0-9a-f]+)?\) ?\[0x[0-9a-f]+\]$`)

// btNames returns the function names of a printed backtrace, "" for a
// frame dladdr could not name, and the lines that are not frames.
func btNames(out []byte) (names []string, rest string) {
	for _, m := range btFrame.FindAllSubmatch(out, -1) {
		names = append(names, string(m[1]))
	}
	return names, btFrame.ReplaceAllString(string(out), "")
}

// moveEHFrameHdr returns a copy of the .eh_frame_hdr of f re-encoded to
// live at newAddr; the .eh_frame it indexes stays where it is. It handles
// the encodings GNU ld writes [LSB 5.0 "The .eh_frame_hdr section"]:
// eh_frame_ptr DW_EH_PE_pcrel|sdata4, fde_count udata4, and a table of
// DW_EH_PE_datarel|sdata4 pairs relative to the section's start.
func moveEHFrameHdr(t *testing.T, f *elf.File, newAddr uint64) (hdr []byte, oldAddr uint64) {
	t.Helper()
	s := f.Section(".eh_frame_hdr")
	if s == nil {
		t.Fatal("no .eh_frame_hdr")
	}
	b, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 12 || b[0] != 1 || b[1] != 0x1b || b[2] != 0x03 || b[3] != 0x3b {
		t.Fatalf(".eh_frame_hdr header % x: encodings not the GNU ld ones", b[:min(len(b), 4)])
	}
	b = append([]byte(nil), b...)
	delta := int32(int64(s.Addr) - int64(newAddr))
	put := func(off int, v int32) { le.PutUint32(b[off:], uint32(v)) }
	get := func(off int) int32 { return int32(le.Uint32(b[off:])) }
	put(4, get(4)+delta) // pc-relative: same target from a new place
	n := int(le.Uint32(b[8:]))
	if 12+8*n > len(b) {
		t.Fatalf(".eh_frame_hdr: %d entries do not fit %d bytes", n, len(b))
	}
	for i := 0; i < 2*n; i++ {
		put(12+4*i, get(12+4*i)+delta) // relative to the section's start
	}
	return b, s.Addr
}

// TestEHFrameHdr moves .eh_frame_hdr into a new read-only segment that
// also holds another section, points PT_GNU_EH_FRAME at it and zeroes the
// original. backtrace() must still unwind the whole stack (libgcc finds
// the unwind tables only through PT_GNU_EH_FRAME, by glibc's
// _dl_find_object), which it does not with the original zeroed and
// PT_GNU_EH_FRAME left alone; the original header is renamed so that the
// new one is found by name.
func TestEHFrameHdr(t *testing.T) {
	origB := readFixture(t, "names.c", namesCfg)
	f, err := elf.NewFile(bytes.NewReader(origB))
	if err != nil {
		t.Fatal(err)
	}
	free, err := NextFreeAddr(origB)
	if err != nil {
		t.Fatal(err)
	}
	const pad = 24
	newHdr := free + pad
	hdr, oldHdr := moveEHFrameHdr(t, f, newHdr)
	data := append(bytes.Repeat([]byte{0xaa}, pad), hdr...)
	zero := Patch{Addr: oldHdr, Bytes: make([]byte, len(hdr))}
	seg := Segment{Addr: free, Data: data, Flags: elf.PF_R, Name: ".blpp.unwind",
		Sections: []SubSection{{Name: ".blpp.pad", Off: 0, Size: pad}, {Name: ".eh_frame_hdr", Off: pad, Size: uint64(len(hdr))}}}
	out, err := Write(origB, Options{Segments: []Segment{seg}, Patches: []Patch{zero},
		EHFrameHdr: EHFrameHdr{Addr: newHdr, Size: uint64(len(hdr))}})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := Write(origB, Options{Patches: []Patch{zero}})
	if err != nil {
		t.Fatal(err)
	}

	g, err := elf.NewFile(bytes.NewReader(out.File))
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Section(".eh_frame_hdr"); s == nil || s.Addr != newHdr || s.Size != uint64(len(hdr)) || s.Flags != elf.SHF_ALLOC || s.Addralign != 8 {
		t.Errorf("new .eh_frame_hdr: %+v", s)
	}
	if s := g.Section(".blpp.orig.eh_frame_hdr"); s == nil || s.Addr != oldHdr {
		t.Errorf("renamed original: %+v", s)
	}
	if g.Section(".blpp.unwind") != nil {
		t.Errorf("a segment with Sections still gets a header of its own")
	}
	pl := out.Segments[0]
	if pl.Section != 0 || len(pl.Sections) != 2 || g.Sections[pl.Sections[0]].Name != ".blpp.pad" || g.Sections[pl.Sections[1]].Name != ".eh_frame_hdr" {
		t.Errorf("Placed %+v", pl)
	}
	var ehs int
	for _, p := range g.Progs {
		if p.Type == elf.PT_GNU_EH_FRAME {
			ehs++
			if p.Vaddr != newHdr || p.Filesz != uint64(len(hdr)) || p.Memsz != p.Filesz || p.Off != pl.Off+pad {
				t.Errorf("PT_GNU_EH_FRAME %+v", p.ProgHeader)
			}
		}
	}
	if ehs != 1 || len(g.Progs) != len(f.Progs)+2 {
		t.Errorf("%d PT_GNU_EH_FRAME entries, %d program headers (was %d)", ehs, len(g.Progs), len(f.Progs))
	}

	dir := t.TempDir()
	want := run(t, nil, nil, writeExe(t, dir, "orig", origB), "bt")
	wantNames, wantRest := btNames(want.stdout)
	if len(wantNames) < 4 || strings.Join(wantNames[:3], ",") != "inner,middle,outer" {
		t.Fatalf("original backtrace:\n%s", want.stdout)
	}
	got := run(t, nil, nil, writeExe(t, dir, "new", out.File), "bt")
	gotNames, gotRest := btNames(got.stdout)
	if strings.Join(gotNames, ",") != strings.Join(wantNames, ",") || gotRest != wantRest || got.status != want.status {
		t.Errorf("backtrace with the moved .eh_frame_hdr:\n%s\nwant names %q (status %d, %d)", got.stdout, wantNames, got.status, want.status)
	}
	bad := run(t, nil, nil, writeExe(t, dir, "broken", broken.File), "bt")
	if badNames, _ := btNames(bad.stdout); strings.Join(badNames, ",") == strings.Join(wantNames, ",") {
		t.Errorf("zeroing the original .eh_frame_hdr changes nothing: the test cannot tell")
	}

	readelf := fixture.RequireTool(t, "readelf", "binutils")
	re := run(t, nil, nil, readelf, "-lSW", "--debug-dump=frames", writeExe(t, dir, "re", out.File))
	if re.status != 0 || len(re.stderr) != 0 || bytes.Contains(re.stdout, []byte("Warning")) {
		t.Errorf("readelf: status %d\n%s", re.status, trunc(re.stderr))
	}
}

// TestEHFrameHdrAdded gives a binary without PT_GNU_EH_FRAME (a static
// non-PIE one: gcc links those without --eh-frame-hdr) an entry.
func TestEHFrameHdrAdded(t *testing.T) {
	orig := readFixture(t, "loops.c", staticCfg)
	f, err := elf.NewFile(bytes.NewReader(orig))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_GNU_EH_FRAME {
			t.Skip("the static fixture already has PT_GNU_EH_FRAME")
		}
	}
	free, _ := NextFreeAddr(orig)
	segs := make([]Segment, MaxSegments)
	for i := range segs {
		segs[i] = Segment{Data: make([]byte, 64), Flags: elf.PF_R, Name: ".s" + string(rune('a'+i))}
	}
	segs[0].Addr = free
	segs[0].Sections = []SubSection{{Name: ".eh_frame_hdr", Off: 8, Size: 16}, {Name: ".eh_frame", Off: 24, Size: 40}}
	out, err := Write(orig, Options{Segments: segs, EHFrameHdr: EHFrameHdr{Addr: free + 8, Size: 16}})
	if err != nil {
		t.Fatal(err)
	}
	g, err := elf.NewFile(bytes.NewReader(out.File))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.Progs); n != len(f.Progs)+1+MaxSegments+1 {
		t.Errorf("%d program headers, was %d", n, len(f.Progs))
	}
	last := g.Progs[len(g.Progs)-1]
	if last.Type != elf.PT_GNU_EH_FRAME || last.Vaddr != free+8 || last.Off != out.Segments[0].Off+8 || last.Filesz != 16 {
		t.Errorf("last program header %+v", last.ProgHeader)
	}
	if s := g.Section(".eh_frame"); s == nil || s.Addr != free+24 {
		t.Errorf(".eh_frame %+v", s)
	}
	want := f.Section(".eh_frame").SectionHeader
	want.Name = ".blpp.orig.eh_frame"
	if s := g.Section(".blpp.orig.eh_frame"); s == nil || s.SectionHeader != want {
		t.Errorf("renamed original .eh_frame %+v", s)
	}
}

func TestSubSectionErrors(t *testing.T) {
	orig := readFixture(t, "loops.c", pieCfg)
	free, _ := NextFreeAddr(orig)
	seg := func(subs ...SubSection) Segment {
		return Segment{Addr: free, Data: make([]byte, 32), MemSize: 64, Flags: elf.PF_R, Name: ".u", Sections: subs}
	}
	tests := []struct {
		name string
		opts Options
		want error
	}{
		{"outside", Options{Segments: []Segment{seg(SubSection{Name: ".a", Off: 16, Size: 17})}}, ErrBadSegment},
		{"wraps", Options{Segments: []Segment{seg(SubSection{Name: ".a", Off: ^uint64(0), Size: 2})}}, ErrBadSegment},
		{"overlap", Options{Segments: []Segment{seg(SubSection{Name: ".a", Off: 0, Size: 9}, SubSection{Name: ".b", Off: 8, Size: 1})}}, ErrBadSegment},
		{"no name", Options{Segments: []Segment{seg(SubSection{Off: 0, Size: 1})}}, ErrBadSegment},
		{"same name", Options{Segments: []Segment{seg(SubSection{Name: ".a", Size: 1}, SubSection{Name: ".a", Off: 1, Size: 1})}}, ErrBadSection},
		{"bss name", Options{Segments: []Segment{seg(SubSection{Name: ".u.bss", Size: 1})}}, ErrBadSection},
		{"section name", Options{Segments: []Segment{seg(SubSection{Name: ".m", Size: 1})}, Sections: []Section{{Name: ".m"}}}, ErrBadSection},
		{"name table", Options{Sections: []Section{{Name: ".shstrtab"}}}, ErrBadSection},
		{"hdr in old segment", Options{EHFrameHdr: EHFrameHdr{Addr: 0x2000, Size: 8}}, ErrNotFileBacked},
		{"hdr in zero tail", Options{Segments: []Segment{seg()}, EHFrameHdr: EHFrameHdr{Addr: free + 30, Size: 4}}, ErrNotFileBacked},
		{"hdr empty", Options{Segments: []Segment{seg()}, EHFrameHdr: EHFrameHdr{Addr: free}}, ErrNotFileBacked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Write(orig, tt.opts)
			var e *Error
			if !errors.Is(err, tt.want) || !errors.As(err, &e) || out != nil {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			t.Log(err)
		})
	}
}
