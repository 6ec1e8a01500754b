package cfg

import "github.com/blpp/blpp/cfg/x86"

// Block starts the builder learns besides control transfers: the
// leaders (entries, landing pads, branch and table targets) and the
// instructions past a lock prefix that a branch skips (glibc's `je 1f;
// lock; 1: cmpxchg`), which start a block of their own.

// setLeader marks addr as a block start. An address outside the ranges
// starts no block of the procedure, and is not kept.
func (bd *builder) setLeader(addr uint64) {
	if ri := bd.rangeOf(addr); ri >= 0 {
		if l := &bd.lead[ri][addr-bd.ranges[ri].Addr]; !*l {
			*l = true
			bd.leadList = append(bd.leadList, addr)
		}
	}
}

// leader reports whether setLeader marked addr.
func (bd *builder) leader(addr uint64) bool {
	ri := bd.rangeOf(addr)
	return ri >= 0 && bd.lead[ri][addr-bd.ranges[ri].Addr]
}

// leaders yields the addresses setLeader marked, in the order it
// marked them.
func (bd *builder) leaders(yield func(uint64) bool) {
	for _, a := range bd.leadList {
		if !yield(a) {
			return
		}
	}
}

// unlockedOf decodes the instruction at a, one byte into the
// instruction o, and reports whether it is o without the lock prefix
// o starts with: glibc's atomics in code that may run single-threaded
// branch over the prefix (`cmpl $0,__libc_single_threaded; je 1f; lock;
// 1: cmpxchg ...`), so both decodings run. No other overlap is
// accepted: both instructions end at the same address, change the same
// operands the same way, and transfer no control, so each is a block of
// its own that falls through to that address, and relocating each on
// its own keeps its meaning.
func (bd *builder) unlockedOf(o *x86.Info, a uint64) (x86.Info, bool) {
	if a != o.Addr+1 || !o.Lock || o.Kind != x86.Other {
		return x86.Info{}, false
	}
	code := bd.b.Code(o.Addr)
	if len(code) < o.Len || code[0] != 0xf0 {
		return x86.Info{}, false
	}
	in, err := x86.Decode(code[1:o.Len], a)
	if err != nil || in.Len != o.Len-1 || in.Op != o.Op || in.Kind != x86.Other || in.Lock {
		return x86.Info{}, false
	}
	return in.Info, true
}

// addUnlocked records in, the instruction past a skipped lock prefix: it
// starts a block, and so does the instruction after it (shared with the
// prefixed instruction, whose block must not run on into this one's).
func (bd *builder) addUnlocked(in x86.Info) {
	bd.insts = append(bd.insts, in)
	bd.addUnlockedAt(int32(len(bd.insts)))
}

// addUnlockedAt records insts[i-1] as an instruction past a lock prefix.
func (bd *builder) addUnlockedAt(i int32) {
	in := &bd.insts[i-1]
	bd.unlocked[in.Addr] = i - 1
	bd.setLeader(in.Addr)
	bd.setLeader(in.Addr + uint64(in.Len))
}

// sameCover reports whether every entry of cov is c.
func sameCover(cov []int32, c int32) bool {
	for _, v := range cov {
		if v != c {
			return false
		}
	}
	return true
}
