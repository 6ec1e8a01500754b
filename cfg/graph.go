package cfg

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/blpp/blpp/cfg/x86"
)

// BlockID indexes Graph.Blocks. Exit is the virtual block that joins every
// way of leaving the procedure (returns, tail calls, no-return calls, traps)
// [Ball-Larus 96 §3.1: a single EXIT].
type BlockID int32

// Exit is the BlockID of the virtual exit node. It is never an index into
// Graph.Blocks.
const Exit BlockID = -1

// EdgeID indexes Graph.Edges.
type EdgeID int32

// EdgeKind says how control moves along an edge.
type EdgeKind uint8

const (
	// EdgeFallThrough: the next instruction after a block that does not
	// end in a transfer, or the not-taken side of a conditional branch.
	EdgeFallThrough EdgeKind = iota
	// EdgeBranch: the taken side of a direct conditional or unconditional
	// jump inside the procedure.
	EdgeBranch
	// EdgeJumpTable: one distinct target of an indirect jump through a
	// recovered jump table.
	EdgeJumpTable
	// EdgeCallReturn: from a block ending in a call to the block at the
	// call's return address.
	EdgeCallReturn
	// EdgeTailCall: a jump to another procedure's entry (to Exit).
	EdgeTailCall
	// EdgeReturn: a return instruction (to Exit).
	EdgeReturn
	// EdgeNoReturn: a call to a procedure that never returns (to Exit).
	EdgeNoReturn
	// EdgeHalt: hlt, ud2 or int3 end the block and never fall through (to Exit).
	EdgeHalt
	// EdgeLanding: from a block ending in a call to a landing pad that
	// an exception raised in the call lands on [Itanium C++ ABI §1.6].
	// No instruction takes it: the unwinder jumps there. One such edge
	// stands for every call covered by the pad; it breaks paths (like a
	// backedge), so the pad starts a path of its own.
	EdgeLanding
	// EdgeEntry: from the entry block to the block at another entry of
	// a procedure joined from several that share code (Function.Entries).
	// No instruction takes it: calls and jumps to that entry do. It
	// breaks paths, so a path of its own starts at that entry (the pseudo
	// edge ENTRY→w of Ball-Larus 96 §3.3), and its ToExit half is a
	// path no run takes.
	EdgeEntry
	// EdgeResume: from the entry block to a label a computed goto may
	// reach (decision 169). No instruction takes it: the computed gotos
	// do, through the jump the rewriter puts at the label's original
	// address. It breaks paths, so a path starts at the label.
	EdgeResume
	// EdgeGoto: from a block ending in a computed goto to Exit (decision
	// 169). The jump goes to one of the procedure's labels (their
	// EdgeResume edges), not out of it: the edge ends a path and the
	// activation goes on. It breaks paths; its ENTRY→EXIT half is a
	// path no run takes.
	EdgeGoto
	// EdgeReceiver: from the entry block to the receiver of a
	// __builtin_setjmp (decision 169), which __builtin_longjmp in
	// another function reaches through the jump the rewriter puts at
	// the receiver's original address. It breaks paths.
	EdgeReceiver
)

var edgeKindNames = [...]string{
	EdgeFallThrough: "fallthrough",
	EdgeBranch:      "branch",
	EdgeJumpTable:   "jumptable",
	EdgeCallReturn:  "call-return",
	EdgeTailCall:    "tailcall",
	EdgeReturn:      "return",
	EdgeNoReturn:    "noreturn",
	EdgeHalt:        "halt",
	EdgeLanding:     "landing",
	EdgeEntry:       "entry",
	EdgeResume:      "resume",
	EdgeGoto:        "goto",
	EdgeReceiver:    "receiver",
}

func (k EdgeKind) String() string {
	if int(k) < len(edgeKindNames) {
		return edgeKindNames[k]
	}
	return "EdgeKind(" + strconv.Itoa(int(k)) + ")"
}

// LeavesProcedure reports whether edges of this kind go to Exit.
func (k EdgeKind) LeavesProcedure() bool {
	switch k {
	case EdgeTailCall, EdgeReturn, EdgeNoReturn, EdgeHalt:
		return true
	}
	return false
}

// Block is a maximal straight-line run of instructions [Addr, End) of the
// original binary. Blocks end at every control transfer, including calls,
// so that each call site ends a block (the CCT needs call sites as points).
type Block struct {
	Addr  uint64 // first instruction's virtual address in the original binary
	End   uint64 // address just past the last instruction
	Insts int    // number of instructions
	// Last is the address of the block's last instruction.
	Last uint64
	// LoopDepth is the nesting depth of the innermost loop containing the
	// block (0 outside loops). Set by loop analysis.
	LoopDepth int
	// FlagsUse are the flags the block reads before writing them;
	// FlagsDef the flags it certainly writes (for flags liveness).
	FlagsUse, FlagsDef x86.Flags
	// RegsUse are the general registers the block may read before
	// writing them; RegsDef those it surely writes in full (for
	// register liveness, regslive.go).
	RegsUse, RegsDef RegSet
	// Named are the general registers the block's instructions name or
	// use implicitly (namedRegs); Graph.Named is their union.
	Named RegSet
	// adj locates the block's edge lists in Graph.adj: nsucc successors
	// from adj, then npred predecessors (Graph.Succs, Graph.Preds).
	adj, nsucc, npred uint32
}

// Edge is a control-flow edge between blocks, or from a block to Exit.
type Edge struct {
	From, To BlockID
	Kind     EdgeKind
	// FlagsLive reports whether any status flag (CF PF AF ZF SF OF) or DF
	// may be read before being written along some path starting on this
	// edge. Instrumentation on the edge must preserve the flags if so
	// (DESIGN decision 5). Conservatively true where unknown.
	FlagsLive bool
	// Dispatch marks the edges of an interpreter's replicated dispatch
	// jumps (MarkDispatch): path-breaking edges whose path ends are
	// shared per target (pathnum.Edge.Dispatch, decision 134).
	Dispatch bool
	// Target is the callee address of EdgeTailCall and EdgeNoReturn edges,
	// and 0 elsewhere (the destination block gives the address).
	Target uint64
}

// CallSite is a call instruction inside a procedure.
type CallSite struct {
	Addr   uint64  // address of the call instruction
	Len    int     // its length in bytes
	Block  BlockID // the block it ends
	Target uint64  // direct callee address, 0 for an indirect call
	// NoReturn is set when the callee is known not to return.
	NoReturn bool
	// ReturnsTwice is set for calls to setjmp and its kin: control can come
	// back to the return address a second time (through longjmp) without
	// passing the call again.
	ReturnsTwice bool
	// Forks is set for calls to fork and its kin (POSIX fork, glibc's
	// _Fork and internal names): the call returns in two processes.
	Forks bool
	// Vforks is set for calls to vfork (and __vfork), whose child
	// borrows the caller's memory until it execs or exits (decision 94).
	Vforks bool
}

// BreaksPath reports whether edge e must end a Ball-Larus path and start
// another: the call-return edge of a call that returns twice, since the
// second return arrives with the path register of whatever ran before the
// longjmp, and an edge to a landing pad, which the unwinder enters from
// wherever the exception was raised.
func (g *Graph) BreaksPath(e EdgeID) bool {
	ed := &g.Edges[e]
	if ed.Kind == EdgeLanding || ed.Kind == EdgeEntry || ed.Kind == EdgeResume || ed.Kind == EdgeGoto || ed.Kind == EdgeReceiver {
		return true
	}
	if ed.Kind != EdgeCallReturn {
		return false
	}
	last := g.Blocks[ed.From].Last
	// The builder adds the calls in block order, one at most per block
	// (a call ends its block): the search finds the block's call there.
	// A graph made otherwise is looked through, as it always was (for
	// each return edge of a procedure with thousands of calls, that was
	// quadratic).
	if i, ok := slices.BinarySearchFunc(g.Calls, ed.From, func(c CallSite, b BlockID) int { return cmp.Compare(c.Block, b) }); ok && g.Calls[i].Addr == last {
		return g.Calls[i].ReturnsTwice
	}
	for i := range g.Calls {
		if g.Calls[i].Addr == last {
			return g.Calls[i].ReturnsTwice
		}
	}
	return false
}

// JumpTable is a recovered indirect jump through a table in the binary.
type JumpTable struct {
	Jump    uint64 // address of the indirect jmp instruction
	Block   BlockID
	Table   uint64 // address of the table
	Entries int    // number of entries
	// Loads are the instructions that read the entry: a mov or movslq
	// whose memory operand is Table + index*EntrySize, or the jump
	// itself (jmp *T(,%rax,8)); several when handlers load the entry
	// and jump to one shared dispatch jump. Adding d to their
	// displacement makes them read a copy of the table placed d bytes
	// away.
	Loads []uint64
	// Guarded: a bounds check on the index gave Entries. Otherwise the
	// index's value range and the data around the table did.
	Guarded bool
	// EntrySize is 4 (PIC-relative int32 entries) or 8 (absolute pointers).
	EntrySize int
	// Relative: entries are int32 offsets added to Base (gcc/clang PIC
	// pattern). Otherwise entries are absolute addresses, possibly supplied
	// by R_X86_64_RELATIVE relocations in a PIE.
	Relative bool
	Base     uint64
	// Targets holds the target of every entry, in table order (duplicates
	// kept, so Targets[i] is the code run for index i).
	Targets []uint64
	// Dead lists, in increasing order, the indices whose entries lead to
	// the end of the function's body: cases the compiler proved
	// impossible (clang aims __builtin_unreachable cases there). Their
	// Targets are those original addresses; the graph has no edge for
	// them, and a copy of the table keeps them aimed there (decision 98).
	Dead []int
	// Const: no table at all. The jump's register holds one address of
	// the function on every path (glibc's vfprintf: lea L(%rip),%rax
	// before a branch to jmp *%rax); Targets holds it, Entries is 1,
	// Table and Loads are empty, and the copy jumps there directly.
	Const bool
}

// Graph is the control-flow graph of one procedure.
type Graph struct {
	Func *Function
	// Blocks[0] is the entry block; the others follow in address order.
	Blocks []Block
	Edges  []Edge
	Calls  []CallSite
	Tables []JumpTable
	// EH holds the call-site records of the procedure's exception tables
	// (its fragments' LSDAs), in address order: the code ranges whose
	// calls may raise, and where each lands.
	EH []EHRange
	// Loops is the loop nesting forest, outermost loops first (set by
	// FindLoops). Block.LoopDepth agrees with it.
	Loops []Loop
	// Named holds the general registers the procedure's instructions
	// name or use implicitly (namedRegs): a register outside it is never
	// touched by the procedure's own code, only by what it calls.
	Named RegSet
	// Leaves maps the address of each instruction that may end the
	// process image without its exit handlers (leaves.go) to how; nil
	// when there is none.
	Leaves map[uint64]Leave
	// SigActions holds the addresses of the syscall instructions that
	// make rt_sigaction (their %rax is known to be 13, leaves.go), which
	// the rewriter hands to the runtime (decision 94); nil when there is
	// none.
	SigActions map[uint64]bool
	// Forks maps the address of each syscall instruction that makes a
	// process or a thread (clone, fork, vfork or clone3: its %rax is
	// known, leaves.go) to its number and block; the rewriter has the
	// child call the runtime right after it (decision 101). nil when
	// there is none.
	Forks map[uint64]ForkSyscall
	// Islands maps a label a computed goto may reach that has room for
	// a 2-byte jump only (the next label starts 2 to 4 bytes after it)
	// to the address of 5 bytes of the procedure's original code, at
	// most a short jump away, that no label or entry uses: the rewriter
	// puts the label's jump to its resume code there and a short jump
	// to it at the label. nil when there is none.
	Islands map[uint64]uint64
	// EntryFlags holds the flags that code reachable from the entry may
	// read before writing them (set by ComputeFlagsLiveness).
	EntryFlags x86.Flags
	// Reason is ReasonOK when the procedure may be instrumented; otherwise
	// why not, with Detail naming the address and the problem.
	Reason Reason
	Detail string

	// escape is the target of the first jump that left the procedure
	// into the middle of other code, for joining stripped fragments.
	escape uint64
	// escapeWords counts the words of data that hold escape as a jump
	// table's absolute entries, when the escape is such an entry and
	// the table's extent is known: data that points at a fragment only
	// through its parent's table does not make it a function.
	escapeWords int32
	// escapeTable says the escape is a jump table's entry, not a
	// direct jump: a case of the procedure's own switch (discovery
	// joins the stripped, unwind-table-less range it leads to).
	escapeTable bool
	// padTo, when not 0, is the entry of the next procedure that this
	// one's flow reaches through the nops after its range (glibc's
	// __memcpy_chk runs into __memcpy so): padRuns gives it the nops.
	padTo uint64
	// gotoFlags are the flags live on EdgeGoto edges once
	// gotoFlagsKnown (ComputeFlagsLiveness).
	gotoFlags      x86.Flags
	gotoFlagsKnown bool
	// offsetDispatch: the procedure's computed gotos reach the labels
	// of a dispatch table built at run time from offsets (offsetLabels).
	offsetDispatch bool
	// scan is discovery's flow scan of the procedure, made by the
	// builder while discovery runs (flowScan); discover takes it.
	scan *funcScan
	// adj holds every block's edge lists, successors then predecessors,
	// block after block (link). A large binary has millions of blocks:
	// one array per graph instead of two per block, and Blocks holds no
	// pointers for the collector to follow.
	adj []EdgeID
}

// Succs lists the edges leaving block b, in a deterministic order (the
// order of Edges). The slice is the graph's: callers must not change it.
func (g *Graph) Succs(b BlockID) []EdgeID {
	blk := &g.Blocks[b]
	return g.adj[blk.adj : blk.adj+blk.nsucc : blk.adj+blk.nsucc]
}

// Preds lists the edges entering block b, in the order of Edges.
func (g *Graph) Preds(b BlockID) []EdgeID {
	blk := &g.Blocks[b]
	at := blk.adj + blk.nsucc
	return g.adj[at : at+blk.npred : at+blk.npred]
}

// EHRange is one call-site record of an LSDA, with absolute addresses:
// a call in [Start, End) that raises an exception continues at
// LandingPad (0: none, the exception passes on to the caller).
type EHRange struct {
	Start, End, LandingPad uint64
}

// InTry reports whether an exception raised by the call at addr lands
// in this procedure: then the activation goes on after the call even
// when the callee never returns (__cxa_throw, _Unwind_Resume).
func (g *Graph) InTry(addr uint64) bool {
	for _, r := range g.EH {
		if addr >= r.Start && addr < r.End && r.LandingPad != 0 {
			return true
		}
	}
	return false
}

// Loop is a loop of the procedure: a natural loop (one header that
// dominates its body) or an irreducible region (a strongly connected region
// entered at more than one block) [Havlak 97; Ramalingam 02].
type Loop struct {
	Header BlockID   // the natural loop's header; for an irreducible region, the first entry met in DFS
	Blocks []BlockID // every block of the loop, nested loops' blocks included, sorted
	// Entries lists the blocks entered from outside the loop: just Header
	// for a natural loop, two or more for an irreducible region.
	Entries []BlockID
	// Backedges are the edges from inside the loop back to an entry.
	Backedges   []EdgeID
	Parent      int // index in Graph.Loops of the enclosing loop, -1 at top level
	Depth       int // 1 for outermost loops
	Irreducible bool
}

// Entry is the ID of the entry block.
const Entry BlockID = 0

// BlockAt returns the block whose range contains addr. Blocks overlap
// only after a skipped lock prefix ([A, E) and [A+1, E), decision 67);
// there the block that starts at addr is the one returned.
func (g *Graph) BlockAt(addr uint64) (BlockID, bool) {
	if len(g.Blocks) == 0 {
		return 0, false
	}
	// Blocks[0] is the entry; Blocks[1:] are sorted by address. i is the
	// last of them starting at or before addr.
	rest := g.Blocks[1:]
	i := sort.Search(len(rest), func(k int) bool { return rest[k].Addr > addr }) - 1
	if i >= 0 && rest[i].Addr == addr {
		return BlockID(i + 1), true
	}
	if b := &g.Blocks[0]; b.Addr <= addr && addr < b.End {
		return 0, true
	}
	// Overlapping blocks end together, so an earlier block holds addr
	// only if this one does.
	if i >= 0 && addr < rest[i].End {
		return BlockID(i + 1), true
	}
	return 0, false
}

// Reason says why a procedure cannot be instrumented safely.
type Reason uint8

const (
	ReasonOK Reason = iota
	// ReasonTooShort: shorter than the 5-byte jmp that redirects it.
	ReasonTooShort
	// ReasonUnresolvedIndirectJump: an indirect jump that is not a
	// recognised jump table.
	ReasonUnresolvedIndirectJump
	// ReasonBadDecode: bytes that do not decode as instructions (data in
	// code, or an instruction the decoder does not know).
	ReasonBadDecode
	// ReasonOverlap: instructions that overlap each other (a jump into the
	// middle of an instruction).
	ReasonOverlap
	// ReasonEscapingJump: a jump to an address outside the procedure that
	// is not another procedure's entry.
	ReasonEscapingJump
	// ReasonFallsOff: control runs off the end of the procedure's code.
	ReasonFallsOff
	// ReasonPLT: a PLT stub, not code of the program.
	ReasonPLT
	// ReasonNoCode: the procedure's range is not in executable file data.
	ReasonNoCode
	// ReasonTooLarge: more blocks than the analysis accepts.
	ReasonTooLarge
	// ReasonPathOverflow: the path numbering failed.
	ReasonPathOverflow
	// ReasonExceptionTable: the exception tables (LSDA) cannot be read,
	// or name a landing pad outside the procedure.
	ReasonExceptionTable
	// ReasonSigreturn: the C library's signal return trampoline
	// (__restore_rt: mov $15,%rax; syscall). The kernel returns from
	// every handler into it, and unwinders and debuggers recognise a
	// signal frame by its exact bytes, so it must stay byte-identical.
	ReasonSigreturn
	// ReasonVfork: vfork itself. Its child returns from it in its
	// parent's memory, and so would leave its activation in the parent's
	// thread block: the caller's code after the call gives the child a
	// block of its own first (decision 94).
	ReasonVfork
	// ReasonCopied: code the program copies and runs elsewhere. V8's
	// embedded builtins (Builtins_*, in node and every V8 embedder) are
	// remapped next to V8's heap at start-up (short builtin calls), so an
	// entry jump in them, relative to where it was written, would send
	// the copy astray; they also keep V8's own frames, calling
	// convention and deoptimizer, which rewrite return addresses.
	ReasonCopied
	// ReasonFlagsAtEntry: code reachable from the entry reads a status
	// flag before writing it, so the procedure takes flags its caller
	// set. The ABI makes them dead at every call [SysV x86-64 ABI
	// 3.2.1], but hand-written assembly calls its own internal routines
	// with a carry in flight: OpenSSL's __rsaz_512_mulx starts
	// `mulx; mov; mulx; mov; mulx; adc`. The entry instrumentation
	// changes the flags, so such a procedure is left out, and its
	// counting stub keeps them (decision 116).
	ReasonFlagsAtEntry
	// ReasonContextSwitch: the C library's swapcontext, setcontext,
	// getcontext and makecontext. The runtime gives each context a
	// thread block of its own and must see every switch, so calls of
	// these go to its replacements, which call them (decision 122).
	ReasonContextSwitch
)

var reasonNames = [...]string{
	ReasonOK:                     "",
	ReasonTooShort:               "too short",
	ReasonUnresolvedIndirectJump: "unresolved indirect jump",
	ReasonBadDecode:              "undecodable bytes",
	ReasonOverlap:                "overlapping instructions",
	ReasonEscapingJump:           "jump outside the function",
	ReasonFallsOff:               "falls off the end",
	ReasonPLT:                    "PLT stub",
	ReasonNoCode:                 "no code in file",
	ReasonTooLarge:               "too large",
	ReasonPathOverflow:           "path numbering failed",
	ReasonExceptionTable:         "unusable exception table",
	ReasonSigreturn:              "signal return trampoline",
	ReasonVfork:                  "vfork",
	ReasonCopied:                 "copied at run time",
	ReasonFlagsAtEntry:           "reads its caller's flags",
	ReasonContextSwitch:          "switches user contexts (the runtime's replacement runs it)",
}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Reasons lists every Reason except ReasonOK, for summaries.
func Reasons() []Reason {
	var rs []Reason
	for r := ReasonTooShort; int(r) < len(reasonNames); r++ {
		rs = append(rs, r)
	}
	return rs
}

// Instrumentable reports whether the procedure can be instrumented.
func (g *Graph) Instrumentable() bool { return g.Reason == ReasonOK }

// fail records the first reason a procedure cannot be instrumented.
func (g *Graph) fail(r Reason, addr uint64, format string, args ...any) {
	if g.Reason != ReasonOK {
		return
	}
	g.Reason = r
	g.Detail = fmt.Sprintf("%#x: ", addr) + fmt.Sprintf(format, args...)
}

// appendEdge appends an edge without linking it: the builder adds all
// its edges so, then links them at once (link).
func (g *Graph) appendEdge(e Edge) { g.Edges = append(g.Edges, e) }

// link sets every block's edge lists (Succs, Preds) from the edges, in
// edge order, and trims the graph's slices to their length.
func (g *Graph) link() {
	g.Blocks, g.Edges, g.Calls = trim(g.Blocks), trim(g.Edges), trim(g.Calls)
	n := len(g.Edges)
	for i := range g.Blocks {
		g.Blocks[i].nsucc, g.Blocks[i].npred = 0, 0
	}
	for _, e := range g.Edges {
		g.Blocks[e.From].nsucc++
		if e.To >= 0 {
			g.Blocks[e.To].npred++
			n++
		}
	}
	if cap(g.adj) >= n {
		g.adj = g.adj[:n]
	} else {
		g.adj = make([]EdgeID, n)
	}
	at := uint32(0)
	for i := range g.Blocks {
		b := &g.Blocks[i]
		b.adj = at
		at += b.nsucc + b.npred
		// Counted again as the lists fill.
		b.nsucc, b.npred = 0, 0
	}
	for i, e := range g.Edges {
		b := &g.Blocks[e.From]
		g.adj[b.adj+b.nsucc] = EdgeID(i)
		b.nsucc++
	}
	for i, e := range g.Edges {
		if e.To < 0 {
			continue
		}
		b := &g.Blocks[e.To]
		// The successors are all in by now: the predecessors follow.
		g.adj[b.adj+b.nsucc+b.npred] = EdgeID(i)
		b.npred++
	}
}

// trim returns s in an array of its length (nil when empty).
func trim[S ~[]E, E any](s S) S {
	if cap(s) == len(s) {
		return s
	}
	if len(s) == 0 {
		return nil
	}
	t := make(S, len(s))
	copy(t, s)
	return t
}
