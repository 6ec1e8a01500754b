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

// FuzzParseFrame: ParseFrame, Rows, InitialState and Find on arbitrary
// bytes must never panic; rows must start at Begin and ascend; errors
// must be located *FormatErrors; Find must return an entry holding pc.
func FuzzParseFrame(f *testing.F) {
	var s section
	c := s.cie(1, "zPLR", 0x9b, 0x10, 0x20, 0x30, 0x40, 0x1b, 0x1b)
	s.fde(c, func(e *w) {
		e.u32(0x40).u32(0x80).uleb(4).u32(0x200)
		e.raw(0x41, 0x0e, 16, 0x86, 2, 0x0a, 0x43, 0x0d, 6, 0x0b, 0x2e, 0x10, 0x0f, 2, 0x77, 8, 0x10, 3, 1, 0x9c)
	})
	f.Add(s.b, uint64(secAddr), uint64(0x1040))
	var s2 section
	c = s2.cie(3, "zRS", 0x03)
	s2.fde(c, func(e *w) {
		e.u32(0x1000).u32(0x100).uleb(0)
		e.raw(0x0c, 7, 8, 0x90, 1, 0x02, 0x10, 0x16, 1, 1, 0x9c, 0x14, 3, 2, 0x09, 4, 5, 0x07, 6, 0x08, 7, 0xc3, 0x06, 16, 0x2f, 3, 1)
	})
	f.Add(s2.b, uint64(0), uint64(0x1010))
	if ef, err := elf.Open("/bin/bash"); err == nil {
		if sec := ef.Section(".eh_frame"); sec != nil {
			if d, err := sec.Data(); err == nil {
				f.Add(d[:min(len(d), 1024)], sec.Addr, sec.Addr)
			}
		}
		ef.Close()
	}
	f.Fuzz(func(t *testing.T, data []byte, addr, pc uint64) {
		fr, err := ParseFrame(data, addr, Options{DataBase: 0x60_0000, TextBase: 0x40_0000})
		if err != nil {
			checkFormatError(t, err, len(data), "")
			if fr != nil {
				t.Fatal("frame returned with an error")
			}
			return
		}
		for _, c := range fr.CIEs {
			if _, err := c.InitialState(); err != nil {
				checkFormatError(t, err, len(data), "")
			}
		}
		for i, e := range fr.Entries {
			if i > 0 && fr.Entries[i-1].Begin > e.Begin {
				t.Fatal("entries not sorted by Begin")
			}
			rows, err := e.Rows()
			checkFirstRow(t, e, rows, err)
			if err != nil {
				checkFormatError(t, err, len(data), "")
				continue
			}
			if len(rows) == 0 || rows[0].Addr != e.Begin {
				t.Fatalf("rows %+v do not start at Begin %#x", rows, e.Begin)
			}
			for j := 1; j < len(rows); j++ {
				if rows[j].Addr <= rows[j-1].Addr || rows[j].Addr >= e.End || rows[j].State.Equal(rows[j-1].State) {
					t.Fatalf("row %d of %+v: not ascending inside the FDE, or repeated", j, rows)
				}
			}
		}
		if e := fr.Find(pc); e != nil && (pc < e.Begin || pc >= e.End) {
			t.Fatalf("Find(%#x) = [%#x,%#x)", pc, e.Begin, e.End)
		}
	})
}

// FuzzParseLSDA: arbitrary LSDA bytes must never panic, and an error
// must be a located *FormatError.
func FuzzParseLSDA(f *testing.F) {
	f.Add(lsdaBytes(0, 0xff, nil, 0x9b, 0x0b,
		[]callSiteRec{{0x8, 0x10, 0x80, 1}, {0x20, 0x4, 0x90, 3}, {0x30, 4, 0xa0, 5}},
		[]byte{0x7f, 0x00, 0x7d, 0x00, 0x01, 0x7d},
		[]byte{0x02, 0x00, 0x00},
		func(e *w, base int) { e.u32(0x1000).u32(0x2000) }), uint64(0), uint64(0x40_1000))
	f.Add(lsdaBytes(2, 0x03, []byte{0, 0x20, 0x40, 0}, 0x03, 0x01,
		[]callSiteRec{{0, 0x10, 0x8, 1}}, []byte{0x01, 0x00, 0x02, 0x7d}, nil,
		func(e *w, base int) { e.u32(0).u32(0x60_0010) }), uint64(2), uint64(0x40_1000))
	f.Fuzz(func(t *testing.T, sec []byte, at, fn uint64) {
		l, err := ParseLSDA(sec, lsdaSecAddr, lsdaSecAddr+at, fn, Options{DataBase: 0x60_0000})
		if err != nil {
			checkFormatError(t, err, len(sec), ".gcc_except_table")
			if l != nil {
				t.Fatal("LSDA returned with an error")
			}
			return
		}
		for _, c := range l.CallSites {
			if c.End < c.Start {
				t.Fatalf("call site [%#x,%#x)", c.Start, c.End)
			}
			if c.Actions != nil && len(c.Actions) == 0 {
				t.Fatal("empty, non-nil action chain")
			}
		}
	})
}

func checkFormatError(t *testing.T, err error, n int, section string) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Off < 0 || fe.Off > n || fe.Err == nil || fe.Section != section {
		t.Fatalf("error %v (%T) is not a located *FormatError of %q", err, err, section)
	}
}
