package x86

import (
	"encoding/binary"
	"reflect"
	"sync/atomic"

	"golang.org/x/arch/x86/x86asm"
)

// Decoding with x86asm took most of the analysis of a large library
// (libLLVM: 12.5 million instructions, each decoded four or five times
// by the passes that need them), and a large program holds few distinct
// instructions once the displacement of its branches and rip-relative
// operands is set aside: 350 thousand in libLLVM. Decode keeps what it
// decoded by those bytes, with the displacement zeroed, and answers a
// repeat by retargeting the kept instruction: Addr, Target, RIPTarget
// and the displacement in Raw's arguments are the only fields that
// depend on the displacement's value and the address.
//
// That claim is checked, not assumed: an instruction is kept only after
// a second decoding, of its bytes with another displacement (every bit
// flipped) at another address, equals the first one retargeted there
// (retarget). Errors are never kept. The table is a fixed number of
// slots, each holding the last instruction that hashed there; slots are
// replaced whole, so concurrent decoders never see a torn entry.

// memoBits sizes the table: 2^18 slots hold most of the distinct
// instructions of the largest library (each entry takes about 350
// bytes).
const memoBits = 18

type memoEntry struct {
	// key is the instruction's bytes with the displacement zeroed, and
	// its length in the last byte (instructions have at most 15).
	key  [16]byte
	inst Inst
	// signExt: x86asm sign-extended the rip displacement (retarget).
	signExt bool
}

var (
	memoTable [1 << memoBits]atomic.Pointer[memoEntry]
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

func memoHash(k *[16]byte) uint64 {
	h := binary.LittleEndian.Uint64(k[:8])*0x9e3779b97f4a7c15 ^ binary.LittleEndian.Uint64(k[8:])
	return h * 0xbf58476d1ce4e5b9
}

// memoDecode is decode through the table.
func memoDecode(code []byte, addr uint64, l *layout) (Inst, error) {
	if memoOff.Load() {
		return decode(code, addr, l)
	}
	key, rel, disp := memoKey(code, l)
	// Two slots per key (the table is two-way associative): a key that
	// collides with a frequent one does not evict it.
	h := memoHash(&key)
	at := h >> (64 - memoBits) &^ 1
	slots := memoTable[at : at+2]
	for i := range slots {
		if e := slots[i].Load(); e != nil && e.key == key {
			in := e.inst
			retarget(&in, l, addr, rel, disp, e.signExt)
			return in, nil
		}
	}
	in, err := decode(code, addr, l)
	if err != nil {
		return in, err
	}
	signExt := false
	if l.relSize > 0 || l.ripRel {
		var ok bool
		if signExt, ok = retargets(code, addr, l, &in); !ok {
			return in, nil
		}
	}
	// An empty slot, else the one the hash's next bit picks.
	slot := &slots[h>>32&1]
	if slots[0].Load() == nil {
		slot = &slots[0]
	} else if slots[1].Load() == nil {
		slot = &slots[1]
	}
	slot.Store(&memoEntry{key: key, inst: in, signExt: signExt})
	return in, nil
}

// retarget moves in to addr with branch displacement rel and rip
// displacement disp, as decode would have found them there. x86asm
// keeps a legacy instruction's disp32 unextended but sign-extends a VEX
// or EVEX one's: signExt says which (memoEntry.signExt).
func retarget(in *Inst, l *layout, addr uint64, rel int64, disp uint32, signExt bool) {
	in.Addr = addr
	end := addr + uint64(in.Len)
	if l.relSize > 0 {
		in.Target = end + uint64(rel)
		for i, a := range in.Raw.Args {
			if _, ok := a.(x86asm.Rel); ok {
				in.Raw.Args[i] = x86asm.Rel(int32(rel))
			}
		}
	}
	if l.ripRel {
		in.RIPTarget = end + uint64(int64(int32(disp)))
		for i, a := range in.Raw.Args {
			if m, ok := a.(x86asm.Mem); ok && m.Base == x86asm.RIP {
				m.Disp = int64(disp)
				if signExt {
					m.Disp = int64(int32(disp))
				}
				in.Raw.Args[i] = m
			}
		}
	}
}

// retargets reports whether in, decoded from code at addr, can be kept:
// whether decoding it with the opposite displacements (every bit
// flipped, so the other sign) at another address gives in retargeted
// there, and retargeting that back gives in. signExt is how x86asm wrote
// the rip displacement.
func retargets(code []byte, addr uint64, l *layout, in *Inst) (signExt, ok bool) {
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
	want, err := decode(c, at, l)
	if err != nil {
		return false, false
	}
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
	return signExt, reflect.DeepEqual(got, want) && reflect.DeepEqual(back, *in)
}

// ripDisp returns the displacement of in's rip-relative operand.
func ripDisp(in *Inst) int64 {
	for _, arg := range in.Raw.Args {
		if m, ok := arg.(x86asm.Mem); ok && m.Base == x86asm.RIP {
			return m.Disp
		}
	}
	return 0
}
