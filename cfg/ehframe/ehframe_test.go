package ehframe

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
)

// section builds synthetic .eh_frame bytes.
type section struct{ b []byte }

type w struct{ b []byte } // an entry body being written

func (e *w) u8(v uint8) *w   { e.b = append(e.b, v); return e }
func (e *w) u16(v uint16) *w { e.b = binary.LittleEndian.AppendUint16(e.b, v); return e }
func (e *w) u32(v uint32) *w { e.b = binary.LittleEndian.AppendUint32(e.b, v); return e }
func (e *w) u64(v uint64) *w { e.b = binary.LittleEndian.AppendUint64(e.b, v); return e }
func (e *w) raw(p ...byte) *w {
	e.b = append(e.b, p...)
	return e
}
func (e *w) str(s string) *w { e.b = append(append(e.b, s...), 0); return e }
func (e *w) uleb(v uint64) *w {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		e.b = append(e.b, c)
		if v == 0 {
			return e
		}
	}
}
func (e *w) sleb(v int64) *w {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		e.b = append(e.b, c)
		if done {
			return e
		}
	}
}

// cie appends a CIE: version, augmentation, code 1, data -8, RA 16, the
// augmentation data (with its length when aug starts with z), and two
// DW_CFA_nop. It returns the CIE's offset.
func (s *section) cie(version uint8, aug string, augData ...byte) int {
	e := &w{}
	e.u32(0).u8(version).str(aug).uleb(1).sleb(-8)
	if version == 1 {
		e.u8(16)
	} else {
		e.uleb(16)
	}
	if len(aug) > 0 && aug[0] == 'z' {
		e.uleb(uint64(len(augData)))
	}
	e.raw(augData...).raw(0, 0)
	return s.entry(e.b)
}

// fde appends an FDE for the CIE at cieOff; body writes the fields after
// the CIE pointer. It returns the offset of the FDE's pc_begin field.
func (s *section) fde(cieOff int, body func(e *w)) int {
	start := len(s.b)
	e := &w{}
	e.u32(uint32(start + 4 - cieOff))
	body(e)
	e.raw(0, 0, 0)
	s.entry(e.b)
	return start + 8
}

func (s *section) entry(body []byte) int {
	off := len(s.b)
	s.b = binary.LittleEndian.AppendUint32(s.b, uint32(len(body)))
	s.b = append(s.b, body...)
	return off
}

const secAddr = 0x40_0000

func TestParse(t *testing.T) {
	type tc struct {
		name string
		opts Options
		// build returns the section and the expected FDEs (Off and
		// CIEOff are filled from the builder).
		build func() ([]byte, []FDE)
	}
	tests := []tc{
		{"zR pcrel sdata4 (gcc default)", Options{}, func() ([]byte, []FDE) {
			var s section
			c := s.cie(1, "zR", 0x1b)
			var f1, f2 int
			f1 = s.fde(c, func(e *w) { e.u32(neg32(0x1000)).u32(0x22).uleb(0) })
			f2 = s.fde(c, func(e *w) { e.u32(0x100).u32(0x10).uleb(0) })
			return s.b, []FDE{
				{Begin: secAddr + uint64(f1) - 0x1000, End: secAddr + uint64(f1) - 0x1000 + 0x22, Off: f1 - 8, CIEOff: c},
				{Begin: secAddr + uint64(f2) + 0x100, End: secAddr + uint64(f2) + 0x110, Off: f2 - 8, CIEOff: c},
			}
		}},
		{"zPLR with LSDA (g++)", Options{}, func() ([]byte, []FDE) {
			var s section
			// P: indirect|pcrel|sdata4 personality, L: pcrel|sdata4, R: pcrel|sdata4.
			c := s.cie(1, "zPLR", 0x9b, 0x10, 0x20, 0x30, 0x40, 0x1b, 0x1b)
			f := s.fde(c, func(e *w) { e.u32(0x40).u32(0x80).uleb(4).u32(0x200) })
			lsdaField := uint64(f + 8 + 1) // after pc_begin, pc_range and the uleb length
			return s.b, []FDE{{Begin: secAddr + uint64(f) + 0x40, End: secAddr + uint64(f) + 0xc0, LSDA: secAddr + lsdaField + 0x200, Off: f - 8, CIEOff: c}}
		}},
		{"zLR with omitted LSDA, then LSDA udata4 indirect", Options{}, func() ([]byte, []FDE) {
			var s section
			c1 := s.cie(1, "zLR", 0xff, 0x03)
			f1 := s.fde(c1, func(e *w) { e.u32(0x1000).u32(0x10).uleb(0) })
			c2 := s.cie(1, "zLR", 0x83, 0x03)
			f2 := s.fde(c2, func(e *w) { e.u32(0x2000).u32(0x10).uleb(4).u32(0x5000) })
			return s.b, []FDE{
				{Begin: 0x1000, End: 0x1010, Off: f1 - 8, CIEOff: c1},
				{Begin: 0x2000, End: 0x2010, LSDA: 0x5000, Off: f2 - 8, CIEOff: c2},
			}
		}},
		{"no augmentation: absptr", Options{}, func() ([]byte, []FDE) {
			var s section
			c := s.cie(1, "")
			f := s.fde(c, func(e *w) { e.u64(0x401000).u64(0x30) })
			return s.b, []FDE{{Begin: 0x401000, End: 0x401030, Off: f - 8, CIEOff: c}}
		}},
		{"old eh augmentation", Options{}, func() ([]byte, []FDE) {
			var s section
			e := &w{}
			e.u32(0).u8(1).str("eh").u64(0xdeadbeef).uleb(1).sleb(-8).u8(16)
			c := s.entry(e.b)
			f := s.fde(c, func(e *w) { e.u64(0x1000).u64(0x8) })
			return s.b, []FDE{{Begin: 0x1000, End: 0x1008, Off: f - 8, CIEOff: c}}
		}},
		{"version 3, uleb return register, zRS/zRB/zRG", Options{}, func() ([]byte, []FDE) {
			var s section
			e := &w{}
			e.u32(0).u8(3).str("zRS").uleb(1).sleb(-8).uleb(300).uleb(1).u8(0x03)
			c := s.entry(e.b)
			f1 := s.fde(c, func(e *w) { e.u32(0x1000).u32(0x4).uleb(0) })
			c2 := s.cie(1, "zRB", 0x03)
			f2 := s.fde(c2, func(e *w) { e.u32(0x2000).u32(0x4).uleb(0) })
			c3 := s.cie(1, "zRG", 0x03)
			f3 := s.fde(c3, func(e *w) { e.u32(0x3000).u32(0x4).uleb(0) })
			return s.b, []FDE{
				{Begin: 0x1000, End: 0x1004, Off: f1 - 8, CIEOff: c},
				{Begin: 0x2000, End: 0x2004, Off: f2 - 8, CIEOff: c2},
				{Begin: 0x3000, End: 0x3004, Off: f3 - 8, CIEOff: c3},
			}
		}},
		{"value formats", Options{}, func() ([]byte, []FDE) {
			var s section
			var want []FDE
			add := func(enc byte, body func(e *w), begin, end uint64) {
				c := s.cie(1, "zR", enc)
				f := s.fde(c, func(e *w) { body(e); e.uleb(0) })
				want = append(want, FDE{Begin: begin, End: end, Off: f - 8, CIEOff: c})
			}
			add(0x00, func(e *w) { e.u64(0x1122334455).u64(0x10) }, 0x1122334455, 0x1122334465)
			add(0x01, func(e *w) { e.uleb(0x123456).uleb(0x300) }, 0x123456, 0x123756)
			add(0x02, func(e *w) { e.u16(0xfff0).u16(0x10) }, 0xfff0, 0x10000)
			add(0x03, func(e *w) { e.u32(0xfffffff0).u32(0x10) }, 0xfffffff0, 0x100000000)
			add(0x04, func(e *w) { e.u64(0x7000000000).u64(0x10) }, 0x7000000000, 0x7000000010)
			add(0x08, func(e *w) { e.u64(0x1000).u64(0x20) }, 0x1000, 0x1020)
			add(0x09, func(e *w) { e.sleb(0x4000).sleb(0x20) }, 0x4000, 0x4020)
			add(0x0a, func(e *w) { e.u16(0x1234).u16(0x20) }, 0x1234, 0x1254)
			add(0x0b, func(e *w) { e.u32(0x12345678).u32(0x20) }, 0x12345678, 0x12345698)
			add(0x0c, func(e *w) { e.u64(0x12345678).u64(0x20) }, 0x12345678, 0x12345698)
			// Negative absolute values wrap to high addresses (kernel-style).
			add(0x0b, func(e *w) { e.u32(0x80000000).u32(0x20) }, 0xffffffff80000000, 0xffffffff80000020)
			return s.b, want
		}},
		{"pcrel with every format", Options{}, func() ([]byte, []FDE) {
			var s section
			var want []FDE
			add := func(enc byte, body func(e *w), rel, size uint64) {
				c := s.cie(1, "zR", enc)
				var f int
				f = s.fde(c, func(e *w) { body(e); e.uleb(0) })
				b := secAddr + uint64(f) + rel
				want = append(want, FDE{Begin: b, End: b + size, Off: f - 8, CIEOff: c})
			}
			add(0x10, func(e *w) { e.u64(0x100).u64(0x8) }, 0x100, 8)
			add(0x19, func(e *w) { e.sleb(-0x100).sleb(0x8) }, -0x100&(1<<64-1), 8)
			add(0x1a, func(e *w) { e.u16(uint16(0x10000 - 0x10)).u16(0x8) }, -0x10&(1<<64-1), 8)
			add(0x1c, func(e *w) { e.u64(uint64(1<<64 - 0x20)).u64(0x8) }, -0x20&(1<<64-1), 8)
			return s.b, want
		}},
		{"datarel and textrel with bases", Options{DataBase: 0x60_0000, TextBase: 0x40_1000}, func() ([]byte, []FDE) {
			var s section
			c1 := s.cie(1, "zR", 0x3b)
			f1 := s.fde(c1, func(e *w) { e.u32(neg32(0x1000)).u32(0x10).uleb(0) })
			c2 := s.cie(1, "zR", 0x23)
			f2 := s.fde(c2, func(e *w) { e.u32(0x200).u32(0x10).uleb(0) })
			return s.b, []FDE{
				{Begin: 0x5f_f000, End: 0x5f_f010, Off: f1 - 8, CIEOff: c1},
				{Begin: 0x40_1200, End: 0x40_1210, Off: f2 - 8, CIEOff: c2},
			}
		}},
		{"aligned", Options{}, func() ([]byte, []FDE) {
			var s section
			c := s.cie(1, "zR", 0x50)
			start := len(s.b)
			e := &w{}
			e.u32(uint32(start + 4 - c))
			// pc_begin's field starts at start+8; pad it to 8 bytes.
			pad := (8 - (secAddr+start+8)%8) % 8
			for range pad {
				e.u8(0)
			}
			e.u64(0x401000).u64(0x40).uleb(0)
			s.entry(e.b)
			return s.b, []FDE{{Begin: 0x401000, End: 0x401040, Off: start, CIEOff: c}}
		}},
		{"64-bit length", Options{}, func() ([]byte, []FDE) {
			var s section
			c := s.cie(1, "zR", 0x03)
			start := len(s.b)
			body := (&w{}).u32(uint32(start+12-c)).u32(0x7000).u32(0x10).uleb(0).raw(0, 0).b
			s.b = binary.LittleEndian.AppendUint32(s.b, 0xffffffff)
			s.b = binary.LittleEndian.AppendUint64(s.b, uint64(len(body)))
			s.b = append(s.b, body...)
			return s.b, []FDE{{Begin: 0x7000, End: 0x7010, Off: start, CIEOff: c}}
		}},
		{"zero terminator ends the section", Options{}, func() ([]byte, []FDE) {
			var s section
			c := s.cie(1, "zR", 0x03)
			f := s.fde(c, func(e *w) { e.u32(0x1000).u32(0x10).uleb(0) })
			s.b = append(s.b, 0, 0, 0, 0)
			s.b = append(s.b, 0xde, 0xad, 0xbe, 0xef, 0xff) // garbage after the terminator
			return s.b, []FDE{{Begin: 0x1000, End: 0x1010, Off: f - 8, CIEOff: c}}
		}},
		{"unknown augmentation after R is skipped", Options{}, func() ([]byte, []FDE) {
			var s section
			c := s.cie(1, "zRX", 0x03, 0xaa, 0xbb)
			f := s.fde(c, func(e *w) { e.u32(0x1000).u32(0x10).uleb(0) })
			return s.b, []FDE{{Begin: 0x1000, End: 0x1010, Off: f - 8, CIEOff: c}}
		}},
		{"FDE with zero range (discarded section)", Options{}, func() ([]byte, []FDE) {
			var s section
			c := s.cie(1, "zR", 0x03)
			f := s.fde(c, func(e *w) { e.u32(0).u32(0).uleb(0) })
			return s.b, []FDE{{Off: f - 8, CIEOff: c}}
		}},
		{"empty section", Options{}, func() ([]byte, []FDE) { return nil, nil }},
		{"CIE only", Options{}, func() ([]byte, []FDE) {
			var s section
			s.cie(1, "zR", 0x1b)
			return s.b, nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, want := tc.build()
			got, err := Parse(data, secAddr, tc.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		build func() []byte
		want  error
		off   int // expected FormatError.Off, -1 to skip
	}{
		{"length past end", Options{}, func() []byte {
			return []byte{0x20, 0, 0, 0, 0, 0, 0, 0}
		}, ErrTruncated, 4},
		{"short length field", Options{}, func() []byte { return []byte{1, 0} }, ErrTruncated, 0},
		{"64-bit length past end", Options{}, func() []byte {
			return []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0}
		}, ErrTruncated, 12},
		{"version 2", Options{}, func() []byte {
			var s section
			s.cie(2, "zR", 0x1b)
			return s.b
		}, ErrVersion, 8},
		{"version 4", Options{}, func() []byte {
			var s section
			s.cie(4, "zR", 0x1b)
			return s.b
		}, ErrVersion, 8},
		{"augmentation without z", Options{}, func() []byte {
			var s section
			s.cie(1, "R", 0x1b)
			return s.b
		}, ErrAugmentation, 9},
		{"unknown augmentation before R", Options{}, func() []byte {
			var s section
			s.cie(1, "zXR", 0x00, 0x1b)
			return s.b
		}, ErrAugmentation, 9},
		{"augmentation string not terminated", Options{}, func() []byte {
			e := (&w{}).u32(0).u8(1).raw('z', 'R')
			var s section
			s.entry(e.b)
			return s.b
		}, ErrTruncated, -1},
		{"augmentation data past entry", Options{}, func() []byte {
			e := (&w{}).u32(0).u8(1).str("zR").uleb(1).sleb(-8).u8(16).uleb(50).u8(0x1b)
			var s section
			s.entry(e.b)
			return s.b
		}, ErrTruncated, -1},
		{"bad value format", Options{}, func() []byte {
			var s section
			s.cie(1, "zR", 0x05)
			return s.b
		}, ErrEncoding, -1},
		{"funcrel", Options{}, func() []byte {
			var s section
			s.cie(1, "zR", 0x43)
			return s.b
		}, ErrEncoding, -1},
		{"indirect FDE address", Options{}, func() []byte {
			var s section
			s.cie(1, "zR", 0x9b)
			return s.b
		}, ErrEncoding, -1},
		{"omitted FDE address", Options{}, func() []byte {
			var s section
			s.cie(1, "zR", 0xff)
			return s.b
		}, ErrEncoding, -1},
		{"bad personality encoding", Options{}, func() []byte {
			var s section
			s.cie(1, "zPR", 0x07, 0, 0, 0, 0, 0x1b)
			return s.b
		}, ErrEncoding, -1},
		{"bad LSDA encoding", Options{}, func() []byte {
			var s section
			s.cie(1, "zLR", 0x0e, 0x1b)
			return s.b
		}, ErrEncoding, -1},
		{"datarel without base", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x3b)
			s.fde(c, func(e *w) { e.u32(0).u32(0x10).uleb(0) })
			return s.b
		}, ErrNoBase, -1},
		{"textrel without base", Options{DataBase: 0x1000}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x23)
			s.fde(c, func(e *w) { e.u32(0).u32(0x10).uleb(0) })
			return s.b
		}, ErrNoBase, -1},
		{"CIE pointer before the section", Options{}, func() []byte {
			var s section
			s.cie(1, "zR", 0x03)
			e := (&w{}).u32(0x1000).u32(0).u32(0).uleb(0)
			s.entry(e.b)
			return s.b
		}, ErrCIEPointer, -1},
		{"CIE pointer into the middle of a CIE", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x03)
			s.fde(c+4, func(e *w) { e.u32(0).u32(0).uleb(0) })
			return s.b
		}, ErrCIEPointer, -1},
		{"CIE pointer to an FDE", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x03)
			f := s.fde(c, func(e *w) { e.u32(0).u32(0).uleb(0) })
			s.fde(f-8, func(e *w) { e.u32(0).u32(0).uleb(0) })
			return s.b
		}, ErrCIEPointer, -1},
		{"FDE truncated in pc_range", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x03)
			e := (&w{}).u32(uint32(len(s.b) + 4 - c)).u32(0x1000).u16(0)
			s.entry(e.b)
			return s.b
		}, ErrTruncated, -1},
		{"FDE augmentation past entry", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x03)
			e := (&w{}).u32(uint32(len(s.b) + 4 - c)).u32(0x1000).u32(0x10).uleb(9)
			s.entry(e.b)
			return s.b
		}, ErrTruncated, -1},
		{"range wraps", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x04)
			s.fde(c, func(e *w) { e.u64(1<<64 - 0x10).u64(0x20).uleb(0) })
			return s.b
		}, ErrOverflow, -1},
		{"uleb overflow", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x01)
			s.fde(c, func(e *w) {
				e.raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f).uleb(0).uleb(0)
			})
			return s.b
		}, ErrOverflow, -1},
		{"sleb overflow", Options{}, func() []byte {
			var s section
			c := s.cie(1, "zR", 0x09)
			s.fde(c, func(e *w) {
				e.raw(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01).uleb(0).uleb(0)
			})
			return s.b
		}, ErrOverflow, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.build()
			got, err := Parse(data, secAddr, tc.opts)
			if err == nil {
				t.Fatalf("Parse = %+v, want error %v", got, tc.want)
			}
			if got != nil {
				t.Errorf("Parse returned %d FDEs with the error", len(got))
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			if fe.Off < 0 || fe.Off > len(data) {
				t.Errorf("FormatError.Off %d outside the %d-byte section", fe.Off, len(data))
			}
			if tc.off >= 0 && fe.Off != tc.off {
				t.Errorf("FormatError.Off = %d, want %d (%v)", fe.Off, tc.off, err)
			}
		})
	}
}

func TestLEB128(t *testing.T) {
	for _, tc := range []struct {
		in         []byte
		u          uint64
		s          int64
		uErr, sErr bool
	}{
		{in: []byte{0x00}, u: 0, s: 0},
		{in: []byte{0x7f}, u: 127, s: -1},
		{in: []byte{0x80, 0x01}, u: 128, s: 128},
		{in: []byte{0xe5, 0x8e, 0x26}, u: 624485, s: 624485},
		{in: []byte{0xc0, 0xbb, 0x78}, u: 1973696, s: -123456},
		{in: []byte{0x80, 0x80, 0x00}, u: 0, s: 0}, // padded
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, u: 1<<64 - 1, sErr: true},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f}, uErr: true, s: -1 << 63},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00}, u: 1<<63 - 1, s: 1<<63 - 1},
		{in: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x80, 0x00}, u: 1<<63 - 1, s: 1<<63 - 1},
		{in: []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, uErr: true, sErr: true},
		{in: []byte{0x80}, uErr: true, sErr: true}, // truncated
	} {
		b := newBuf(tc.in, 0)
		u := b.uleb("x")
		if (b.Err != nil) != tc.uErr || !tc.uErr && u != tc.u {
			t.Errorf("uleb(% x) = %d, %v; want %d (error %v)", tc.in, u, b.Err, tc.u, tc.uErr)
		}
		b = newBuf(tc.in, 0)
		s := b.sleb("x")
		if (b.Err != nil) != tc.sErr || !tc.sErr && s != tc.s {
			t.Errorf("sleb(% x) = %d, %v; want %d (error %v)", tc.in, s, b.Err, tc.s, tc.sErr)
		}
	}
}

func TestFormatError(t *testing.T) {
	e := &FormatError{Off: 0x18, Msg: "CIE version 2 (want 1 or 3)", Err: ErrVersion}
	if got, want := e.Error(), "eh_frame at offset 0x18: CIE version 2 (want 1 or 3)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, ErrVersion) {
		t.Error("FormatError does not unwrap to its sentinel")
	}
}

// neg32 is the two's-complement encoding of -v in 32 bits.
func neg32(v uint32) uint32 { return ^v + 1 }
