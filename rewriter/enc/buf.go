package enc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
)

// Sentinel errors; the located error types below wrap them.
var (
	// ErrUnbound: a rel32 field refers to a label that was never bound.
	ErrUnbound = errors.New("label not bound")
	// ErrRange: a rel32 field's destination is more than 2 GiB away from
	// the end of its instruction.
	ErrRange = errors.New("displacement does not fit in 32 bits")
	// ErrOperand: a template was given an operand it cannot encode (an
	// unknown register, %rsp as an index, a label of no Buf, ...).
	ErrOperand = errors.New("invalid operand")
	// ErrUnsupported: a valid instruction Relocate does not know how to
	// move.
	ErrUnsupported = errors.New("instruction cannot be relocated")
	// ErrInconsistent: the x86.Inst handed to Relocate does not describe
	// the bytes handed with it.
	ErrInconsistent = errors.New("instruction does not match its bytes")
)

// Label names a position in a Buf. NewLabel creates one, Bind fixes it at
// the current end of the buffer. Labels belong to the Buf that made them.
type Label int32

// Target is what a rel32 or rip-relative disp32 field refers to: a Label
// of the same Buf, or an absolute virtual address outside it (original
// code, data, runtime symbols). The zero Target is invalid, so a caller
// that forgets to set one gets an error rather than a jump to 0.
type Target struct {
	kind  uint8 // 0 invalid, targetLabel, targetAbs
	label Label
	addr  uint64
}

const (
	targetLabel = 1 + iota
	targetAbs
)

// LabelTarget refers to a label of the Buf the field is emitted into.
func LabelTarget(l Label) Target { return Target{kind: targetLabel, label: l} }

// AbsTarget refers to an absolute virtual address.
func AbsTarget(addr uint64) Target { return Target{kind: targetAbs, addr: addr} }

// Label returns the label and true for a label target.
func (t Target) Label() (Label, bool) { return t.label, t.kind == targetLabel }

// Addr returns the address and true for an absolute target.
func (t Target) Addr() (uint64, bool) { return t.addr, t.kind == targetAbs }

// Valid reports whether t was made by LabelTarget or AbsTarget.
func (t Target) Valid() bool { return t.kind == targetLabel || t.kind == targetAbs }

func (t Target) String() string {
	switch t.kind {
	case targetLabel:
		return "L" + strconv.Itoa(int(t.label))
	case targetAbs:
		return fmt.Sprintf("%#x", t.addr)
	}
	return "invalid target"
}

// FixupError locates a rel32/disp32 field Finish could not resolve.
type FixupError struct {
	Off    int    // offset of the 4-byte field in the buffer
	Target Target // what it refers to
	Err    error  // ErrUnbound or ErrRange
}

func (e *FixupError) Error() string {
	return fmt.Sprintf("enc: field at offset %#x to %v: %v", e.Off, e.Target, e.Err)
}

func (e *FixupError) Unwrap() error { return e.Err }

// OperandError reports a template call that could not be encoded. Buf
// keeps the first one and returns it from Finish (and Err); the failing
// call emits nothing.
type OperandError struct {
	Off int    // buffer offset where the instruction would have started
	Op  string // template name
	Msg string // what is wrong with the operands
}

func (e *OperandError) Error() string {
	return fmt.Sprintf("enc: %s at offset %#x: %s", e.Op, e.Off, e.Msg)
}

func (e *OperandError) Unwrap() error { return ErrOperand }

// fixup is a 4-byte field holding dest - (base + end), where end is the
// offset just past the instruction that holds it: x86 rel32 and rip
// displacements count from the next instruction, immediates included
// [Intel SDM Vol.2 §2.2.1.6].
type fixup struct {
	off, end int32 // a buffer past 2 GiB has no rel32 fields to fill
	t        Target
}

// Buf accumulates machine code whose final address is known only at
// Finish. The zero Buf is ready to use.
//
// Template methods append one instruction each. Their length depends
// only on the registers named, never on immediate or displacement values
// (those are always 32 bits wide), so a layout pass can size code before
// addresses are known. A template given a bad operand appends nothing and
// records an *OperandError; the first such error is sticky and returned
// by Finish.
type Buf struct {
	code   []byte
	labels []int32 // offset of each label, -1 while unbound (a child's are its parent's)
	fixups []fixup
	err    error
	// sp is how far the templates have moved %rsp (negative: down)
	// since the caller last set it; spLog records each change.
	sp    int32
	spLog []SPMark
	// mu guards labels once the Buf has children (child.go), which make
	// labels from other goroutines.
	mu sync.Mutex
	// placed says that Place fixed the address the code will be laid
	// out at (base).
	placed bool
	base   uint64
	// A child's own state (child.go): its parent, the offset in the
	// parent its code is to start at (at: its offsets count from there),
	// the labels it bound, the labels it may name besides those that
	// existed when it was made (known), and the ids it reserved.
	parent *Buf
	at     int
	binds  []labelBind
	known  Label
	own    []labelRange
	next   Label // the next id of the last range in own
	// spare holds the arrays of appended children, for the next ones,
	// by the class of their code array's capacity (takeSpare).
	spare *[spareClasses][]childArrays
	// done holds the parent's earlier code, doneLen bytes, in arrays
	// Append filled (child.go): its offsets count from the first.
	done    [][]byte
	doneLen int
}

// SPMark says that from code offset Off on, %rsp is SP bytes away from
// the value the caller declared with SetSP (usually its value at the
// original instruction being instrumented). Unwind tables for the new
// code are built from these [DWARF5 §6.4.1]: where the CFA is computed
// from %rsp, its offset changes with every push, pop and lea.
type SPMark struct {
	Off int
	SP  int32
}

// SP is the current %rsp displacement (see SPMark).
func (b *Buf) SP() int32 { return b.sp }

// SetSP declares the %rsp displacement at the current offset, e.g. 0 at
// each copied original instruction, or the depth at which an out-of-line
// slow path starts.
func (b *Buf) SetSP(v int32) {
	if v == b.sp {
		return
	}
	b.sp = v
	b.logSP()
}

// SPLog returns the %rsp changes in code order.
func (b *Buf) SPLog() []SPMark { return b.spLog }

func (b *Buf) moveSP(d int32) {
	b.sp += d
	b.logSP()
}

func (b *Buf) logSP() {
	if n := len(b.spLog); n > 0 && b.spLog[n-1].Off == b.Len() {
		b.spLog[n-1].SP = b.sp
		return
	}
	b.spLog = append(b.spLog, SPMark{Off: b.Len(), SP: b.sp})
}

// Len is the number of bytes emitted so far; for a child, the offset in
// its parent at which it would end (Child).
func (b *Buf) Len() int { return b.at + b.doneLen + len(b.code) }

// Err returns the first template error, or nil.
func (b *Buf) Err() error { return b.err }

// NewLabel returns a fresh, unbound label.
func (b *Buf) NewLabel() Label {
	if b.parent != nil {
		return b.childLabel()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.labels = append(b.labels, -1)
	return Label(len(b.labels) - 1)
}

// Bind places l at the current end of the buffer. A label is bound once.
func (b *Buf) Bind(l Label) {
	if b.parent != nil {
		b.childBind(l)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case !b.ownsLabelLocked(l):
		b.fail("Bind", "label %d was not made by this Buf", l)
	case b.labels[l] >= 0:
		b.fail("Bind", "label %d already bound at offset %#x", l, b.labels[l])
	default:
		b.labels[l] = int32(b.Len())
	}
}

// Offset returns the buffer offset of a bound label: for a child, of one
// it bound itself.
func (b *Buf) Offset(l Label) (int, bool) {
	if b.parent != nil {
		return b.childOffset(l)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.ownsLabelLocked(l) || b.labels[l] < 0 {
		return 0, false
	}
	return int(b.labels[l]), true
}

// Truncate discards everything emitted from offset n on: bytes, fields
// and the binding of labels bound after n (labels bound exactly at n stay
// bound). It lets a caller undo a function that turned out not to be
// relocatable. n must lie on an instruction boundary; the buffer cannot
// check that, but it does refuse an n outside [0, Len()].
func (b *Buf) Truncate(n int) {
	if b.parent != nil || b.doneLen > 0 {
		b.fail("Truncate", "a buffer with children is not truncated")
		return
	}
	if n < 0 || n > len(b.code) {
		b.fail("Truncate", "offset %d outside [0, %d]", n, len(b.code))
		return
	}
	b.code = b.code[:n]
	for i, off := range b.labels {
		if int(off) > n {
			b.labels[i] = -1
		}
	}
	keep := b.fixups[:0]
	for _, f := range b.fixups {
		if int(f.end) <= n {
			keep = append(keep, f)
		}
	}
	b.fixups = keep
	for len(b.spLog) > 0 && b.spLog[len(b.spLog)-1].Off > n {
		b.spLog = b.spLog[:len(b.spLog)-1]
	}
	b.sp = 0
	if k := len(b.spLog); k > 0 {
		b.sp = b.spLog[k-1].SP
	}
}

// Finish lays the buffer out at base and returns a copy of its bytes with
// every rel32/disp32 field resolved. It fails on the first template
// error, on a field whose label is unbound, and on a field whose
// destination is out of reach. The Buf is not changed, so Finish may be
// called again, with another base or after more code.
func (b *Buf) Finish(base uint64) ([]byte, error) {
	if err := b.finishable(base); err != nil {
		return nil, err
	}
	out := b.joinCode()
	if err := b.resolve(base, Code{out}); err != nil {
		return nil, err
	}
	return out, nil
}

// Take is Finish for a caller done with the buffer: the fields are
// resolved in the buffer's own bytes, which it returns, and the Buf keeps
// only its labels and %rsp log (Offset and SPLog still work; emitting
// more code or finishing again does not). A large program's code is then
// held once, not twice. After an error the bytes are not to be used.
func (b *Buf) Take(base uint64) ([]byte, error) {
	code, err := b.TakeCode(base)
	if err != nil {
		return nil, err
	}
	if len(code) == 1 {
		return code[0], nil
	}
	return code.Bytes(), nil
}

// TakeCode is Take leaving the code in the arrays it grew by
// (Buf.Append): a large program's code (libLLVM's: 250 MB) is not
// copied into one more.
func (b *Buf) TakeCode(base uint64) (Code, error) {
	if err := b.finishable(base); err != nil {
		return nil, err
	}
	code := append(Code(nil), b.done...)
	code = append(code, b.code)
	if err := b.resolve(base, code); err != nil {
		return nil, err
	}
	// Only the labels' offsets are read from here on (Offset).
	b.code, b.fixups, b.done, b.doneLen = nil, nil, nil, 0
	b.spare, b.spLog = nil, nil
	b.err = errTaken
	return code, nil
}

// Code is a buffer's code in the arrays it was emitted into, one after
// another (TakeCode). An instruction, and so every field of one, lies
// in one array.
type Code [][]byte

// Len is the number of bytes.
func (c Code) Len() int {
	n := 0
	for _, a := range c {
		n += len(a)
	}
	return n
}

// Bytes returns the code in one new array.
func (c Code) Bytes() []byte {
	out := make([]byte, 0, c.Len())
	for _, a := range c {
		out = append(out, a...)
	}
	return out
}

// At returns the bytes from offset off to the end of the array holding
// it.
func (c Code) At(off int) []byte {
	for _, a := range c {
		if off < len(a) {
			return a[off:]
		}
		off -= len(a)
	}
	return nil
}

// finishable reports why the buffer cannot be finished at base.
func (b *Buf) finishable(base uint64) error {
	switch {
	case b.err != nil:
		return b.err
	case b.parent != nil:
		return fmt.Errorf("enc: a child buffer is finished through its parent (Append)")
	case b.placed && base != b.base:
		return fmt.Errorf("enc: finishing at %#x code placed at %#x", base, b.base)
	}
	return nil
}

// joinCode returns a copy of all of b's code in one array.
func (b *Buf) joinCode() []byte {
	return append(append(Code(nil), b.done...), b.code).Bytes()
}

// errTaken is the sticky error of a Buf after Take.
var errTaken = errors.New("enc: buffer already taken")

// Grow reserves room for n more bytes of code, and for the fields and
// %rsp marks such code usually holds (instrumented code has about one
// field per 28 bytes and one mark per 36), so that a caller that knows about
// how much it will emit spares the copies of growing the buffer.
func (b *Buf) Grow(n int) {
	b.code = slices.Grow(b.code, n)
	if !b.placed {
		// A placed buffer's children fill most of their fields as they
		// are appended, and keep their %rsp marks (child.go).
		b.fixups = slices.Grow(b.fixups, n/28)
		b.spLog = slices.Grow(b.spLog, n/36)
	}
}

// resolve fills the rel32/disp32 fields in out, a copy of the buffer's
// bytes (or the bytes themselves), for code laid out at base.
func (b *Buf) resolve(base uint64, out Code) error {
	n := out.Len()
	if base+uint64(n) < base {
		return fmt.Errorf("enc: %d bytes at %#x pass the end of the address space: %w", n, base, ErrRange)
	}
	// The fields come in no particular order; starts[i] is where out[i]
	// begins.
	starts := make([]int, len(out))
	at := 0
	for i, a := range out {
		starts[i] = at
		at += len(a)
	}
	for _, f := range b.fixups {
		var dest uint64
		if l, ok := f.t.Label(); ok {
			off := int(b.labels[l]) // ownership was checked when the field was emitted
			if off < 0 {
				return &FixupError{Off: int(f.off), Target: f.t, Err: ErrUnbound}
			}
			dest = base + uint64(off)
		} else {
			dest = f.t.addr
		}
		// Addresses wrap modulo 2^64 as the CPU's rip arithmetic does; the
		// difference read as signed is the displacement.
		d := int64(dest - (base + uint64(f.end)))
		if d < math.MinInt32 || d > math.MaxInt32 {
			return &FixupError{Off: int(f.off), Target: f.t, Err: ErrRange}
		}
		i := sort.SearchInts(starts, int(f.off)+1) - 1
		binary.LittleEndian.PutUint32(out[i][int(f.off)-starts[i]:], uint32(int32(d)))
	}
	return nil
}

func (b *Buf) ownsLabel(l Label) bool {
	if b.parent != nil {
		return b.childOwns(l)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ownsLabelLocked(l)
}

func (b *Buf) ownsLabelLocked(l Label) bool { return l >= 0 && int(l) < len(b.labels) }

func (b *Buf) fail(op, format string, args ...any) {
	if b.err == nil {
		b.err = &OperandError{Off: b.Len(), Op: op, Msg: fmt.Sprintf(format, args...)}
	}
}

// checkTarget reports whether t can be used in a field of b, recording an
// error when it cannot.
func (b *Buf) checkTarget(op string, t Target) bool {
	switch {
	case !t.Valid():
		b.fail(op, "target not set (use LabelTarget or AbsTarget)")
		return false
	case t.kind == targetLabel && !b.ownsLabel(t.label):
		b.fail(op, "label %d was not made by this Buf", t.label)
		return false
	}
	return true
}

// checkRegs reports whether every register is one of the sixteen,
// recording an error when one is not.
func (b *Buf) checkRegs(op string, rs ...Reg) bool {
	for _, r := range rs {
		if !r.valid() {
			b.fail(op, "register %v", r)
			return false
		}
	}
	return true
}

func (b *Buf) emit(bs ...byte) { b.code = append(b.code, bs...) }

func (b *Buf) emit32(v uint32) { b.code = binary.LittleEndian.AppendUint32(b.code, v) }

func (b *Buf) emit64(v uint64) { b.code = binary.LittleEndian.AppendUint64(b.code, v) }

// field appends a zero 4-byte field that Finish fills with t relative to
// the end of the instruction, end bytes from the start of the buffer's
// own bytes (len(b.code) counts them). The caller has checked t.
func (b *Buf) field(t Target, end int) {
	end += b.at + b.doneLen // from where a child starts in its parent, past a parent's earlier arrays
	if end > math.MaxInt32 {
		b.fail("field", "code buffer past 2 GiB")
	}
	b.fixups = append(b.fixups, fixup{off: int32(b.Len()), end: int32(end), t: t})
	b.emit32(0)
}

// rel32 appends a field that ends its instruction (branches, lea/jmp
// through rip with nothing after the displacement).
func (b *Buf) rel32(t Target) { b.field(t, len(b.code)+4) }
