package cfg

import (
	"cmp"
	"slices"
	"sort"
	"sync"

	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// Flow scans: the instructions each procedure's flow reaches and what
// they call, jump to and take, which discovery (discover.go) weighs as
// evidence of procedures; and the index that finds them near an address.

// scanInst is one instruction a flow scan decoded.
type scanInst struct {
	addr uint64
	n    uint8
	call bool // a call: what follows it runs only if the callee returns
	pad  bool // nop or int3: alignment filler
}

func (s scanInst) end() uint64 { return s.addr + uint64(s.n) }

// funcScan is the flow of one procedure: the instructions reachable from
// its entry (and jump-table targets and landing pads) inside its ranges,
// and what they call, jump to and point to outside it. Unlike the graph
// builder it goes on past problems, so that a refused procedure's code
// still gives evidence.
type funcScan struct {
	size   uint64 // the procedure's Size when scanned
	nparts int
	graph  *Graph
	// ranges are the procedure's ranges when scanned: every instruction
	// starts in one of them.
	ranges []Range
	insts  []scanInst // sorted by address
	calls  []uint64   // direct call targets
	jumps  []uint64   // direct jump targets outside the procedure
	refs   []uint64   // immediates and lea targets in code outside the procedure
	reads  []uint64   // memory operands' addresses that lie in executable sections
	// dataRefs are refs whose register the code then reads or writes
	// memory through (lea K256(%rip),%rbp; movdqa (%rbp),...): the
	// address is data in .text, not a procedure [decision 114].
	dataRefs []uint64
	// odd is set where the flow holds what no user-space procedure
	// runs: port I/O, cli/sti, or a memory operand aimed outside every
	// section. Data decoded as code has such instructions.
	odd bool
	// falls lists the ends of the body the flow runs on into (the next
	// procedure's start) other than after a call.
	falls []uint64
}

// before returns the instruction of s that ends at addr, or false.
func (s *funcScan) before(addr uint64) (scanInst, bool) {
	i := sort.Search(len(s.insts), func(i int) bool { return s.insts[i].addr >= addr }) - 1
	for ; i >= 0 && addr-s.insts[i].addr <= 15; i-- {
		if s.insts[i].end() == addr {
			return s.insts[i], true
		}
	}
	return scanInst{}, false
}

// callBefore reports whether the flow of s reaches addr by running on
// after a call, possibly through padding.
func (s *funcScan) callBefore(addr uint64) bool {
	for {
		in, ok := s.before(addr)
		if !ok {
			return false
		}
		if in.call {
			return true
		}
		if !in.pad {
			return false
		}
		addr = in.addr
	}
}

// scanFunction decodes the flow of f. g (may be nil) adds the targets of
// its resolved jump tables and its landing pads as starts.
func (p *Program) scanFunction(f *Function, g *Graph) *funcScan {
	b := p.Binary
	s := &funcScan{size: f.Size, nparts: len(f.Parts), graph: g}
	ranges := f.Ranges()
	s.ranges = ranges
	inRange := func(a uint64) (Range, bool) {
		for _, r := range ranges {
			if r.Contains(a) {
				return r, true
			}
		}
		return Range{}, false
	}
	work := []uint64{f.Addr}
	if g != nil {
		for _, t := range g.Tables {
			work = append(work, t.Targets...)
		}
		for _, r := range g.EH {
			if r.LandingPad != 0 {
				work = append(work, r.LandingPad)
			}
		}
	}
	// seen holds a bit per byte of the ranges, in range order.
	var total uint64
	for _, r := range ranges {
		total += r.Size
	}
	seen := make([]uint64, (total+63)/64)
	// The instructions go to a scratch array; s keeps a copy of their
	// final number.
	if buf, ok := scanPool.Get().(*[]scanInst); ok {
		s.insts = (*buf)[:0]
	}
	dec := x86.NewDecoder()
	defer dec.Release()
	bitOf := func(a uint64) uint64 {
		var base uint64
		for _, r := range ranges {
			if r.Contains(a) {
				return base + a - r.Addr
			}
			base += r.Size
		}
		return 0 // unreachable: a is in a range
	}
	var uses leaUses
	for len(work) > 0 {
		a := work[len(work)-1]
		work = work[:len(work)-1]
		uses.reset()
		afterCall := false // the run so far ends in a call and padding
		for {
			r, ok := inRange(a)
			if !ok || uint64(len(s.insts)) >= total {
				break
			}
			bit := bitOf(a)
			if seen[bit/64]&(1<<(bit%64)) != 0 {
				break
			}
			seen[bit/64] |= 1 << (bit % 64)
			// Decoded past the body's end, so that an instruction
			// running over the next start shows as one.
			code := b.Code(a)
			var in x86.Info
			if err := dec.DecodeInfoTo(&in, code, a); err != nil {
				break
			}
			si := scanInst{addr: a, n: uint8(in.Len)}
			s.operands(b, &in, inRange)
			uses.step(b, s, &in, inRange)
			next := a + uint64(in.Len)
			stop := next > r.End() // the next procedure starts inside it
			switch in.Kind {
			case x86.Call:
				si.call = true
				s.calls = append(s.calls, in.Target)
				stop = stop || p.noReturn(in.Target)
			case x86.CallIndirect:
				si.call = true
			case x86.Jcc, x86.Jmp:
				if _, ok := inRange(in.Target); ok {
					work = append(work, in.Target)
				} else {
					s.jumps = append(s.jumps, in.Target)
				}
				stop = stop || in.Kind == x86.Jmp
			case x86.JmpIndirect, x86.Ret:
				stop = true
			case x86.Halt:
				stop = true
				si.pad = in.Len == 1 && code[0] == 0xcc
			default:
				si.pad = in.Op == x86asm.NOP || in.Op == x86asm.XCHG && in.Len == 2 && code[in.Len-1] == 0x90
			}
			s.insts = append(s.insts, si)
			if stop {
				break
			}
			afterCall = si.call || si.pad && afterCall
			if next == r.End() && !afterCall {
				s.falls = append(s.falls, next)
			}
			a = next
		}
	}
	slices.SortFunc(s.insts, func(x, y scanInst) int { return cmp.Compare(x.addr, y.addr) })
	scratch := s.insts
	s.insts = make([]scanInst, len(scratch))
	copy(s.insts, scratch)
	scanPool.Put(&scratch)
	return s
}

// flowScan returns what scanFunction(bd.f, bd.g) returns, made from the
// instructions the builder decoded, or nil where it might differ. A
// graph the builder finished (ReasonOK) was decoded from the entry, the
// landing pads and the targets of its jump tables, as the scan starts
// from; every instruction lies inside the ranges, none overlaps another
// but past a skipped lock prefix (decoded by both), and every jump out
// leads to a procedure entry. So the scan decodes the same instructions,
// and finds the same calls, jumps out and operands; only their order
// differs, which no user of a funcScan reads but insts, which is sorted.
// What the scan records in falls depends on the order it met the
// instructions in where a padding instruction runs on past a range's
// end (whether it came there from a call): such a procedure, and one
// with other entries (which the scan does not start from), is scanned.
func (bd *builder) flowScan() *funcScan {
	f, g := bd.f, bd.g
	if g.Reason != ReasonOK || len(f.Entries) > 0 || len(bd.order) != len(bd.insts) {
		return nil
	}
	s := &funcScan{size: f.Size, nparts: len(f.Parts), graph: g, ranges: f.Ranges()}
	own := func(a uint64) (Range, bool) {
		for _, r := range s.ranges {
			if r.Contains(a) {
				return r, true
			}
		}
		return Range{}, false
	}
	s.insts = make([]scanInst, len(bd.order))
	var uses leaUses
	for k, x := range bd.order {
		in := &bd.insts[x.i]
		code := bd.b.Code(in.Addr)
		si := scanInst{addr: in.Addr, n: uint8(in.Len)}
		s.operands(bd.b, in, own)
		if k > 0 && bd.insts[bd.order[k-1].i].Addr+uint64(bd.insts[bd.order[k-1].i].Len) != in.Addr {
			uses.reset()
		}
		uses.step(bd.b, s, in, own)
		on := false // the scan goes on to the next instruction, not after a call
		switch in.Kind {
		case x86.Call:
			si.call = true
			s.calls = append(s.calls, in.Target)
		case x86.CallIndirect:
			si.call = true
		case x86.Jcc, x86.Jmp:
			if _, ok := own(in.Target); !ok {
				s.jumps = append(s.jumps, in.Target)
			}
			on = in.Kind == x86.Jcc
		case x86.JmpIndirect, x86.Ret:
		case x86.Halt:
			si.pad = in.Len == 1 && code[0] == 0xcc
		default:
			si.pad = in.Op == x86asm.NOP || in.Op == x86asm.XCHG && in.Len == 2 && code[in.Len-1] == 0x90
			on = true
		}
		if r, _ := own(in.Addr); on && in.Addr+uint64(in.Len) == r.End() {
			if si.pad {
				return nil
			}
			s.falls = append(s.falls, r.End())
		}
		s.insts[k] = si
	}
	return s
}

// checkScan, when set (tests), is given every scan discovery takes from
// a graph (flowScan), before it takes it.
var checkScan func(p *Program, f *Function, g *Graph)

// scanPool keeps scanFunction's scratch arrays.
var scanPool sync.Pool

// operands records the code addresses an instruction takes (immediates,
// lea of a rip-relative address) and the executable bytes it reads or
// writes as data (other memory operands).
func (s *funcScan) operands(b *Binary, in *x86.Info, own func(uint64) (Range, bool)) {
	taken := func(v uint64) {
		if _, mine := own(v); !mine && b.IsCode(v) {
			s.refs = append(s.refs, v)
		}
	}
	if in.RIPRel {
		if in.Op == x86asm.LEA {
			taken(in.RIPTarget)
		} else if b.IsCode(in.RIPTarget) {
			s.reads = append(s.reads, in.RIPTarget)
		}
	}
	for i := range in.Args {
		switch a := &in.Args[i]; a.Kind {
		case x86.ArgImm:
			if in.Kind == x86.Other {
				taken(uint64(a.Val))
			}
		case x86.ArgMem:
			if a.Base != 0 || a.Segment != 0 {
				continue
			}
			v := uint64(a.Val)
			if a.Index == 0 && in.Op == x86asm.LEA {
				taken(v)
			} else if b.IsCode(v) {
				s.reads = append(s.reads, v)
			}
		}
	}
}

// leaUses follows, along a run of a procedure's instructions in address
// order, the registers (and the stack slots they are spilled to) that a
// lea has just loaded with an address in code outside the procedure, to
// see whether the code then uses one as a memory operand's base or
// index: the address is then data that lives in .text (hand-written
// assembly's constant tables), whatever its bytes decode as. A function
// pointer is called, stored or passed on instead. The test errs towards
// data, the safe side: it runs on past conditional branches and calls,
// and an entry wrongly taken for data only leaves a procedure out, while
// data taken for an entry gets an entry jump written over it. It stops
// at an unconditional jump: in address order, what follows is another
// path (busybox's code after a jmp reads memory through %rbp, which on
// that path holds a string, not the function pointer a lea loaded).
type leaUses struct {
	n    int
	live [8]leaUse
}

// leaUse is one register, or one stack slot (base rsp or rbp, disp),
// holding a taken address.
type leaUse struct {
	reg    x86asm.Reg // the register, or the slot's base
	slot   bool
	disp   int64
	target uint64
	left   int // instructions it is followed for
}

func (u *leaUses) reset() { u.n = 0 }

// sameReg reports two general registers of one family, whatever their
// widths (mov $table,%eax then (%rax)).
func sameReg(a, b x86asm.Reg) bool {
	f := regFamily(a)
	return f >= 0 && f == regFamily(b)
}

func (u *leaUses) add(l leaUse) {
	if u.n < len(u.live) {
		u.live[u.n] = l
		u.n++
	}
}

// step looks at the next instruction of the run.
func (u *leaUses) step(b *Binary, s *funcScan, in *x86.Info, own func(uint64) (Range, bool)) {
	if in.RIPRel && in.Op != x86asm.LEA && in.Kind == x86.Other && b.section(in.RIPTarget) == nil {
		s.odd = true
	}
	switch in.Op {
	case x86asm.IN, x86asm.OUT, x86asm.INSB, x86asm.INSW, x86asm.INSD, x86asm.OUTSB, x86asm.OUTSW, x86asm.OUTSD, x86asm.CLI, x86asm.STI:
		s.odd = true
	}
	var dst, src *x86.Arg
	if len(in.Args) >= 2 {
		dst, src = &in.Args[0], &in.Args[1]
	}
	switch in.Kind {
	case x86.Jmp, x86.JmpIndirect, x86.Ret, x86.Halt:
		// Past an unconditional transfer the registers hold whatever
		// another path left in them.
		u.reset()
		return
	}
	if u.n > 0 {
		u.follow(s, in, dst, src)
	}
	if dst == nil || dst.Kind != x86.ArgReg {
		return
	}
	// The address taken: lea of rip+disp or of an absolute disp32, or a
	// move of an immediate (position-dependent code).
	var t uint64
	switch {
	case in.Op == x86asm.LEA && in.RIPRel:
		t = in.RIPTarget
	case in.Op == x86asm.LEA && src.Kind == x86.ArgMem && src.Base == 0 && src.Index == 0:
		t = uint64(src.Val)
	case in.Op == x86asm.MOV && src.Kind == x86.ArgImm:
		t = uint64(src.Val)
	default:
		return
	}
	if _, mine := own(t); !mine && b.IsCode(t) {
		u.add(leaUse{reg: dst.Reg, target: t, left: 32})
	}
}

// follow takes the next instruction of the run against each address
// being followed (step, while there are any): a memory operand through
// it records data, a move over it ends it, a spill or reload follows it.
func (u *leaUses) follow(s *funcScan, in *x86.Info, dst, src *x86.Arg) {
	isSlot := func(a *x86.Arg, l *leaUse) bool {
		return a.Kind == x86.ArgMem && a.Base == l.reg && a.Index == 0 && a.Val == l.disp && a.Segment == 0
	}
	var spills [len(leaUses{}.live)]leaUse
	nspill := 0
	for i := 0; i < u.n; i++ {
		l := &u.live[i]
		used, redefined := false, false
		for k := range in.Args {
			a := &in.Args[k]
			if !l.slot && a.Kind == x86.ArgMem && (sameReg(a.Base, l.reg) || sameReg(a.Index, l.reg)) && in.Op != x86asm.LEA {
				used = true
			}
			if k == 0 && (!l.slot && a.Kind == x86.ArgReg && sameReg(a.Reg, l.reg) || l.slot && isSlot(a, l)) {
				// A move over it, or any write of a narrower part
				// (lea 1(%r12),%eax zeroes the upper half), ends it;
				// 64-bit arithmetic (add $16) keeps a pointer into the
				// same data.
				switch in.Op {
				case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA, x86asm.POP:
					redefined = true
				default:
					redefined = !l.slot && (a.Reg < x86asm.RAX || a.Reg > x86asm.R15)
				}
			}
		}
		if in.Op == x86asm.MOV && dst != nil && src != nil {
			// Spilled and reloaded, as unoptimised code does.
			if !l.slot && src.Kind == x86.ArgReg && sameReg(src.Reg, l.reg) && dst.Kind == x86.ArgMem && (dst.Base == x86asm.RSP || dst.Base == x86asm.RBP) && dst.Index == 0 {
				spills[nspill] = leaUse{reg: dst.Base, slot: true, disp: dst.Val, target: l.target, left: 32}
				nspill++
			}
			if l.slot && isSlot(src, l) && dst.Kind == x86.ArgReg {
				spills[nspill] = leaUse{reg: dst.Reg, target: l.target, left: 32}
				nspill++
			}
		}
		l.left--
		if used {
			s.dataRefs = append(s.dataRefs, l.target)
		}
		if used || redefined || l.left == 0 {
			u.n--
			u.live[i] = u.live[u.n]
			i--
		}
	}
	for _, l := range spills[:nspill] {
		u.add(l)
	}
}

// flowIndex finds the instructions of every procedure's flow (funcScan)
// near an address: each starts in one of its procedure's ranges as
// scanned, so the ranges, sorted, lead to the flows to search. (A sorted
// array of every instruction of the binary took hundreds of megabytes
// and a sort per round.)
type flowIndex struct {
	rs []flowRange
	// maxEnd[i] is the largest End of rs[:i+1]: ranges seldom overlap,
	// so a search back from an address stops soon.
	maxEnd []uint64
}

type flowRange struct {
	r Range
	f *Function
	s *funcScan
}

// build indexes the scans of funcs.
func (x *flowIndex) build(funcs []*Function, scans map[*Function]*funcScan) {
	x.rs = x.rs[:0]
	for _, f := range funcs {
		s := scans[f]
		for _, r := range s.ranges {
			x.rs = append(x.rs, flowRange{r, f, s})
		}
	}
	slices.SortFunc(x.rs, func(a, b flowRange) int { return cmp.Compare(a.r.Addr, b.r.Addr) })
	x.maxEnd = slices.Grow(x.maxEnd[:0], len(x.rs))[:len(x.rs)]
	var m uint64
	for i, fr := range x.rs {
		m = max(m, fr.r.End())
		x.maxEnd[i] = m
	}
}

// any reports whether some instruction of some flow that starts in
// [lo, hi] (lo may wrap below zero: none does) satisfies fn, which gets
// the instruction and its procedure. A procedure with several ranges
// there may have its instructions looked at more than once.
func (x *flowIndex) any(lo, hi uint64, fn func(in scanInst, owner *Function) bool) bool {
	if lo > hi {
		lo = 0
	}
	k := sort.Search(len(x.rs), func(i int) bool { return x.rs[i].r.Addr > hi }) - 1
	for ; k >= 0 && x.maxEnd[k] > lo; k-- {
		fr := x.rs[k]
		if fr.r.End() <= lo {
			continue
		}
		ins := fr.s.insts
		i := sort.Search(len(ins), func(i int) bool { return ins[i].addr >= lo })
		for ; i < len(ins) && ins[i].addr <= hi; i++ {
			if fn(ins[i], fr.f) {
				return true
			}
		}
	}
	return false
}
