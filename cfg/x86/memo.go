package x86

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/arch/x86/x86asm"
)

// Decoding with x86asm takes about 270 ns an instruction, and the
// analysis of a large library decodes each of its instructions four or
// five times (libLLVM: 12.5 million instructions): the program-wide
// sweep, the graph builder, discovery's flow scan and code generation.
// A large program holds few distinct instructions once the displacement
// of its branches and rip-relative operands is set aside (libLLVM: 350
// thousand, the 130 thousand most frequent of them 98% of its code).
// DecodeInfo keeps what it decoded by those bytes, with the
// displacement zeroed, and answers a repeat by retargeting the kept
// Info: Addr, Target, RIPTarget and the displacement in Args are the
// only fields that depend on the displacement's value and the address.
//
// That claim is checked, not assumed: an instruction is kept only after
// a second decoding, of its bytes with another displacement (every bit
// flipped) at another address, equals the first one retargeted there
// (retargets). Errors are never kept.
//
// The table is a flat array of fixed-size slots, each holding the last
// instruction that hashed there packed into words, so that a lookup
// reads one or two cache lines and follows no pointer (a table of
// pointers to decoded instructions spent more time in cache misses
// than x86asm would have decoding). Each slot is a sequence lock over
// atomic words: a writer makes the sequence odd while it writes, and a
// reader that sees it odd or changed takes the slot for empty, so
// concurrent decoders never see a torn entry.

// memoBits sizes the table: 2^18 slots of 64 bytes (16 MiB), which hold
// nearly all the distinct instructions of the largest library.
const memoBits = 18

// memoWords is the size of a slot, one cache line: the sequence, the
// key (2 words), the fields (1), the operands (3: 32 bits each) and the
// values of up to two of them (32 bits each, and whether to extend them
// with their sign). A rip-relative memory operand's and a branch's
// value is the displacement, which retarget sets; instructions with
// other values that do not fit (movabs) are not kept.
const memoWords = 8

type memoSlot [memoWords]atomic.Uint64

var (
	// memoTable is the table. Its pages are fresh from the system and
	// untouched until used: a program that decodes a few instructions
	// does not pay for it.
	memoTable = new([1 << memoBits]memoSlot)
	// memoOff turns the table off (tests compare with and without).
	memoOff atomic.Bool
)

// memoKey returns the table key of code as two words (its bytes, the
// displacements zeroed, and its length in the last byte), and the
// displacements it zeroed: a branch's (rel, sign-extended) and a
// rip-relative operand's (disp, as the 4 bytes read).
//
// The key is made in registers: code's 16 bytes are read as two words
// when its array holds them (the caller's code is a slice of a section,
// so nearly always), masked to its length, and the displacements masked
// out. Building it as a byte array instead (bytes stored one by one,
// then read back as words) stalled every look-up on a store the load
// could not be forwarded from: 14 % of memoDecode's samples in a
// libLLVM rewrite [decision 135].
func memoKey(code []byte, l *layout) (k0, k1 uint64, rel int64, disp uint32) {
	n := uint(len(code))
	if cap(code) >= 16 {
		w := code[:16]
		k0, k1 = binary.LittleEndian.Uint64(w[:8]), binary.LittleEndian.Uint64(w[8:])
	} else {
		var b [16]byte
		copy(b[:], code)
		k0, k1 = binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
	}
	m0, m1 := byteMask(0, n) // n <= maxLen: byte 15 is free for it
	switch l.relSize {
	case 1:
		rel = int64(int8(code[l.immOff]))
		z0, z1 := byteMask(uint(l.immOff), uint(l.immOff)+1)
		m0, m1 = m0&^z0, m1&^z1
	case 4:
		rel = int64(int32(binary.LittleEndian.Uint32(code[l.immOff:])))
		z0, z1 := byteMask(uint(l.immOff), uint(l.immOff)+4)
		m0, m1 = m0&^z0, m1&^z1
	}
	if l.ripRel {
		disp = binary.LittleEndian.Uint32(code[l.dispOff:])
		z0, z1 := byteMask(uint(l.dispOff), uint(l.dispOff)+4)
		m0, m1 = m0&^z0, m1&^z1
	}
	return k0 & m0, k1&m1 | uint64(n)<<56, rel, disp
}

// byteMask returns the words whose bytes lo to hi (not included, at most
// 16) of the 16 are ones.
func byteMask(lo, hi uint) (m0, m1 uint64) {
	a0, a1 := prefixMask(hi)
	b0, b1 := prefixMask(lo)
	return a0 &^ b0, a1 &^ b1
}

// prefixMask returns the words whose first n bytes of 16 are ones.
func prefixMask(n uint) (m0, m1 uint64) {
	if n >= 8 {
		return ^uint64(0), 1<<(8*(n-8)) - 1 // n = 16: 1<<64 is 0
	}
	return 1<<(8*n) - 1, 0
}

func memoHash(k0, k1 uint64) uint64 {
	h := k0*0x9e3779b97f4a7c15 ^ k1
	return h * 0xbf58476d1ce4e5b9
}

// Flag bits of a packed Info.
const (
	bitRIPRel = 1 << iota
	bitEndbr
	bitNotrack
	bitBnd
	bitRep
	bitRepne
	bitLock
	bitSignExt // x86asm sign-extended the rip displacement (retarget)
)

// packed is a slot's words after the sequence and the key.
type packed [memoWords - 3]uint64

// field places v, which must fit bits bits, at bit at of *w; it
// reports whether v fit.
func field(w *uint64, at, bits uint, v uint64) bool {
	*w |= (v & (1<<bits - 1)) << at
	return v < 1<<bits
}

// get is the field of bits bits at bit at of w.
func get(w uint64, at, bits uint) uint64 { return w >> at & (1<<bits - 1) }

// branchSizes are the branch field sizes (Info.BranchSize) by code.
var branchSizes = [4]int{0, 1, 4, 0}

// scales are x86asm's memory scales by code.
var scales = [8]uint8{0, 1, 2, 4, 8}

// pack returns the words of in (its address-independent fields), or
// false when a field does not fit.
func pack(in *Info, signExt bool) (w packed, ok bool) {
	var bits uint64
	for i, b := range [...]bool{in.RIPRel, in.Endbr, in.Notrack, in.Bnd, in.Rep, in.Repne, in.Lock, signExt} {
		if b {
			bits |= 1 << i
		}
	}
	bsize := uint64(3)
	for c, n := range branchSizes[:3] {
		if n == in.BranchSize {
			bsize = uint64(c)
		}
	}
	ok = field(&w[0], 0, 16, uint64(in.Op)) && field(&w[0], 16, 4, uint64(in.Kind)) &&
		field(&w[0], 20, 2, uint64(in.Encoding)) && field(&w[0], 22, 4, uint64(in.BranchOff)) &&
		field(&w[0], 26, 2, bsize) && field(&w[0], 28, 4, uint64(in.RIPDispOff)) &&
		field(&w[0], 32, 8, bits) && field(&w[0], 40, 4, uint64(in.OpcodeOff)) &&
		field(&w[0], 44, 4, uint64(in.ModRMOff+1)) && field(&w[0], 48, 8, uint64(in.Reads)) &&
		field(&w[0], 56, 8, uint64(in.Writes))
	v := 0
	for i := range in.Args {
		a := &in.Args[i]
		m := &w[1+i/2]
		at := uint(32 * (i % 2))
		seg := uint64(0)
		if a.Segment != 0 {
			seg = uint64(a.Segment-x86asm.ES) + 1
		}
		scale := uint64(8)
		for c, s := range scales[:5] {
			if s == a.Scale {
				scale = uint64(c)
			}
		}
		reg := a.Reg
		if a.Kind == ArgMem {
			reg = a.Base
		}
		slot, ext := uint64(0), uint64(0)
		if (a.Kind == ArgMem && a.Base != x86asm.RIP || a.Kind == ArgImm) && a.Val != 0 {
			// x86asm keeps a legacy disp32 unextended: 32 bits, and
			// whether to extend them with their sign.
			switch {
			case v == 2:
				return w, false
			case a.Val == int64(uint32(a.Val)):
			case a.Val == int64(int32(a.Val)):
				ext = 1
			default:
				return w, false
			}
			w[4] |= uint64(uint32(a.Val)) << (32 * v)
			v++
			slot = uint64(v)
		}
		ok = ok && field(m, at, 3, uint64(a.Kind)) && field(m, at+3, 2, slot) && field(m, at+5, 3, seg) &&
			field(m, at+8, 3, scale) && field(m, at+11, 8, uint64(reg)) && field(m, at+19, 8, uint64(a.Index)) &&
			field(m, at+27, 1, ext)
	}
	if !ok {
		return w, false
	}
	// Everything must come back as it went in (a Reg operand with a
	// base, a scale the table lacks, a segment out of range...).
	var back Info
	unpack(&w, &back)
	back.Addr, back.Len, back.Target, back.RIPTarget = in.Addr, in.Len, in.Target, in.RIPTarget
	for i := range back.Args {
		// The displacements retarget sets.
		if a := &back.Args[i]; a.Kind == ArgRel && in.BranchSize > 0 || a.Kind == ArgMem && a.Base == x86asm.RIP && in.RIPRel {
			a.Val = in.Args[i].Val
		}
	}
	return w, back == *in
}

// unpack fills in's address-independent fields from w (in is zero but
// for Len), and returns the signExt bit.
func unpack(w *packed, in *Info) (signExt bool) {
	f := w[0]
	in.Op = x86asm.Op(get(f, 0, 16))
	in.Kind = Kind(get(f, 16, 4))
	in.Encoding = Encoding(get(f, 20, 2))
	in.BranchOff = int(get(f, 22, 4))
	in.BranchSize = branchSizes[get(f, 26, 2)]
	in.RIPDispOff = int(get(f, 28, 4))
	bits := get(f, 32, 8)
	in.RIPRel = bits&bitRIPRel != 0
	in.Endbr = bits&bitEndbr != 0
	in.Notrack = bits&bitNotrack != 0
	in.Bnd = bits&bitBnd != 0
	in.Rep = bits&bitRep != 0
	in.Repne = bits&bitRepne != 0
	in.Lock = bits&bitLock != 0
	in.OpcodeOff = int(get(f, 40, 4))
	in.ModRMOff = int(get(f, 44, 4)) - 1
	in.Reads = Flags(get(f, 48, 8))
	in.Writes = Flags(get(f, 56, 8))
	// x86asm's operands come first, nils after (pack checks that they
	// come back).
	for i := range in.Args {
		m := w[1+i/2] >> (32 * (i % 2))
		k := ArgKind(get(m, 0, 3))
		if k == ArgNone {
			break
		}
		d := &in.Args[i]
		d.Kind = k
		if seg := get(m, 5, 3); seg != 0 {
			d.Segment = x86asm.ES + x86asm.Reg(seg-1)
		}
		d.Scale = scales[get(m, 8, 3)]
		if reg := x86asm.Reg(get(m, 11, 8)); k == ArgMem {
			d.Base = reg
		} else {
			d.Reg = reg
		}
		d.Index = x86asm.Reg(get(m, 19, 8))
		if v := get(m, 3, 2); v != 0 {
			val := uint32(w[4] >> (32 * (v - 1)))
			if get(m, 27, 1) != 0 {
				d.Val = int64(int32(val))
			} else {
				d.Val = int64(val)
			}
		}
	}
	return bits&bitSignExt != 0
}

// A Decoder decodes as DecodeInfo does, through a small table of its
// own in front of the shared one: a worker that decodes function after
// function meets the same few thousand instructions (pushes, calls,
// returns, register moves) again and again, and its own table, in its
// processor's cache and without atomic words, answers them sooner.
// A Decoder is not safe for concurrent use; a nil *Decoder decodes
// through the shared table alone.
type Decoder struct {
	near [1 << nearBits]nearSlot
	// ahead is the instruction after the last one decoded, scanned and
	// its slots prefetched (decodeInfoTo).
	ahead ahead
}

// ahead is the length decoder's answer for an instruction and its table
// key, with what identifies its bytes: the 16 bytes read from its
// array, and its length as given (at most maxLen; the layout depends on
// those bytes alone). The bytes are compared rather than the address,
// so an array written again between two decodings is scanned again.
type ahead struct {
	r0, r1 uint64
	n      int
	l      layout
	k0, k1 uint64
	rel    int64
	disp   uint32
	ok     bool
}

// raw16 returns the 16 bytes at the start of code's array as two
// words, or false when its array holds fewer.
func raw16(code []byte) (r0, r1 uint64, ok bool) {
	if cap(code) < 16 {
		return 0, 0, false
	}
	w := code[:16]
	return binary.LittleEndian.Uint64(w[:8]), binary.LittleEndian.Uint64(w[8:]), true
}

// matches reports whether a was made from code's bytes.
func (a *ahead) matches(code []byte) bool {
	if !a.ok || len(code) != a.n {
		return false
	}
	r0, r1, ok := raw16(code)
	return ok && r0 == a.r0 && r1 == a.r1
}

// nearBits sizes a Decoder's table: 4096 slots of 64 bytes.
const nearBits = 12

type nearSlot struct {
	// k0, k1 are the key; k1 holds the length byte, never 0, so a zero
	// slot matches no key.
	k0, k1  uint64
	w       packed
	signExt bool
}

var decoders = sync.Pool{New: func() any { return new(Decoder) }}

// NewDecoder returns a Decoder, one used before where there is one.
func NewDecoder() *Decoder { return decoders.Get().(*Decoder) }

// Release gives d back for another NewDecoder; d must not be used after.
func (d *Decoder) Release() { decoders.Put(d) }

// DecodeInfoTo is the package's DecodeInfoTo through d's table.
func (d *Decoder) DecodeInfoTo(in *Info, code []byte, addr uint64) error {
	return decodeInfoTo(d, in, code, addr)
}

// scanAhead scans the instruction at the start of code into d.ahead
// and touches its slots in d's table and the shared one, so that their
// cache lines are on their way while the caller works on the current
// instruction (the shared table's look-ups miss the cache for most
// instructions of a large library).
func (d *Decoder) scanAhead(code []byte) {
	a := &d.ahead
	a.ok = false
	if len(code) > maxLen {
		code = code[:maxLen]
	}
	r0, r1, ok := raw16(code)
	if !ok || scanTo(code, &a.l) != nil {
		return
	}
	a.r0, a.r1, a.n, a.ok = r0, r1, len(code), true
	a.k0, a.k1, a.rel, a.disp = memoKey(code[:a.l.n], &a.l)
	h, slots := memoSlots(a.k0, a.k1)
	prefetch(unsafe.Pointer(&d.near[h>>20&(1<<nearBits-1)]))
	prefetch(unsafe.Pointer(&slots[0]))
}

// memoDecode is DecodeInfo through the tables (d's first, when there is
// one), into in (zero); k0, k1, rel and disp are memoKey's answer.
func memoDecode(d *Decoder, in *Info, code []byte, addr uint64, l *layout, k0, k1 uint64, rel int64, disp uint32) error {
	if memoOff.Load() {
		full, err := decode(code, addr, l)
		*in = full.Info
		return err
	}
	h, slots := memoSlots(k0, k1)
	var near *nearSlot
	if d != nil {
		near = &d.near[h>>20&(1<<nearBits-1)]
		if near.k0 == k0 && near.k1 == k1 {
			in.Len = len(code)
			unpack(&near.w, in)
			retarget(in, l, addr, rel, disp, near.signExt)
			return nil
		}
	}
	if w, signExt, ok := lookup(slots, k0, k1); ok {
		if near != nil {
			*near = nearSlot{k0: k0, k1: k1, w: w, signExt: signExt}
		}
		in.Len = len(code)
		unpack(&w, in)
		retarget(in, l, addr, rel, disp, signExt)
		return nil
	}
	full, err := decode(code, addr, l)
	if err != nil {
		return err
	}
	*in = full.Info
	signExt := false
	if l.relSize > 0 || l.ripRel {
		var ok bool
		if signExt, ok = retargets(code, addr, l, in); !ok {
			return nil
		}
	}
	w, ok := pack(in, signExt)
	if !ok {
		return nil
	}
	if near != nil {
		*near = nearSlot{k0: k0, k1: k1, w: w, signExt: signExt}
	}
	// An empty slot, else the one the hash's next bit picks.
	s := &slots[h>>32&1]
	if slots[0][0].Load() == 0 {
		s = &slots[0]
	} else if slots[1][0].Load() == 0 {
		s = &slots[1]
	}
	seq := s[0].Load()
	if seq&1 != 0 || !s[0].CompareAndSwap(seq, seq+1) {
		return nil // another decoder is writing it
	}
	s[1].Store(k0)
	s[2].Store(k1)
	for j := range w {
		s[3+j].Store(w[j])
	}
	s[0].Store(seq + 2)
	return nil
}

// memoSlots returns the hash of key k0, k1 and its two slots (the
// table is two-way associative: a key that collides with a frequent one
// does not evict it).
func memoSlots(k0, k1 uint64) (h uint64, slots []memoSlot) {
	h = memoHash(k0, k1)
	at := h >> (64 - memoBits) &^ 1
	return h, memoTable[at : at+2]
}

// lookup returns the words the slots hold for key k0, k1, and the
// signExt bit, or false.
func lookup(slots []memoSlot, k0, k1 uint64) (w packed, signExt, ok bool) {
	for i := range slots {
		s := &slots[i]
		seq := s[0].Load()
		if seq == 0 || seq&1 != 0 || s[1].Load() != k0 || s[2].Load() != k1 {
			continue
		}
		for j := range w {
			w[j] = s[3+j].Load()
		}
		if s[0].Load() != seq {
			continue // written meanwhile
		}
		return w, get(w[0], 32, 8)&bitSignExt != 0, true
	}
	return w, false, false
}

// retarget moves in to addr with branch displacement rel and rip
// displacement disp, as decode would have found them there. x86asm
// keeps a legacy instruction's disp32 unextended but sign-extends a VEX
// or EVEX one's: signExt says which.
func retarget(in *Info, l *layout, addr uint64, rel int64, disp uint32, signExt bool) {
	in.Addr = addr
	end := addr + uint64(in.Len)
	if l.relSize > 0 {
		in.Target = end + uint64(rel)
		for i := range in.Args {
			if in.Args[i].Kind == ArgRel {
				in.Args[i].Val = int64(int32(rel))
			}
		}
	}
	if l.ripRel {
		in.RIPTarget = end + uint64(int64(int32(disp)))
		for i := range in.Args {
			if a := &in.Args[i]; a.Kind == ArgMem && a.Base == x86asm.RIP {
				a.Val = int64(disp)
				if signExt {
					a.Val = int64(int32(disp))
				}
			}
		}
	}
}

// retargets reports whether in, decoded from code at addr, can be kept:
// whether decoding it with the opposite displacements (every bit
// flipped, so the other sign) at another address gives in retargeted
// there, and retargeting that back gives in. signExt is how x86asm wrote
// the rip displacement.
func retargets(code []byte, addr uint64, l *layout, in *Info) (signExt, ok bool) {
	var other [maxLen]byte
	c := other[:len(code)]
	copy(c, code)
	rel0, rel := int64(0), int64(0)
	disp0, disp := uint32(0), uint32(0)
	switch l.relSize {
	case 1:
		rel0 = int64(int8(c[l.immOff]))
		c[l.immOff] ^= 0xff
		rel = int64(int8(c[l.immOff]))
	case 4:
		rel0 = int64(int32(binary.LittleEndian.Uint32(c[l.immOff:])))
		binary.LittleEndian.PutUint32(c[l.immOff:], ^binary.LittleEndian.Uint32(c[l.immOff:]))
		rel = int64(int32(binary.LittleEndian.Uint32(c[l.immOff:])))
	}
	if l.ripRel {
		disp0 = binary.LittleEndian.Uint32(c[l.dispOff:])
		disp = ^disp0
		binary.LittleEndian.PutUint32(c[l.dispOff:], disp)
	}
	// The layout is the same: scan reads no displacement's value.
	if l2, err := scan(c); err != nil || l2 != *l {
		return false, false
	}
	at := addr ^ 0x5a5a5a5a5a5a5a50
	full, err := decode(c, at, l)
	if err != nil {
		return false, false
	}
	want := full.Info
	// One of disp0 and disp has the sign bit set: its decoding tells
	// the convention.
	if l.ripRel {
		neg, negInst := disp, &want
		if int32(disp0) < 0 {
			neg, negInst = disp0, in
		}
		signExt = ripDisp(negInst) == int64(int32(neg))
	}
	got := *in
	retarget(&got, l, at, rel, disp, signExt)
	back := want
	retarget(&back, l, addr, rel0, disp0, signExt)
	return signExt, got == want && back == *in
}

// ripDisp returns the displacement of in's rip-relative operand.
func ripDisp(in *Info) int64 {
	for i := range in.Args {
		if a := &in.Args[i]; a.Kind == ArgMem && a.Base == x86asm.RIP {
			return a.Val
		}
	}
	return 0
}
