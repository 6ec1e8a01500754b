package cfg

import (
	"os"
	"sort"
	"testing"
)

// searchSection is section without the hot section's shortcut.
func searchSection(b *Binary, addr uint64) *Section {
	// (the function before the shortcut)
	i := sort.Search(len(b.sections), func(i int) bool { return b.sections[i].Addr+b.sections[i].Size > addr })
	if i < len(b.sections) && b.sections[i].Addr <= addr {
		return &b.sections[i]
	}
	return nil
}

// TestSectionHot: section answers as the binary search does at both
// ends of every section of real binaries (which take the shortcut), and
// of sections where a section without data (.tbss) overlaps the
// largest executable one, which must not take it: an address the two
// share is the earlier section's by the search. Dropping the overlap
// test fails the second part.
func TestSectionHot(t *testing.T) {
	found := 0
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/bin/bash"} {
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		b, err := Load(data)
		if err != nil {
			t.Fatal(err)
		}
		found++
		if b.hot == 0 {
			t.Errorf("%s: no hot section", p)
		}
		for _, s := range b.sections {
			for _, a := range []uint64{s.Addr - 1, s.Addr, s.Addr + s.Size/2, s.Addr + s.Size - 1, s.Addr + s.Size} {
				if got, want := b.section(a), searchSection(b, a); got != want {
					t.Errorf("%s: section(%#x) = %s, the search gives %s", p, a, secName(got), secName(want))
				}
			}
		}
	}
	if found == 0 {
		t.Skip("needs libc.so.6 or bash (Debian packages libc6, bash)")
	}

	text := make([]byte, 0x1000)
	b := &Binary{sections: []Section{
		{Name: ".tbss", Addr: 0xf00, Size: 0x400},
		{Name: ".text", Addr: 0x1000, Size: 0x1000, Exec: true, data: text},
	}}
	if err := b.placeHot(); err != nil {
		t.Fatal(err)
	}
	for _, a := range []uint64{0xeff, 0xf00, 0x1000, 0x1100, 0x12ff, 0x1300, 0x1fff, 0x2000} {
		if got, want := b.section(a), searchSection(b, a); got != want {
			t.Errorf("overlap: section(%#x) = %s, the search gives %s", a, secName(got), secName(want))
		}
	}
}

func secName(s *Section) string {
	if s == nil {
		return "none"
	}
	return s.Name
}
