package x86

import (
	"encoding/binary"
	"sync/atomic"

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

// memoBits sizes the table: 2^17 slots of 128 bytes (16 MiB).
const memoBits = 17

// memoWords is the size of a slot: the sequence, the key (2 words), the
// fields (2), the operands (one each) and the values of up to three of
// them (memory, immediate and relative operands have one), rounded up
// to two cache lines.
const memoWords = 16

// memoVals is the number of operand values a slot holds.
const memoVals = 3

// The packed fields fit the slot.
var _ [memoWords - 3 - (2 + len(Args{}) + memoVals)]struct{}

type memoSlot [memoWords]atomic.Uint64

var (
	// memoTable is the table. Its pages are fresh from the system and
	// untouched until used: a program that decodes a few instructions
	// does not pay for it.
	memoTable = new([1 << memoBits]memoSlot)
	// memoOff turns the table off (tests compare with and without).
	memoOff atomic.Bool
)

// memoKey returns the table key of code, and the displacements it
// zeroed: a branch's (rel, sign-extended) and a rip-relative operand's
// (disp, as the 4 bytes read).
func memoKey(code []byte, l *layout) (key [16]byte, rel int64, disp uint32) {
	copy(key[:], code)
	key[15] = byte(len(code))
	switch l.relSize {
	case 1:
		rel = int64(int8(code[l.immOff]))
		key[l.immOff] = 0
	case 4:
		rel = int64(int32(binary.LittleEndian.Uint32(code[l.immOff:])))
		clear(key[l.immOff : l.immOff+4])
	}
	if l.ripRel {
		disp = binary.LittleEndian.Uint32(code[l.dispOff:])
		clear(key[l.dispOff : l.dispOff+4])
	}
	return key, rel, disp
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

// pack returns the words of in (its address-independent fields), or
// false when a field does not fit.
func pack(in *Info, signExt bool) (w [memoWords - 3]uint64, ok bool) {
	if in.Op >= 1<<16 || in.ModRMOff < -1 {
		return w, false
	}
	var bits uint64
	for i, b := range [...]bool{in.RIPRel, in.Endbr, in.Notrack, in.Bnd, in.Rep, in.Repne, in.Lock, signExt} {
		if b {
			bits |= 1 << i
		}
	}
	w[0] = uint64(in.Op) | uint64(in.Kind)<<16 | uint64(in.Encoding)<<24 | uint64(in.BranchOff)<<32 |
		uint64(in.BranchSize)<<40 | uint64(in.RIPDispOff)<<48 | bits<<56
	w[1] = uint64(in.OpcodeOff) | uint64(in.ModRMOff+1)<<8 | uint64(in.Reads)<<16 | uint64(in.Writes)<<24
	v := 0
	for i := range in.Args {
		a := &in.Args[i]
		w[2+i] = uint64(a.Kind) | uint64(a.Reg)<<8 | uint64(a.Segment)<<16 | uint64(a.Base)<<24 |
			uint64(a.Index)<<32 | uint64(a.Scale)<<40
		if a.Kind == ArgMem || a.Kind == ArgImm || a.Kind == ArgRel {
			if v == memoVals {
				return w, false
			}
			v++
			w[2+len(in.Args)+v-1] = uint64(a.Val)
			w[2+i] |= uint64(v) << 48 // which value word, from 1
		}
	}
	// The small fields must come back as they went in.
	var back Info
	unpack(&w, &back)
	back.Addr, back.Len, back.Target, back.RIPTarget = in.Addr, in.Len, in.Target, in.RIPTarget
	return w, back == *in
}

// unpack fills in's address-independent fields from w, and returns the
// signExt bit.
func unpack(w *[memoWords - 3]uint64, in *Info) (signExt bool) {
	// in is zero but for Len.
	in.Op = x86asm.Op(w[0] & 0xffff)
	in.Kind = Kind(w[0] >> 16)
	in.Encoding = Encoding(w[0] >> 24)
	in.BranchOff = int(uint8(w[0] >> 32))
	in.BranchSize = int(uint8(w[0] >> 40))
	in.RIPDispOff = int(uint8(w[0] >> 48))
	bits := w[0] >> 56
	in.RIPRel = bits&bitRIPRel != 0
	in.Endbr = bits&bitEndbr != 0
	in.Notrack = bits&bitNotrack != 0
	in.Bnd = bits&bitBnd != 0
	in.Rep = bits&bitRep != 0
	in.Repne = bits&bitRepne != 0
	in.Lock = bits&bitLock != 0
	in.OpcodeOff = int(uint8(w[1]))
	in.ModRMOff = int(uint8(w[1]>>8)) - 1
	in.Reads = Flags(w[1] >> 16)
	in.Writes = Flags(w[1] >> 24)
	// x86asm's operands come first, nils after (pack checks that they
	// come back).
	for i := range in.Args {
		a := w[2+i]
		if a == 0 {
			break
		}
		d := &in.Args[i]
		d.Kind, d.Reg, d.Segment = ArgKind(a), x86asm.Reg(a>>8), x86asm.Reg(a>>16)
		d.Base, d.Index, d.Scale = x86asm.Reg(a>>24), x86asm.Reg(a>>32), uint8(a>>40)
		if v := a >> 48 & 3; v != 0 {
			d.Val = int64(w[2+len(in.Args)+int(v)-1])
		}
	}
	return bits&bitSignExt != 0
}

// memoDecode is DecodeInfo through the table, into in (zero).
func memoDecode(in *Info, code []byte, addr uint64, l *layout) error {
	if memoOff.Load() {
		full, err := decode(code, addr, l)
		*in = full.Info
		return err
	}
	key, rel, disp := memoKey(code, l)
	k0, k1, h, slots := memoSlots(&key)
	if signExt, ok := lookup(in, slots, k0, k1, len(code)); ok {
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

// memoSlots returns the words of key, its hash and its two slots (the
// table is two-way associative: a key that collides with a frequent one
// does not evict it).
func memoSlots(key *[16]byte) (k0, k1, h uint64, slots []memoSlot) {
	k0, k1 = binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])
	h = memoHash(k0, k1)
	at := h >> (64 - memoBits) &^ 1
	return k0, k1, h, memoTable[at : at+2]
}

// lookup fills in (zero) with the Info the slots hold for key k0, k1 of
// an instruction of n bytes, not yet retargeted, and returns its
// signExt bit, or false.
func lookup(in *Info, slots []memoSlot, k0, k1 uint64, n int) (signExt, ok bool) {
	for i := range slots {
		s := &slots[i]
		seq := s[0].Load()
		if seq == 0 || seq&1 != 0 || s[1].Load() != k0 || s[2].Load() != k1 {
			continue
		}
		var w [memoWords - 3]uint64
		for j := range w {
			w[j] = s[3+j].Load()
		}
		if s[0].Load() != seq {
			continue // written meanwhile
		}
		in.Len = n
		return unpack(&w, in), true
	}
	return false, false
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
