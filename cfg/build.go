package cfg

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blpp/blpp/cfg/x86"
)

// env is what building one procedure's graph needs to know about the rest
// of the program.
type env interface {
	// funcAt returns the procedure whose entry is addr, or nil.
	funcAt(addr uint64) *Function
	// noReturn reports whether a call to addr never returns.
	noReturn(addr uint64) bool
	// scanning reports whether discovery wants each graph's flow scan
	// made from its instructions (Graph.scan, flowScan).
	scanning() bool
}

// maxInsts bounds the instructions decoded for one procedure.
const maxInsts = 1 << 20

// builder decodes one procedure by recursive traversal from its entry and
// turns the instructions into blocks and edges.
type builder struct {
	b   *Binary
	env env
	f   *Function
	g   *Graph

	ranges []Range
	cover  [][]int32 // per range, per byte: 1+index of the instruction covering it
	// insts are the decoded instructions, as x86.DecodeInfo gives them
	// (without running x86asm for an instruction decoded before): the
	// passes that match operands (slices of indirect jumps, system call
	// numbers) read Info.Op and Info.Args.
	insts []x86.Info
	// dec decodes them (x86.Decoder).
	dec *x86.Decoder
	// order is insts in address order, once makeBlocks sorted them;
	// mk holds it and makeBlocks' other arrays.
	order []instAt
	mk    *makeScratch
	work  []uint64
	// lead marks block starts besides those implied by control
	// transfers, a flag per byte of each range beside cover (setLeader,
	// leader): a map of them was a tenth of makeBlocks' time in a large
	// library.
	lead [][]bool
	// leadList holds the same addresses in the order they were marked,
	// for the data flow's walk over them (regconst.go).
	leadList []uint64
	// fallOut maps an instruction that runs off the end of the range into
	// the entry of the next procedure (an implicit tail call) to that entry.
	fallOut map[uint64]uint64
	// callNoRet marks call instructions whose callee does not return.
	callNoRet map[uint64]bool
	// indirect jumps: resolved tables, and jumps taken as indirect tail calls.
	pending   []int
	tables    map[uint64]*JumpTable
	indTail   map[uint64]bool
	tailCalls map[uint64]uint64 // direct jmp/jcc address -> callee entry
	// gotos marks the computed gotos (cgoto.go); labels are the
	// addresses they may reach (nil until asked), queued for decoding
	// once labelsQueued.
	gotos        map[uint64]bool
	labels       []uint64
	labelsQueued bool
	// offsetDispatch says the labels include those of a dispatch table
	// built at run time from offsets (offsetLabels): any indirect jump
	// that keeps the frame reaches one of them, whatever its slice
	// says (LuaJIT jumps to the handler a C function returned).
	offsetDispatch bool
	// resumed are the labels that got an EdgeResume; receivers are the
	// receivers of __builtin_setjmp (cgoto.go).
	resumed, receivers []uint64
	// unlocked maps the address just past a lock prefix that some branch
	// skips (glibc's `je 1f; lock; 1: cmpxchg`) to the index of the
	// instruction decoded there; the cover arrays keep the prefixed one.
	unlocked map[uint64]int32
	// regs is the scratch array of the slicers' register states
	// (regScratch).
	regs []regState
}

// instsPool keeps the builders' instruction buffers between procedures:
// an x86.Inst is a few hundred bytes, and a large binary's procedures are
// built more than once (discovery, fragments, no-return rounds), so
// growing a fresh slice for each build made most of the analysis's
// garbage. Nothing a builder returns points into its buffer.
var instsPool sync.Pool

// blocksPool, coverPool and leadPool keep the builders' other scratch
// arrays: the blocks as they are found (the graph gets a copy of their
// final number), and the per-byte cover and leader flags of the ranges.
var blocksPool, coverPool, leadPool sync.Pool

// pooledZeros returns n zero values of T in an array from pool (which
// holds *[]T) when one is large enough, else in a new one.
func pooledZeros[T any](pool *sync.Pool, n uint64) []T {
	if buf, ok := pool.Get().(*[]T); ok && uint64(cap(*buf)) >= n {
		s := (*buf)[:n]
		clear(s)
		return s
	}
	return make([]T, n)
}

// buildGraph analyses one procedure. It never panics on any input: every
// problem becomes a Reason.
func buildGraph(b *Binary, e env, f *Function) *Graph {
	g := &Graph{Func: f}
	if f.PLT {
		g.fail(ReasonPLT, f.Addr, "PLT stub %s", f.Name)
		return g
	}
	for _, r := range f.Ranges() {
		if c := b.Code(r.Addr); c == nil || uint64(len(c)) < r.Size {
			g.fail(ReasonNoCode, r.Addr, "range of %d bytes is not in executable file data", r.Size)
			return g
		}
	}
	bd := &builder{b: b, env: e, f: f, g: g, ranges: f.Ranges(),
		fallOut:   map[uint64]uint64{},
		callNoRet: map[uint64]bool{}, tables: map[uint64]*JumpTable{},
		indTail: map[uint64]bool{}, tailCalls: map[uint64]uint64{}, unlocked: map[uint64]int32{}}
	if buf, ok := instsPool.Get().(*[]x86.Info); ok {
		bd.insts = (*buf)[:0]
	}
	bd.dec = x86.NewDecoder()
	bd.mk, _ = makePool.Get().(*makeScratch)
	if bd.mk == nil {
		bd.mk = &makeScratch{}
	}
	bd.leadList = bd.mk.leads[:0]
	defer func() {
		bd.mk.leads = bd.leadList[:0]
		makePool.Put(bd.mk)
		bd.dec.Release()
		buf := bd.insts[:0]
		instsPool.Put(&buf)
		if bd.regs != nil {
			regs := bd.regs[:0]
			regsPool.Put(&regs)
		}
	}()
	var total uint64
	for _, r := range bd.ranges {
		total += r.Size
	}
	all := pooledZeros[int32](&coverPool, total)
	defer coverPool.Put(&all)
	leadAll := pooledZeros[bool](&leadPool, total)
	defer leadPool.Put(&leadAll)
	bd.cover = make([][]int32, len(bd.ranges))
	bd.lead = make([][]bool, len(bd.ranges))
	rest, lrest := all, leadAll
	for i, r := range bd.ranges {
		bd.cover[i], rest = rest[:r.Size:r.Size], rest[r.Size:]
		bd.lead[i], lrest = lrest[:r.Size:r.Size], lrest[r.Size:]
	}
	bd.setLeader(f.Addr)
	// Other entries first on the work stack: the entry is decoded first.
	for i := len(f.Entries) - 1; i >= 0; i-- {
		bd.setLeader(f.Entries[i])
		bd.work = append(bd.work, f.Entries[i])
	}
	bd.work = append(bd.work, f.Addr)
	eh, err := b.ehRanges(f)
	if err != nil {
		g.fail(ReasonExceptionTable, f.Addr, "%v", err)
		return g
	}
	g.EH = eh
	for _, r := range eh {
		if r.LandingPad == 0 {
			continue
		}
		if bd.rangeOf(r.LandingPad) < 0 {
			// In a stripped binary the pad may be in a fragment (foo.cold)
			// not joined yet: an escape, which joins it.
			g.escape = r.LandingPad
			g.fail(ReasonEscapingJump, r.LandingPad, "landing pad outside the function")
			return g
		}
		bd.setLeader(r.LandingPad)
		// Below the entry on the work stack: the entry is decoded first.
		bd.work = append([]uint64{r.LandingPad}, bd.work...)
	}
	for {
		bd.decodeAll()
		if g.Reason != ReasonOK {
			break
		}
		if len(bd.pending) == 0 {
			if bd.findReceivers() {
				continue
			}
			break
		}
		p := bd.pending
		bd.pending = nil
		s := newSlicer(bd) // the instructions do not change while resolving
		for _, i := range p {
			bd.resolveIndirect(s, i)
		}
	}
	bd.recheckTables()
	bd.makeBlocks()
	if g.Reason == ReasonOK {
		g.findSyscallLeaves(bd.insts, bd.instAt)
	}
	if g.Reason == ReasonOK && f.HasName(IsCopiedName) {
		g.fail(ReasonCopied, f.Addr, "V8 copies its embedded builtins next to its heap and runs them there")
	}
	if g.Reason == ReasonOK && f.HasName(IsContextName) {
		g.fail(ReasonContextSwitch, f.Addr, "the runtime must see the switch: calls go to its replacement")
	}
	if g.Reason == ReasonOK && isVfork(f) {
		g.fail(ReasonVfork, f.Addr, "its child returns from it in its parent's memory")
	}
	if g.Reason == ReasonOK && HoldsSigreturn(bd.b.Code(f.Addr)) {
		g.fail(ReasonSigreturn, f.Addr, "mov $15,%%rax; syscall (rt_sigreturn): unwinders and debuggers find signal frames by these bytes")
	}
	if g.Reason == ReasonOK && f.Size+f.Pad < 5 {
		g.fail(ReasonTooShort, f.Addr, "%d bytes and %d bytes of padding, shorter than the 5-byte jump that redirects it", f.Size, f.Pad)
	}
	if e.scanning() {
		g.scan = bd.flowScan()
	}
	return g
}

// memBytes returns the size of insts[i]'s memory operand, which only
// x86asm's full decoding gives (Raw.MemBytes): the few instructions the
// slices look at for it are decoded again, the others never.
func (bd *builder) memBytes(i int) int {
	in := &bd.insts[i]
	full, err := x86.Decode(bd.b.Code(in.Addr)[:in.Len], in.Addr)
	if err != nil || full.Info != *in {
		// DecodeInfo and Decode disagree (FuzzDecode and TestMemoAgrees
		// look for this): nothing is trusted.
		bd.g.fail(ReasonBadDecode, in.Addr, "decoding is not reproducible")
		return 0
	}
	return full.Raw.MemBytes
}

// rangeOf returns the index of the range holding addr, or -1.
func (bd *builder) rangeOf(addr uint64) int {
	for i, r := range bd.ranges {
		if r.Contains(addr) {
			return i
		}
	}
	return -1
}

// instAt returns the index of the instruction starting at addr, or -1.
func (bd *builder) instAt(addr uint64) int {
	if i, ok := bd.unlocked[addr]; ok {
		return int(i)
	}
	ri := bd.rangeOf(addr)
	if ri < 0 {
		return -1
	}
	c := bd.cover[ri][addr-bd.ranges[ri].Addr]
	if c == 0 || bd.insts[c-1].Addr != addr {
		return -1
	}
	return int(c - 1)
}

// target handles the destination of a direct jump or conditional branch:
// inside the procedure it is queued for decoding, at another procedure's
// entry it is a tail call, anywhere else the procedure is refused.
func (bd *builder) target(from, t uint64) {
	if bd.rangeOf(t) >= 0 {
		bd.setLeader(t)
		bd.work = append(bd.work, t)
		return
	}
	if bd.env.funcAt(t) != nil {
		bd.tailCalls[from] = t
		return
	}
	if bd.g.Reason == ReasonOK {
		bd.g.escape = t
	}
	bd.g.fail(ReasonEscapingJump, from, "jump to %#x, which is neither inside the function nor a function entry", t)
}

func (bd *builder) decodeAll() {
	g := bd.g
	for len(bd.work) > 0 && g.Reason == ReasonOK {
		a := bd.work[len(bd.work)-1]
		bd.work = bd.work[:len(bd.work)-1]
		for g.Reason == ReasonOK {
			ri := bd.rangeOf(a)
			if ri < 0 {
				break // caller checked; defensive
			}
			r := bd.ranges[ri]
			off := a - r.Addr
			if c := bd.cover[ri][off]; c != 0 {
				o := &bd.insts[c-1]
				if o.Addr == a {
					break
				}
				if _, ok := bd.unlocked[a]; ok {
					break
				}
				in, ok := bd.unlockedOf(o, a)
				if !ok {
					g.fail(ReasonOverlap, a, "control reaches the middle of the instruction at %#x", o.Addr)
					break
				}
				// The instruction without its lock prefix ends where the
				// prefixed one does; control goes on from there.
				bd.addUnlocked(in)
				if next := o.Addr + uint64(o.Len); bd.rangeOf(next) >= 0 {
					a = next
					continue
				}
				if fo, ok := bd.fallOut[o.Addr]; ok {
					bd.fallOut[a] = fo
				}
				break
			}
			if len(bd.insts) >= maxInsts {
				g.fail(ReasonTooLarge, a, "more than %d instructions", maxInsts)
				break
			}
			code := bd.b.Code(a)
			if rem := r.End() - a; uint64(len(code)) > rem {
				code = code[:rem]
			}
			// Decoded in place, in the array's next element: nothing
			// below adds an instruction before it is taken in (an Info
			// is a few hundred bytes, made and copied for each of a
			// large library's millions of instructions).
			n := len(bd.insts)
			bd.insts = slices.Grow(bd.insts, 1)
			inst := &bd.insts[:n+1][n]
			if err := bd.dec.DecodeInfoTo(inst, code, a); err != nil {
				g.fail(ReasonBadDecode, a, "%v", err)
				break
			}
			idx := int32(len(bd.insts)) + 1
			cov := bd.cover[ri][off : off+uint64(inst.Len)]
			if c := cov[len(cov)-1]; c != 0 && bd.insts[c-1].Addr == a+1 {
				// The lock-prefixed instruction is met after the one a
				// branch reaches past its prefix: that one moves aside.
				if _, ok := bd.unlockedOf(inst, a+1); ok && sameCover(cov[1:], c) {
					bd.addUnlockedAt(c)
					clear(cov)
				}
			}
			for _, c := range cov {
				if c != 0 {
					g.fail(ReasonOverlap, a, "instruction overlaps the one at %#x", bd.insts[c-1].Addr)
					break
				}
			}
			if g.Reason != ReasonOK {
				break
			}
			for k := range cov {
				cov[k] = idx
			}
			bd.insts = bd.insts[:n+1]
			next := a + uint64(inst.Len)
			cont := false
			switch inst.Kind {
			case x86.Call, x86.CallIndirect:
				if inst.Kind == x86.Call && bd.env.noReturn(inst.Target) {
					bd.callNoRet[a] = true
					break
				}
				if bd.rangeOf(next) < 0 {
					// A call as the last instruction: the compiler knew the
					// callee does not return.
					bd.callNoRet[a] = true
					break
				}
				cont = true
			case x86.Jcc:
				bd.target(a, inst.Target)
				cont = true
			case x86.Jmp:
				bd.target(a, inst.Target)
			case x86.JmpIndirect:
				bd.pending = append(bd.pending, len(bd.insts)-1)
			case x86.Ret, x86.Halt:
			default:
				cont = true
			}
			if !cont {
				break
			}
			if bd.rangeOf(next) < 0 {
				if to := bd.fallsInto(next); to != 0 {
					bd.fallOut[a] = to
					if to != next && next == bd.f.Addr+bd.f.Size {
						g.padTo = to
					}
				} else {
					if g.Reason == ReasonOK {
						bd.g.escape = next
					}
					g.fail(ReasonFallsOff, a, "execution continues past the end of the function")
				}
				break
			}
			a = next
		}
	}
}

// fallsInto returns the procedure entry that control running off the
// end of a range at next reaches: next itself, or the entry just after
// nops that align it (glibc's __memcpy_chk runs through a nopl into
// __memcpy). Nops after the main range become the procedure's
// (Program.padRuns) and run in a block of its own. 0: none.
func (bd *builder) fallsInto(next uint64) uint64 {
	if bd.env.funcAt(next) != nil {
		return next
	}
	code := bd.b.Code(next)
	if len(code) > 64 {
		code = code[:64] // alignment to 64 bytes at most
	}
	off := 0
	for off < len(code) {
		in, err := x86.DecodeInfo(code[off:], next+uint64(off))
		if err != nil || !isNop(&in, code[off:]) {
			break
		}
		off += in.Len
		if t := next + uint64(off); bd.env.funcAt(t) != nil {
			return t
		}
	}
	return 0
}

// instAt is an instruction's address and index in the builder's insts.
type instAt struct {
	addr uint64
	i    int32
}

// coverOrder appends the instructions to byAddr in address order, read
// off the cover arrays: an instruction starts where a range's cover
// changes to its index, and one past a skipped lock prefix (unlocked)
// one byte into the instruction covering it. It sorts the ranges (a
// fragment may lie below its function) and gives up, returning byAddr
// short of an instruction, when they overlap or an instruction is not
// found this way; makeBlocks then sorts. A sort of a large library's
// instructions cost more than these sequential reads.
func (bd *builder) coverOrder(byAddr []instAt) []instAt {
	rs := make([]int, len(bd.ranges))
	for i := range rs {
		rs[i] = i
	}
	slices.SortFunc(rs, func(a, b int) int { return cmp.Compare(bd.ranges[a].Addr, bd.ranges[b].Addr) })
	var end uint64
	for k, ri := range rs {
		r := bd.ranges[ri]
		if k > 0 && r.Addr < end {
			return byAddr[:0] // overlapping ranges
		}
		end = r.End()
		prev := int32(0)
		for off, c := range bd.cover[ri] {
			if c == prev {
				continue
			}
			prev = c
			if c == 0 {
				continue
			}
			a := r.Addr + uint64(off)
			byAddr = append(byAddr, instAt{a, c - 1})
			if len(bd.unlocked) > 0 {
				if u, ok := bd.unlocked[a+1]; ok {
					byAddr = append(byAddr, instAt{a + 1, u})
				}
			}
		}
	}
	for k, x := range byAddr {
		if bd.insts[x.i].Addr != x.addr || k > 0 && x.addr <= byAddr[k-1].addr {
			return byAddr[:0]
		}
	}
	return byAddr
}

// makeScratch holds makeBlocks' arrays, for the next build.
type makeScratch struct {
	byAddr  []instAt
	startOf []BlockID
	lastOf  []int32
	edges   []Edge
	calls   []CallSite
	leads   []uint64 // builder.leadList's array
}

// ownEdges gives the graph its own copy of the edges and calls makeBlocks
// gathered in its scratch arrays, and keeps those for the next build.
func (bd *builder) ownEdges() {
	g, sc := bd.g, bd.mk
	sc.edges, sc.calls = g.Edges[:0], g.Calls[:0]
	g.Edges, g.Calls = owned(g.Edges), owned(g.Calls)
}

// owned is a copy of s exactly its length, nil when it is empty.
func owned[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	t := make(S, len(s))
	copy(t, s)
	return t
}

var makePool sync.Pool

// makeBlocks splits the decoded instructions into blocks and adds edges.
func (bd *builder) makeBlocks() {
	g, insts := bd.g, bd.insts
	if len(insts) == 0 {
		return
	}
	// Visit instructions in address order through a permutation, so the
	// cover arrays (which index insts) stay valid for lookups.
	// (Sorted by address beside the index: comparing through insts,
	// whose elements are hundreds of bytes, missed the cache. No two
	// instructions start at one address.)
	sc := bd.mk
	byAddr := bd.coverOrder(slices.Grow(sc.byAddr[:0], len(insts)))
	if len(byAddr) != len(insts) {
		byAddr = byAddr[:len(insts)]
		for i := range insts {
			byAddr[i] = instAt{insts[i].Addr, int32(i)}
		}
		slices.SortFunc(byAddr, func(a, b instAt) int { return cmp.Compare(a.addr, b.addr) })
	}
	sc.byAddr = byAddr
	bd.order = byAddr
	// A system call ends its block like a call [decision 2]: one that
	// makes a process returns in the parent and in the child, which
	// record their paths separately from there (decision 101), so the
	// instructions after it must not share a block, and a count, with
	// those before it (decision 133).
	ends := func(in *x86.Info) bool {
		switch in.Kind {
		case x86.Other:
			return bd.fallOut[in.Addr] != 0
		}
		return true
	}
	// startOf[i] is the block starting at instruction i, or -1.
	startOf := slices.Grow(sc.startOf[:0], len(insts))[:len(insts)]
	sc.startOf = startOf
	lastOf := sc.lastOf[:0] // per block: index of its last instruction
	defer func() { sc.lastOf = lastOf }()
	// The blocks go to a scratch array, and the graph gets a copy of
	// their final number.
	if buf, ok := blocksPool.Get().(*[]Block); ok {
		g.Blocks = (*buf)[:0]
	}
	var cur *Block
	for _, x := range byAddr {
		i := x.i
		in := &insts[i]
		startOf[i] = -1
		if cur == nil || cur.End != in.Addr || bd.leader(in.Addr) {
			g.Blocks = append(g.Blocks, Block{Addr: in.Addr, End: in.Addr})
			lastOf = append(lastOf, i)
			cur = &g.Blocks[len(g.Blocks)-1]
			startOf[i] = BlockID(len(g.Blocks) - 1)
		}
		cur.End = in.Addr + uint64(in.Len)
		cur.Last = in.Addr
		cur.Insts++
		cur.FlagsUse |= in.Reads &^ cur.FlagsDef
		cur.FlagsDef |= in.Writes
		ru, rd := instRegs(in)
		nr := namedRegs(in)
		cur.Named |= nr
		g.Named |= nr
		cur.RegsUse |= ru &^ cur.RegsDef
		cur.RegsDef |= rd
		lastOf[len(lastOf)-1] = i
		if ends(in) {
			cur = nil
		}
	}
	scratch := g.Blocks
	g.Blocks = make([]Block, len(scratch))
	copy(g.Blocks, scratch)
	blocksPool.Put(&scratch)
	// Blocks are in address order; move the entry block to index 0 and
	// keep the rest sorted, as BlockAt expects.
	ei := bd.instAt(bd.f.Addr)
	if ei < 0 {
		g.fail(ReasonBadDecode, bd.f.Addr, "the entry was not decoded")
		g.Blocks = nil
		return
	}
	// The edges and calls go to scratch arrays too (they grew by
	// doubling from nothing, for every build); the graph gets a copy of
	// each before link (ownEdges).
	g.Edges, g.Calls = sc.edges[:0], sc.calls[:0]
	if e := startOf[ei]; e > 0 {
		eb, el := g.Blocks[e], lastOf[e]
		copy(g.Blocks[1:e+1], g.Blocks[:e])
		copy(lastOf[1:e+1], lastOf[:e])
		g.Blocks[0], lastOf[0] = eb, el
		for i, id := range startOf {
			switch {
			case id == e:
				startOf[i] = 0
			case id >= 0 && id < e:
				startOf[i] = id + 1
			}
		}
	}
	blockOf := func(addr uint64) (BlockID, bool) {
		i := bd.instAt(addr)
		if i < 0 || startOf[i] < 0 {
			return 0, false
		}
		return startOf[i], true
	}
	for id := range g.Blocks {
		blk := &g.Blocks[id]
		from := BlockID(id)
		in := &insts[lastOf[id]]
		next := blk.End
		fall := func(kind EdgeKind) {
			if t, ok := blockOf(next); ok {
				g.appendEdge(Edge{From: from, To: t, Kind: kind})
			} else if fo := bd.fallOut[in.Addr]; fo != 0 {
				g.appendEdge(Edge{From: from, To: Exit, Kind: EdgeTailCall, Target: fo})
			}
		}
		branch := func(t uint64) {
			if callee, ok := bd.tailCalls[in.Addr]; ok {
				g.appendEdge(Edge{From: from, To: Exit, Kind: EdgeTailCall, Target: callee})
				if f := bd.env.funcAt(callee); f != nil {
					g.addLeave(in.Addr, from, f.Name)
				}
			} else if b, ok := blockOf(t); ok {
				g.appendEdge(Edge{From: from, To: b, Kind: EdgeBranch})
			}
		}
		switch in.Kind {
		case x86.Other, x86.Syscall:
			fall(EdgeFallThrough)
		case x86.Call, x86.CallIndirect:
			cs := CallSite{Addr: in.Addr, Len: in.Len, Block: from, NoReturn: bd.callNoRet[in.Addr]}
			if in.Kind == x86.Call {
				cs.Target = in.Target
				if callee := bd.env.funcAt(in.Target); callee != nil {
					// By any of its names: a static binary's calls
					// name glibc's __getcontext, whose alias is
					// getcontext.
					cs.Forks = callee.HasName(IsForkName)
					cs.Vforks = callee.HasName(IsVforkName)
					cs.ReturnsTwice = callee.HasName(IsReturnsTwiceName) || callee.ReturnsTwice
					g.addLeave(in.Addr, from, callee.Name)
				}
			} else if name := bd.b.slotSym[in.RIPTarget]; in.RIPRel && name != "" && !strings.HasPrefix(name, "ifunc_") {
				// call *f@GOTPCREL(%rip) (-fno-plt): the slot the loader
				// fills with f's address names the callee (decision 101).
				cs.Forks = IsForkName(name)
				cs.Vforks = IsVforkName(name)
				cs.ReturnsTwice = IsReturnsTwiceName(name)
				g.addLeave(in.Addr, from, name)
			}
			g.Calls = append(g.Calls, cs)
			if cs.NoReturn {
				g.appendEdge(Edge{From: from, To: Exit, Kind: EdgeNoReturn, Target: cs.Target})
			} else {
				fall(EdgeCallReturn)
			}
		case x86.Jcc:
			branch(in.Target)
			fall(EdgeFallThrough)
		case x86.Jmp:
			branch(in.Target)
		case x86.Ret:
			g.appendEdge(Edge{From: from, To: Exit, Kind: EdgeReturn})
		case x86.Halt:
			g.appendEdge(Edge{From: from, To: Exit, Kind: EdgeHalt})
		case x86.JmpIndirect:
			if jt := bd.tables[in.Addr]; jt != nil {
				jt.Block = from
				seen := make(map[uint64]bool)
				for _, t := range jt.Targets {
					if seen[t] {
						continue
					}
					seen[t] = true
					if b, ok := blockOf(t); ok {
						g.appendEdge(Edge{From: from, To: b, Kind: EdgeJumpTable})
					}
				}
			} else if bd.indTail[in.Addr] {
				g.appendEdge(Edge{From: from, To: Exit, Kind: EdgeTailCall})
			} else if bd.gotos[in.Addr] {
				g.appendEdge(Edge{From: from, To: Exit, Kind: EdgeGoto})
			}
		}
	}
	bd.landingEdges(blockOf)
	for _, e := range bd.f.Entries {
		to, ok := blockOf(e)
		if !ok {
			g.fail(ReasonBadDecode, e, "the entry was not decoded")
			bd.ownEdges()
			g.link()
			return
		}
		g.appendEdge(Edge{From: Entry, To: to, Kind: EdgeEntry})
	}
	bd.resumeEdges(blockOf)
	bd.receiverEdges(blockOf)
	for _, jt := range bd.tables {
		g.Tables = append(g.Tables, *jt)
	}
	sort.Slice(g.Tables, func(i, j int) bool { return g.Tables[i].Jump < g.Tables[j].Jump })
	// A block left without successors can only come from an analysis that
	// stopped early; such graphs are not instrumentable anyway.
	bd.ownEdges()
	g.link()
	if g.Reason == ReasonOK {
		for id := range g.Blocks {
			if len(g.Succs(BlockID(id))) == 0 {
				g.fail(ReasonUnresolvedIndirectJump, g.Blocks[id].Last, "block has no successor")
			}
		}
	}
}

// sigreturnBytes is x86-64 Linux's signal return trampoline, glibc's
// __restore_rt: mov $__NR_rt_sigreturn (15),%rax; syscall. libgcc's
// unwinder (x86_64_fallback_frame_state) and gdb (amd64_linux_sigtramp_p)
// recognise a signal frame by finding exactly these bytes at the return
// address.
var sigreturnBytes = []byte{0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05}

// IsSigreturnTrampoline reports whether code starts with the signal return
// trampoline, which must never be patched (ReasonSigreturn).
func IsSigreturnTrampoline(code []byte) bool {
	return len(code) >= len(sigreturnBytes) && string(code[:len(sigreturnBytes)]) == string(sigreturnBytes)
}

// HoldsSigreturn reports whether the signal return trampoline starts in
// the first five bytes of code, those a jump to a procedure's new copy
// (or to a counting stub) overwrites. glibc starts __restore_rt's FDE one
// byte early, on a nop, so that unwinders looking up the return address
// minus one find it: in a stripped libc.so.6 the procedure that FDE
// bounds starts there.
func HoldsSigreturn(code []byte) bool {
	for off := 0; off < 5 && off < len(code); off++ {
		if IsSigreturnTrampoline(code[off:]) {
			return true
		}
	}
	return false
}
