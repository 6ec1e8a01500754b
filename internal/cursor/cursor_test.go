package cursor

import (
	"errors"
	"fmt"
	"testing"
)

var errShort, errInner = errors.New("short"), errors.New("inner")

type located struct {
	off int
	msg string
	err error
}

func (e *located) Error() string { return fmt.Sprintf("%d: %s", e.off, e.msg) }
func (e *located) Unwrap() error { return e.err }

func newCursor(data []byte, off int) Cursor {
	return Cursor{Data: data, Off: off, Short: errShort, Located: func(off int, msg string, sentinel error) error {
		return &located{off, msg, sentinel}
	}}
}

// TestReads: little-endian values, offsets that follow the reads, and a
// failure that is recorded once, where it happened, and stops every read
// after it.
func TestReads(t *testing.T) {
	c := newCursor([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}, 100)
	if v := c.U8("a"); v != 1 {
		t.Errorf("U8 = %#x", v)
	}
	if v := c.U16("b"); v != 0x0302 {
		t.Errorf("U16 = %#x", v)
	}
	if v := c.U32("c"); v != 0x07060504 {
		t.Errorf("U32 = %#x", v)
	}
	if c.Off != 107 || c.Err != nil {
		t.Fatalf("after 7 bytes: off %d, err %v", c.Off, c.Err)
	}
	if v := c.U64("d"); v != 0x0f0e0d0c0b0a0908 {
		t.Errorf("U64 = %#x", v)
	}
	if v := c.U16("e"); v != 0 || c.Err == nil {
		t.Fatalf("U16 with 1 byte left = %#x, %v", v, c.Err)
	}
	var e *located
	if !errors.As(c.Err, &e) || e.off != 115 || e.msg != "e: need 2 bytes, 1 left" || !errors.Is(c.Err, errShort) {
		t.Errorf("failure %#v, want at 115, need 2 bytes, wrapping errShort", c.Err)
	}
	first := c.Err
	if c.U8("f") != 0 || c.Err != first {
		t.Errorf("a read after the failure gave a value or a new error: %v", c.Err)
	}
}

// TestSub: a sub-cursor starts where it was split off, keeps its own end
// and sentinel, and a split past the end fails both cursors.
func TestSub(t *testing.T) {
	c := newCursor([]byte{1, 2, 3, 4, 5}, 10)
	s := c.Sub(2, "sub", errInner)
	if c.Off != 12 || s.Off != 10 || len(s.Data) != 2 || cap(s.Data) != 2 {
		t.Fatalf("split: parent off %d, sub off %d, %d bytes (cap %d)", c.Off, s.Off, len(s.Data), cap(s.Data))
	}
	s.U16("x")
	s.U8("y")
	if !errors.Is(s.Err, errInner) || c.Err != nil {
		t.Errorf("reading past the sub's end: sub %v, parent %v", s.Err, c.Err)
	}
	bad := c.Sub(4, "big", errInner)
	if !errors.Is(c.Err, errShort) || bad.Err != c.Err || bad.Data != nil {
		t.Errorf("split past the end: parent %v, sub %v", c.Err, bad.Err)
	}
}
