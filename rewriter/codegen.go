package rewriter

import (
	"fmt"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// The code generator's shared state: the runtime stubs and the mode it
// emits for (Stubs, Mode), the image-wide generator (gen), and the
// emission state of one function (funcGen), which runs off the
// function's plan (plan.go). The jobs are in files of their own: the
// plan (plan.go, planloops.go), the function body and its terminators
// (body.go), chord increments and edge targets (edges.go), entries
// (entry.go), exits (exit.go), backedges (backedge.go), loop copies
// (loopcopy.go), and the pieces they share: shadow frames, flags, the
// path register's spills (frame.go). docs/codegen.md describes the code
// they emit.

// Stubs are the runtime's entry points that instrumentation calls, as
// absolute virtual addresses in the output, and the per-thread block
// offset of the path register.
type Stubs struct {
	Enter, Exit, TailExit, Backedge, SetjmpRet, ForkChild, Leaf, Leave uint64
	// LatWord takes a tsc path end's latency word that holds no entry
	// (backedge.go tscLatency, decision 148).
	LatWord uint64
	// SysSigaction takes the place of an rt_sigaction system call;
	// LibcSigaction and LibcSignal that of an uninstrumented sigaction
	// and signal (sigaction.go, decision 94). 0: none.
	SysSigaction, LibcSigaction, LibcSignal uint64
	// VforkChild is called in a vfork child (spawn.go); LibcClone and
	// LibcClone3 take the place of the C library's clone wrappers. 0:
	// none.
	VforkChild, LibcClone, LibcClone3 uint64
	// LibcSwapcontext, LibcSetcontext, LibcGetcontext and
	// LibcMakecontext take the place of the C library's user-context
	// functions (context.go, decision 122). 0: none.
	LibcSwapcontext, LibcSetcontext, LibcGetcontext, LibcMakecontext uint64
	// ForkSys is called right after a system call that makes a process
	// or thread (spawn.go). 0: none.
	ForkSys uint64
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
	// Latency says that with metrics each path also keeps the latency
	// words of its first metric (runtime.LatencyWords, decision 93):
	// the inline tsc path ends fill them.
	Latency bool
}

// funcGen emits the instrumented copy of one function from its plan: the
// state of the emission, which changes as the code is written.
type funcGen struct {
	*funcPlan
	// g is the generator the function is emitted by: while it is being
	// emitted, a view of the image's with a code buffer of its own
	// (pipeline.go); it hides the plan's g.
	g *gen
	// tramps holds out-of-line edge code: emitted after the body.
	tramps []tramp
	// shared holds the trampolines of Dispatch edges by what their code
	// depends on (dispatchKey), for the jumps that share them.
	shared map[dispatchKey]enc.Label
	// cold holds out-of-line slow paths, emitted after the trampolines.
	cold []coldCode
	// sharedEnt, while the primary entry and its direct variants are
	// emitted, makes the framed entry's ordinary form its tests and a
	// jump into the direct variant [0] (sharedEntry, decision 165).
	sharedEnt *sharedEntry
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
	// entryBlock is the block the entry being emitted leads to: 0, or
	// another entry's (entries.go). pushedAtEntry uses its liveness.
	entryBlock cfg.BlockID
	// entered holds the loop copies whose first copy's backedge has been
	// emitted as a jump to the header's copy; a copy nothing jumps to
	// is a bug.
	entered map[*loopCopy]bool
	// coldErr is the first error of code emitted out of line.
	coldErr error
	// copies records where each original instruction's copies start in
	// the code buffer, for the address map (addrmap.go).
	copies []copyMark
	// dec decodes the original instructions (the worker's: scratch).
	dec *x86.Decoder
	// table and meta are the function's entries in the runtime's
	// function table and in the metadata, made where its analysis is at
	// hand (pipeline.go).
	table runtime.Func
	meta  meta.EncodedFunc
	stats funcStats
	// sz counts the new code by kind and region (codesize.go); with
	// gen.codeMap, ranges lists its stretches at offsets from where its
	// emission began (rangeBase, in the buffer), rangeStart bytes before
	// the function's start.
	sz                    sizer
	ranges                []codeRange
	rangeBase, rangeStart int
}

// emitted drops what only the function's emission needed: the queued
// out-of-line code (closures holding its state), the trampolines, and
// the unwind marks and copies, which pipeline.go has turned into the
// function's unwind rows and address map.
func (fg *funcGen) emitted() {
	fg.tramps, fg.cold, fg.entered, fg.shared = nil, nil, nil, nil
	fg.marks, fg.copies, fg.lpLabel = nil, nil, nil
}

type tramp struct {
	label enc.Label
	edge  cfg.EdgeID
	to    enc.Target
	// endbr: a jump table's entry leads here (decision 95).
	endbr bool
	// shared: the code of several Dispatch edges into the same block;
	// its unwind rules are the target's (decision 134).
	shared bool
}

// gen emits all instrumented functions into one buffer.
type gen struct {
	b *cfg.Binary
	// buf is the image's code buffer, or in a view of gen that emits
	// one function (pipeline.go), that function's child of it.
	buf   *enc.Buf
	stubs Stubs
	// entries maps an instrumented function's original entry to the label
	// of its instrumented copy.
	entries map[uint64]enc.Label
	// tailEntries maps the entries that direct tail jumps with a tail
	// site reach (context images) to the label of their tail variant,
	// the only entry code that reads TailRec (decision 90); movedEntries
	// holds the entries with a moved prefix (decision 67), which get
	// none.
	tailEntries  map[uint64]enc.Label
	movedEntries map[uint64]bool
	funcs        []*funcGen
	// exitHook: an instrumented _exit makes its exit_group system call
	// through the leave hook (ConfigFlagExitHook, decision 164).
	exitHook bool
	// tables are emitted after all code: their entries are label
	// differences resolved after Finish.
	tables  []newTable
	patches []patch
	// pie: the binary is position-independent (a PIE or a shared
	// object), so absolute jump table entries need the load bias.
	pie bool
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
	// failEmit: Options.failEmit.
	failEmit string
	// codeMap: the functions record their stretches (Options.CodeMap).
	codeMap  bool
	loopRegs LoopRegPolicy // Options.LoopRegs
	// dark maps a left-out function's entry to its counting stub
	// (darkentry.go).
	dark map[uint64]enc.Label
	// thunks maps an uninstrumented function the runtime must see called
	// to its thunk (thunk.go).
	thunks map[uint64]*callThunk
	// slotThunks maps a GOT slot the loader fills with such a function's
	// address to its thunk (thunk.go).
	slotThunks map[uint64]*callThunk
	// tag is the module's tag (Options.ModuleTag): 0 for an executable
	// [decision 81].
	tag uint32
	// noSlots gives no function slot counters (libraries,
	// Options.NoSlots).
	noSlots bool
	// workers bounds the goroutines of the per-function passes after
	// emission (Options.Workers).
	workers int
	// release: each function's graph, numbering and the plan's parts
	// made from them are dropped once its code is appended (releaseSize).
	release bool
	// cet says whether the code keeps IBT: endbr64 at every new
	// indirect-branch target (cet.go, decision 95).
	cet cetMode
}

// globalID is the global function id of local id fid: the module's tag
// above runtime.FidBits bits of local id [decision 81]. Every function id
// the instrumentation compares or passes to the runtime is global; the
// module's tables (runtime.Func, the flat records) are indexed by the
// local one. For tag 0 the two are the same.
func (g *gen) globalID(fid int32) int32 {
	return int32(g.tag)<<runtime.FidBits | fid
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

// addCold queues an out-of-line piece of code, to be emitted after the
// trampolines in the loop region that is current now.
func (fg *funcGen) addCold(f func()) {
	fg.cold = append(fg.cold, coldCode{f: f, loop: fg.inLoop, kind: fg.sz.kind})
}

// addColdAt queues the out-of-line code f at label l, reached from the
// inline code at the current original instruction (the address map's
// mark) with the stack sp bytes from the activation's %rsp.
func (fg *funcGen) addColdAt(l enc.Label, sp int32, f func()) {
	fg.cold = append(fg.cold, coldCode{f: f, loop: fg.inLoop, kind: fg.sz.kind, at: fg.cur, sp: sp, label: l, bind: true})
}

// coldCode is out-of-line code queued by addCold or addColdAt: f, emitted
// in the loop region and as the code kind that were current when it was
// queued; with bind, at label, marked as the original instruction at and
// with the stack sp bytes from the activation's %rsp. One record rather
// than closures around f: a large library queues millions.
type coldCode struct {
	f     func()
	loop  int
	kind  codeKind
	at    uint64
	sp    int32
	label enc.Label
	bind  bool
}

// emitCold emits c (see coldCode).
func (fg *funcGen) emitCold(c *coldCode) {
	saved := fg.inLoop
	fg.setLoop(c.loop)
	pk := fg.beginKind(c.kind)
	if c.bind {
		fg.g.buf.Bind(c.label)
		fg.mark(c.at, false)
		fg.g.buf.SetSP(c.sp)
	}
	c.f()
	fg.endKind(pk)
	fg.setLoop(saved)
}

// setLoop makes loop region l (-1: none) the current one: its register
// becomes the path register.
func (fg *funcGen) setLoop(l int) {
	fg.inLoop = l
	fg.preg, fg.hasPreg = fg.regionReg(l)
}

// slots reports whether the image has slot counters (then every entry
// and exit keeps Thread.Cur).
func (g *gen) slots() bool { return g.slotsSize > 0 }

// target is where control for original address a goes from instrumented
// code: the instrumented copy of a function entered there, else a itself.
func (g *gen) target(a uint64) enc.Target {
	if l, ok := g.entries[a]; ok {
		return enc.LabelTarget(l)
	}
	if t, ok := g.thunkTarget(a); ok {
		return t // a C library function the runtime must see called (thunk.go)
	}
	if t, ok := g.darkTarget(a); ok {
		return t // a left-out function's counting stub (darkentry.go)
	}
	return enc.AbsTarget(a)
}

// tailEntry returns the label of the tail variant of the instrumented
// entry at a, making it on first use, or false where a has none: flow-only
// images leave no tail marks [decision 31], and a moved entry's prefix
// runs before its entry code.
func (g *gen) tailEntry(a uint64) (enc.Label, bool) {
	if !g.tailsToEntry(a) {
		return 0, false
	}
	if l, ok := g.tailEntries[a]; ok {
		return l, true
	}
	if g.tailEntries == nil {
		g.tailEntries = map[uint64]enc.Label{}
	}
	l := g.buf.NewLabel()
	g.tailEntries[a] = l
	return l, true
}

// tailsToEntry reports whether a direct tail jump to a goes to a's
// instrumented entry as a call site (tailEntry has a label for it); it
// only reads the plan.
func (g *gen) tailsToEntry(a uint64) bool {
	_, ok := g.entries[a]
	return ok && !g.mode.FlowOnly && !g.movedEntries[a]
}

// callCache reports whether the image's thread blocks have a call cache
// (runtime.ConfigFlagCallCache): context images whose entries are inline.
func (g *gen) callCache() bool { return !g.mode.FlowOnly && (!g.mode.Metrics || g.mode.TSCOnly) }

// pushImm32 emits push $imm (sign-extended to 64 bits).
func pushImm32(b *enc.Buf, v int32) { b.PushImm32(v) }

// alignTo pads the buffer with NOPs to a multiple of n (a power of two,
// at most maxAlign) when that takes at most max bytes. The code buffer
// starts on a page.
func alignTo(b *enc.Buf, n, max int) {
	if n > maxAlign {
		panic(fmt.Sprintf("alignTo %d: functions are emitted apart for offsets modulo %d (pipeline.go)", n, maxAlign))
	}
	if pad := -b.Len() & (n - 1); pad > 0 && pad <= max {
		b.Nop(pad)
	}
}

// alignFallInto is alignTo for code that execution falls into (a loop
// header after its preheader): padding of more than one NOP is crossed
// by a short jump (decision 104), one instruction where the NOPs of up
// to 63 bytes were up to seven at every entry into the loop.
func alignFallInto(b *enc.Buf, n, max int) {
	if n > maxAlign {
		panic(fmt.Sprintf("alignFallInto %d: functions are emitted apart for offsets modulo %d (pipeline.go)", n, maxAlign))
	}
	if pad := -b.Len() & (n - 1); pad > 0 && pad <= max {
		b.PadJump(pad)
	}
}
