package enc

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

// emitPart emits one part of TestChildrenAsSerial's program: a loop, a
// call forward to the next part's label, an absolute call, 64-byte
// alignment and %rsp moves; it returns the label that starts it.
func emitPart(b *Buf, start, next Label, k int) {
	b.Bind(start)
	top := b.NewLabel()
	b.Nop(k % 7)
	if pad := -b.Len() & 63; pad > 0 {
		b.Nop(pad)
	}
	b.Bind(top)
	b.LeaRSP(-128)
	b.CallRel32(LabelTarget(next))
	b.CallRel32(AbsTarget(0x401000 + uint64(k)))
	b.LeaRSP(128)
	b.JccRel32(CondNE, LabelTarget(top))
	b.JmpRel32(LabelTarget(start))
}

// TestChildrenAsSerial: parts emitted into children on goroutines of
// their own, each made for where it lands, then appended in order, give
// the bytes, label offsets and %rsp log of the same parts emitted into
// one buffer, placed or not.
func TestChildrenAsSerial(t *testing.T) {
	const n = 40
	const base = 0x7000_0000
	var serial Buf
	starts := make([]Label, n+1)
	for i := range starts {
		starts[i] = serial.NewLabel()
	}
	var offs []int
	for i := 0; i < n; i++ {
		emitPart(&serial, starts[i], starts[i+1], i)
		offs = append(offs, serial.Len())
	}
	serial.Bind(starts[n])
	want, err := serial.Finish(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, placed := range []bool{false, true} {
		var par Buf
		for range starts {
			par.NewLabel()
		}
		if placed {
			par.Place(base)
		}
		kids := make([]*Buf, n)
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			at := 0
			if i > 0 {
				at = offs[i-1]
			}
			kids[i] = par.Child(at, 0, 0)
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				emitPart(kids[i], starts[i], starts[i+1], i)
			}(i)
		}
		wg.Wait()
		for i, c := range kids {
			if shift, err := par.Append(c); err != nil || shift != 0 {
				t.Fatalf("append %d: shift %d, %v", i, shift, err)
			}
		}
		par.Bind(starts[n])
		got, err := par.Finish(base)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("placed %v: children differ from one buffer", placed)
		}
		for i, l := range starts {
			o1, ok1 := serial.Offset(l)
			o2, ok2 := par.Offset(l)
			if o1 != o2 || ok1 != ok2 {
				t.Fatalf("label %d: %d %v, one buffer %d %v", i, o2, ok2, o1, ok1)
			}
		}
		if placed && len(par.fixups) >= len(serial.fixups)/2 {
			t.Errorf("placed: %d fields left for Finish of %d", len(par.fixups), len(serial.fixups))
		}
		// Taken in the arrays it grew by, the code is the same, with
		// the fields left for the end resolved in whichever array.
		code, err := par.TakeCode(base)
		if err != nil {
			t.Fatal(err)
		}
		if len(code) < 2 || code.Len() != len(want) || !bytes.Equal(code.Bytes(), want) {
			t.Fatalf("placed %v: TakeCode gives %d arrays, %d bytes, not Finish's", placed, len(code), code.Len())
		}
		for _, off := range offs {
			if at := code.At(off - 1); len(at) == 0 || at[0] != want[off-1] {
				t.Fatalf("At(%d) is not the byte there", off-1)
			}
		}
	}
}

// TestChildShift: a child made for another offset moves by the
// difference, and its labels with it.
func TestChildShift(t *testing.T) {
	var b Buf
	b.Nop(5)
	l := b.NewLabel()
	c := b.Child(100, 0, 0)
	c.Nop(3)
	c.Bind(l)
	m := c.NewLabel()
	c.Bind(m)
	c.JmpRel32(LabelTarget(l))
	if off, ok := c.Offset(m); !ok || off != 103 {
		t.Fatalf("child Offset = %d, %v; want 103", off, ok)
	}
	shift, err := b.Append(c)
	if err != nil || shift != -95 {
		t.Fatalf("Append: %d, %v; want -95", shift, err)
	}
	for _, x := range []Label{l, m} {
		if off, ok := b.Offset(x); !ok || off != 8 {
			t.Errorf("Offset(%d) = %d, %v; want 8", x, off, ok)
		}
	}
	got, err := b.Finish(0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0xe9, 0xfb, 0xff, 0xff, 0xff}; !bytes.Equal(got[8:], want) {
		t.Errorf("jmp % x, want % x", got[8:], want)
	}
	if _, err := b.Append(c); err == nil {
		t.Error("a child appended twice")
	}
}

// TestChildBindTwice: a label bound by two children, or twice by one,
// makes Append fail and changes nothing.
func TestChildBindTwice(t *testing.T) {
	var b Buf
	l := b.NewLabel()
	c1, c2 := b.Child(0, 0, 0), b.Child(0, 0, 0)
	c1.Bind(l)
	c1.Ret()
	c2.Bind(l)
	if _, err := b.Append(c1); err != nil {
		t.Fatal(err)
	}
	var oe *OperandError
	if _, err := b.Append(c2); !errors.As(err, &oe) {
		t.Fatalf("second bind: %v, want an *OperandError", err)
	}
	c3 := b.Child(b.Len(), 0, 0)
	k := c3.NewLabel()
	c3.Bind(k)
	c3.Bind(k)
	if _, err := b.Append(c3); !errors.As(err, &oe) {
		t.Fatalf("bound twice in one child: %v", err)
	}
	if off, ok := b.Offset(k); ok {
		t.Errorf("label of a refused child bound at %d", off)
	}
	if b.Len() != 1 {
		t.Errorf("Len %d after refused appends, want 1", b.Len())
	}
}

// TestChildSpareFits: a child gets the arrays of an appended child that
// hold the size it is made for, whichever was appended last, and a small
// child leaves the large arrays to a large one (decision 127).
func TestChildSpareFits(t *testing.T) {
	var b Buf
	emit := func(size, n int) *Buf {
		c := b.Child(b.Len(), 0, size)
		for range n {
			c.Ret()
		}
		return c
	}
	// Three appended children, the large one neither first nor last,
	// each with arrays of its own.
	var kids []*Buf
	for _, n := range []int{100, 8000, 300} {
		kids = append(kids, emit(0, n))
	}
	for _, c := range kids {
		if _, err := b.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	large := b.Child(b.Len(), 0, 5000)
	if c := cap(large.code); c < 8000 {
		t.Fatalf("a child for 5000 bytes took arrays of %d bytes, not the 8000-byte child's", c)
	}
	small := b.Child(b.Len(), 0, 200)
	if c := cap(small.code); c < 200 || c >= 8000 {
		t.Errorf("a child for 200 bytes took arrays of %d bytes, want the 300-byte child's", c)
	}
	tiny := b.Child(b.Len(), 0, 50)
	if c := cap(tiny.code); c < 100 || c >= 300 {
		t.Errorf("a child for 50 bytes took arrays of %d bytes, want the 100-byte child's", c)
	}
	fresh := b.Child(b.Len(), 0, 1000)
	if c := cap(fresh.code); c < 1000 {
		t.Errorf("a child for 1000 bytes with no spare left has room for %d", c)
	}
	for _, c := range []*Buf{large, small, tiny, fresh} {
		c.Ret()
		if _, err := b.Append(c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Finish(0); err != nil {
		t.Fatal(err)
	}
}
