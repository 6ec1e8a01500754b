package enc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Children: code emitted apart, on goroutines of its own, and appended
// to its parent later in a chosen order. A child counts its offsets from
// the place in the parent where its code is meant to start (Child's at),
// so alignment decisions taken while emitting into it (Len modulo a
// power of two) hold wherever it lands at the same offset modulo that
// power; Append moves everything by the difference and tells the caller,
// who must move the offsets it took from Len the same way. Labels are
// the parent's: a child binds the parent's labels and makes new ones
// that the parent and other children may name once it is appended.
//
// While children are in use the parent is used by one goroutine, which
// appends them; each child by one goroutine at a time.

// labelBind is a label a child bound, at one of its offsets.
type labelBind struct {
	l   Label
	off int32
}

// labelRange is a block of label ids [lo, hi) a child reserved; it has
// handed out those below next.
type labelRange struct{ lo, hi Label }

// maxCodeArray bounds the arrays a parent's code grows by as children
// are appended (Buf.done).
const maxCodeArray = 32 << 20

// childLabels is how many label ids a child reserves at first; it
// reserves twice as many each time, up to maxChildLabels.
const (
	childLabels    = 16
	maxChildLabels = 4096
)

// Child returns an empty buffer whose code will be appended to b
// (Append): its offsets count from at, its %rsp displacement starts at
// sp (the parent's SP where it will land). size is about how many bytes
// of code it will hold (0 if not known): the child starts with the
// arrays of an appended child that hold that much, or room for it. b
// must not be a child.
func (b *Buf) Child(at int, sp int32, size int) *Buf {
	c := &Buf{parent: b, at: at, sp: sp}
	if b.parent != nil {
		c.fail("Child", "the parent is itself a child")
		return c
	}
	b.mu.Lock()
	c.known = Label(len(b.labels))
	if a, ok := b.takeSpare(size); ok {
		c.code, c.fixups, c.spLog, c.binds = a.code, a.fixups, a.spLog, a.binds
	}
	b.mu.Unlock()
	if size > cap(c.code) {
		c.Grow(size)
	}
	return c
}

// spareClasses is the number of classes of spare arrays: class k holds
// the spares whose code array has a capacity of k bits (bits.Len), from
// 2^(k-1) to 2^k-1 bytes; the last class holds all larger ones.
const spareClasses = 32

// spareClass is the class of a spare whose code array has capacity n.
func spareClass(n int) int { return min(bits.Len(uint(n)), spareClasses-1) }

// takeSpare takes the spare arrays for a child of about size bytes: of
// the smallest class whose arrays all hold size, else of size's own
// class, else of the largest smaller class. Taking the last spare
// whatever its size gave large arrays to small functions and made the
// large functions grow small arrays once more (libLLVM: some 600 MB of
// growing, decision 127). b.mu is held.
func (b *Buf) takeSpare(size int) (childArrays, bool) {
	if b.spare == nil {
		return childArrays{}, false
	}
	take := func(j int) (childArrays, bool) {
		n := len(b.spare[j])
		if n == 0 {
			return childArrays{}, false
		}
		a := b.spare[j][n-1]
		b.spare[j] = b.spare[j][:n-1]
		return a, true
	}
	k := spareClass(size)
	for j := k + 1; j < spareClasses; j++ {
		if a, ok := take(j); ok {
			return a, true
		}
	}
	for j := k; j >= 0; j-- {
		if a, ok := take(j); ok {
			return a, true
		}
	}
	return childArrays{}, false
}

// childArrays are the arrays of an appended child, which the next child
// takes over (a library's hundred thousand functions would otherwise
// each grow their own from nothing).
type childArrays struct {
	code   []byte
	fixups []fixup
	spLog  []SPMark
	binds  []labelBind
}

// Place fixes the address b's code will be laid out at: Append then
// fills the fields whose destination is known (an address, a bound
// label), and Finish and Take must be given that base. A large program
// then holds only the fields that refer ahead, not one per branch.
func (b *Buf) Place(base uint64) {
	b.placed, b.base = true, base
}

// Append adds child c's code at the end of b and makes its labels and
// fields b's. It returns how far c's offsets moved: b.Len() before the
// call minus the at c was made with. b's %rsp displacement becomes c's.
// A label bound twice (by c, or by c and b or an earlier child) is an
// error, and c's first template error is returned as it is; then
// nothing is appended. After a successful Append c is done with: a later
// child reuses its arrays (its %rsp log is not b's: take what you need
// of SPLog before).
func (b *Buf) Append(c *Buf) (int, error) {
	if c.parent != b {
		return 0, fmt.Errorf("enc: Append of a buffer that is not a child of this one")
	}
	if c.err != nil {
		return 0, c.err
	}
	shift := b.Len() - c.at
	if int64(b.Len())+int64(len(c.code)) > math.MaxInt32 {
		return 0, fmt.Errorf("enc: code buffer past 2 GiB")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, lb := range c.binds {
		if v := b.labels[lb.l]; v != -1 {
			for _, lb := range c.binds[:i] {
				b.labels[lb.l] = -1
			}
			at := int(v)
			if v == -2 {
				at = int(lb.off) + shift // bound twice in c
			}
			return 0, &OperandError{Off: int(lb.off) + shift, Op: "Bind", Msg: fmt.Sprintf("label %d already bound at offset %#x", lb.l, at)}
		}
		b.labels[lb.l] = -2 // bound by c, set below
	}
	for _, lb := range c.binds {
		b.labels[lb.l] = lb.off + int32(shift)
	}
	if len(b.code)+len(c.code) > cap(b.code) && len(b.code) > 0 {
		// A new array rather than a copy of the whole code: the parent's
		// code grows while what emitted it (the children's functions'
		// analysis) goes.
		b.done = append(b.done, b.code)
		b.doneLen += len(b.code)
		b.code = make([]byte, 0, max(min(2*cap(b.code), maxCodeArray), len(c.code)))
	}
	b.code = append(b.code, c.code...)
	for _, f := range c.fixups {
		f.off += int32(shift)
		f.end += int32(shift)
		if !b.fillEarly(f) {
			b.fixups = append(b.fixups, f)
		}
	}
	b.sp = c.sp
	if b.spare == nil {
		b.spare = new([spareClasses][]childArrays)
	}
	k := spareClass(cap(c.code))
	b.spare[k] = append(b.spare[k], childArrays{c.code[:0], c.fixups[:0], c.spLog[:0], c.binds[:0]})
	*c = Buf{parent: b, err: errAppended}
	return shift, nil
}

// errAppended is the sticky error of a child after Append.
var errAppended = errors.New("enc: child buffer already appended")

// fillEarly fills field f now if b is placed and f's destination is
// known, and reports whether it did. A field that would not fit is left
// for Finish to report in order. b.mu is held.
func (b *Buf) fillEarly(f fixup) bool {
	if !b.placed {
		return false
	}
	var dest uint64
	if l, ok := f.t.Label(); ok {
		off := b.labels[l]
		if off < 0 {
			return false
		}
		dest = b.base + uint64(off)
	} else {
		dest = f.t.addr
	}
	d := int64(dest - (b.base + uint64(f.end)))
	if d < math.MinInt32 || d > math.MaxInt32 {
		return false
	}
	binary.LittleEndian.PutUint32(b.code[int(f.off)-b.doneLen:], uint32(int32(d)))
	return true
}

// childLabel makes a label for a child, from the ids it reserved.
func (b *Buf) childLabel() Label {
	if len(b.own) == 0 || b.next == b.own[len(b.own)-1].hi {
		n := Label(childLabels)
		if k := len(b.own); k > 0 {
			n = min(2*(b.own[k-1].hi-b.own[k-1].lo), maxChildLabels)
		}
		p := b.parent
		p.mu.Lock()
		lo := Label(len(p.labels))
		for range n {
			p.labels = append(p.labels, -1)
		}
		p.mu.Unlock()
		b.own = append(b.own, labelRange{lo, lo + n})
		b.next = lo
	}
	b.next++
	return b.next - 1
}

// childOwns reports whether a child may name l: a label that existed
// when it was made, or one it made.
func (b *Buf) childOwns(l Label) bool {
	if l >= 0 && l < b.known {
		return true
	}
	for i, r := range b.own {
		hi := r.hi
		if i == len(b.own)-1 {
			hi = b.next
		}
		if l >= r.lo && l < hi {
			return true
		}
	}
	return false
}

// childBind binds l in a child.
func (b *Buf) childBind(l Label) {
	if !b.childOwns(l) {
		b.fail("Bind", "label %d was not made by this Buf", l)
		return
	}
	b.binds = append(b.binds, labelBind{l, int32(b.Len())})
}

// childOffset returns where a child bound l.
func (b *Buf) childOffset(l Label) (int, bool) {
	for _, lb := range b.binds {
		if lb.l == l {
			return int(lb.off), true
		}
	}
	return 0, false
}
