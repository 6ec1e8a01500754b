package ehframe

import (
	"debug/elf"
	"errors"
	"testing"
)

// FuzzParse: arbitrary section bytes must never panic; a success must
// describe FDEs inside the section that point back at CIEs, and a failure
// must be a *FormatError inside the section with no FDEs.
func FuzzParse(f *testing.F) {
	var s section
	c := s.cie(1, "zPLR", 0x9b, 0x10, 0x20, 0x30, 0x40, 0x1b, 0x1b)
	s.fde(c, func(e *w) { e.u32(0x40).u32(0x80).uleb(4).u32(0x200) })
	c2 := s.cie(3, "zR", 0x50)
	s.fde(c2, func(e *w) { e.u32(0).u64(0x401000).u64(0x40).uleb(0) })
	f.Add(s.b, uint64(secAddr), uint64(0))
	var s2 section
	c = s2.cie(1, "zR", 0x3b)
	s2.fde(c, func(e *w) { e.u32(0x40).u32(0x80).uleb(0) })
	s2.b = append(s2.b, 0, 0, 0, 0)
	f.Add(s2.b, uint64(0), uint64(0x60_0000))
	if ef, err := elf.Open("/bin/bash"); err == nil {
		if sec := ef.Section(".eh_frame"); sec != nil {
			if d, err := sec.Data(); err == nil {
				f.Add(d[:min(len(d), 2048)], sec.Addr, uint64(0))
			}
		}
		ef.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte, addr, dataBase uint64) {
		fdes, err := Parse(data, addr, Options{DataBase: dataBase})
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Off < 0 || fe.Off > len(data) || fe.Err == nil {
				t.Fatalf("error %v (%T) is not a located *FormatError", err, err)
			}
			if fdes != nil {
				t.Fatalf("%d FDEs returned with an error", len(fdes))
			}
			return
		}
		prev := -1
		for _, fd := range fdes {
			if fd.Off <= prev || fd.Off >= len(data) || fd.CIEOff < 0 || fd.CIEOff >= fd.Off {
				t.Fatalf("FDE at %d (CIE %d) out of place in %d bytes", fd.Off, fd.CIEOff, len(data))
			}
			if fd.End < fd.Begin {
				t.Fatalf("FDE at %d: End %#x < Begin %#x", fd.Off, fd.End, fd.Begin)
			}
			prev = fd.Off
		}
	})
}
