package rewriter

import (
	"slices"
	"sort"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/pathnum"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Planning: what goes where in each function's instrumented copy,
// decided for every function before any code is emitted (funcPlan):
// slot counters, the path register, closed functions, call sites, jump
// table copies. Loop registers and loop copies are in planloops.go.

// funcPlan is what goes where in one function's instrumented copy,
// decided before any of its code is emitted (this file and
// planloops.go) and only read while emitting (TestPlanReadOnlyWhileEmitting): the numbering and its chord
// increments, the call sites, the slot counters, the path register and
// the loop registers, closed-function status, the loop copies, the jump
// table copies, and the labels other code jumps to. Labels are names
// for positions the emitter binds; naming them in the plan lets one
// function's code refer to another's (closed calls, direct calls)
// before that one is emitted.
type funcPlan struct {
	g *gen
	f *analysis.Func
	// fid is the function's local id, its index in the module's tables;
	// gid the global one that the instrumentation's immediates carry
	// (gen.globalID) [decision 81].
	fid, gid int32
	num      *pathnum.Numbering
	// entry labels the instrumented copy's entry, blocks each block's
	// copy.
	entry  enc.Label
	blocks []enc.Label
	// prefixEnd, when not 0, is the moved entry [decision 67]: the
	// graph starts there, and the original entry jump goes there, to
	// afterPrefix; entry leads to a copy of the instructions before it.
	prefixEnd   uint64
	afterPrefix enc.Label
	// others are the function's other entries (entries.go).
	others []otherEntry
	// resumes are the labels its computed gotos reach and the receivers
	// of its __builtin_setjmp (entries.go, decision 169).
	resumes []otherEntry
	// tabOf gives each indirect jump through a table (by the jump's
	// address) its own copy of the table, loadOf the same copy by the
	// address of each instruction that reads the entry [decision 66].
	tabOf, loadOf map[uint64]int
	// firstSite is the id of the function's first call site; its calls
	// have the ids that follow, in address order; tailSite holds
	// the ids of its direct tail jumps to instrumented functions, by
	// edge; siteAddrs lists every site's instruction address by id.
	firstSite int32
	nCalls    int32 // siteAddrs[:nCalls] are the calls' (callSiteOf)
	tailSite  map[cfg.EdgeID]int32
	forkSites map[uint64]bool // calls to fork and its kin (cfg.CallSite.Forks)
	// vforkSites are the calls to vfork (cfg.CallSite.Vforks), after
	// which a vfork child leaves its parent's thread block (spawn.go).
	vforkSites map[uint64]bool
	// setjmps is set where the function calls setjmp or its kin: a call
	// that does not return may come back to it there (longjmp to its own
	// jmp_buf), so such a call leaves the activation live [decision 112].
	setjmps bool
	// leaveSite holds the call-site ids of the system calls that may end
	// the process image (cfg.Leave), by address [decision 59].
	leaveSite map[uint64]int32
	// forkSite holds the call-site ids of the system calls that make a
	// process or thread (cfg.Graph.Forks), by address: the child tells
	// the runtime where the activation stood (spawn.go, decision 101).
	forkSite  map[uint64]int32
	siteAddrs []uint64
	// localSites and tailTargets carry what findSites found on a worker
	// to numberSites: the sites' table entries, and the targets of the
	// tail jumps among them, in order.
	localSites  [][2]uint64
	tailTargets []uint64
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
	// from closed functions use [decision 61] (enterLean binds it).
	closed   bool
	internal enc.Label
	// keeps: a closed function that returns only by ret, so that its
	// callers' path register comes back as it was; callsOut: a closed
	// function with calls that are not inside calls, which store the
	// register and the call site in its own frame [decision 64].
	keeps, callsOut bool
	// direct labels the direct variants of the entry (planDirect,
	// decision 100), where hasDirect: [0] for callers that spill their
	// path register as before, [1] for those that keep it there
	// (directCall.keep).
	direct    [2]enc.Label
	hasDirect [2]bool
	// directs are its direct calls (planDirect), by call address.
	directs []directCallAt
	// loopCopies are the loops whose later iterations run in a copy
	// that counts at its head [decision 58] (planLoopCopies), by
	// header; copyBack maps each one's backedge (taken in the first
	// copy, and leading to the copy of the header) to it.
	loopCopies map[cfg.BlockID]*loopCopy
	copyBack   map[cfg.EdgeID]*loopCopy
	// newCopies are the loop copies planLoopCopies made, in the order
	// it made them, until labelLoopCopies gives them their labels.
	newCopies []*loopCopy
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
	if !g.mode.FlowOnly || g.mode.Metrics || g.noSlots || np == 0 || np > DenseMax {
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
			fg.internal = g.buf.NewLabel()
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
	if !fp.lean() || !fp.fnHasPreg || fp.trivial() || len(gr.EH) > 0 || len(gr.Leaves) > 0 || fp.prefixEnd != 0 || len(gr.Func.Entries) > 0 {
		return false
	}
	for _, ed := range gr.Edges {
		if ed.To == cfg.Exit && ed.Kind != cfg.EdgeReturn && ed.Kind != cfg.EdgeTailCall && ed.Kind != cfg.EdgeNoReturn {
			return false
		}
		if ed.Kind == cfg.EdgeResume || ed.Kind == cfg.EdgeReceiver {
			return false // decision 169
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

// regionReg is the path register in loop region l (-1: outside every
// region): the region's register, else the function's, if it has one.
func (fp *funcPlan) regionReg(l int) (enc.Reg, bool) {
	if l < 0 {
		return fp.fnPreg, fp.fnHasPreg
	}
	return fp.loops[l].reg, true
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

// lean reports whether the function's inline entry and exit leave
// Thread.record alone: a flow-only function with slot counters, whose
// running record Thread.cur names [decision 51].
func (fp *funcPlan) lean() bool { return fp.g.mode.FlowOnly && fp.slot != 0 }

// trivial reports whether fg is a lean function of one path that calls
// nothing and leaves only by returning: its whole instrumentation is an
// inline entry that counts its call and its path (enterTrivial), with no
// shadow frame and nothing at its exit [decision 55].
func (fp *funcPlan) trivial() bool { return fp.lean() && fp.onePathLeaf() }

// frameless reports whether fg is a function of one path that calls
// nothing and leaves only by returning, in an image that counts
// frequencies only without slot counters (context mode, flow-only
// libraries): its whole instrumentation is an inline entry that counts
// its call and its path in its record (enterFrameless, decision 88).
func (fp *funcPlan) frameless() bool {
	return !fp.g.mode.Metrics && fp.slot == 0 && fp.prefixEnd == 0 && fp.onePathLeaf()
}

// onePathLeaf reports whether fg has one path, calls nothing, makes no
// system call that may end the process or make one, has one entry and
// leaves only by returning: what trivial and frameless functions share.
func (fp *funcPlan) onePathLeaf() bool {
	gr := fp.f.Graph
	if fp.num.NumPaths != 1 || len(gr.Calls) != 0 || fp.hasSyscallLeave() || len(gr.Forks) > 0 || len(gr.Func.Entries) > 0 {
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

// site adds a call site ending block blk, whose instruction is at addr,
// to the function's sites (findSites) and returns its number among
// them; numberSites makes it an id. A function's sites get consecutive
// ids: its calls in address order, its system calls that may end the
// image, those that make a process, then its direct tail jumps.
func (fp *funcPlan) site(blk cfg.BlockID, addr uint64) int32 {
	fp.localSites = append(fp.localSites, [2]uint64{uint64(fp.fid), uint64(blk)})
	fp.siteAddrs = append(fp.siteAddrs, addr)
	return int32(len(fp.localSites) - 1)
}

// findSites finds the function's call sites and numbers them from 0
// (site). It reads the graph and the plan of every function's entries
// alone, so it runs on the workers; numberSites, in function order on
// one goroutine, then gives the sites their ids, and siteIDs moves the
// maps to them, on the workers again.
func (fp *funcPlan) findSites() {
	// Maps are made when something goes in (most stay empty): reading
	// a nil map finds nothing. The calls' ids need none (callSiteOf).
	fp.tailSite, fp.forkSites, fp.vforkSites, fp.leaveSite, fp.forkSite = nil, nil, nil, nil, nil
	fp.setjmps = false
	n := len(fp.f.Graph.Calls) + len(fp.f.Graph.Forks)
	fp.siteAddrs = make([]uint64, 0, n)
	fp.localSites = make([][2]uint64, 0, n)
	calls := append([]cfg.CallSite(nil), fp.f.Graph.Calls...)
	sort.Slice(calls, func(i, j int) bool { return calls[i].Addr < calls[j].Addr })
	for _, c := range calls {
		fp.site(c.Block, c.Addr)
		if c.Forks {
			fp.forkSites = setIn(fp.forkSites, c.Addr, true)
		}
		if c.Vforks {
			fp.vforkSites = setIn(fp.vforkSites, c.Addr, true)
		}
		fp.setjmps = fp.setjmps || c.ReturnsTwice
	}
	// A __builtin_setjmp's receiver is a second return too (decision 169).
	for _, ed := range fp.f.Graph.Edges {
		fp.setjmps = fp.setjmps || ed.Kind == cfg.EdgeReceiver
	}
	fp.nCalls = int32(len(calls))
	// Then the system calls that may end the image: the runtime finds
	// where the activation stopped by their site [decision 59].
	var sys []uint64
	for a, l := range fp.f.Graph.Leaves {
		if l.Syscall {
			sys = append(sys, a)
		}
	}
	slices.Sort(sys)
	for _, a := range sys {
		fp.leaveSite = setIn(fp.leaveSite, a, fp.site(fp.f.Graph.Leaves[a].Block, a))
	}
	// Then those that make a process or thread (decision 101).
	sys = sys[:0]
	for a := range fp.f.Graph.Forks {
		sys = append(sys, a)
	}
	sort.Slice(sys, func(i, j int) bool { return sys[i] < sys[j] })
	for _, a := range sys {
		fp.forkSite = setIn(fp.forkSite, a, fp.site(fp.f.Graph.Forks[a].Block, a))
	}
	// Then, block by block, the direct tail jumps to instrumented
	// functions: call sites too, the callee's activation is made a child
	// of this one [DESIGN 7]. An indirect jump is not one (its target
	// is only known at run time): the builder gives a block ending in
	// one no tail-call edge with a target (only indirect ones, Target
	// 0), so the edges tell, without decoding the block's last
	// instruction again. A block whose last instruction does not decode
	// fails the function in the emitter.
	gr := fp.f.Graph
	fp.tailTargets = nil
	for id := range gr.Blocks {
		blk := &gr.Blocks[id]
		if blk.Last < blk.Addr || blk.Last >= blk.End || uint64(len(fp.g.b.Code(blk.Last))) < blk.End-blk.Last {
			continue
		}
		for _, e := range gr.Succs(cfg.BlockID(id)) {
			ed := gr.Edges[e]
			if ed.Kind != cfg.EdgeTailCall || ed.Target == 0 {
				continue
			}
			if fp.g.tailsToEntry(ed.Target) {
				fp.tailSite = setIn(fp.tailSite, e, fp.site(cfg.BlockID(id), blk.Last))
				fp.tailTargets = append(fp.tailTargets, ed.Target)
			}
		}
	}
}

// numberSites gives the sites findSites found their ids, following the
// sites of the functions numbered before, and makes the labels of the
// entries its tail jumps go to (tailEntry), in the order they had when
// sites were found and numbered in one pass on one goroutine.
func (fp *funcPlan) numberSites() {
	g := fp.g
	if len(g.sites) == 0 {
		g.sites = append(g.sites, [2]uint64{})
	}
	fp.firstSite = int32(len(g.sites))
	g.sites = append(g.sites, fp.localSites...)
	fp.localSites = nil
	for _, a := range fp.tailTargets {
		g.tailEntry(a)
	}
	fp.tailTargets = nil
}

// callSiteOf returns the id of the call at addr.
func (fp *funcPlan) callSiteOf(addr uint64) (int32, bool) {
	calls := fp.siteAddrs[:fp.nCalls]
	// The last call there, as a map filled in order would hold.
	i := sort.Search(len(calls), func(i int) bool { return calls[i] > addr }) - 1
	if i < 0 || calls[i] != addr {
		return 0, false
	}
	return fp.firstSite + int32(i), true
}

// setIn sets m[k] to v, making m if it is nil, and returns m.
func setIn[K comparable, V any](m map[K]V, k K, v V) map[K]V {
	if m == nil {
		m = map[K]V{}
	}
	m[k] = v
	return m
}

// siteIDs turns the numbers in the function's site maps into ids (once
// numberSites has run).
func (fp *funcPlan) siteIDs() {
	for _, m := range []map[uint64]int32{fp.leaveSite, fp.forkSite} {
		for k := range m {
			m[k] += fp.firstSite
		}
	}
	for k := range fp.tailSite {
		fp.tailSite[k] += fp.firstSite
	}
}

// planLoops plans the function's loop registers and loop copies from
// its register liveness, which must be known (layout computes it on
// every worker first). It reads the function's own plan and graph
// alone and makes no label (labelLoopCopies does), so it runs for all
// functions at once on the workers.
func (fp *funcPlan) planLoops() {
	fp.planLoopRegs()
	fp.planLoopCopies()
}

// planBody plans what the function's body needs beyond its slot and
// register (assignSlot, assignPathReg, planClosed) and its loops
// (planLoops): call-site ids, from the sites found for every function
// first, and the labels of the entries its tail jumps go to and of its
// loop copies. It runs for every function in order before any is
// emitted; call-site ids and labels follow that order.
func (fp *funcPlan) planBody() {
	fp.numberSites()
	fp.labelLoopCopies()
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

// nsites is the number of call sites the function has so far.
func (fp *funcPlan) nsites() int { return len(fp.siteAddrs) }

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
	biased bool
	biasOf map[uint64]biasedLoad
	// selfRel: a biased table whose jump holds the entry's own address
	// (biasedLoad.selfRel): each entry is its target less its own
	// address.
	selfRel bool
	// targets are the copy's entries: labels of new code, or the
	// original address of a dead entry (decision 98).
	targets []enc.Target
	done    bool
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

// hashed reports whether fg counts its paths in hash tables (the
// runtime's Func.Hashed), and hashInline whether its path ends count
// inline in the newest table: frequency-only images, whose entries are a
// key and one count [decision 48].
func (fp *funcPlan) hashed() bool { return fp.num.NumPaths > DenseMax }

func (fp *funcPlan) hashInline() bool { return fp.hashed() && !fp.g.mode.Metrics }

func (fp *funcPlan) succ(b cfg.BlockID, kind ...cfg.EdgeKind) (cfg.EdgeID, bool) {
	for _, e := range fp.f.Graph.Succs(b) {
		for _, k := range kind {
			if fp.f.Graph.Edges[e].Kind == k {
				return e, true
			}
		}
	}
	return 0, false
}

// planTables gives each table jump of fg its copy of the table and maps
// the instructions that read the entry to it.
func (fp *funcPlan) planTables() {
	g := fp.g
	fp.tabOf, fp.loadOf = nil, nil // made for the first table (setIn)
	gr := fp.f.Graph
	for i := range gr.Tables {
		jt := &gr.Tables[i]
		if jt.Const {
			continue // a direct jump in the copy: no table (decision 98)
		}
		t := len(g.tables)
		nt := newTable{label: g.buf.NewLabel(), jt: jt, relative: jt.Relative, base: jt.Base}
		if g.pie && !jt.Relative {
			// Layout refused the function unless this holds
			// (pieTableBlocker); an error here leaves the table unbiased
			// and the code generator fails the function below.
			if loads, base, err := biasLoads(g.b, jt); err == nil {
				nt.biased, nt.biasOf, nt.base = true, loads, base
				nt.selfRel = loads[jt.Jump].selfRel
			}
		}
		g.tables = append(g.tables, nt)
		fp.tabOf = setIn(fp.tabOf, jt.Jump, t)
		for _, l := range jt.Loads {
			if _, dup := fp.loadOf[l]; dup {
				// One load feeding two jumps cannot read two copies.
				fp.loadOf[l] = -1
				continue
			}
			fp.loadOf = setIn(fp.loadOf, l, t)
		}
	}
}

// pathRegField is Func.PathReg for fg: 1 + the register's number, or 0.
func (fp *funcPlan) pathRegField() uint64 {
	if !fp.fnHasPreg {
		return 0
	}
	return 1 + uint64(fp.fnPreg)
}
