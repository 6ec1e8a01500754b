package rewriter

import (
	"fmt"
	"math/bits"
	"sort"
	"unsafe"

	"blpp/analysis"
	"blpp/cfg"
	"blpp/cfg/x86"
	"blpp/pathnum"
	"blpp/rewriter/enc"
	"blpp/runtime"
)

// Stubs are the runtime's entry points that instrumentation calls, as
// absolute virtual addresses in the output, and the per-thread block
// offset of the path register.
type Stubs struct {
	Enter, Exit, TailExit, Backedge, SetjmpRet, ForkChild, Leaf, Leave uint64
	// OffR is the %gs offset of the path register; OffCallSite that of
	// the last call site passed.
	OffR, OffCallSite int32
	// FastSlots is the address of the runtime's blpp_fast_slots word
	// (non-zero once the runtime is ready).
	FastSlots uint64
}

// Mode is what the instrumentation records.
type Mode struct {
	// FlowOnly keeps one record per function and thread (no calling
	// context): entries find their record in the thread's flat table.
	FlowOnly bool
	// Metrics says the runtime reads counters at path boundaries: every
	// entry, exit and backedge then goes through the runtime's stubs.
	Metrics bool
	// TSCOnly says the one metric is the time-stamp counter, which the
	// runtime always reads with rdtsc: backedges then read it inline.
	TSCOnly bool
}

// redZone is stepped over before anything is pushed: code being
// instrumented may keep live data below %rsp [SysV x86-64 ABI 3.2.2].
const redZone = 128

// funcPlan is what goes where in one function's instrumented copy,
// decided before any of its code is emitted (plan.go, planloops.go,
// planTables) and only read while emitting: the numbering and its chord
// increments, the call sites, the slot counters, the path register and
// the loop registers, closed-function status, the loop copies, the jump
// table copies, and the labels other code jumps to. Labels are names
// for positions the emitter binds; naming them in the plan lets one
// function's code refer to another's (closed calls, direct calls)
// before that one is emitted.
type funcPlan struct {
	g   *gen
	f   *analysis.Func
	fid int32
	num *pathnum.Numbering
	// entry labels the instrumented copy's entry, blocks each block's
	// copy.
	entry  enc.Label
	blocks []enc.Label
	// prefixEnd, when not 0, is the moved entry [decision 67]: the
	// graph starts there, and the original entry jump goes there, to
	// afterPrefix; entry leads to a copy of the instructions before it.
	prefixEnd   uint64
	afterPrefix enc.Label
	// tabOf gives each indirect jump through a table (by the jump's
	// address) its own copy of the table, loadOf the same copy by the
	// address of each instruction that reads the entry [decision 66].
	tabOf, loadOf map[uint64]int
	// firstSite is the id of the function's first call site; callSite
	// maps its call instructions' addresses to their ids; tailSite holds
	// the ids of its direct tail jumps to instrumented functions, by
	// edge; siteAddrs lists every site's instruction address by id.
	firstSite int32
	callSite  map[uint64]int32
	tailSite  map[cfg.EdgeID]int32
	forkSites map[uint64]bool // calls to fork and its kin (cfg.CallSite.Forks)
	// leaveSite holds the call-site ids of the system calls that may end
	// the process image (cfg.Leave), by address [decision 59].
	leaveSite map[uint64]int32
	siteAddrs []uint64
	// slot is the offset from the thread block of the function's slot
	// counters ({calls, paths...}), 0 if it has none (assignSlot).
	slot int32
	// fnPreg is the general register that holds the function's path
	// register while its code runs, when fnHasPreg (assignPathReg);
	// Thread.R holds it otherwise.
	fnPreg    enc.Reg
	fnHasPreg bool
	// liveIn is each block's live general registers (cfg.RegsLiveIn).
	liveIn []cfg.RegSet
	// Loop path registers [decision 56] (planLoopRegs): loops[i] gives
	// loop region i a register; loopOf maps each block to its region, or
	// -1.
	loops  []loopReg
	loopOf []int
	// closed: the function is closed [decision 57] (planClosed).
	// internal labels a closed function's second entry, the one calls
	// from closed functions use [decision 61]; internalJoin is where it
	// joins the ordinary entry (enterLean binds it).
	closed       bool
	internal     enc.Label
	internalJoin enc.Label
	// keeps: a closed function that returns only by ret, so that its
	// callers' path register comes back as it was; callsOut: a closed
	// function with calls that are not inside calls, which store the
	// register and the call site in its own frame [decision 64].
	keeps, callsOut bool
	// loopCopies are the loops whose later iterations run in a copy
	// that counts at its head [decision 58] (planLoopCopies), by
	// header; copyBack maps each one's backedge (taken in the first
	// copy, and leading to the copy of the header) to it.
	loopCopies map[cfg.BlockID]*loopCopy
	copyBack   map[cfg.EdgeID]*loopCopy
}

// funcGen emits the instrumented copy of one function from its plan: the
// state of the emission, which changes as the code is written.
type funcGen struct {
	*funcPlan
	// tramps holds out-of-line edge code: emitted after the body.
	tramps []tramp
	// cold holds out-of-line slow paths, emitted after the trampolines.
	cold []func()
	// lastSite is the id of the call site emitted last.
	lastSite int32
	// Unwind bookkeeping (unwind.go): the extent [start, end) of the
	// function's new code, which original instruction each stretch of it
	// stands for, and the new entry of each landing pad.
	start, end int
	marks      []unwindMark
	cur        uint64
	lpLabel    map[uint64]enc.Label
	// inLoop is the loop region whose code is being emitted (-1: none);
	// preg and hasPreg describe the path register there: the region's
	// register, or the function's (fnPreg, fnHasPreg) outside regions
	// (setLoop).
	inLoop  int
	preg    enc.Reg
	hasPreg bool
	// entered holds the loop copies whose first copy's backedge has been
	// emitted as a jump to the header's copy; a copy nothing jumps to
	// is a bug.
	entered map[*loopCopy]bool
	// coldErr is the first error of code emitted out of line.
	coldErr error
	// copies records where each original instruction's copies start in
	// the code buffer, for the address map (addrmap.go).
	copies []copyMark
}

// loopCopy is a loop whose body is one cycle of blocks, and its second
// copy [decision 58]: top counts the path that ended at the backedge
// just taken (the counter at counter, from %gs or from the record),
// label holds each block's copy (the header's is where the first copy's
// backedge goes), val the path register's value at each block's start
// in the copy, next the cycle's edge out of each block.
type loopCopy struct {
	header  cfg.BlockID
	back    cfg.EdgeID
	blocks  []cfg.BlockID // in address order: the order of the copy
	next    map[cfg.BlockID]cfg.EdgeID
	val     map[cfg.BlockID]int64
	label   map[cfg.BlockID]enc.Label
	counter int32
	top     enc.Label
	// rec is a register dead at the header when the path counts in the
	// activation's record (no slot counters): top loads the record
	// into it.
	rec    enc.Reg
	record bool
	// partial: the loop has blocks off the copy's cycle.
	partial bool
}

// loopReg is a loop region with a path register of its own [decision 56].
type loopReg struct {
	reg enc.Reg
	// swap: the register holds a value the program still needs, which
	// waits in Thread.R while the loop runs; otherwise it is dead on
	// every way out of the loop and Thread.R keeps a stale path value.
	swap bool
}

type tramp struct {
	label enc.Label
	edge  cfg.EdgeID
	to    enc.Target
}

// gen emits all instrumented functions into one buffer.
type gen struct {
	b     *cfg.Binary
	buf   *enc.Buf
	stubs Stubs
	// entries maps an instrumented function's original entry to the label
	// of its instrumented copy.
	entries map[uint64]enc.Label
	funcs   []*funcGen
	// tables are emitted after all code: their entries are label
	// differences resolved after Finish.
	tables  []newTable
	patches []patch
	pie     bool
	// sites lists (function id, block) per call-site id; id 0 is none.
	sites [][2]uint64
	// siteRet labels the return address of each closed call, by site id
	// [decision 57].
	siteRet map[int32]enc.Label
	// closedAt maps each closed function's original entry to it.
	closedAt map[uint64]*funcPlan
	// trivialAt maps each trivial function's original entry to it.
	trivialAt map[uint64]*funcPlan
	mode      Mode
	// slotsSize is the size of every thread block's slot counters.
	slotsSize uint64
	// layoutSeed, when not 0, pads each function's start (layoutPad).
	layoutSeed uint64
	loopRegs   LoopRegPolicy // Options.LoopRegs
	// dark maps a left-out function's entry to its counting stub
	// (darkentry.go).
	dark map[uint64]enc.Label
}

// layoutPad is how many 16-byte units of padding go before function fid's
// code under layout seed seed: 0 to 15, from a 64-bit mix of the two
// (splitmix64's finaliser), so each seed is one fixed layout.
func layoutPad(seed uint64, fid int32) uint64 {
	x := seed*0x9e3779b97f4a7c15 + uint64(fid)
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return (x ^ x>>31) & 15
}

// SlotsMax bounds the slot counters of a thread block (virtual memory
// reserved per thread; only the pages of functions that run are touched).
const SlotsMax = 16 << 20

// assignSlot gives fg a place in the thread blocks' slot counters when
// the image counts frequencies only and without context, and fg's paths
// fit a dense array: its backedges and exits then count at a fixed offset
// from %gs, without loading a record [decision 42].
func (g *gen) assignSlot(fp *funcPlan) {
	np := fp.num.NumPaths
	if !g.mode.FlowOnly || g.mode.Metrics || np == 0 || np > DenseMax {
		return
	}
	need := 8 * (1 + np)
	if g.slotsSize+need > SlotsMax {
		return
	}
	fp.slot = int32(runtime.SlotsOffset + g.slotsSize)
	g.slotsSize += need
}

// pathRegs are the registers a path register may live in, in order of
// preference: %r11 and %r10 in any function (neither passes arguments
// nor results in the SysV ABI, and every call may clobber both, so no
// caller or callee expects them kept), then, in a function that calls
// nothing and jumps to no other function, argument registers no
// callee could be reading [SysV x86-64 ABI 3.2.3].
var pathRegs = []struct {
	reg      enc.Reg
	leafOnly bool
}{{enc.R11, false}, {enc.R10, false}, {enc.R9, true}, {enc.R8, true}, {enc.RSI, true}, {enc.RDI, true}}

// assignPathReg keeps fg's path register in a general register its own
// instructions never name (cfg.Graph.Named), in images that count
// frequencies only [decision 44]: a chord increment is then one lea, and
// a function with slot counters counts its backedges without touching
// Thread.R (regBackedge; the others spill it there first). The register is spilled to Thread.R before
// every call and stub (the callee's entry saves it, the runtime reads
// it) and reloaded after; the entry saves its value in the shadow frame
// and every exit puts it back, so callers that assume more than the ABI
// (TLS descriptor functions) lose nothing.
func (g *gen) assignPathReg(fp *funcPlan) {
	if g.mode.Metrics || g.loopRegs != LoopRegsDefault {
		return // every path end goes through the stubs anyway
	}
	gr := fp.f.Graph
	leaf := len(gr.Calls) == 0
	for _, ed := range gr.Edges {
		if ed.Kind == cfg.EdgeTailCall || ed.Kind == cfg.EdgeNoReturn {
			leaf = false
		}
	}
	for _, c := range pathRegs {
		if (leaf || !c.leafOnly) && !gr.Named.Has(int(c.reg)) {
			fp.fnPreg, fp.fnHasPreg = c.reg, true
			return
		}
	}
}

// planClosed marks the closed functions [decisions 57, 64]: flow-only
// functions with slot counters and a path register, framed (not
// trivial), with no landing pad and no system call or call that may end
// the process image, that leave by returning, by a tail jump or by a
// call that does not return, and call nothing that returns twice or
// forks. Their calls to closed functions that keep the register
// (insideCall) store nothing, those to one-path functions (leafCall)
// store the site and the register in the thread's block, and every
// other call stores them in the caller's own frame (outsideCallStore).
func (g *gen) planClosed() {
	if !g.mode.FlowOnly || g.mode.Metrics {
		return
	}
	g.closedAt = map[uint64]*funcPlan{}
	g.trivialAt = map[uint64]*funcPlan{}
	for _, fg := range g.funcs {
		if fg.trivial() {
			g.trivialAt[fg.f.Func.Addr] = fg.funcPlan
		}
	}
	for _, fg := range g.funcs {
		if fg.closedCandidate() {
			fg.closed, fg.keeps = true, fg.keepsRegister()
			g.closedAt[fg.f.Func.Addr] = fg.funcPlan
			fg.internal, fg.internalJoin = g.buf.NewLabel(), g.buf.NewLabel()
		}
	}
	for _, fg := range g.funcs {
		if !fg.closed {
			continue
		}
		for _, c := range fg.f.Graph.Calls {
			if !fg.insideCall(c.Target, c.NoReturn) && !fg.leafCall(c.Target, c.NoReturn) {
				fg.callsOut = true
			}
		}
	}
}

// closedField is runtime.Func.Closed for fg.
func (fp *funcPlan) closedField() uint64 {
	switch {
	case fp.callsOut:
		return 2
	case fp.closed:
		return 1
	}
	return 0
}

// closedCandidate reports whether fg may be closed.
func (fp *funcPlan) closedCandidate() bool {
	gr := fp.f.Graph
	// A closed function's internal entry would skip a moved entry's
	// prefix [decision 67].
	if !fp.lean() || !fp.fnHasPreg || fp.trivial() || len(gr.EH) > 0 || len(gr.Leaves) > 0 || fp.prefixEnd != 0 {
		return false
	}
	for _, ed := range gr.Edges {
		if ed.To == cfg.Exit && ed.Kind != cfg.EdgeReturn && ed.Kind != cfg.EdgeTailCall && ed.Kind != cfg.EdgeNoReturn {
			return false
		}
	}
	for _, c := range gr.Calls {
		if c.ReturnsTwice || c.Forks {
			return false
		}
	}
	return true
}

// keepsRegister reports whether a closed function gives its callers
// their path register back: it leaves only by ret (its exit restores the
// entry value), not by a tail jump, after which the code jumped to may
// overwrite the register. A call that does not return ends the
// activation where it is.
func (fp *funcPlan) keepsRegister() bool {
	for _, ed := range fp.f.Graph.Edges {
		if ed.Kind == cfg.EdgeTailCall {
			return false
		}
	}
	return true
}

// insideCall reports whether a closed function's call to target is an
// inside call [decision 57]: a direct call that returns, to a closed
// function that keeps its register and uses the same one. The callee's
// frame then holds the register's value at the call and the return
// address, which names the call site.
func (fp *funcPlan) insideCall(target uint64, noReturn bool) bool {
	callee, ok := fp.g.closedAt[target]
	return ok && target != 0 && !noReturn && callee.keeps && callee.fnPreg == fp.fnPreg
}

// leafCall reports whether a closed function's call to target is a leaf
// call [decision 64]: a direct call that returns, to a trivial function
// (decision 55: no frame, no calls, leaves by ret) that never names the
// caller's path register, which thus survives it. No other instrumented
// code runs until it returns (but a signal handler's), so the call site
// and register wait in two words of the thread's block for the runtime.
func (fp *funcPlan) leafCall(target uint64, noReturn bool) bool {
	callee, ok := fp.g.trivialAt[target]
	return ok && target != 0 && !noReturn && !callee.f.Graph.Named.Has(int(fp.fnPreg))
}

// outsideCallStore emits, before an outside call of a closed function
// [decision 64], the stores of its path register and the call site into
// its own frame (ext_r, ext_site), through %rcx, which waits in the red
// zone meanwhile: nothing below %rsp is live at a call, whose return
// address and callee write there next, and a signal frame skips the red
// zone. Should the activation have no frame (the shadow stack is full),
// the stores go to the newest frame, whose ext words only closed frames
// read, and outsideCallLoad reads the register back from there all the
// same; the scratch block has a frame's room below its empty stack.
func (fg *funcGen) outsideCallStore(site int32) {
	b := fg.g.buf
	b.MovMemFromReg(enc.RSP, -8, enc.RCX)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	b.MovMemFromReg(enc.RCX, int32(frExtR), fg.preg)
	b.MovMemImm32(enc.RCX, int32(frExtSite), site)
	b.MovRegFromMem(enc.RCX, enc.RSP, -8)
}

// outsideCallLoad emits, after an outside call returns, the load of the
// path register from the frame, and clears the frame's call site so that
// the runtime does not take the activation for one still in that call.
// The flags are left alone (a call's return edge may carry live flags
// out of hand-written code).
func (fg *funcGen) outsideCallLoad() {
	b, x := fg.g.buf, fg.preg
	b.MovRegFromGS(x, runtime.OffSP)
	b.MovMemImm32(x, int32(frExtSite), 0)
	b.MovRegFromMem(x, x, int32(frExtR))
}

// spill stores the path register to Thread.R, where the runtime and
// callees expect it; reload takes it back. In a loop whose register
// holds a program value in Thread.R, and in a closed function (whose
// activations must leave Thread.R as they found it, decision 57), both
// swap the two.
func (fg *funcGen) spill() {
	switch {
	case fg.inLoop >= 0 && fg.loops[fg.inLoop].swap, fg.closed:
		fg.g.buf.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	case fg.hasPreg:
		fg.g.buf.MovGSFromReg(fg.g.stubs.OffR, fg.preg)
	}
}

func (fg *funcGen) reload() {
	switch {
	case fg.inLoop >= 0 && fg.loops[fg.inLoop].swap, fg.closed:
		fg.g.buf.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	case fg.hasPreg:
		fg.g.buf.MovRegFromGS(fg.preg, fg.g.stubs.OffR)
	}
}

// addCold queues an out-of-line piece of code, to be emitted after the
// trampolines in the loop region that is current now.
func (fg *funcGen) addCold(f func()) {
	l := fg.inLoop
	fg.cold = append(fg.cold, func() {
		saved := fg.inLoop
		fg.setLoop(l)
		f()
		fg.setLoop(saved)
	})
}

// setLoop makes loop region l (-1: none) the current one: its register
// becomes the path register.
func (fg *funcGen) setLoop(l int) {
	fg.inLoop = l
	fg.preg, fg.hasPreg = fg.regionReg(l)
}

// regionReg is the path register in loop region l (-1: outside every
// region): the region's register, else the function's, if it has one.
func (fp *funcPlan) regionReg(l int) (enc.Reg, bool) {
	if l < 0 {
		return fp.fnPreg, fp.fnHasPreg
	}
	return fp.loops[l].reg, true
}

// loopRegs are the registers a loop region may take, in order of
// preference. %rax is left out because the flags-saving sequences use it;
// %rsp cannot be an index.
var loopRegs = []enc.Reg{enc.R11, enc.R10, enc.R9, enc.R8, enc.RSI, enc.RDI, enc.RDX, enc.RCX,
	enc.RBX, enc.RBP, enc.R12, enc.R13, enc.R14, enc.R15}

// planLoopRegs gives loops of a function whose path register lives in
// Thread.R, in a frequency-only image, a general register of their own
// [decision 56]: inside the loop the path register is that register, so
// chord increments are one lea and backedges count in the register
// (regBackedge, recordBackedgeIn) or spill it around the memory form, and
// Thread.R is touched only on the edges into and out of the loop. A loop
// qualifies when it is natural, does not hold the function's entry, and
// its blocks call nothing, leave the function nowhere, jump through no
// table, and are entered from outside by plain branches and fall-throughs
// only; its register is one no instruction of the loop names. Outer loops
// are tried first (fewer crossings); a loop that does not qualify leaves
// its inner loops to be tried.
func (fp *funcPlan) planLoopRegs() {
	if fp.fnHasPreg || fp.liveIn == nil || fp.g.mode.Metrics {
		return
	}
	gr := fp.f.Graph
	fp.loopOf = make([]int, len(gr.Blocks))
	for i := range fp.loopOf {
		fp.loopOf[i] = -1
	}
	callBlock := make([]bool, len(gr.Blocks))
	for _, c := range gr.Calls {
		callBlock[c.Block] = true
	}
	taken := make([]bool, len(gr.Loops))
	for i, l := range gr.Loops {
		if l.Parent >= 0 && taken[l.Parent] {
			taken[i] = true // inside a region already
			continue
		}
		if l.Irreducible {
			continue
		}
		in := make(map[cfg.BlockID]bool, len(l.Blocks))
		for _, id := range l.Blocks {
			in[id] = true
		}
		ok := true
		var named, live cfg.RegSet // live: on some way out of the loop
		for _, id := range l.Blocks {
			blk := &gr.Blocks[id]
			named |= blk.Named
			if id == cfg.Entry || callBlock[id] {
				ok = false
			}
			for _, e := range blk.Succs {
				ed := &gr.Edges[e]
				if ed.Kind != cfg.EdgeFallThrough && ed.Kind != cfg.EdgeBranch || ed.To < 0 {
					ok = false
				} else if !in[ed.To] {
					live |= fp.liveIn[ed.To]
				}
			}
			for _, e := range blk.Preds {
				ed := &gr.Edges[e]
				if !in[ed.From] && ed.Kind != cfg.EdgeFallThrough && ed.Kind != cfg.EdgeBranch {
					ok = false
				}
			}
		}
		if !ok {
			continue
		}
		var pick loopReg
		found := false
		for _, r := range loopRegs {
			if named.Has(int(r)) || !fp.loopBackedgesIn(l.Blocks, in, r) {
				continue
			}
			if !live.Has(int(r)) && fp.g.loopRegs != LoopRegsSwap {
				pick, found = loopReg{reg: r}, true
				break
			}
			if !found {
				pick, found = loopReg{reg: r, swap: true}, true
			}
		}
		if !found {
			continue
		}
		taken[i] = true
		for _, id := range l.Blocks {
			fp.loopOf[id] = len(fp.loops)
		}
		fp.loops = append(fp.loops, pick)
	}
}

// loopBackedgesIn reports whether every path-ending edge inside the loop
// (blocks, in) can count with loop register r and without spilling it:
// always in a slot function (regBackedge); in a record function when the
// edge's flags are dead and enough other registers are (recordBackedgeIn),
// since the spilling form would run a locked xchg twice per iteration of
// a swapping loop.
func (fp *funcPlan) loopBackedgesIn(blocks []cfg.BlockID, in map[cfg.BlockID]bool, r enc.Reg) bool {
	if fp.slot != 0 {
		return true
	}
	gr := fp.f.Graph
	need := 1
	if fp.hashInline() {
		need++
	}
	for _, id := range blocks {
		for _, e := range gr.Blocks[id].Succs {
			ed := &gr.Edges[e]
			if fp.num.Kind[e] == pathnum.DAGEdge || ed.To < 0 || !in[ed.To] {
				continue
			}
			if ed.FlagsLive {
				return false
			}
			dead := ^fp.liveIn[ed.To] &^ (1<<enc.RSP | 1<<r)
			if bits.OnesCount16(uint16(dead)) < need {
				return false
			}
		}
	}
	return true
}

// loopAt is the loop region of block id, -1 for none or Exit.
func (fp *funcPlan) loopAt(id cfg.BlockID) int {
	if id < 0 || fp.loopOf == nil {
		return -1
	}
	return fp.loopOf[id]
}

// crossesLoop reports whether edge e enters or leaves a loop region.
func (fp *funcPlan) crossesLoop(e cfg.EdgeID) bool {
	ed := fp.f.Graph.Edges[e]
	return fp.loopAt(ed.From) != fp.loopAt(ed.To)
}

// enterLoop moves the path register from Thread.R into the region's
// register, whose value goes to Thread.R when the program still needs
// it; leaveLoop undoes that. The call site goes to 0 on the way in: the
// loop calls nothing, and a runtime that finds this activation stopped
// inside it (a signal handler's longjmp) must not pair the value in
// Thread.R with the block of an earlier call.
func (fg *funcGen) enterLoop() {
	b := fg.g.buf
	if fg.loops[fg.inLoop].swap {
		b.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	} else {
		b.MovRegFromGS(fg.preg, fg.g.stubs.OffR)
	}
	b.MovGS64Imm(runtime.OffCallSite, 0)
}

func (fg *funcGen) leaveLoop() {
	b := fg.g.buf
	if fg.loops[fg.inLoop].swap {
		b.XchgGSReg(fg.g.stubs.OffR, fg.preg)
	} else {
		b.MovGSFromReg(fg.g.stubs.OffR, fg.preg)
	}
}

// slots reports whether the image has slot counters (then every entry
// and exit keeps Thread.Cur).
func (g *gen) slots() bool { return g.slotsSize > 0 }

// lean reports whether the function's inline entry and exit leave
// Thread.record alone: a flow-only function with slot counters, whose
// running record Thread.cur names [decision 51].
func (fp *funcPlan) lean() bool { return fp.g.mode.FlowOnly && fp.slot != 0 }

// trivial reports whether fg is a lean function of one path that calls
// nothing and leaves only by returning: its whole instrumentation is an
// inline entry that counts its call and its path (enterTrivial), with no
// shadow frame and nothing at its exit [decision 55].
func (fp *funcPlan) trivial() bool {
	gr := fp.f.Graph
	if !fp.lean() || fp.num.NumPaths != 1 || len(gr.Calls) != 0 || fp.hasSyscallLeave() {
		return false
	}
	for _, ed := range gr.Edges {
		if ed.To == cfg.Exit && ed.Kind != cfg.EdgeReturn || ed.Kind == cfg.EdgeTailCall || ed.Kind == cfg.EdgeNoReturn {
			return false
		}
	}
	return true
}

// curValue is what Thread.Cur holds while fg's activation runs.
func (fp *funcPlan) curValue() int32 {
	if fp.slot == 0 {
		return 0
	}
	return fp.fid + 1
}

// site allocates the id of a call site ending block blk of function fid,
// whose instruction is at addr. A function's sites get consecutive ids:
// its calls in address order (planSites), then its direct tail jumps.
func (fp *funcPlan) site(blk cfg.BlockID, addr uint64) int32 {
	g := fp.g
	if len(g.sites) == 0 {
		g.sites = append(g.sites, [2]uint64{})
	}
	g.sites = append(g.sites, [2]uint64{uint64(fp.fid), uint64(blk)})
	fp.siteAddrs = append(fp.siteAddrs, addr)
	return int32(len(g.sites) - 1)
}

// planSites gives the function's calls their ids, in address order.
func (fp *funcPlan) planSites() {
	if len(fp.g.sites) == 0 {
		fp.g.sites = append(fp.g.sites, [2]uint64{})
	}
	fp.firstSite = int32(len(fp.g.sites))
	fp.callSite = map[uint64]int32{}
	fp.tailSite = map[cfg.EdgeID]int32{}
	fp.forkSites = map[uint64]bool{}
	fp.siteAddrs = nil
	calls := append([]cfg.CallSite(nil), fp.f.Graph.Calls...)
	sort.Slice(calls, func(i, j int) bool { return calls[i].Addr < calls[j].Addr })
	for _, c := range calls {
		fp.callSite[c.Addr] = fp.site(c.Block, c.Addr)
		if c.Forks {
			fp.forkSites[c.Addr] = true
		}
	}
	// Then the system calls that may end the image: the runtime finds
	// where the activation stopped by their site [decision 59].
	fp.leaveSite = map[uint64]int32{}
	var sys []uint64
	for a, l := range fp.f.Graph.Leaves {
		if l.Syscall {
			sys = append(sys, a)
		}
	}
	sort.Slice(sys, func(i, j int) bool { return sys[i] < sys[j] })
	for _, a := range sys {
		fp.leaveSite[a] = fp.site(fp.f.Graph.Leaves[a].Block, a)
	}
	// Then, block by block, the direct tail jumps to instrumented
	// functions: call sites too, the callee's activation is made a child
	// of this one [DESIGN 7]. An indirect jump is not one (its target
	// is only known at run time). A block whose last instruction does
	// not decode gets none; the emitter fails the function there.
	gr := fp.f.Graph
	for id := range gr.Blocks {
		blk := &gr.Blocks[id]
		code := fp.g.b.Code(blk.Last)
		if blk.Last < blk.Addr || blk.Last >= blk.End || uint64(len(code)) < blk.End-blk.Last {
			continue
		}
		in, err := x86.Decode(code[:blk.End-blk.Last], blk.Last)
		if err != nil || in.Kind == x86.JmpIndirect {
			continue
		}
		for _, e := range blk.Succs {
			ed := gr.Edges[e]
			if ed.Kind != cfg.EdgeTailCall || ed.Target == 0 {
				continue
			}
			if _, ok := fp.g.entries[ed.Target]; ok {
				fp.tailSite[e] = fp.site(cfg.BlockID(id), in.Addr)
			}
		}
	}
}

// planBody plans what the function's body needs beyond its slot and
// register (assignSlot, assignPathReg, planClosed): call sites, register
// liveness, loop registers and loop copies. It runs for every function
// in order before any is emitted; call-site ids follow that order.
func (fp *funcPlan) planBody() {
	fp.planSites()
	if !fp.g.mode.Metrics {
		fp.liveIn = fp.f.Graph.RegsLiveIn()
	}
	fp.planLoopRegs()
	fp.planLoopCopies()
}

// hasSyscallLeave reports whether the function makes a system call that
// may end the process image [decision 59].
func (fp *funcPlan) hasSyscallLeave() bool {
	for _, l := range fp.f.Graph.Leaves {
		if l.Syscall {
			return true
		}
	}
	return false
}

// callLeave returns how the call or jump at addr to target ends the
// process image, 0 if it does not or if target is instrumented (then
// its own system call is hooked, after its code has run and counted).
func (fp *funcPlan) callLeave(addr, target uint64) cfg.LeaveKind {
	l, ok := fp.f.Graph.Leaves[addr]
	if !ok || l.Syscall {
		return 0
	}
	if _, inst := fp.g.entries[target]; inst {
		return 0
	}
	return l.Kind
}

// leaveHook emits the call that has the runtime write the profile because
// the process image may end next without its exit hooks (_exit, an exec:
// blpp_rt_leave) [decision 59]. Every register and the flags are kept,
// and the red zone is stepped over.
func (fg *funcGen) leaveHook(k cfg.LeaveKind) {
	b := fg.g.buf
	b.LeaRSP(-redZone)
	pushImm32(b, int32(k))
	b.CallRel32(enc.AbsTarget(fg.g.stubs.Leave))
	b.LeaRSP(redZone + 8)
}

// syscallLeave emits, before the system call in at block id when it may
// end the process image, what a call there would store (its site and
// the path register, for the runtime to find where the activation
// stopped) and the hook [decision 59].
func (fg *funcGen) syscallLeave(in *x86.Inst) {
	l, ok := fg.f.Graph.Leaves[in.Addr]
	if !ok || !l.Syscall {
		return
	}
	fg.storeCallSite(fg.leaveSite[in.Addr])
	fg.spill()
	fg.leaveHook(l.Kind)
	fg.reload()
}

// nsites is the number of call sites the function has so far.
func (fp *funcPlan) nsites() int { return len(fp.siteAddrs) }

// patch is the 4-byte displacement of a load from a jump table's copy,
// filled after Finish, when the copy's address is known: table copy
// tab-1's address plus add, which must fit in a sign-extended 32 bits.
// (Fields that refer to labels or to fixed addresses are the Buf's own.)
type patch struct {
	at  int
	tab int
	add int64
}

// newTable is the copy of a jump table one indirect jump reads.
type newTable struct {
	label    enc.Label
	jt       *cfg.JumpTable
	relative bool
	// base is what relative entries are counted from: the original
	// table base, which the base register still holds (only the loads
	// move to the copy).
	base uint64
	// biased: an absolute table in a PIE, whose 8-byte entries are
	// counted from base too, the address the loads' base register holds
	// (decision 72: no relocations); biasOf has its loads.
	biased  bool
	biasOf  map[uint64]biasedLoad
	targets []enc.Label
	done    bool
}

// target is where control for original address a goes from instrumented
// code: the instrumented copy of a function entered there, else a itself.
func (g *gen) target(a uint64) enc.Target {
	if l, ok := g.entries[a]; ok {
		return enc.LabelTarget(l)
	}
	if t, ok := g.darkTarget(a); ok {
		return t // a left-out function's counting stub (darkentry.go)
	}
	return enc.AbsTarget(a)
}

// needsCode reports whether edge e carries instrumentation.
func (fg *funcGen) needsCode(e cfg.EdgeID) bool {
	if fg.num.Kind[e] != pathnum.DAGEdge || fg.crossesLoop(e) {
		return true
	}
	return fg.num.Inc[e] != 0 || fg.f.Graph.Edges[e].To == cfg.Exit
}

// edgeCode emits the instrumentation of edge e [Ball-Larus 96 §4]:
// a backedge (or broken edge) ends the path (count[r+ExitInc]++) and starts
// the next (r = EntryInc); a DAG edge adds its chord increment; an edge to
// EXIT then ends the path (count[r]++) and pops the activation. An edge
// out of a loop region first puts the path register back in Thread.R,
// one into a region takes it out last [decision 56].
func (fg *funcGen) edgeCode(e cfg.EdgeID) {
	ed, saved := fg.f.Graph.Edges[e], fg.inLoop
	from, to := fg.loopAt(ed.From), fg.loopAt(ed.To)
	if from == to {
		fg.setLoop(from)
		fg.edgeInst(e)
	} else {
		if from >= 0 {
			fg.setLoop(from)
			fg.leaveLoop()
		}
		fg.setLoop(-1)
		fg.edgeInst(e)
		if to >= 0 {
			fg.setLoop(to)
			fg.enterLoop()
		}
	}
	fg.setLoop(saved)
	if ed.Kind == cfg.EdgeTailCall {
		// The activation has ended (its path counted, its frame
		// popped): a tail jump to _exit or an exec is hooked as a
		// call from its caller would be [decision 59].
		if k := fg.callLeave(fg.f.Graph.Blocks[ed.From].Last, ed.Target); k != 0 {
			fg.leaveHook(k)
		}
	}
}

// edgeInst is edgeCode's instrumentation of edge e, with the path
// register where the current loop region keeps it.
func (fg *funcGen) edgeInst(e cfg.EdgeID) {
	b, n, ed := fg.g.buf, fg.num, fg.f.Graph.Edges[e]
	if n.Kind[e] != pathnum.DAGEdge {
		if fg.f.Graph.BreaksPath(e) {
			// After setjmp: the runtime tells a first return from one
			// through longjmp by the call site.
			fg.spill()
			b.LeaRSP(-redZone)
			pushImm32(b, fg.lastSite)
			pushImm32(b, int32(n.EntryInc[e]))
			pushImm32(b, int32(n.ExitInc[e]))
			pushImm32(b, fg.fid)
			b.CallRel32(enc.AbsTarget(fg.g.stubs.SetjmpRet))
			b.LeaRSP(redZone + 32)
			fg.reload()
			return
		}
		fg.backedge(e, ed.FlagsLive)
		return
	}
	inc := n.Inc[e]
	if faultInjection && inc != 0 && fault("chord") {
		inc++
	}
	if inc != 0 && fg.hasPreg {
		b.LeaRegSelf(fg.preg, int32(inc)) // no flags written
	} else if inc != 0 {
		if ed.FlagsLive {
			b.LeaRSP(-redZone)
			b.Push(enc.RAX)
			saveFlags(b)
			b.AddGS64Imm(fg.g.stubs.OffR, int32(inc))
			restoreFlags(b)
			b.Pop(enc.RAX)
			b.LeaRSP(redZone)
		} else {
			b.AddGS64Imm(fg.g.stubs.OffR, int32(inc))
		}
	}
	if ed.To == cfg.Exit {
		if site, ok := fg.tailSite[e]; ok && !fg.g.mode.FlowOnly {
			if fg.g.mode.Metrics {
				fg.tailExitStub(site)
			} else {
				fg.exitInline(site)
			}
			return
		}
		if ed.Kind == cfg.EdgeReturn || ed.Kind == cfg.EdgeTailCall {
			fg.exitInline(0)
			return
		}
		fg.exitStub()
	}
}

// enterInline starts an activation without calling the runtime: it finds
// the callee's record (context mode: the head of the caller's node list
// for the call site in %gs:CallSite; flow-only: the thread's flat table),
// counts the call, pushes the shadow frame {entry %rsp, the caller's r,
// fid, the caller's record, the caller's call site}, and starts a path
// (r = 0, no call site yet) [DESIGN 7]. Anything unusual takes the stub:
// a thread without its own block yet (%gs still points at its creator's:
// the owner is another thread pointer), a busy or overflowing shadow
// stack, a newest frame that is not a caller's (left by a longjmp: it
// must be unwound first), a pending tail call, a context seen for the
// first time, a record a fork child has not remade. The frame is reserved
// before it is filled, so a signal handler that runs instrumented code in
// between pushes above it. Flags are dead at a function's entry
// [SysV x86-64 ABI 3.2.1].
func (fg *funcGen) enterInline() {
	g, b := fg.g, fg.g.buf
	if g.mode.Metrics && !g.mode.TSCOnly {
		b.LeaRSP(-redZone)
		pushImm32(b, fg.fid)
		b.CallRel32(enc.AbsTarget(g.stubs.Enter))
		b.LeaRSP(redZone + 8)
		return
	}
	if fg.trivial() {
		fg.enterTrivial()
		return
	}
	if fg.lean() && fg.hasPreg {
		fg.enterLean()
		return
	}
	slow, done := b.NewLabel(), b.NewLabel()
	// A lean entry needs no record, so no %rdx [decision 51].
	lean := fg.lean()
	regs := []enc.Reg{enc.RAX, enc.RCX, enc.RDX}
	if lean {
		regs = regs[:2]
	}
	saved := int32(8 * len(regs))
	b.LeaRSP(-redZone)
	for _, r := range regs {
		b.Push(r)
	}
	// Before the runtime is ready %gs may not point at a block at all:
	// code a library constructor calls back into runs before the entry
	// point. The ready word is 0 until then, so test it before any %gs
	// access.
	fg.loadSlots(enc.RAX, slow)
	cmpOwnerRCX(b)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	gsBusyOrOverflow(b, enc.RCX, slow)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	first := b.NewLabel()
	b.CmpRegGS(enc.RCX, runtime.OffSPBase)
	b.JccRel32(enc.CondE, enc.LabelTarget(first))
	b.LeaRegDisp32(enc.RAX, enc.RSP, redZone+saved) // lea entry rsp, %rax
	b.CmpMemRegD8(enc.RCX, frRSP, enc.RAX)
	b.JccRel32(enc.CondBE, enc.LabelTarget(slow))
	b.Bind(first)
	b.LeaRegD8(enc.RAX, enc.RCX, runtime.FrameSize)
	b.CmpRegGS(enc.RAX, runtime.OffSPLimit)
	b.JccRel32(enc.CondA, enc.LabelTarget(slow))
	// The record, into %rdx; a lean entry only checks that it exists.
	if lean {
		// The record exists once its calls word (the first slot) is
		// not 0: the stub's first entry made it and counted there.
		b.CmpGS64Imm(fg.slot, 0)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	} else if g.mode.FlowOnly {
		b.MovRegFromGS(enc.RAX, runtime.OffFlat)
		b.TestRegReg(enc.RAX)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
		b.MovRegFromMemD32(enc.RDX, enc.RAX, 8*fg.fid)
		b.TestRegReg(enc.RDX)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
		// A linked record always has its counters (rec_new).
	} else {
		// The parent record into %rax and the call site into %rdx:
		// the caller's, or after a direct tail jump the jumping
		// activation's (TailRec, TailSite), when this entry is at the
		// jump's %rsp (TailRSP) [decision 31]. TailRec is cleared once
		// the entry commits; the stub handles every other case.
		tail, parent := b.NewLabel(), b.NewLabel()
		b.MovRegFromGS(enc.RAX, runtime.OffTailRec)
		b.TestRegReg(enc.RAX)
		b.JccRel32(enc.CondNE, enc.LabelTarget(tail))
		b.MovRegFromGS(enc.RAX, runtime.OffRecord)
		b.MovRegFromGS(enc.RDX, runtime.OffCallSite)
		b.Bind(parent)
		b.TestRegReg(enc.RAX)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
		at := fg.cur
		fg.addCold(func() {
			b.Bind(tail)
			fg.mark(at, false)
			b.SetSP(-redZone - saved)
			b.LeaRegDisp32(enc.RDX, enc.RSP, redZone+saved) // lea entry rsp, %rdx
			b.CmpRegGS(enc.RDX, offTailRSP)
			b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
			b.MovRegFromGS(enc.RDX, offTailSite)
			b.JmpRel32(enc.LabelTarget(parent))
		})
		b.SubRegMemD8(enc.RDX, enc.RAX, runtime.RecordFirstSiteOff)
		b.CmpRegMemD8(enc.RDX, enc.RAX, runtime.RecordNSitesOff)
		b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
		b.MovRegFromMemD8(enc.RAX, enc.RAX, runtime.RecordKidsOff)
		b.LeaRegIdxD8(enc.RDX, enc.RAX, enc.RDX, 8, 8) // the list's head word
		b.MovRegFromMem(enc.RAX, enc.RDX, 0)           // its first node
		b.TestRegReg(enc.RAX)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
		b.CmpMemImm32D8(enc.RAX, runtime.NodeFuncOff, fg.fid)
		found := b.NewLabel()
		b.JccRel32(enc.CondNE, enc.LabelTarget(fg.callCacheLookup(found, slow, saved)))
		b.Bind(found)
		// A node is linked only with its record, and a record only
		// with its counters (child, rec_new); in a fork child the
		// parent record is wiped too (nsites 0 took the slow path).
		b.MovRegFromMemD8(enc.RDX, enc.RAX, runtime.NodeRecOff)
		b.IncMemD8(enc.RAX, runtime.NodeCountOff)
	}
	if fg.slot != 0 {
		b.AddGS64Imm(fg.slot, 1) // the record's calls, in the slots (flags are dead here)
	} else {
		b.IncMemD32(enc.RDX, countsOff) // the record's calls
	}
	// Reserve the frame at %rcx, then fill it.
	b.LeaRegD8(enc.RAX, enc.RCX, runtime.FrameSize)
	b.MovGSFromReg(runtime.OffSP, enc.RAX)
	b.LeaRegDisp32(enc.RAX, enc.RSP, redZone+saved)
	b.MovMemFromRegD8(enc.RCX, frRSP+runtime.FrameSize, enc.RAX) // frame.rsp
	b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	b.MovMemFromRegD8(enc.RCX, frSavedR+runtime.FrameSize, enc.RAX) // frame.saved_r
	b.MovMemImm32D8(enc.RCX, frFunc+runtime.FrameSize, fg.fid)      // frame.func
	if !lean {
		b.MovRegFromGS(enc.RAX, runtime.OffRecord)
		b.MovMemFromRegD8(enc.RCX, frRecord+runtime.FrameSize, enc.RAX) // frame.record
	}
	b.MovRegFromGS(enc.RAX, runtime.OffCallSite)
	b.MovMemFromRegD8(enc.RCX, frSite+runtime.FrameSize, enc.RAX) // frame.site
	if g.slots() {
		b.MovRegFromGS(enc.RAX, runtime.OffCur)
		b.MovMemFromRegD8(enc.RCX, frSavedCur+runtime.FrameSize, enc.RAX) // frame.saved_cur
		b.MovGS64Imm(runtime.OffCur, fg.curValue())
	}
	if fg.hasPreg {
		b.MovMemFromReg(enc.RCX, int32(frSavedReg)+runtime.FrameSize, fg.preg) // frame.saved_reg
	}
	if !fg.hasPreg {
		b.MovGS64Imm(g.stubs.OffR, 0) // else the register is the path register (set below)
	}
	b.MovGS64Imm(runtime.OffCallSite, 0)
	if !lean {
		b.MovGSFromReg(runtime.OffRecord, enc.RDX)
	}
	if !g.mode.FlowOnly {
		b.MovGS64Imm(runtime.OffTailRec, 0) // consumed (or stale: see blpp_rt_enter)
	}
	if g.mode.TSCOnly {
		// The caller's path so far, macc + (now - mstart), waits in the
		// frame (saved_acc[0]) for the exit; the callee starts from
		// nothing at now, as blpp_rt_enter does [DESIGN 8].
		fg.tscProgress()
		b.MovMemFromRegD8(enc.RCX, frSavedAcc+runtime.FrameSize, enc.RDX) // frame.saved_acc[0]
		b.MovGSFromReg(offMStart, enc.RAX)
		b.MovGS64Imm(offMAcc, 0)
	}
	for i := len(regs) - 1; i >= 0; i-- {
		b.Pop(regs[i])
	}
	b.LeaRSP(redZone)
	b.Bind(done)
	if fg.hasPreg {
		// The stub saved the register in the frame too (Func.PathReg).
		b.MovImm32(fg.preg, 0) // mov, not xor: flags untouched
	}
	fg.coldStub(slow, done, regs, false, g.stubs.Enter, fg.fid)
}

// enterLean is the inline entry of a lean function with a path register
// [decisions 51, 54]: the checks and the frame of enterInline with one
// scratch register instead of two. The path register is saved in the
// frame first and then serves as the second one, since the entry sets it
// to 0 anyway. Nothing below %rsp is live at a function's entry (the
// return address was just pushed over the caller's red zone), so %rcx is
// pushed without stepping over a red zone, and the shadow frame's %rsp
// test briefly raises %rsp to its entry value (lea keeps the flags),
// which leaves the saved %rcx inside the red zone a signal frame skips.
// Every slow path leaves before anything is changed, so %rcx can be
// scratch in the checks. A closed function [decision 57] saves its
// return address in the frame's site instead of Thread's state.
func (fg *funcGen) enterLean() {
	g, b, x := fg.g, fg.g.buf, fg.preg
	slow, done, first := b.NewLabel(), b.NewLabel(), b.NewLabel()
	if fg.closed {
		first = fg.internalJoin // where the internal entry joins too
	}
	b.Push(enc.RCX)
	fg.g.testReady(slow)
	cmpOwnerRCX(b)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	gsBusyOrOverflow(b, enc.RCX, slow)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	// The newest frame must be a caller's: its %rsp above this entry's.
	// Below an empty shadow stack lies a sentinel frame whose %rsp is
	// above every entry's [decision 65].
	b.LeaRSP(8)
	b.CmpRegMem(enc.RSP, enc.RCX, int32(frRSP))
	b.LeaRSP(-8)
	b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	b.Bind(first)
	b.AddRegImm32(enc.RCX, runtime.FrameSize) // flags are dead at an entry
	b.CmpRegGS(enc.RCX, runtime.OffSPLimit)
	b.JccRel32(enc.CondA, enc.LabelTarget(slow))
	b.CmpGS64Imm(fg.slot, 0) // the record exists [decision 51]
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.AddGS64Imm(fg.slot, 1)
	// Reserve the frame (%rcx is its end), then fill it.
	b.MovGSFromReg(runtime.OffSP, enc.RCX)
	b.MovMemFromReg(enc.RCX, int32(frSavedReg), x)
	b.LeaRegDisp32(x, enc.RSP, 8)
	b.MovMemFromReg(enc.RCX, int32(frRSP), x)
	b.MovMemImm32D8(enc.RCX, frFunc, fg.fid) // frame.func
	if fg.closed {
		// The return address names the caller's call site when the
		// caller is closed too [decision 57].
		b.MovRegFromMem(x, x, 0)
		b.MovMemFromReg(enc.RCX, int32(frSite), x)
		if fg.callsOut {
			b.MovMemImm32(enc.RCX, int32(frExtSite), 0) // in no outside call
		}
	} else { // a closed activation leaves the rest alone
		b.MovRegFromGS(x, g.stubs.OffR)
		b.MovMemFromReg(enc.RCX, int32(frSavedR), x)
		b.MovRegFromGS(x, runtime.OffCallSite)
		b.MovMemFromReg(enc.RCX, int32(frSite), x)
		b.MovRegFromGS(x, runtime.OffCur)
		b.MovMemFromReg(enc.RCX, int32(frSavedCur), x)
		b.MovGS64Imm(runtime.OffCur, fg.curValue())
		b.MovGS64Imm(runtime.OffCallSite, 0)
	}
	b.Pop(enc.RCX)
	b.Bind(done)
	b.MovImm32(x, 0) // the stub saved the register in the frame too (Func.PathReg)
	fg.leanStub(slow, done, true, false, g.stubs.Enter)
}

// enterInternal is the start of a closed function's internal entry
// [decision 61], which every call from a closed function takes: it loads
// the shadow stack's top and joins enterLean after the checks that only
// the first activation on a thread's way into closed code needs. Its
// caller is a closed activation running its own code, and so:
//   - the runtime is ready and %gs is this thread's own block, or the
//     shared scratch block whose empty shadow stack fails the limit test
//     below (the caller's entry either passed those checks or called
//     the entry stub, which leaves %gs at one of the two);
//   - the newest frame is the caller's, or the caller has none because
//     the shadow stack is full (which the limit test sees too): a closed
//     activation's callees all return by ret and pop their frames, and
//     nothing can jump back into a closed activation (it holds no
//     landing pad and calls no setjmp), so there is nothing to unwind;
//   - a busy stub on this thread is one a signal handler interrupted,
//     and the caller runs inside that handler above everything the stub
//     works on, as the stub's own push would.
//
// The flags are dead at an entry, and so is %rcx's red zone slot (the
// call just wrote the return address over the caller's).
func (fg *funcGen) enterInternal() {
	b := fg.g.buf
	b.Bind(fg.internal)
	b.Push(enc.RCX)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	b.JmpRel32(enc.LabelTarget(fg.internalJoin))
	b.SetSP(0)
}

// testReady emits cmpq $0, blpp_fast_slots(%rip); je slow: loadSlots
// without a register.
func (g *gen) testReady(slow enc.Label) {
	b := g.buf
	b.CmpRIPImm8(enc.AbsTarget(g.stubs.FastSlots), 0)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
}

// cmpOwnerRCX emits mov %fs:0, %rcx; cmp %gs:owner, %rcx: equal when %gs
// is this thread's own block.
func cmpOwnerRCX(b *enc.Buf) {
	b.MovRegFromFS(enc.RCX, 0)
	if faultInjection && fault("threads") {
		// Every thread takes the block it inherited for its own (the
		// runtime too: ConfigFlagFaultSharedThreads): new threads update
		// their creator's counters, and updates are lost between them.
		b.CmpRegReg(enc.RCX, enc.RCX)
		return
	}
	b.CmpRegGS(enc.RCX, runtime.OffOwner)
}

// leanStub queues the slow path of the one-register sequences (enterLean,
// exitLean, enterTrivial): pop %rcx when it is pushed at slow, spill the
// path register when spill says so, call stub with the function's id as
// every stub is called (after the red zone), and rejoin at done.
func (fg *funcGen) leanStub(slow, done enc.Label, pushed, spill bool, stub uint64) {
	b := fg.g.buf
	at := fg.cur
	fg.addCold(func() {
		b.Bind(slow)
		fg.mark(at, false)
		if pushed {
			b.SetSP(-8)
			b.Pop(enc.RCX)
		} else {
			b.SetSP(0)
		}
		if spill {
			fg.spill()
		}
		b.LeaRSP(-redZone)
		pushImm32(b, fg.fid)
		b.CallRel32(enc.AbsTarget(stub))
		b.LeaRSP(redZone + 8)
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// enterTrivial is the whole instrumentation of a trivial function
// [decision 55]: count its call and its one path in the slots, in the
// thread's own block, once its record exists; else the leaf stub does
// both. An activation that calls nothing can only be left early by a
// signal (fatal, or a handler that jumps out), so counting its path at
// the entry rather than the exit differs from the framed form only
// there: such an activation counts as a whole path instead of a partial
// one of unknown end. %rcx is pushed without a red-zone step (nothing
// below %rsp is live at an entry); pop leaves the owner test's flags.
func (fg *funcGen) enterTrivial() {
	g, b := fg.g, fg.g.buf
	slow, done := b.NewLabel(), b.NewLabel()
	fg.g.testReady(slow)
	b.Push(enc.RCX)
	cmpOwnerRCX(b)
	b.Pop(enc.RCX)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.CmpGS64Imm(fg.slot, 0) // the record exists [decision 51]
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.AddGS64Imm(fg.slot, 1)   // its calls
	b.AddGS64Imm(fg.slot+8, 1) // its path
	b.Bind(done)
	fg.leanStub(slow, done, false, false, g.stubs.Leaf)
}

// exitLean is the inline exit of a lean function with a path register
// that is not a tail jump to an instrumented function [decision 54]: the
// checks of exitInline, with %rcx as the only pushed register (nothing
// below %rsp is live when a function returns or jumps away) and the path
// register as scratch once its path is counted. The frame's function is
// not compared: a frame whose %rsp is this activation's entry %rsp while
// Cur is this function's can only be this activation's, since every
// entry first unwinds a newest frame at or below its own %rsp. A closed
// function [decision 57] leaves Cur alone, so it compares the frame's
// function instead, and restores only its register.
func (fg *funcGen) exitLean() {
	g, b, x := fg.g, fg.g.buf, fg.preg
	slow, done := b.NewLabel(), b.NewLabel()
	b.Push(enc.RCX)
	if !fg.closed {
		// A closed exit needs no busy or overflow test [decision 61]:
		// while the overflow count is not 0 the shadow stack is full
		// and the newest frame is older than this activation, which
		// the %rsp test sees; and a closed activation running while a
		// stub on its thread is busy runs in a signal handler above
		// everything the stub works on, as the stub's own pop would.
		gsBusyOrOverflow(b, enc.RCX, slow)
	}
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	// No frame is this activation's when the stack is empty: the
	// sentinel below it has an %rsp no entry has [decision 65].
	b.LeaRSP(8)
	b.CmpRegMem(enc.RSP, enc.RCX, int32(frRSP))
	b.LeaRSP(-8)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	if fg.closed {
		// Cur is not this activation's: the frame's function tells.
		b.CmpMemImm32(enc.RCX, int32(frFunc), fg.fid)
	} else {
		b.CmpGS64Imm(runtime.OffCur, fg.curValue())
	}
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.CmpRegImm32(x, int32(fg.num.NumPaths))
	b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	b.IncGSIndexed(fg.slot+8, x)
	if !fg.closed {
		b.MovRegFromMem(x, enc.RCX, int32(frSavedCur))
		b.MovGSFromReg(runtime.OffCur, x)
		b.MovRegFromMem(x, enc.RCX, int32(frSavedR))
		b.MovGSFromReg(g.stubs.OffR, x)
		b.MovRegFromMem(x, enc.RCX, int32(frSite))
		b.MovGSFromReg(runtime.OffCallSite, x)
	}
	b.MovRegFromMem(x, enc.RCX, int32(frSavedReg)) // the register's entry value
	b.AddRegImm32(enc.RCX, -runtime.FrameSize)
	b.MovGSFromReg(runtime.OffSP, enc.RCX)
	b.Pop(enc.RCX)
	b.Bind(done)
	// A closed exit leaves its register for the stub to find in its
	// save area: Thread.R is not its own.
	fg.leanStub(slow, done, true, !fg.closed, g.stubs.Exit)
}

// callCache reports whether the image's thread blocks have a call cache
// (runtime.ConfigFlagCallCache): context images whose entries are inline.
func (g *gen) callCache() bool { return !g.mode.FlowOnly && (!g.mode.Metrics || g.mode.TSCOnly) }

// callCacheLookup queues, for a context-mode entry whose call-site list
// (head word at %rdx) starts with another function's node, a look-up of
// this function's node in the thread's call cache [decision 49]:
// lea fid(%rdx),%rax; imul $HashMul,%eax,%eax; shr; and $-32,%eax; then
// the entry at %gs:CallCacheOffset(,%rax) must hold list %rdx and this
// fid, and its node goes to %rax and back to found; a miss goes to slow
// (the stub walks the list and fills the entry). It returns the label to
// jump to. saved is the bytes pushed below the red zone.
func (fg *funcGen) callCacheLookup(found, slow enc.Label, saved int32) enc.Label {
	g, b := fg.g, fg.g.buf
	if !g.callCache() {
		return slow
	}
	miss := b.NewLabel()
	at := fg.cur
	fg.addCold(func() {
		b.Bind(miss)
		fg.mark(at, false)
		b.SetSP(-redZone - saved)
		b.LeaRegDisp32(enc.RAX, enc.RDX, fg.fid)
		b.ImulReg32Imm32(enc.RAX, enc.RAX, runtime.HashMul)
		b.ShrReg32Imm(enc.RAX, uint8(32-runtime.CallCacheBits-bits.TrailingZeros(runtime.CallCacheEntry)))
		b.AndReg32Imm8(enc.RAX, -runtime.CallCacheEntry)
		b.CmpGSIdxReg(enc.RAX, runtime.CallCacheOffset, enc.RDX)
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		b.CmpGSIdxImm32(enc.RAX, runtime.CallCacheOffset+8, fg.fid)
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		b.MovRegFromGSIdx(enc.RAX, enc.RAX, runtime.CallCacheOffset+16)
		b.JmpRel32(enc.LabelTarget(found))
	})
	return miss
}

// exitStub ends the path at an exit through the runtime's stub.
func (fg *funcGen) exitStub() {
	b := fg.g.buf
	fg.spill() // the stub also puts the register's entry value back
	b.LeaRSP(-redZone)
	pushImm32(b, fg.fid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.Exit))
	b.LeaRSP(redZone + 8)
}

// tailExitStub ends the path before a direct tail jump to an
// instrumented function through the runtime, which makes the callee's
// activation a child of this one at the jump's call site.
func (fg *funcGen) tailExitStub(site int32) {
	b := fg.g.buf
	b.LeaRSP(-redZone)
	pushImm32(b, site)
	pushImm32(b, fg.fid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.TailExit))
	b.LeaRSP(redZone + 16)
}

// Shadow-frame field offsets, relative to the end of the newest frame
// (Thread.SP points just past it).
var (
	frRSP    = int8(int(unsafe.Offsetof(runtime.Frame{}.RSP)) - runtime.FrameSize)
	frSavedR = int8(int(unsafe.Offsetof(runtime.Frame{}.SavedR)) - runtime.FrameSize)
	frFunc   = int8(int(unsafe.Offsetof(runtime.Frame{}.Func)) - runtime.FrameSize)
	frRecord = int8(int(unsafe.Offsetof(runtime.Frame{}.Record)) - runtime.FrameSize)
	frSite   = int8(int(unsafe.Offsetof(runtime.Frame{}.Site)) - runtime.FrameSize)
	// In images with slot counters: the caller's Thread.Cur and the
	// entry value of the function's path register (Func.PathReg).
	frSavedCur = int8(runtime.FrameSavedCurOff - runtime.FrameSize)
	// With metrics: the caller's accumulated value of the first metric.
	frSavedAcc = frSavedCur
	frSavedReg = int8(runtime.FrameSavedRegOff - runtime.FrameSize)
	// In a closed function's frame: the call site and path register of
	// its outside call in progress [decision 64].
	frExtSite = int8(runtime.FrameExtSiteOff - runtime.FrameSize)
	frExtR    = int8(runtime.FrameExtROff - runtime.FrameSize)
	// Thread fields of a pending tail call [decision 31].
	offTailSite = int32(unsafe.Offsetof(runtime.Thread{}.TailSite))
	offTailRSP  = int32(unsafe.Offsetof(runtime.Thread{}.TailRSP))
	// The first metric's start and accumulated value [DESIGN 8].
	offMStart = int32(unsafe.Offsetof(runtime.Thread{}.MStart))
	offMAcc   = int32(unsafe.Offsetof(runtime.Thread{}.MAcc))
)

// countsOff is where a record's counters begin, from the record, as
// rec_new allocates them (the slot counters of flow-only images are
// reached from %gs instead) [decision 47].
const countsOff = int32(runtime.RecordInlineCounts)

// loadSlots emits mov blpp_fast_slots(%rip), reg (rax, rcx or rdx) and
// jumps to slow when it is 0 (the runtime is not ready).
func (fg *funcGen) loadSlots(reg enc.Reg, slow enc.Label) {
	g, b := fg.g, fg.g.buf
	b.MovRegFromRIP(reg, enc.AbsTarget(g.stubs.FastSlots))
	b.TestRegReg(reg)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
}

// coldStub queues the slow path of an inline sequence: pop the saved
// registers, spill the path register when spill says so, call the stub
// with the pushed arguments, step back over the red zone and the
// arguments, and rejoin the inline code at done.
func (fg *funcGen) coldStub(slow, done enc.Label, saved []enc.Reg, spill bool, stub uint64, args ...int32) {
	b := fg.g.buf
	at := fg.cur
	fg.addCold(func() {
		b.Bind(slow)
		fg.mark(at, false)
		b.SetSP(-redZone - int32(8*len(saved)))
		for i := len(saved) - 1; i >= 0; i-- {
			b.Pop(saved[i])
		}
		if spill {
			fg.spill()
		}
		for _, a := range args {
			pushImm32(b, a)
		}
		b.CallRel32(enc.AbsTarget(stub))
		b.LeaRSP(redZone + int32(8*len(args)))
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// storeCallSite emits movq $site, %gs:call_site. It runs inside an
// activation whose entry has run on this thread, and every entry leaves
// %gs at a thread block (its own, its creator's until the stub gives it
// one, or before the runtime is ready a scratch block: see early_gs), so
// no test of the ready word is needed [decision 40].
func (fg *funcGen) storeCallSite(site int32) {
	if faultInjection && fault("partial") {
		return
	}
	fg.g.buf.MovGS64Imm(fg.g.stubs.OffCallSite, site)
}

// gsBusyOrOverflow emits mov %gs:overflow, reg; or %gs:busy, reg; jne
// slow: one test for a shadow stack that is busy (a stub interrupted by
// a signal) or overflowing.
func gsBusyOrOverflow(b *enc.Buf, reg enc.Reg, slow enc.Label) {
	b.MovRegFromGS(reg, runtime.OffOverflow)
	b.OrRegGS(reg, runtime.OffBusy)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
}

// saveFlags keeps the status flags in %rax (OF in %al, the others in
// %ah), which must be saved already; restoreFlags puts them back from
// %rax. Four one-uop instructions instead of pushfq/popfq, whose popfq
// costs some 20 cycles [Intel SDM Vol.2 LAHF, SAHF]. The instrumentation
// never changes DF, the only other flag liveness tracks [decision 11].
func saveFlags(b *enc.Buf) {
	b.SetoAL()
	b.Lahf()
}

func restoreFlags(b *enc.Buf) {
	b.AddALImm8(0x7f)
	b.Sahf()
}

// exitInline ends the path at a return or tail call inline, where %rsp is
// back at its value at entry: count[r]++ in the record's dense array,
// then pop the shadow frame (the caller's r, record and call site come
// back). Anything unusual (a frame that is not this activation's, left by
// a longjmp; an overflowed or busy shadow stack; no record; a path the
// dense array does not hold) takes the stub, which unwinds and checks.
// Counters belong to the thread, so no lock prefix. Flags are dead at a
// return and a tail call [SysV x86-64 ABI 3.2.1], so they are not saved.
// No test of the ready word: see storeCallSite. A non-zero tailSite is a
// direct tail jump to an instrumented function from that call site: the
// activation's record, the site and the entry %rsp are left in TailRec,
// TailSite and TailRSP for the callee's entry [decision 31], as
// blpp_rt_exit does (TailRec last, so that a signal handler's entry in
// between never pairs it with a stale TailRSP).
func (fg *funcGen) exitInline(tailSite int32) {
	g, b := fg.g, fg.g.buf
	tsc := g.mode.TSCOnly
	if g.mode.Metrics && !tsc {
		fg.exitStub()
		return
	}
	if fg.trivial() {
		return // counted at the entry
	}
	if fg.lean() && fg.hasPreg && tailSite == 0 {
		fg.exitLean()
		return
	}
	slow, done := b.NewLabel(), b.NewLabel()
	// The inline code counts from the path register; only the stub needs
	// it in Thread.R (the cold path spills it).
	// A function with slot counters needs no record, so no %rdx; the
	// time-stamp counter needs one more (rdtsc writes %rax and %rdx).
	saved := []enc.Reg{enc.RAX, enc.RCX, enc.RDX}
	switch {
	case fg.slot != 0 && tailSite == 0:
		saved = saved[:2]
	case tsc:
		saved = append(saved, enc.RSI)
	case fg.hashInline():
		saved = append(saved, enc.RSI, enc.RDI) // the table and the entry (hashCount)
	}
	entryRSP := uint32(redZone + 8*len(saved)) // this activation's %rsp at entry, from %rsp
	b.LeaRSP(-redZone)
	for _, r := range saved {
		b.Push(r)
	}
	gsBusyOrOverflow(b, enc.RCX, slow)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	// cmp %gs:OffSPBase, %rcx: an empty shadow stack has no frame to pop
	b.CmpRegGS(enc.RCX, runtime.OffSPBase)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	// lea entryRSP(%rsp), %rax: this activation's %rsp at entry
	b.LeaRegDisp32(enc.RAX, enc.RSP, int32(entryRSP))
	b.CmpMemRegD8(enc.RCX, frRSP, enc.RAX)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.CmpMemImm32D8(enc.RCX, frFunc, fg.fid)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	idx := enc.RAX
	switch {
	case fg.hasPreg && fg.slot != 0:
		idx = fg.preg
	case fg.hasPreg:
		b.MovRegFromReg(enc.RAX, fg.preg)
	default:
		b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	}
	if fg.slot != 0 {
		// The running record is this function's, with its counters in
		// the slots, exactly when Cur says so [decision 42].
		b.CmpGS64Imm(runtime.OffCur, fg.curValue())
		b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
		b.CmpRegImm32(idx, int32(fg.num.NumPaths))
		b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	} else {
		b.MovRegFromGS(enc.RDX, runtime.OffRecord)
		b.TestRegReg(enc.RDX)
		b.JccRel32(enc.CondE, enc.LabelTarget(slow))
		if fg.hashInline() {
			// Counted here when found; nothing below can fail.
			fg.hashCount(enc.RDX, enc.RSI, enc.RAX, enc.RDI, slow, -redZone-int32(8*len(saved)))
		} else {
			b.CmpRegMemD8(enc.RAX, enc.RDX, runtime.RecordDenseNOff)
			b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
		}
	}
	if tailSite != 0 {
		b.MovGS64Imm(offTailSite, tailSite)
		b.LeaRegDisp32(enc.RCX, enc.RSP, int32(entryRSP)) // entry rsp
		b.MovGSFromReg(offTailRSP, enc.RCX)
		b.MovGSFromReg(runtime.OffTailRec, enc.RDX)
		b.MovRegFromGS(enc.RCX, runtime.OffSP)
	}
	if fg.slot != 0 {
		b.IncGSIndexed(fg.slot+8, idx)
		if fg.hasPreg {
			b.MovRegFromMem(fg.preg, enc.RCX, int32(frSavedReg)) // the register's entry value
		}
		b.MovRegFromMemD8(enc.RAX, enc.RCX, frSavedCur)
		b.MovGSFromReg(runtime.OffCur, enc.RAX)
	} else if tsc {
		// Stride 2, as at backedges: the path's {count, tsc sum}; then
		// mstart = now and the caller gets its macc back from the frame.
		b.LeaRegDisp32(enc.RSI, enc.RDX, countsOff)
		fg.countTSC(enc.RSI)
		b.MovRegFromMemD8(enc.RAX, enc.RCX, frSavedAcc) // frame.saved_acc[0]
		b.MovGSFromReg(offMAcc, enc.RAX)
	} else {
		if !fg.hashInline() {
			b.IncMemIndexed(enc.RDX, enc.RAX, countsOff+8)
		}
		if fg.hasPreg {
			b.MovRegFromMem(fg.preg, enc.RCX, int32(frSavedReg)) // the register's entry value
		}
		if g.slots() {
			b.MovRegFromMemD8(enc.RAX, enc.RCX, frSavedCur)
			b.MovGSFromReg(runtime.OffCur, enc.RAX)
		}
	}
	b.MovRegFromMemD8(enc.RAX, enc.RCX, frSavedR)
	b.MovGSFromReg(g.stubs.OffR, enc.RAX)
	b.MovRegFromMemD8(enc.RAX, enc.RCX, frSite)
	b.MovGSFromReg(runtime.OffCallSite, enc.RAX)
	if !fg.lean() {
		b.MovRegFromMemD8(enc.RAX, enc.RCX, frRecord)
		b.MovGSFromReg(runtime.OffRecord, enc.RAX)
	}
	b.AddRegImm32(enc.RCX, -runtime.FrameSize)
	b.MovGSFromReg(runtime.OffSP, enc.RCX)
	for i := len(saved) - 1; i >= 0; i-- {
		b.Pop(saved[i])
	}
	b.LeaRSP(redZone)
	b.Bind(done)
	if tailSite != 0 {
		fg.coldStub(slow, done, saved, true, g.stubs.TailExit, tailSite, fg.fid)
		return
	}
	fg.coldStub(slow, done, saved, true, g.stubs.Exit, fg.fid)
}

// backedge emits a path end at a backedge inline: count[r + ExitInc]++
// in the running record's dense array, then r = EntryInc. When that is
// not possible (no record or another function's, a path the dense array
// does not hold: hashed functions, a fork child's stale record, before
// the runtime is ready) an out-of-line call to the backedge stub does the
// same work. The inline form saves the call, the stub's register saves
// and its checks: loops are where time goes. No test of the ready word
// (see storeCallSite): before the runtime is ready %gs points at a block
// without a record. Live flags are kept in %rax (saveFlags), pushed
// between %rax and %rcx.
func (fg *funcGen) backedge(e cfg.EdgeID, flagsLive bool) {
	b, n := fg.g.buf, fg.num
	if fg.hasPreg && fg.slot != 0 {
		fg.regBackedge(e, flagsLive)
		return
	}
	if fg.recordBackedgeIn(e, flagsLive) {
		return
	}
	if fg.hasPreg {
		// The record's counters: the code below reads Thread.R and
		// leaves EntryInc there, the stub too; so does the register.
		// A swapping loop register takes EntryInc back and gives
		// Thread.R the program's value again [decision 56].
		fg.spill()
		fg.backedgeMem(e, flagsLive)
		if fg.inLoop >= 0 && fg.loops[fg.inLoop].swap {
			fg.reload()
		} else {
			b.MovRegImm(fg.preg, int32(n.EntryInc[e])) // sign-extended; flags untouched
		}
		return
	}
	fg.backedgeMem(e, flagsLive)
}

// backedgeMem is backedge for a path register in Thread.R.
func (fg *funcGen) backedgeMem(e cfg.EdgeID, flagsLive bool) {
	g, b, n := fg.g, fg.g.buf, fg.num
	if fg.slot != 0 && !flagsLive {
		if r, ok := fg.deadReg(e); ok {
			fg.slotBackedgeIn(e, r)
			return
		}
	}
	slow, done := b.NewLabel(), b.NewLabel()
	b.LeaRSP(-redZone)
	if g.mode.Metrics && !g.mode.TSCOnly {
		fg.backedgeStub(e)
		return
	}
	b.Push(enc.RAX)
	if flagsLive { // the tests and the increment write the flags
		saveFlags(b)
		b.Push(enc.RAX)
	}
	if fg.slot != 0 {
		fg.slotBackedge(e, flagsLive, slow, done)
		return
	}
	b.Push(enc.RCX)
	tsc, hash := g.mode.TSCOnly, fg.hashInline()
	depth := int32(-redZone - 16) // %rax and %rcx pushed below the red zone
	if flagsLive {
		depth -= 8 // and the flags
	}
	if tsc || hash {
		b.Push(enc.RDX)
		depth -= 8
	}
	b.MovRegFromGS(enc.RCX, runtime.OffRecord)
	b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	b.TestRegReg(enc.RCX)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.CmpMemImm32D8(enc.RCX, runtime.RecordFuncOff, fg.fid)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	if k := int32(n.ExitInc[e]); k != 0 {
		b.AddRegImm32(enc.RAX, k)
	}
	if hash {
		fg.hashCount(enc.RCX, enc.RCX, enc.RAX, enc.RDX, slow, depth)
	} else {
		b.CmpRegMemD8(enc.RAX, enc.RCX, runtime.RecordDenseNOff)
		b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
		if tsc {
			b.LeaRegDisp32(enc.RCX, enc.RCX, countsOff)
			fg.countTSC(enc.RCX)
			b.MovGS64Imm(offMAcc, 0)
		} else {
			b.IncMemIndexed(enc.RCX, enc.RAX, countsOff+8)
		}
	}
	b.MovGS64Imm(g.stubs.OffR, int32(n.EntryInc[e]))
	restore := func() {
		if tsc || hash {
			b.Pop(enc.RDX)
		}
		b.Pop(enc.RCX)
		if flagsLive {
			b.Pop(enc.RAX)
			restoreFlags(b)
		}
		b.Pop(enc.RAX)
	}
	restore()
	b.LeaRSP(redZone)
	b.Bind(done)
	fg.coldBackedgeSaved(e, slow, done, depth, restore)
}

// coldBackedgeSaved queues the slow path of a backedge whose inline part
// pushed registers below the red zone (depth, from the activation's
// %rsp): pop them (restore), call the backedge stub and rejoin the inline
// code at done.
func (fg *funcGen) coldBackedgeSaved(e cfg.EdgeID, slow, done enc.Label, depth int32, restore func()) {
	b := fg.g.buf
	at := fg.cur
	fg.addCold(func() {
		b.Bind(slow)
		fg.mark(at, false)
		b.SetSP(depth)
		restore()
		fg.backedgeStub(e)
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// countTSC counts path %rax of the stride-2 counters at counts (the
// record's: %rcx or %rsi) with its time: the pair {count, tsc sum} after
// the calls word gets 1 and macc + (now - mstart), and mstart = now, as
// path_metrics does [DESIGN 8]. It leaves now in %rax (%rdx and counts
// clobbered); the caller sets macc.
func (fg *funcGen) countTSC(counts enc.Reg) {
	b := fg.g.buf
	b.ShlRegImm(enc.RAX, 4)
	b.LeaRegIdxD8(counts, counts, enc.RAX, 1, 8)
	b.IncMem(counts, 0)
	fg.tscProgress()
	b.AddMemRegD8(counts, 8, enc.RDX)
	b.MovGSFromReg(offMStart, enc.RAX)
}

// tscProgress emits the read of the time-stamp counter and the running
// path's progress: now into %rax, macc + (now - mstart) into %rdx.
func (fg *funcGen) tscProgress() {
	b := fg.g.buf
	b.Rdtsc()
	b.ShlRegImm(enc.RDX, 32)
	b.OrRegReg(enc.RAX, enc.RDX)
	b.MovRegFromReg(enc.RDX, enc.RAX)
	b.SubRegGS(enc.RDX, offMStart)
	b.AddRegGS(enc.RDX, offMAcc)
}

// backedgeStub calls the backedge stub for edge e, %rsp already below the
// red zone, and steps back over the red zone and its arguments.
func (fg *funcGen) backedgeStub(e cfg.EdgeID) {
	b, n := fg.g.buf, fg.num
	pushImm32(b, int32(n.EntryInc[e]))
	pushImm32(b, int32(n.ExitInc[e]))
	pushImm32(b, fg.fid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.Backedge))
	b.LeaRSP(redZone + 24)
}

// deadReg returns a general register that the code after edge e surely
// overwrites before reading it (register liveness, decision 43), if any.
func (fg *funcGen) deadReg(e cfg.EdgeID) (enc.Reg, bool) {
	return fg.deadRegFor(e, fg.preg, fg.hasPreg)
}

// deadRegs returns up to n general registers dead after edge e, never
// %rsp or the path register (which liveness sees as dead: the function
// never names it).
func (fg *funcGen) deadRegs(e cfg.EdgeID, n int) []enc.Reg {
	return fg.deadRegsFor(e, n, fg.preg, fg.hasPreg)
}

// deadRegFor is deadReg where the path register is preg (when hasPreg).
func (fp *funcPlan) deadRegFor(e cfg.EdgeID, preg enc.Reg, hasPreg bool) (enc.Reg, bool) {
	rs := fp.deadRegsFor(e, 1, preg, hasPreg)
	if len(rs) == 0 {
		return 0, false
	}
	return rs[0], true
}

// deadRegsFor is deadRegs where the path register is preg (when
// hasPreg).
func (fp *funcPlan) deadRegsFor(e cfg.EdgeID, n int, preg enc.Reg, hasPreg bool) []enc.Reg {
	to := fp.f.Graph.Edges[e].To
	if to < 0 || fp.liveIn == nil {
		return nil
	}
	dead := ^fp.liveIn[to] &^ (1 << enc.RSP)
	var rs []enc.Reg
	for r := 0; r < 16 && len(rs) < n; r++ {
		if dead.Has(r) && !(hasPreg && enc.Reg(r) == preg) {
			rs = append(rs, enc.Reg(r))
		}
	}
	return rs
}

// recordBackedgeIn is the record form of a backedge (backedgeMem) where
// the flags are dead and so are the registers it needs: one for the
// record, and one for the path id unless the path register is a general
// register. Nothing is pushed and the red zone is not stepped over:
// mov %gs:record,%rec; [mov %gs:r,%x]; test; je; cmpq $fid,func(%rec);
// jne; lea k(%x),%x; cmp dense_n(%rec),%x; jae; incq counts+8(%rec,%x,8);
// r = EntryInc. It reports false (emitting nothing) where it does not
// apply.
func (fg *funcGen) recordBackedgeIn(e cfg.EdgeID, flagsLive bool) bool {
	g, b, n := fg.g, fg.g.buf, fg.num
	if flagsLive || g.mode.Metrics || fg.slot != 0 {
		return false
	}
	need := 2
	if fg.hasPreg {
		need = 1
	}
	if fg.hashInline() {
		need++ // the entry's offset (hashCount)
	}
	rs := fg.deadRegs(e, need)
	if len(rs) < need {
		return false
	}
	rec, x := rs[0], fg.preg
	if !fg.hasPreg {
		x = rs[1]
	}
	slow, done := b.NewLabel(), b.NewLabel()
	k := int32(n.ExitInc[e])
	b.MovRegFromGS(rec, runtime.OffRecord)
	if !fg.hasPreg {
		b.MovRegFromGS(x, g.stubs.OffR)
	}
	if k != 0 {
		b.LeaRegSelf(x, k)
	}
	fg.ownRecord(rec, slow)
	if fg.hashInline() {
		fg.hashCount(rec, rec, x, rs[len(rs)-1], slow, 0)
	} else {
		b.CmpRegMem(x, rec, runtime.RecordDenseNOff)
		b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
		b.IncMemIndexed(rec, x, countsOff+8)
	}
	if fg.hasPreg {
		b.MovRegImm(x, int32(n.EntryInc[e])) // sign-extended: EntryInc may be negative
	} else {
		b.MovGS64Imm(g.stubs.OffR, int32(n.EntryInc[e]))
	}
	b.Bind(done)
	undo := int32(0)
	if fg.hasPreg {
		undo = k // Thread.R gets the value before the edge
	}
	fg.coldBackedge(e, slow, done, undo)
	return true
}

// ownRecord jumps to slow unless rec, loaded from Thread.record, is a
// record of this function: the check of the inline record forms of a
// backedge (recordBackedgeIn, countCopy).
func (fg *funcGen) ownRecord(rec enc.Reg, slow enc.Label) {
	b := fg.g.buf
	b.TestRegReg(rec)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.CmpMemImm32(rec, runtime.RecordFuncOff, fg.fid)
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
}

// coldBackedge queues the slow path of a backedge whose inline part
// saved nothing: take undo back off the path register, spill it, call
// the backedge stub, reload the register and rejoin the inline code at
// done.
func (fg *funcGen) coldBackedge(e cfg.EdgeID, slow, done enc.Label, undo int32) {
	b := fg.g.buf
	at := fg.cur
	fg.addCold(func() {
		b.Bind(slow)
		fg.mark(at, false)
		b.SetSP(0)
		if undo != 0 {
			b.LeaRegSelf(fg.preg, -undo)
		}
		fg.spill()
		b.LeaRSP(-redZone)
		fg.backedgeStub(e)
		fg.reload()
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// slotBackedgeIn is the slot form of a backedge (slotBackedge) where the
// flags are dead and register r is too: nothing to save, so nothing is
// pushed and the red zone is not stepped over.
func (fg *funcGen) slotBackedgeIn(e cfg.EdgeID, r enc.Reg) {
	g, b, n := fg.g, fg.g.buf, fg.num
	slow, done := b.NewLabel(), b.NewLabel()
	b.CmpGS64Imm(runtime.OffCur, fg.curValue())
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.MovRegFromGS(r, g.stubs.OffR)
	fg.slotCount(r, int32(n.ExitInc[e]), slow)
	b.MovGS64Imm(g.stubs.OffR, int32(n.EntryInc[e]))
	b.Bind(done)
	fg.coldBackedge(e, slow, done, 0) // no path register here: no spill
}

// regBackedge is backedge for a function whose path register lives in a
// general register x (assignPathReg): x += ExitInc, and when x is a path
// id, count[x]++ at the function's slot counters (slotCount), then x =
// EntryInc. No test of
// Thread.cur: x belongs to this activation whatever the runtime thinks
// runs, and every block %gs can point at after an entry has the slot
// counters (thread blocks, and early_gs's scratch block, whose counts
// are dropped), so the bound alone keeps the increment inside them.
// With dead flags that is all (no push, no red-zone step); live flags
// are kept in %rax. Otherwise the add is undone and x goes to Thread.R
// for the stub, and comes back.
func (fg *funcGen) regBackedge(e cfg.EdgeID, flagsLive bool) {
	b, n, x := fg.g.buf, fg.num, fg.preg
	slow, done := b.NewLabel(), b.NewLabel()
	if flagsLive {
		b.LeaRSP(-redZone)
		b.Push(enc.RAX)
		saveFlags(b)
	}
	k := int32(n.ExitInc[e])
	fg.slotCount(x, k, slow)
	b.MovRegImm(x, int32(n.EntryInc[e])) // sign-extended: EntryInc may be negative
	restore := func() {
		if flagsLive {
			restoreFlags(b)
			b.Pop(enc.RAX)
			b.LeaRSP(redZone)
		}
	}
	restore()
	b.Bind(done)
	at := fg.cur
	fg.addCold(func() {
		b.Bind(slow)
		fg.mark(at, false)
		if flagsLive {
			b.SetSP(-redZone - 8)
		} else {
			b.SetSP(0)
		}
		if k != 0 {
			b.LeaRegSelf(x, -k)
		}
		restore()
		fg.spill()
		b.LeaRSP(-redZone)
		fg.backedgeStub(e)
		fg.reload()
		b.JmpRel32(enc.LabelTarget(done))
	})
}

// slotCount emits the count of a backedge of a slot function whose path
// register (before the backedge's ExitInc k) is in reg: reg += k, then
// count[reg]++ in the slots when reg is a path id, else jump to slow
// (reg holding the sum). The add comes first because the register alone
// may be negative (chord increments are); one unsigned compare then
// bounds the sum.
func (fg *funcGen) slotCount(reg enc.Reg, k int32, slow enc.Label) {
	b := fg.g.buf
	if k != 0 {
		b.LeaRegSelf(reg, k)
	}
	b.CmpRegImm32(reg, int32(fg.num.NumPaths))
	b.JccRel32(enc.CondAE, enc.LabelTarget(slow))
	b.IncGSIndexed(fg.slot+8, reg)
}

// hashed reports whether fg counts its paths in hash tables (the
// runtime's Func.Hashed), and hashInline whether its path ends count
// inline in the newest table: frequency-only images, whose entries are a
// key and one count [decision 48].
func (fp *funcPlan) hashed() bool     { return fp.num.NumPaths > DenseMax }
func (fp *funcPlan) hashInline() bool { return fp.hashed() && !fp.g.mode.Metrics }

// hashCount counts path x of a hashed function in record rec's newest
// hash table when the path's entry is at its home slot there or the one
// after, the runtime's first two probes (blpp_rt.c home) [decision 48];
// any other case (no table yet, the path elsewhere or not yet seen) jumps
// to slow:
//
//	mov hash(rec),tab; test tab,tab; je slow
//	add $1,x; je undo          (the key: path + 1; never 0, the empty key)
//	imul $HashMul,x32,t32; imul bytes(tab),t; shr $32,t; and $-16,t32
//	cmp x,entries(tab,t); jne second
//	lea -1(x),x; incq entries+8(tab,t)
//
// with, out of line, second: cmp x,entries+16(tab,t); jne undo;
// lea -1(x),x; incq entries+24(tab,t); jmp back; undo: lea -1(x),x;
// jmp slow. Every table has one more entry than its capacity,
// never written, so the second probe stays inside it. tab and t are
// clobbered, and so are the flags; x holds the path id again on every
// way out. The key comparison alone makes the count right, whatever entry
// the index picks: only the runtime, after checking a path, writes keys.
// sp is the stack depth the out-of-line code runs at (coldStub's).
func (fg *funcGen) hashCount(rec, tab, x, t enc.Reg, slow enc.Label, sp int32) {
	b := fg.g.buf
	second, undo, done := b.NewLabel(), b.NewLabel(), b.NewLabel()
	b.MovRegFromMem(tab, rec, runtime.RecordHashOff)
	b.TestRegReg(tab)
	b.JccRel32(enc.CondE, enc.LabelTarget(slow))
	b.AddRegImm32(x, 1)
	b.JccRel32(enc.CondE, enc.LabelTarget(undo))
	b.ImulReg32Imm32(t, x, runtime.HashMul)
	b.ImulRegMem(t, tab, runtime.HTabBytesOff)
	b.ShrRegImm(t, 32)
	b.AndReg32Imm8(t, -16)
	b.CmpMemIdxReg(tab, t, runtime.HTabEntriesOff, x)
	b.JccRel32(enc.CondNE, enc.LabelTarget(second))
	b.LeaRegSelf(x, -1)
	b.IncMemIdx(tab, t, runtime.HTabEntriesOff+8)
	b.Bind(done)
	at := fg.cur
	fg.addCold(func() {
		b.Bind(second)
		fg.mark(at, false)
		b.SetSP(sp)
		b.CmpMemIdxReg(tab, t, runtime.HTabEntriesOff+16, x)
		b.JccRel32(enc.CondNE, enc.LabelTarget(undo))
		b.LeaRegSelf(x, -1)
		b.IncMemIdx(tab, t, runtime.HTabEntriesOff+16+8)
		b.JmpRel32(enc.LabelTarget(done))
		b.Bind(undo)
		b.LeaRegSelf(x, -1)
		b.JmpRel32(enc.LabelTarget(slow))
	})
}

// slotBackedge is the rest of backedge for a function with slot
// counters [decision 42], after %rax (and the flags) are saved: when Cur
// says the running activation is this function's, count[r + ExitInc]++
// at the function's fixed offset from %gs, then r = EntryInc. One
// register, no record: the counters' place is known when the code is
// written.
func (fg *funcGen) slotBackedge(e cfg.EdgeID, flagsLive bool, slow, done enc.Label) {
	g, b, n := fg.g, fg.g.buf, fg.num
	b.CmpGS64Imm(runtime.OffCur, fg.curValue())
	b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
	b.MovRegFromGS(enc.RAX, g.stubs.OffR)
	fg.slotCount(enc.RAX, int32(n.ExitInc[e]), slow)
	b.MovGS64Imm(g.stubs.OffR, int32(n.EntryInc[e]))
	restore := func() {
		if flagsLive {
			b.Pop(enc.RAX)
			restoreFlags(b)
		}
		b.Pop(enc.RAX)
	}
	restore()
	b.LeaRSP(redZone)
	b.Bind(done)
	depth := int32(-redZone - 8) // %rax pushed below the red zone
	if flagsLive {
		depth -= 8 // and the flags
	}
	fg.coldBackedgeSaved(e, slow, done, depth, restore)
}

// dest is where edge e leads in the new code (for edges to EXIT: the
// callee of a tail call).
func (fg *funcGen) dest(e cfg.EdgeID) enc.Target {
	if lc, ok := fg.copyBack[e]; ok {
		fg.entered[lc] = true
		return enc.LabelTarget(lc.label[lc.header])
	}
	ed := fg.f.Graph.Edges[e]
	if ed.To == cfg.Exit {
		return fg.g.target(ed.Target)
	}
	return enc.LabelTarget(fg.blocks[ed.To])
}

// via is the branch target for edge e: the destination itself when the
// edge carries no code, else an out-of-line trampoline that runs the
// edge's code and jumps on.
func (fg *funcGen) via(e cfg.EdgeID) enc.Target {
	if !fg.needsCode(e) {
		return fg.dest(e)
	}
	l := fg.g.buf.NewLabel()
	fg.tramps = append(fg.tramps, tramp{label: l, edge: e, to: fg.dest(e)})
	return enc.LabelTarget(l)
}

// follow emits edge e inline after a block's last instruction: its code,
// then a jump to the destination unless that is the next block emitted.
func (fg *funcGen) follow(e cfg.EdgeID, next cfg.BlockID) {
	fg.edgeCode(e)
	ed := fg.f.Graph.Edges[e]
	_, toCopy := fg.copyBack[e] // a loop copy's header, never next
	if ed.To != cfg.Exit && ed.To == next && !toCopy {
		return // next is bound right after this block's code (emit)
	}
	if ed.To == cfg.Exit && ed.Kind != cfg.EdgeTailCall {
		return
	}
	fg.g.buf.JmpRel32(fg.dest(e))
}

func (fp *funcPlan) succ(b cfg.BlockID, kind ...cfg.EdgeKind) (cfg.EdgeID, bool) {
	for _, e := range fp.f.Graph.Blocks[b].Succs {
		for _, k := range kind {
			if fp.f.Graph.Edges[e].Kind == k {
				return e, true
			}
		}
	}
	return 0, false
}

// emit writes the function: entry prologue, blocks in order, trampolines.
func (fg *funcGen) emit() error {
	g, b, gr := fg.g, fg.g.buf, fg.f.Graph
	fg.entered = map[*loopCopy]bool{}
	fg.setLoop(-1)
	// Functions start at 16-byte boundaries. With a layout seed (blpp-bench
	// only), a pseudo-random multiple of 16 bytes comes first, so that
	// measurements can be taken over several layouts [decision 53].
	alignTo(b, 16, 15)
	if g.layoutSeed != 0 {
		b.Nop(16 * int(layoutPad(g.layoutSeed, fg.fid)))
	}
	fg.start = b.Len()
	fg.mark(fg.f.Func.Addr, false)
	if fg.closed {
		fg.enterInternal()
	}
	b.Bind(fg.entry)
	if fg.prefixEnd != 0 {
		if err := fg.prefix(); err != nil {
			return err
		}
		b.Bind(fg.afterPrefix)
	}
	fg.enterInline()
	fg.landingPads()
	// Loop headers and blocks reached only by jumps (an interpreter's
	// dispatch targets, the code after a loop) start a 64-byte line
	// [decision 53]. Instrumented blocks are longer than the original
	// ones, and when a hot loop's head or a jump target sat anywhere in
	// its line the copy's speed depended on where the code before it
	// happened to end: interp, flow-only, took 1.0x to 1.75x native over
	// eight function paddings with 16-byte alignment, and 1.0x to 1.15x
	// over four with this. The padding before a block reached only by jumps never
	// runs; before a loop header that is also fallen into it runs once
	// per entry into the loop (at most seven long nops).
	align := make([]bool, len(gr.Blocks))
	for _, l := range gr.Loops {
		if !l.Irreducible {
			align[l.Header] = true
		}
	}
	fallInto := make([]bool, len(gr.Blocks))
	for _, ed := range gr.Edges {
		if (ed.Kind == cfg.EdgeFallThrough || ed.Kind == cfg.EdgeCallReturn) && ed.To >= 0 {
			fallInto[ed.To] = true
		}
	}
	for id := range gr.Blocks {
		if !fallInto[id] && cfg.BlockID(id) != cfg.Entry {
			align[id] = true
		}
	}
	for id := range gr.Blocks {
		blk := &gr.Blocks[id]
		if align[id] {
			alignTo(b, 64, 63)
		}
		fg.setLoop(fg.loopAt(cfg.BlockID(id)))
		b.Bind(fg.blocks[id])
		next := cfg.BlockID(id + 1)
		code := g.b.Code(blk.Addr)
		if uint64(len(code)) < blk.End-blk.Addr {
			return fmt.Errorf("block %#x: code not in file", blk.Addr)
		}
		var last x86.Inst
		for a := blk.Addr; a < blk.End; {
			in, err := x86.Decode(code[a-blk.Addr:blk.End-blk.Addr], a)
			if err != nil {
				return err
			}
			last = in
			fg.mark(a, true)
			if a+uint64(in.Len) < blk.End {
				fg.syscallLeave(&in)
				if err := fg.copyInst(&in, code[a-blk.Addr:]); err != nil {
					return err
				}
			}
			a += uint64(in.Len)
		}
		raw := code[last.Addr-blk.Addr:]
		fg.mark(last.Addr, true)
		if err := fg.terminator(cfg.BlockID(id), &last, raw, next); err != nil {
			return err
		}
		if lc := fg.loopCopies[cfg.BlockID(id)]; lc != nil {
			fg.addCold(func() { fg.emitLoopCopy(lc) })
		}
	}
	fg.setLoop(-1)
	for i := 0; i < len(fg.tramps); i++ {
		t := fg.tramps[i]
		b.Bind(t.label)
		fg.mark(gr.Blocks[gr.Edges[t.edge].From].Last, false)
		b.SetSP(0)
		fg.edgeCode(t.edge)
		b.JmpRel32(t.to)
	}
	for i := 0; i < len(fg.cold); i++ {
		fg.cold[i]()
	}
	fg.setLoop(-1)
	fg.end = b.Len()
	if fg.coldErr != nil {
		return fg.coldErr
	}
	return b.Err()
}

// loopCopyMax bounds the code of a loop given a second copy
// [decision 58].
const loopCopyMax = 256

// planLoopCopies finds the loops whose later iterations run in a copy
// that counts at its head [decisions 58, 63], in a frequency-only image:
// in a natural loop, a cycle of blocks from the header round to a
// backedge on which the flags are dead (likelyCycle: the one the
// compiler laid out as likely, where there are several), at most
// loopCopyMax bytes, whose blocks end in a conditional or direct jump or
// fall through, and whose every other edge (out of the loop, to another
// of its blocks, another backedge) does not break a path; the function
// counts in slot counters, or densely in its records with a register
// dead at the header to load the record into. Every iteration in the
// copy starts with the path register (wherever it lives) at the
// backedge's EntryInc and follows the cycle, so the register's value at
// each block is a constant, and each iteration that branches back ends
// the same path: its count needs no path register, no bound and no
// stub, and the copy's cycle needs no chord increments. An edge off the
// cycle sets the register to its value there and runs the first copy's
// code for the edge (copyExit).
func (fp *funcPlan) planLoopCopies() {
	if fp.g.mode.Metrics || fp.slot == 0 && fp.hashed() {
		return
	}
	gr, n := fp.f.Graph, fp.num
	for _, l := range gr.Loops {
		if l.Irreducible {
			continue
		}
		cycle, back := fp.likelyCycle(l)
		if cycle == nil {
			continue
		}
		lc := &loopCopy{header: l.Header, back: back, next: map[cfg.BlockID]cfg.EdgeID{}, val: map[cfg.BlockID]int64{}, label: map[cfg.BlockID]enc.Label{}}
		ok, size, v := true, uint64(0), n.EntryInc[back]
		for b := l.Header; ok; {
			if _, seen := lc.next[b]; seen {
				ok = false
				break
			}
			e, on := cycle[b]
			if !on || !fp.copyable(b) {
				ok = false
				break
			}
			lc.val[b] = v
			size += gr.Blocks[b].End - gr.Blocks[b].Addr
			for _, x := range gr.Blocks[b].Succs {
				ed := gr.Edges[x]
				if ed.Kind != cfg.EdgeBranch && ed.Kind != cfg.EdgeFallThrough || ed.To < 0 {
					ok = false
				} else if x != e && gr.BreaksPath(x) {
					ok = false // a way out of the copy the first copy must take
				}
			}
			lc.next[b] = e
			if !ok || e == back {
				break
			}
			v += n.Inc[e] // a DAG edge within one region (likelyCycle)
			b = gr.Edges[e].To
		}
		if !ok || size > loopCopyMax {
			continue
		}
		p := lc.val[gr.Edges[back].From] + n.ExitInc[back]
		if p < 0 || uint64(p) >= n.NumPaths {
			continue
		}
		r, has := fp.regionReg(fp.loopAt(l.Header))
		rec, recOK := fp.deadRegFor(back, r, has)
		if fp.slot == 0 && !recOK {
			continue
		}
		b := fp.g.buf
		for id := range lc.next {
			lc.blocks = append(lc.blocks, id)
		}
		lc.partial = len(lc.blocks) < len(l.Blocks)
		sort.Slice(lc.blocks, func(i, j int) bool { return gr.Blocks[lc.blocks[i]].Addr < gr.Blocks[lc.blocks[j]].Addr })
		for _, id := range lc.blocks {
			lc.label[id] = b.NewLabel()
		}
		lc.top, lc.counter = b.NewLabel(), fp.slot+8+8*int32(p)
		if fp.slot == 0 {
			lc.record, lc.rec, lc.counter = true, rec, countsOff+8+8*int32(p)
		}
		if fp.loopCopies == nil {
			fp.loopCopies, fp.copyBack = map[cfg.BlockID]*loopCopy{}, map[cfg.EdgeID]*loopCopy{}
		}
		fp.loopCopies[l.Header], fp.copyBack[back] = lc, lc
		// The loop's other backedges restart the path where back does
		// or elsewhere: the first lead into the copy too, once they have
		// counted their path, from either copy.
		for _, e := range l.Backedges {
			if e != back && n.EntryInc[e] == n.EntryInc[back] {
				fp.copyBack[e] = lc
			}
		}
	}
}

// likelyCycle picks, in natural loop l, a cycle from the header round
// to one of its backedges that a copy can count at its head: through
// DAG edges between blocks of l that no inner loop holds and that stay
// in one loop region, ending in a backedge on which the flags are dead
// and that does not break a path. Where there is a choice it takes the
// way the compiler laid out as likely, by the rule static predictors
// use: a backward branch is taken, a forward one is not (the
// fall-through). It returns the edge each of the cycle's blocks takes,
// and the backedge; nil when there is no such cycle.
func (fp *funcPlan) likelyCycle(l cfg.Loop) (map[cfg.BlockID]cfg.EdgeID, cfg.EdgeID) {
	gr, n := fp.f.Graph, fp.num
	own := map[cfg.BlockID]bool{}
	for _, b := range l.Blocks {
		if gr.Blocks[b].LoopDepth == l.Depth {
			own[b] = true
		}
	}
	usable := func(e cfg.EdgeID) bool {
		ed := gr.Edges[e]
		return ed.To >= 0 && own[ed.From] && own[ed.To] &&
			(ed.Kind == cfg.EdgeBranch || ed.Kind == cfg.EdgeFallThrough) &&
			n.Kind[e] == pathnum.DAGEdge && !fp.crossesLoop(e)
	}
	// dist: blocks from each block to a latch, breadth first backwards
	// from all of them (which blocks reach one); closing is the backedge
	// each latch takes.
	dist, closing := map[cfg.BlockID]int{}, map[cfg.BlockID]cfg.EdgeID{}
	var queue []cfg.BlockID
	for _, e := range l.Backedges {
		ed := gr.Edges[e]
		if _, dup := dist[ed.From]; dup || ed.To != l.Header || !own[ed.From] || n.Kind[e] == pathnum.DAGEdge || gr.BreaksPath(e) || ed.FlagsLive {
			continue
		}
		dist[ed.From], closing[ed.From] = 0, e
		queue = append(queue, ed.From)
	}
	for ; len(queue) > 0; queue = queue[1:] {
		b := queue[0]
		for _, e := range gr.Blocks[b].Preds {
			if from := gr.Edges[e].From; usable(e) {
				if _, seen := dist[from]; !seen {
					dist[from] = dist[b] + 1
					queue = append(queue, from)
				}
			}
		}
	}
	if _, ok := dist[l.Header]; !ok {
		return nil, 0
	}
	cycle := map[cfg.BlockID]cfg.EdgeID{}
	for b := l.Header; ; {
		if dist[b] == 0 {
			cycle[b] = closing[b]
			return cycle, closing[b]
		}
		// DAG edges only, so the walk ends, at a latch.
		best, rank := cfg.EdgeID(0), 3
		for _, e := range gr.Blocks[b].Succs {
			ed := gr.Edges[e]
			if _, ok := dist[ed.To]; !ok || !usable(e) {
				continue
			}
			r := 2 // a forward branch
			if ed.Kind == cfg.EdgeFallThrough {
				r = 1
			} else if gr.Blocks[ed.To].Addr <= gr.Blocks[b].Addr {
				r = 0 // a backward branch
			}
			if r < rank {
				best, rank = e, r
			}
		}
		if rank == 3 {
			return nil, 0
		}
		cycle[b] = best
		b = gr.Edges[best].To
	}
}

// copyable reports whether block id ends in a conditional or direct
// jump or falls through, with its code in the file, and has no system
// call to hook: what emitLoopCopy can copy.
func (fp *funcPlan) copyable(id cfg.BlockID) bool {
	for _, l := range fp.f.Graph.Leaves {
		if l.Syscall && l.Block == id {
			return false // its hook needs the register's value [decision 59]
		}
	}
	blk := &fp.f.Graph.Blocks[id]
	code := fp.g.b.Code(blk.Last)
	if blk.Last < blk.Addr || blk.Last >= blk.End || uint64(len(code)) < blk.End-blk.Last {
		return false
	}
	in, err := x86.Decode(code[:blk.End-blk.Last], blk.Last)
	return err == nil && (in.Kind == x86.Jcc || in.Kind == x86.Jmp || in.Kind == x86.Other)
}

// emitLoopCopy writes the second copy of a one-cycle loop [decision 58].
// The first copy's backedge counts its path as any backedge does, sets
// the path register to EntryInc and jumps to the header's copy; the
// copy's backedge goes to top, which counts the path that edge ended
// (flags are dead there) and falls into the header's copy. The cycle's
// edges carry no code in the copy; an edge out of the loop sets the
// path register to its value at that block, then runs the first copy's
// code for the edge.
func (fg *funcGen) emitLoopCopy(lc *loopCopy) {
	b, gr := fg.g.buf, fg.f.Graph
	type exit struct {
		label enc.Label
		from  cfg.BlockID
		edge  cfg.EdgeID
	}
	var exits []exit
	fail := func(err error) {
		if fg.coldErr == nil {
			fg.coldErr = err
		}
	}
	if !fg.entered[lc] {
		fail(fmt.Errorf("%#x: loop copy: the first copy's backedge does not lead to it", gr.Blocks[lc.header].Addr))
		return
	}
	// to is where cycle edge e leads in the copy.
	to := func(e cfg.EdgeID) enc.Label {
		if e == lc.back {
			return lc.top
		}
		return lc.label[gr.Edges[e].To]
	}
	alignTo(b, 64, 63)
	for i, id := range lc.blocks {
		blk := &gr.Blocks[id]
		if id == lc.header {
			fg.mark(blk.Addr, false)
			b.SetSP(0)
			b.Bind(lc.top)
			fg.countCopy(lc)
		}
		b.Bind(lc.label[id])
		code := fg.g.b.Code(blk.Addr)
		var last x86.Inst
		for a := blk.Addr; a < blk.End; {
			in, err := x86.Decode(code[a-blk.Addr:blk.End-blk.Addr], a)
			if err != nil {
				fail(err)
				return
			}
			fg.mark(a, true)
			if a+uint64(in.Len) < blk.End || in.Kind == x86.Other {
				if err := fg.copyInst(&in, code[a-blk.Addr:]); err != nil {
					fail(err)
					return
				}
			}
			last = in
			a += uint64(in.Len)
		}
		// next is the label bound right after this block's code.
		var next enc.Label
		hasNext := i+1 < len(lc.blocks)
		if hasNext {
			next = lc.label[lc.blocks[i+1]]
			if lc.blocks[i+1] == lc.header {
				next = lc.top
			}
		}
		cyc := lc.next[id]
		var out cfg.EdgeID
		hasOut := false
		for _, e := range blk.Succs {
			if e != cyc {
				out, hasOut = e, true
			}
		}
		raw := code[last.Addr-blk.Addr:]
		switch last.Kind {
		case x86.Jcc:
			if gr.Edges[cyc].Kind == cfg.EdgeBranch {
				if err := fg.reloc(&last, raw, enc.LabelTarget(to(cyc))); err != nil {
					fail(err)
					return
				}
				fg.copyExit(lc, id, out) // the fall-through leaves
				continue
			}
			l := b.NewLabel()
			exits = append(exits, exit{l, id, out})
			if err := fg.reloc(&last, raw, enc.LabelTarget(l)); err != nil {
				fail(err)
				return
			}
		case x86.Other:
			if hasOut {
				fail(fmt.Errorf("%#x: loop copy: a fall-through block with two edges", last.Addr))
				return
			}
		}
		if !hasNext || next != to(cyc) {
			if last.Kind == x86.Jmp {
				fg.copied(last.Addr) // the block's jmp, re-aimed
			}
			b.JmpRel32(enc.LabelTarget(to(cyc)))
		} else if last.Kind == x86.Jmp {
			fg.joined(last.Addr) // the jmp is left out: it would jump to the next instruction
		}
	}
	for _, x := range exits {
		b.Bind(x.label)
		fg.mark(gr.Blocks[x.from].Last, false)
		b.SetSP(0)
		fg.copyExit(lc, x.from, x.edge)
	}
}

// countCopy is the head of a loop copy: count the path its backedge
// ended.
func (fg *funcGen) countCopy(lc *loopCopy) {
	b := fg.g.buf
	if faultInjection && fault("pathend") {
		return
	}
	if !lc.record {
		b.AddGS64Imm(lc.counter, 1)
		return
	}
	// The record form checks what recordBackedgeIn does: this
	// activation's record, with P among its dense counters. The slow
	// path counts through the stub (the path register holds EntryInc,
	// so the stub's r + ExitInc is P) and goes on to the header.
	slow := b.NewLabel()
	b.MovRegFromGS(lc.rec, runtime.OffRecord)
	fg.ownRecord(lc.rec, slow)
	b.CmpMemImm32(lc.rec, runtime.RecordDenseNOff, (lc.counter-countsOff-8)/8)
	b.JccRel32(enc.CondBE, enc.LabelTarget(slow))
	b.IncMem(lc.rec, lc.counter)
	fg.coldBackedge(lc.back, slow, lc.label[lc.header], 0)
}

// closedCall emits a closed function's call [decisions 57, 61, 64]. An
// inside call stores nothing: the callee keeps this activation's
// register (its entry value) and its return address names this site.
// A leaf call stores the site and the register in the thread's LeafSite
// and LeafR, and clears the site after. An outside call stores the
// register and the site in this activation's frame first and loads the
// register back after. A call that does not
// return leaves the activation as it is, for the runtime to find in that
// call, so its edge to Exit has no code; should it return after all, the
// original code after it runs. Calls to closed functions go to their
// internal entry.
func (fg *funcGen) closedCall(id cfg.BlockID, in *x86.Inst, code []byte, next cfg.BlockID, site int32) error {
	b := fg.g.buf
	_, isNoRet := fg.succ(id, cfg.EdgeNoReturn)
	target := fg.g.target(in.Target)
	if callee, ok := fg.g.closedAt[in.Target]; ok && in.Kind == x86.Call {
		target = enc.LabelTarget(callee.internal)
	}
	inside := in.Kind == x86.Call && fg.insideCall(in.Target, isNoRet)
	leaf := in.Kind == x86.Call && fg.leafCall(in.Target, isNoRet)
	switch {
	case leaf:
		b.MovGS64Imm(runtime.OffLeafSite, site)
		b.MovGSFromReg(runtime.OffLeafR, fg.preg)
	case !inside:
		fg.outsideCallStore(site)
	}
	if err := fg.reloc(in, code, target); err != nil {
		return err
	}
	if leaf {
		b.MovGS64Imm(runtime.OffLeafSite, 0) // the register is still there
		if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok {
			fg.follow(e, next)
		}
		return nil
	}
	if isNoRet {
		b.JmpRel32(enc.AbsTarget(in.Addr + uint64(in.Len)))
		return nil
	}
	if inside {
		ret := b.NewLabel()
		b.Bind(ret)
		fg.g.siteRet[site] = ret
	} else {
		fg.outsideCallLoad()
	}
	if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok {
		fg.follow(e, next)
	}
	return nil
}

// copyExit leaves a loop copy by edge e from block id: the path
// register gets the value it has there in the first copy, then e's code
// runs as in the first copy.
func (fg *funcGen) copyExit(lc *loopCopy, id cfg.BlockID, e cfg.EdgeID) {
	b, v := fg.g.buf, int32(lc.val[id])
	if fg.hasPreg {
		b.MovRegImm(fg.preg, v) // sign-extended; flags untouched
	} else {
		b.MovGS64Imm(fg.g.stubs.OffR, v)
	}
	fg.follow(e, cfg.BlockID(len(fg.f.Graph.Blocks)))
}

// copyInst relocates a non-terminating instruction; one that reads a
// jump table's entry reads its jump's copy of the table instead.
func (fg *funcGen) copyInst(in *x86.Inst, code []byte) error {
	fg.copied(in.Addr)
	if t, ok := fg.loadOf[in.Addr]; ok {
		if t < 0 {
			return fmt.Errorf("%#x: one load of a jump table entry feeds several indirect jumps", in.Addr)
		}
		nt := &fg.g.tables[t]
		if bl, ok := nt.biasOf[in.Addr]; ok && nt.biased && bl.jump {
			return fg.biasedJump(t, bl)
		}
		at, disp, err := fg.g.buf.CopyDisp32(in, code)
		if err != nil {
			return fmt.Errorf("jump table load: %w", err)
		}
		fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: int64(disp) - int64(nt.jt.Table)})
		if fg.g.pie && !nt.relative {
			// The entry is counted from the base register's value
			// [decision 72].
			bl, ok := nt.biasOf[in.Addr]
			if !nt.biased || !ok {
				return fmt.Errorf("%#x: absolute jump table in a PIE whose load cannot add its base", in.Addr)
			}
			fg.g.buf.LeaRegBaseIndex(bl.dst, bl.base, bl.dst)
		}
		return nil
	}
	return enc.Relocate(fg.g.buf, in, code, enc.Target{})
}

// biasedJump emits an indirect jump that reads entry of the absolute
// PIE table copy t itself [decision 72]: the entry goes to a register
// the program does not read after the jump, or else to one borrowed
// through the red zone (redZoneFree) (nor the instrumentation: the
// path and loop registers are kept out; the index register itself will
// do, the load reads it first), the base is added, and the jump
// goes through the register.
func (fg *funcGen) biasedJump(t int, bl biasedLoad) error {
	gr := fg.f.Graph
	live := fg.liveIn
	if live == nil {
		live = gr.RegsLiveIn()
	}
	free := deadAfter(gr, live, fg.g.tables[t].jt.Jump) &^ (1<<bl.base | 1<<enc.RSP)
	if fg.hasPreg {
		free &^= 1 << fg.preg
	}
	if fg.fnHasPreg {
		free &^= 1 << fg.fnPreg
	}
	for _, l := range fg.loops {
		free &^= 1 << l.reg
	}
	b := fg.g.buf
	if free == 0 {
		if !redZoneFree(fg.g.b, gr) {
			return fmt.Errorf("%#x: no register is free after the indirect jump that reads an absolute PIE table", fg.g.tables[t].jt.Jump)
		}
		// Borrow a register through the red zone: -8(%rsp) keeps its
		// value, -16(%rsp) receives the target.
		s := enc.RAX
		for s == bl.base || s == bl.index {
			s++
		}
		b.MovMemFromReg(enc.RSP, -8, s)
		at := b.MovRegFromMemIdx8(s, bl.base, bl.index, 0)
		fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: -int64(bl.baseAddr)})
		b.LeaRegBaseIndex(s, bl.base, s)
		b.MovMemFromReg(enc.RSP, -16, s)
		b.MovRegFromMem(s, enc.RSP, -8)
		b.JmpMem(enc.RSP, -16)
		return nil
	}
	var dst enc.Reg
	for free&(1<<dst) == 0 {
		dst++
	}
	at := b.MovRegFromMemIdx8(dst, bl.base, bl.index, 0)
	fg.g.patches = append(fg.g.patches, patch{at: at, tab: t + 1, add: -int64(bl.baseAddr)})
	b.LeaRegBaseIndex(dst, bl.base, dst)
	b.JmpReg(dst)
	return nil
}

// terminator emits a block's last instruction with its out-edges.
func (fg *funcGen) terminator(id cfg.BlockID, in *x86.Inst, code []byte, next cfg.BlockID) error {
	b, gr := fg.g.buf, fg.f.Graph
	succs := gr.Blocks[id].Succs
	switch in.Kind {
	case x86.Call, x86.CallIndirect:
		// The call site, for the runtime to tell where this activation
		// stopped should it never come back (exit, longjmp, a fatal
		// signal in the callee): the callee's entry saves it.
		site, ok := fg.callSite[in.Addr]
		if !ok {
			return fmt.Errorf("%#x: call without a planned call site", in.Addr)
		}
		fg.lastSite = site
		if fg.closed {
			return fg.closedCall(id, in, code, next, site)
		}
		fg.storeCallSite(site)
		fg.spill()
		if e, ok := fg.succ(id, cfg.EdgeNoReturn); ok {
			// A call that never returns ends the activation, unless an
			// exception it raises (__cxa_throw, _Unwind_Resume) lands
			// in this very function: then the landing pad carries on
			// with the activation, and its path so far is recorded
			// there as a partial path [DESIGN 6].
			if !fg.f.Graph.InTry(in.Addr) {
				fg.edgeCode(e)
			}
			if k := fg.callLeave(in.Addr, in.Target); k != 0 {
				fg.leaveHook(k)
			}
			if err := fg.reloc(in, code, fg.g.target(in.Target)); err != nil {
				return err
			}
			// Should the callee return after all, continue in the
			// original code after the call.
			b.JmpRel32(enc.AbsTarget(in.Addr + uint64(in.Len)))
			return nil
		}
		if k := fg.callLeave(in.Addr, in.Target); k != 0 {
			fg.leaveHook(k) // an exec, which returns if it fails
		}
		if err := fg.reloc(in, code, fg.g.target(in.Target)); err != nil {
			return err
		}
		fg.reload() // the callee may have clobbered it; Thread.R is back
		if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok && fg.forkSites[in.Addr] && !gr.Edges[e].FlagsLive {
			fg.forkChild(site)
		}
		if e, ok := fg.succ(id, cfg.EdgeCallReturn); ok {
			fg.follow(e, next)
		}
		return nil
	case x86.Jcc:
		taken, okT := fg.succ(id, cfg.EdgeBranch, cfg.EdgeTailCall)
		fall, okF := fg.succ(id, cfg.EdgeFallThrough)
		if !okT || !okF {
			return fmt.Errorf("%#x: conditional branch without both edges", in.Addr)
		}
		if err := fg.reloc(in, code, fg.via(taken)); err != nil {
			return err
		}
		fg.follow(fall, next)
		return nil
	case x86.Jmp:
		if len(succs) != 1 {
			return fmt.Errorf("%#x: jmp with %d edges", in.Addr, len(succs))
		}
		e := succs[0]
		fg.edgeCode(e)
		return fg.reloc(in, code, fg.dest(e))
	case x86.Ret, x86.Halt:
		if len(succs) == 1 {
			fg.edgeCode(succs[0])
		}
		return fg.reloc(in, code, enc.Target{})
	case x86.JmpIndirect:
		if e, ok := fg.succ(id, cfg.EdgeTailCall); ok && len(succs) == 1 {
			fg.edgeCode(e)
			return fg.copyInst(in, code)
		}
		if err := fg.jumpTable(id, in); err != nil {
			return err
		}
		return fg.copyInst(in, code)
	default: // Other, Syscall
		fg.syscallLeave(in)
		if err := fg.copyInst(in, code); err != nil {
			return err
		}
		if len(succs) == 1 {
			fg.follow(succs[0], next)
		}
		return nil
	}
}

func (fg *funcGen) reloc(in *x86.Inst, code []byte, t enc.Target) error {
	if !in.Kind.HasTarget() {
		return fg.copyInst(in, code)
	}
	fg.copied(in.Addr)
	return enc.Relocate(fg.g.buf, in, code, t)
}

// jumpTable fills the copy of the table the indirect jump ending block
// id reads: each entry leads to the new code of its target block, through
// the edge's trampoline when the edge carries instrumentation. Every jump
// has a copy of its own, since the edges of each carry their own
// increments, even where replicated dispatch jumps share one table
// [decision 66].
func (fg *funcGen) jumpTable(id cfg.BlockID, in *x86.Inst) error {
	gr := fg.f.Graph
	t, ok := fg.tabOf[in.Addr]
	if !ok {
		return fmt.Errorf("%#x: indirect jump without a table", in.Addr)
	}
	nt := &fg.g.tables[t]
	if nt.done {
		return fmt.Errorf("%#x: jump table emitted twice", in.Addr)
	}
	nt.done = true
	via := map[uint64]enc.Label{}
	for _, e := range gr.Blocks[id].Succs {
		ed := gr.Edges[e]
		if ed.Kind != cfg.EdgeJumpTable {
			continue
		}
		t := fg.via(e)
		tl, isLabel := t.Label()
		if !isLabel {
			return fmt.Errorf("%#x: table target outside the function", in.Addr)
		}
		via[gr.Blocks[ed.To].Addr] = tl
	}
	for _, a := range nt.jt.Targets {
		tl, ok := via[a]
		if !ok {
			return fmt.Errorf("%#x: table entry %#x has no edge", in.Addr, a)
		}
		nt.targets = append(nt.targets, tl)
	}
	return nil
}

// tablesDone checks that every table copy of fg was filled: a copy its
// loads read but no jump filled would send them anywhere.
func (fg *funcGen) tablesDone() error {
	for j, t := range fg.tabOf {
		if !fg.g.tables[t].done {
			return fmt.Errorf("%#x: the indirect jump was not emitted, its table copy is empty", j)
		}
	}
	return nil
}

// planTables gives each table jump of fg its copy of the table and maps
// the instructions that read the entry to it.
func (fp *funcPlan) planTables() {
	g := fp.g
	fp.tabOf, fp.loadOf = map[uint64]int{}, map[uint64]int{}
	gr := fp.f.Graph
	for i := range gr.Tables {
		jt := &gr.Tables[i]
		t := len(g.tables)
		nt := newTable{label: g.buf.NewLabel(), jt: jt, relative: jt.Relative, base: jt.Base}
		if g.pie && !jt.Relative {
			// Layout refused the function unless this holds
			// (pieTableBlocker); an error here leaves the table unbiased
			// and the code generator fails the function below.
			if loads, base, err := biasLoads(g.b, jt); err == nil {
				nt.biased, nt.biasOf, nt.base = true, loads, base
			}
		}
		g.tables = append(g.tables, nt)
		fp.tabOf[jt.Jump] = t
		for _, l := range jt.Loads {
			if _, dup := fp.loadOf[l]; dup {
				// One load feeding two jumps cannot read two copies.
				fp.loadOf[l] = -1
				continue
			}
			fp.loadOf[l] = t
		}
	}
}

// pushImm32 emits push $imm (sign-extended to 64 bits).
func pushImm32(b *enc.Buf, v int32) { b.PushImm32(v) }

// pathRegField is Func.PathReg for fg: 1 + the register's number, or 0.
func (fp *funcPlan) pathRegField() uint64 {
	if !fp.fnHasPreg {
		return 0
	}
	return 1 + uint64(fp.fnPreg)
}

// alignTo pads the buffer with NOPs to a multiple of n (a power of two)
// when that takes at most max bytes. The code buffer starts on a page.
func alignTo(b *enc.Buf, n, max int) {
	if pad := -b.Len() & (n - 1); pad > 0 && pad <= max {
		b.Nop(pad)
	}
}

// forkChild emits, after a call to fork at call site site: when it
// returned 0 (the child), call the runtime to record the path prefixes of
// the activations live across the fork (blpp_rt_fork_child). The flags
// after a call are undefined [SysV x86-64 ABI 3.2.1]; the caller checks
// that the code after it does not read them.
func (fg *funcGen) forkChild(site int32) {
	b := fg.g.buf
	parent := b.NewLabel()
	b.TestReg32(enc.RAX)
	b.JccRel32(enc.CondNE, enc.LabelTarget(parent))
	fg.spill()
	b.LeaRSP(-redZone)
	pushImm32(b, site)
	pushImm32(b, fg.fid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.ForkChild))
	b.LeaRSP(redZone + 16)
	b.Bind(parent)
}
