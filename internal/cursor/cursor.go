package cursor

import (
	"encoding/binary"
	"fmt"
)

// Cursor reads Data, which starts at offset Off of the input.
type Cursor struct {
	Data []byte // the bytes still to read
	Off  int    // input offset of Data[0]
	// Err is the first failure, as Located made it; nil while all is well.
	Err error
	// Short is the sentinel for reading past the end.
	Short error
	// Located makes the error of a failure: msg at input offset off,
	// wrapping sentinel.
	Located func(off int, msg string, sentinel error) error
}

// FailAt records a failure at input offset off, unless one is recorded,
// and stops every later read.
func (c *Cursor) FailAt(off int, sentinel error, format string, args ...any) {
	if c.Err == nil {
		c.Err = c.Located(off, fmt.Sprintf(format, args...), sentinel)
	}
	c.Data = nil
}

// Fail records a failure at the current offset.
func (c *Cursor) Fail(sentinel error, format string, args ...any) {
	c.FailAt(c.Off, sentinel, format, args...)
}

// Bytes reads the next n bytes; the slice aliases the input, its capacity
// cut to n.
func (c *Cursor) Bytes(n uint64, what string) []byte {
	if c.Err != nil {
		return nil
	}
	if n > uint64(len(c.Data)) {
		c.Fail(c.Short, "%s: need %d bytes, %d left", what, n, len(c.Data))
		return nil
	}
	p := c.Data[:n:n]
	c.Data = c.Data[n:]
	c.Off += int(n)
	return p
}

// Sub splits the next n bytes off as a cursor of their own, whose reads
// past its end fail with short. When they are not there it fails, and so
// does the cursor it returns.
func (c *Cursor) Sub(n uint64, what string, short error) Cursor {
	start := c.Off
	p := c.Bytes(n, what)
	return Cursor{Data: p, Off: start, Err: c.Err, Short: short, Located: c.Located}
}

func (c *Cursor) U8(what string) uint8 {
	if p := c.Bytes(1, what); p != nil {
		return p[0]
	}
	return 0
}

func (c *Cursor) U16(what string) uint16 {
	if p := c.Bytes(2, what); p != nil {
		return binary.LittleEndian.Uint16(p)
	}
	return 0
}

func (c *Cursor) U32(what string) uint32 {
	if p := c.Bytes(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

func (c *Cursor) U64(what string) uint64 {
	if p := c.Bytes(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}
