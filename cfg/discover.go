package cfg

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"

	"golang.org/x/arch/x86/x86asm"
)

// Procedure discovery in code that no symbol and no FDE describes: a
// static program's own code when only its libc was built with unwind
// tables (busybox), asm without CFI. Bounds come from evidence in code
// already known to be code, as HPCToolkit recovers them in stripped
// binaries [Tallent et al. PLDI 2009 §4.1] and BOLT does from calls and
// relocations: direct call targets, addresses taken by instructions
// (immediates, lea) and stored in data (pointer-sized words, RELATIVE
// relocations), direct jumps that leave a procedure (tail calls), and the
// start of code after padding that no procedure's flow reaches. A
// discovered procedure ends at the next procedure's start or at the end
// of its gap; it is analysed like any other, so a wrong bound makes it
// refused (it falls off its end, jumps outside), never mis-instrumented.
//
// Two rules keep guesses off data and off existing procedures:
//   - an address enters only with evidence; weak evidence (a jump from
//     elsewhere, a gap start) must yield a procedure that analyses
//     completely, else it is dropped again;
//   - no new entry splits a procedure whose bounds a symbol or an FDE
//     gives, nor lands on or inside an instruction another procedure's
//     flow decodes (a second entry, a label), unless that flow reaches it
//     only by running on after a call (the callee did not return: the
//     flow ran into the next procedure). Inside a guessed range whose
//     flow is not fully known (an unresolved indirect jump), only calls
//     count: the range's undecoded cases and labels look like entries.

// evidence says why an address is taken for a procedure entry (a bit set).
type evidence uint8

const (
	evCall    evidence = 1 << iota // direct call target
	evCodeRef                      // immediate or lea target in analysed code
	evDataRef                      // pointer in data or a RELATIVE relocation
	evJump                         // direct jump leaving another procedure
	evGap                          // start of uncovered code after padding
)

// strong evidence makes an entry by itself; weak evidence needs the
// procedure to analyse completely.
func (e evidence) strong() bool { return e&(evCall|evCodeRef|evDataRef) != 0 }

func (e evidence) source() Source {
	var s Source
	if e&evCall != 0 {
		s |= FromCall
	}
	if e&(evCodeRef|evDataRef) != 0 {
		s |= FromPointer
	}
	if e&evJump != 0 {
		s |= FromJump
	}
	if e&evGap != 0 {
		s |= FromGap
	}
	return s
}

// maxDiscoverRounds bounds the discovery iterations; each round adds the
// procedures the previous round's new code calls and points to.
const maxDiscoverRounds = 64

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

// hiddenFlow reports a graph whose decoding stopped before it saw all of
// the procedure's code: its range may hold cases and labels that look
// like entries.
func hiddenFlow(g *Graph) bool {
	if g == nil {
		return true
	}
	switch g.Reason {
	case ReasonOK, ReasonTooShort, ReasonPLT, ReasonPathOverflow, ReasonSigreturn, ReasonVfork, ReasonCopied, ReasonFlagsAtEntry, ReasonContextSwitch:
		return false
	}
	return true
}

// needsDiscovery reports code that no procedure covers, a gap after a
// procedure with a known size that holds more than padding, for which
// there is evidence of a procedure: a branch or call target, an address
// the code refers to, or a code pointer in data, inside a gap. The
// evidence comes from the program-wide linear sweep (refs.go), which
// decoding from the known procedures (discover) only narrows down, so
// without any the costly discovery would find nothing (libLLVM: a third
// of its analysis time).
func (p *Program) needsDiscovery() bool {
	b := p.Binary
	var rs []Range
	for _, f := range p.Funcs {
		rs = append(rs, f.Ranges()...)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Addr < rs[j].Addr })
	var gaps []Range
	for _, s := range b.sections {
		if !s.Exec || s.data == nil {
			continue
		}
		a := s.Addr
		i := sort.Search(len(rs), func(i int) bool { return rs[i].End() > a })
		for a < s.Addr+s.Size {
			next := s.Addr + s.Size
			if i < len(rs) && rs[i].Addr < next {
				next = max(rs[i].Addr, a)
			}
			if next > a {
				if pad := padding(b.Code(a), next-a); a+pad < next {
					gaps = append(gaps, Range{Addr: a + pad, Size: next - a - pad})
				}
			}
			if i >= len(rs) || rs[i].Addr >= s.Addr+s.Size {
				break
			}
			a = max(a, rs[i].End())
			i++
		}
	}
	if len(gaps) == 0 {
		return false
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i].Addr < gaps[j].Addr })
	inGap := func(a uint64) bool {
		i := sort.Search(len(gaps), func(i int) bool { return gaps[i].End() > a })
		return i < len(gaps) && gaps[i].Addr <= a
	}
	ri := b.sweepRefs()
	for _, set := range []addrSet{ri.branches, ri.set} {
		for _, a := range set {
			if inGap(a) {
				return true
			}
		}
	}
	for a := range b.codePointers() {
		if inGap(a) {
			return true
		}
	}
	return false
}

// tablePointers finds the targets of absolute jump tables that no graph
// resolved: the words of a table that a `jmp *disp32(,%reg,8)` anywhere
// in executable code indexes (gcc's and clang's non-PIC switch), up to
// the first word that does not point into code. Such words are labels,
// not procedures. The byte pattern over-approximates, which only costs
// pointers that are not taken for entries.
func (b *Binary) tablePointers() map[uint64]bool {
	out := map[uint64]bool{}
	for _, s := range b.sections {
		if !s.Exec || s.data == nil {
			continue
		}
		d := s.data
		for i := 0; i+7 <= len(d); i++ {
			// ff /4 with ModRM 00 100 100 (SIB) and SIB scale 8, no base.
			if d[i] != 0xff || d[i+1] != 0x24 || d[i+2]&0xc7 != 0xc5 {
				continue
			}
			t := uint64(int64(int32(binary.LittleEndian.Uint32(d[i+3:]))))
			if sec := b.section(t); sec == nil || sec.Exec {
				continue
			}
			for k := 0; k < 1<<16; k++ {
				v, ok := b.Pointer(t + uint64(k)*8)
				if !ok || !b.IsCode(v) {
					break
				}
				out[v] = true
			}
		}
	}
	return out
}

// discover adds the procedures that evidence in known code reveals, to a
// fixed point, building their graphs with build (which takes indices
// into p.Funcs). Every procedure must have been built.
func (p *Program) discover(build func([]int), workers int) {
	b := p.Binary
	scans := map[*Function]*funcScan{}
	rejected := map[uint64]bool{}
	evOf := map[uint64]evidence{} // what each discovered entry rests on
	pointers := slices.Sorted(maps.Keys(b.codePointers()))
	labels := b.tablePointers()
	var flows flowIndex
	for round := 0; round < maxDiscoverRounds; round++ {
		// Scan what changed, on all workers.
		var rescan []int
		for i, f := range p.Funcs {
			g := p.Graphs[i]
			if s := scans[f]; s != nil && s.size == f.Size && s.nparts == len(f.Parts) && s.graph == g {
				continue
			}
			if f.PLT {
				scans[f] = &funcScan{size: f.Size, nparts: len(f.Parts), graph: g}
				continue
			}
			if g != nil && g.scan != nil {
				// Made by the builder from its instructions.
				if checkScan != nil {
					checkScan(p, f, g)
				}
				scans[f], g.scan = g.scan, nil
				continue
			}
			rescan = append(rescan, i)
		}
		scanned := make([]*funcScan, len(rescan))
		par.Each(len(rescan), workers, func(k int) {
			i := rescan[k]
			scanned[k] = p.scanFunction(p.Funcs[i], p.Graphs[i])
		})
		for k, i := range rescan {
			scans[p.Funcs[i]] = scanned[k]
		}
		// The flow of every procedure, for the cover tests.
		flows.build(p.Funcs, scans)
		// sized lists the bodies with firm bounds and every fragment.
		var sized []Range
		for _, f := range p.Funcs {
			if f.sized {
				sized = append(sized, Range{f.Addr, f.Size})
			}
			sized = append(sized, f.Parts...)
		}
		sort.Slice(sized, func(i, j int) bool { return sized[i].Addr < sized[j].Addr })
		inSized := func(a uint64) bool {
			// Firm ranges do not overlap (Functions cuts them), so the
			// last one starting at or below a is the only candidate.
			i := sort.Search(len(sized), func(i int) bool { return sized[i].Addr > a }) - 1
			return i >= 0 && sized[i].Contains(a)
		}
		// Collect evidence, on every worker.
		cands, dataUse := p.evidence(scans, pointers, evOf, workers)
		tables := p.tableTargets(cands, workers)

		// accept decides one candidate against the current procedures.
		accept := func(t uint64, ev evidence) bool {
			if rejected[t] || p.byEntry[t] != nil || !b.IsCode(t) || inSized(t) {
				return false
			}
			if ev&evCall == 0 && (tables[t] || labels[t] && ev&evCodeRef == 0) {
				return false
			}
			if ev&evCall == 0 && dataUse[t] {
				// Read through the register that took it (a GOT slot
				// may point at it too: clang reaches extern data
				// that way).
				return false
			}
			inside := flows.any(t-15, t, func(in scanInst, owner *Function) bool {
				return in.end() > t && (in.addr != t || owner.sized || !ev.strong() || !scans[owner].callBefore(t))
			})
			if inside {
				return false // inside another procedure's flow
			}
			if i := p.containing(t); i >= 0 {
				if g := p.Graphs[i]; ev&evCall == 0 && hiddenFlow(g) {
					return false
				}
			}
			return true
		}
		keys := make([]uint64, 0, len(cands))
		for t := range cands {
			keys = append(keys, t)
		}
		slices.Sort(keys)
		var added []*Function
		for _, t := range keys {
			ev := cands[t]
			if f := p.byEntry[t]; f != nil {
				if _, ok := evOf[t]; ok {
					evOf[t] |= ev
					f.Source |= ev.source()
				}
				continue
			}
			if !accept(t, ev) {
				continue
			}
			evOf[t] = ev
			added = append(added, &Function{Name: fmt.Sprintf("sub_%x", t), Addr: t, Source: ev.source()})
		}
		// The last round adds nothing: a large binary whose data in
		// .text keeps adding and contradicting entries (a 50 MB static
		// Go program ran all the rounds) must still end with the
		// clean-up below, or an entry jump lands on its data.
		final := round == maxDiscoverRounds-1
		if final {
			added = nil
		}
		var drop []uint64
		if len(added) == 0 {
			// Nothing new: drop the entries the flow of the others
			// contradicts, then those with weak evidence only whose
			// procedure does not analyse completely (until now a tail
			// jump of theirs might still find its callee).
			drop = p.contradicted(evOf, scans, workers, func(a uint64) bool {
				return flows.any(a-15, a-1, func(in scanInst, owner *Function) bool {
					return in.end() > a && owner.Addr != a
				})
			})
			if len(drop) == 0 || final {
				contra := make(map[uint64]bool, len(drop))
				for _, a := range drop {
					contra[a] = true
				}
				jumpers := map[uint64]map[*Function]bool{}
				for _, j := range p.jumpsTo(evOf, scans, workers) {
					if jumpers[j.t] == nil {
						jumpers[j.t] = map[*Function]bool{}
					}
					jumpers[j.t][j.f] = true
				}
				for a, ev := range evOf {
					// An address only code takes (lea, an immediate)
					// may be data: hand-written assembly keeps its
					// constants in .text (OpenSSL's K256, read from its
					// start and from K256+128). Its "procedure" stays
					// only if it analyses completely and runs nothing
					// odd, as weak evidence must, and one a pointer in
					// data names only if it runs nothing odd: an entry
					// jump written over a table corrupts what the
					// program computes [decision 114].
					f := p.byEntry[a]
					g0 := p.Graph(f)
					// Bytes that do not decode, run off the end or
					// overlap say data as loudly as odd instructions
					// do: a pointer in data to a table in .text
					// (BoringSSL's FIPS module keeps its read-only
					// data there) is no procedure either.
					odd := scans[f] != nil && scans[f].odd ||
						g0 != nil && (g0.Reason == ReasonBadDecode || g0.Reason == ReasonFallsOff || g0.Reason == ReasonOverlap)
					if ev&evCall != 0 || ev&evDataRef != 0 && !odd {
						continue
					}
					g := p.Graph(f)
					if g != nil && (g.Instrumentable() || g.Reason == ReasonTooShort) && !odd {
						continue
					}
					if contra[a] {
						continue
					}
					drop = append(drop, a)
					// A stripped foo.cold: reached by jumps from one
					// discovered procedure only, and jumping back into
					// it. It joins it, as joinFragments joins FDE ranges.
					if g == nil || g.Reason != ReasonEscapingJump || len(jumpers[a]) != 1 {
						continue
					}
					for parent := range jumpers[a] {
						frag := p.byEntry[a]
						if i := p.containing(g.escape); i >= 0 && p.Funcs[i] == parent && parent.Discovered() && len(frag.Parts) == 0 {
							parent.Parts = append(parent.Parts, Range{frag.Addr, frag.Size})
							parent.PartNames = append(parent.PartNames, frag.Name)
						}
					}
				}
			}
			if len(drop) == 0 {
				return
			}
			slices.Sort(drop)
		}
		for _, a := range drop {
			rejected[a] = true
			delete(evOf, a)
		}
		p.replaceFuncs(added, drop)
		// Rebuild the new procedures, those whose range moved, and
		// those that call or jump to an entry that came or went.
		changed := map[uint64]bool{}
		for _, f := range added {
			changed[f.Addr] = true
		}
		for _, a := range drop {
			changed[a] = true
		}
		stale := make([]bool, len(p.Funcs))
		par.Chunks(len(p.Funcs), 1024, workers, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				stale[i] = p.stale(i, scans[p.Funcs[i]], changed)
			}
		})
		var again []int
		for i, st := range stale {
			if st {
				again = append(again, i)
			}
		}
		build(again)
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

// contradicted returns the discovered entries without a call that the
// flow of other procedures contradicts: an instruction of theirs covers
// the entry's first byte (inside reports it), their flow runs on into it
// other than after a call, or they jump into its body past the entry. A
// pointer may be a string's bytes or a label, a jump a fragment's way
// back; a call is taken at its word.
func (p *Program) contradicted(evOf map[uint64]evidence, scans map[*Function]*funcScan, workers int, inside func(uint64) bool) []uint64 {
	bad := map[uint64]bool{}
	for a, ev := range evOf {
		if ev&evCall == 0 && inside(a) {
			bad[a] = true
		}
	}
	// Nor does an entry lie inside the alignment padding after the last
	// instruction of a procedure's flow (zstd: a RELATIVE pointer to
	// 0x7fff, the last byte of the nopl that pads register_tm_clones up
	// to __do_global_dtors_aux at 0x8000, made a procedure whose entry
	// jump overwrote 0x8000's first bytes).
	//
	// What each entry needs is the last end of an instruction at or
	// before it. The entries in question are few (libLLVM: 21) and the
	// instructions many (12 million), so each end goes to the first entry
	// at or after it, and an entry whose bucket is empty inherits the one
	// before (every end in bucket i is above every end in bucket i-1),
	// instead of sorting every end (a 100 MB array on the main goroutine
	// [decision 118]).
	var cand []uint64
	for a, ev := range evOf {
		if ev&evCall == 0 {
			cand = append(cand, a)
		}
	}
	slices.Sort(cand)
	insts := make([][]scanInst, len(p.Funcs))
	for i, f := range p.Funcs {
		insts[i] = scans[f].insts
	}
	last, has := lastEnds(cand, insts, workers)
	for i, a := range cand {
		if !has[i] || a-last[i] >= 64 {
			continue
		}
		if end := last[i]; end+padding(p.Binary.Code(end), a-end+16) > a {
			bad[a] = true
		}
	}
	// The falls and jumps of every procedure, on every worker.
	var parts [par.MaxChunks][]uint64
	par.Chunks(len(p.Funcs), 1024, workers, func(c, lo, hi int) {
		var out []uint64
		for _, f := range p.Funcs[lo:hi] {
			s := scans[f]
			for _, t := range s.falls {
				if ev, ok := evOf[t]; ok && ev&evCall == 0 {
					out = append(out, t)
				}
			}
			for _, t := range s.jumps {
				if i := p.containing(t); i >= 0 {
					g := p.Funcs[i]
					if ev, ok := evOf[g.Addr]; ok && ev&evCall == 0 && t != g.Addr {
						out = append(out, g.Addr)
					}
				}
			}
		}
		parts[c] = out
	})
	for _, out := range parts {
		for _, a := range out {
			bad[a] = true
		}
	}
	out := make([]uint64, 0, len(bad))
	for a := range bad {
		out = append(out, a)
	}
	return out
}

// lastEndsShare is the least number of procedures in one share of
// lastEnds' work (a variable for the tests).
var lastEndsShare = 1024

// lastEnds returns, for each address of cand (sorted), the last end of
// an instruction of insts at or before it, and whether there is one.
// The workers take shares of at least lastEndsShare procedures, each
// with arrays of its own; the shares' answers merge by the larger end.
func lastEnds(cand []uint64, insts [][]scanInst, workers int) (last []uint64, has []bool) {
	last, has = make([]uint64, len(cand)), make([]bool, len(cand))
	if len(cand) == 0 {
		return last, has
	}
	type share struct {
		last []uint64
		has  []bool
	}
	var shares [par.MaxChunks]share
	par.Chunks(len(insts), lastEndsShare, workers, func(c, lo, hi int) {
		sh := share{make([]uint64, len(cand)), make([]bool, len(cand))}
		for _, is := range insts[lo:hi] {
			for _, in := range is {
				e := in.end()
				if e > cand[len(cand)-1] {
					continue
				}
				k, _ := slices.BinarySearch(cand, e)
				if !sh.has[k] || e > sh.last[k] {
					sh.last[k], sh.has[k] = e, true
				}
			}
		}
		shares[c] = sh
	})
	for _, sh := range shares {
		for k := range sh.has {
			if sh.has[k] && (!has[k] || sh.last[k] > last[k]) {
				last[k], has[k] = sh.last[k], true
			}
		}
	}
	for i := 1; i < len(cand); i++ {
		if !has[i] && has[i-1] {
			last[i], has[i] = last[i-1], true
		}
	}
	return last, has
}

// codePointers returns the code addresses stored in data: the values of
// RELATIVE relocations and, in a position-dependent executable, the
// pointer-sized words of the data sections. A word that reads as the end
// of a C string (printable bytes then zeros, after a printable byte:
// "LOT\0\0\0\0\0" is 0x544f4c) is text, not a pointer.
func (b *Binary) codePointers() map[uint64]bool {
	out := map[uint64]bool{}
	for _, v := range b.relative {
		if b.IsCode(v) {
			out[v] = true
		}
	}
	if b.Kind != KindExec {
		return out
	}
	for i := range b.sections {
		s := &b.sections[i]
		if s.Exec || s.data == nil {
			continue
		}
		for off := 0; off+8 <= len(s.data); off += 8 {
			v := binary.LittleEndian.Uint64(s.data[off:])
			if v == 0 || !b.IsCode(v) || off > 0 && stringTail(s.data[off-1:off+8]) {
				continue
			}
			out[v] = true
		}
	}
	return out
}

// stringTail reports 9 bytes whose first is printable and whose other 8
// are printable bytes followed by zeros.
func stringTail(d []byte) bool {
	printable := func(c byte) bool { return c >= 0x20 && c < 0x7f }
	if !printable(d[0]) {
		return false
	}
	i := 1
	for i < len(d) && printable(d[i]) {
		i++
	}
	for ; i < len(d); i++ {
		if d[i] != 0 {
			return false
		}
	}
	return true
}

// replaceFuncs adds procedures and removes the ones entered at drop, then
// moves every guessed bound to the next start and keeps Graphs, byEntry
// and funcsIdx in step. Graphs of new procedures are nil.
func (p *Program) replaceFuncs(added []*Function, drop []uint64) {
	gone := map[uint64]bool{}
	for _, a := range drop {
		gone[a] = true
	}
	funcs := make([]*Function, 0, len(p.Funcs)+len(added))
	for _, f := range p.Funcs {
		if !gone[f.Addr] {
			funcs = append(funcs, f)
		}
	}
	funcs = append(funcs, added...)
	sort.Slice(funcs, func(i, j int) bool { return funcs[i].Addr < funcs[j].Addr })
	p.Binary.boundGuesses(funcs)
	// The graphs move by the old index; the two maps are made at once,
	// one on another goroutine.
	graphs := make([]*Graph, len(funcs))
	for i, f := range funcs {
		if j, ok := p.funcsIdx[f]; ok {
			graphs[i] = p.Graphs[j]
		}
	}
	p.Funcs, p.Graphs = funcs, graphs
	byEntry := make(map[uint64]*Function, len(funcs))
	done := make(chan struct{})
	go func() {
		for _, f := range funcs {
			byEntry[f.Addr] = f
		}
		close(done)
	}()
	p.funcsIdx = make(map[*Function]int, len(funcs))
	for i, f := range funcs {
		p.funcsIdx[f] = i
	}
	<-done
	p.byEntry = byEntry
}

// boundGuesses ends every procedure without a firm size at the next start
// of a procedure or fragment, or at the end of its section, and
// (funcs sorted by entry).
func (b *Binary) boundGuesses(funcs []*Function) {
	var starts []uint64
	for _, f := range funcs {
		starts = append(starts, f.Addr)
		for _, r := range f.Parts {
			starts = append(starts, r.Addr)
		}
	}
	slices.Sort(starts)
	nextStart := func(a uint64) uint64 { return nextAfter(starts, a) }
	for _, f := range funcs {
		if f.sized || f.PLT {
			continue
		}
		s := b.section(f.Addr)
		if s == nil {
			continue
		}
		end := min(s.Addr+s.Size, nextStart(f.Addr))
		// A guessed body runs up to the next start, padding included:
		// no room is left after it.
		f.Size, f.Pad = end-f.Addr, 0
	}
}

// evidence collects what the scans say of every address that is not a
// procedure's entry, or is a discovered one (evOf): the candidates, by
// kind of evidence, and the addresses code reads data through
// (dataUse). Calls and pointers to known entries, most of them, say
// nothing new and are left out where they are found: on every worker,
// each taking a share of the procedures and of pointers (sorted), the
// shares merged in order.
func (p *Program) evidence(scans map[*Function]*funcScan, pointers []uint64, evOf map[uint64]evidence, workers int) (cands map[uint64]evidence, dataUse map[uint64]bool) {
	type cand struct {
		t  uint64
		ev evidence
	}
	news := func(t uint64) bool {
		if p.byEntry[t] == nil {
			return true
		}
		_, ok := evOf[t]
		return ok
	}
	var fc, pc [par.MaxChunks][]cand
	var du [par.MaxChunks][]uint64
	par.Chunks(len(p.Funcs), 1024, workers, func(c, lo, hi int) {
		var out []cand
		var data []uint64
		for _, f := range p.Funcs[lo:hi] {
			s := scans[f]
			for _, lst := range [...]struct {
				ts []uint64
				ev evidence
			}{{s.calls, evCall}, {s.refs, evCodeRef}, {s.jumps, evJump}} {
				for _, t := range lst.ts {
					if news(t) {
						out = append(out, cand{t, lst.ev})
					}
				}
			}
			for _, t := range s.dataRefs {
				if p.byEntry[t] == nil {
					data = append(data, t)
				}
			}
		}
		fc[c], du[c] = out, data
	})
	par.Chunks(len(pointers), 4096, workers, func(c, lo, hi int) {
		var out []cand
		for _, t := range pointers[lo:hi] {
			if news(t) {
				out = append(out, cand{t, evDataRef})
			}
		}
		pc[c] = out
	})
	cands, dataUse = map[uint64]evidence{}, map[uint64]bool{}
	for _, part := range [...]*[par.MaxChunks][]cand{&fc, &pc} {
		for _, out := range part {
			for _, x := range out {
				cands[x.t] |= x.ev
			}
		}
	}
	for _, data := range du {
		for _, t := range data {
			dataUse[t] = true
		}
	}
	return cands, dataUse
}

// tableTargets returns the candidates that are live targets of a
// resolved jump table (a dead entry is no evidence of code, decision
// 98): the graphs are read on every worker, and only the candidates'
// entries are kept.
func (p *Program) tableTargets(cands map[uint64]evidence, workers int) map[uint64]bool {
	var parts [par.MaxChunks][]uint64
	par.Chunks(len(p.Graphs), 1024, workers, func(c, lo, hi int) {
		var out []uint64
		for _, g := range p.Graphs[lo:hi] {
			if g == nil {
				continue
			}
			for _, t := range g.Tables {
				for k, a := range t.Targets {
					if _, ok := cands[a]; ok && !t.IsDead(k) {
						out = append(out, a)
					}
				}
			}
		}
		parts[c] = out
	})
	tables := map[uint64]bool{}
	for _, out := range parts {
		for _, a := range out {
			tables[a] = true
		}
	}
	return tables
}

// jump is a direct jump from a procedure's flow to t.
type jump struct {
	t uint64
	f *Function
}

// jumpsTo lists the jumps of every procedure's flow to a discovered
// entry, in the procedures' order, read on every worker.
func (p *Program) jumpsTo(evOf map[uint64]evidence, scans map[*Function]*funcScan, workers int) []jump {
	var parts [par.MaxChunks][]jump
	par.Chunks(len(p.Funcs), 1024, workers, func(c, lo, hi int) {
		var out []jump
		for _, f := range p.Funcs[lo:hi] {
			for _, t := range scans[f].jumps {
				if _, ok := evOf[t]; ok {
					out = append(out, jump{t, f})
				}
			}
		}
		parts[c] = out
	})
	var all []jump
	for _, out := range parts {
		all = append(all, out...)
	}
	return all
}

// stale reports whether procedure i must be built again after a
// discovery round: it is new, its range moved, or its scan (s) calls or
// jumps to an entry that came or went (changed).
func (p *Program) stale(i int, s *funcScan, changed map[uint64]bool) bool {
	f := p.Funcs[i]
	if s == nil || s.size != f.Size || s.nparts != len(f.Parts) || p.Graphs[i] == nil {
		return true
	}
	for _, lst := range [...][]uint64{s.calls, s.jumps} {
		for _, t := range lst {
			if changed[t] {
				return true
			}
		}
	}
	return false
}
