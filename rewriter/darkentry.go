package rewriter

// Counting stubs for the functions left uninstrumented (decision 70).
//
// A function the rewriter leaves out still runs its original code, but its
// entry need not be dark: where the entry jump of an instrumented function
// could go, a jump to a small stub goes instead. The stub calls the
// runtime (blpp_dark: every register and the flags kept), which counts the
// entry in the function's record (a child of the running context, or the
// thread's root record in a flow-only image), then runs the function's
// first instructions, relocated, and jumps back into the original body
// after them:
//
//	orig:  jmp stub                 (the first 5 bytes; the rest untouched)
//	stub:  lea -128(%rsp),%rsp; push $fid; call blpp_dark; lea 136(%rsp),%rsp
//	       <the instructions that covered orig's first 5 bytes, relocated>
//	       jmp orig+n
//
// The runtime sees no exit of such a function: its activation changes
// none of the thread's state (frames, record, call site, path register),
// so the instrumented code around it counts exactly as before.

import (
	"fmt"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// darkEntry is the counting stub of one left-out function.
type darkEntry struct {
	fid  int32  // its local function id: NFuncs + its index in Summary.Skipped
	gid  int32  // its global id (gen.globalID)
	addr uint64 // its original entry
	// at is where the jump to the stub goes: addr, or the instruction
	// after the endbr64 there where IBT is kept (decision 95).
	at    uint64
	insts []x86.Inst
	code  []byte // the original bytes of insts, from at
	label enc.Label
	// slot is the %gs offset of the function's calls word in the slot
	// counters of a flow-only, frequency-only image (0: none).
	slot int32
	// keepFlags: the function may read status flags its caller set
	// (cfg.ReasonFlagsAtEntry), or its graph does not say: the stub
	// goes straight to blpp_dark, which keeps them, with no inline
	// count, whose compares and adds would change them.
	keepFlags bool
}

// end is where the stub returns into the original body.
func (d *darkEntry) end() uint64 {
	last := d.insts[len(d.insts)-1]
	return last.Addr + uint64(last.Len)
}

// planDark decides, for every function in skipped (function ids nfuncs,
// nfuncs+1, ... in that order), whether its entries can be counted, and
// records why not in its Skipped entry. into holds the targets of every
// direct branch of the binary (branchTargets). The functions that can get
// a stub get a label in g.dark, so that instrumented code calls the stub
// directly (gen.target).
func (g *gen) planDark(res *analysis.Result, skipped []Skipped, into *cfg.Branches, nfuncs int) []*darkEntry {
	byAddr := map[string]*analysis.Func{}
	for _, f := range res.Funcs {
		byAddr[fmt.Sprintf("%#x", f.Func.Addr)] = f
	}
	g.dark = map[uint64]enc.Label{}
	var out []*darkEntry
	for i := range skipped {
		s := &skipped[i]
		s.EntriesCounted, s.NotCounted = false, ""
		f := byAddr[s.Entry]
		if f == nil {
			s.NotCounted = "not found in the analysis"
			continue
		}
		d, why := darkPlan(g.b, f.Func, s.Reason, into, g.entryJumpAt(f.Func.Addr))
		if d == nil {
			s.NotCounted = why
			continue
		}
		if _, dup := g.dark[d.addr]; dup {
			s.NotCounted = "another function has the same entry"
			continue
		}
		d.keepFlags = f.Graph == nil || len(f.Graph.Blocks) == 0 || f.Graph.EntryFlags&x86.Status != 0
		d.fid = int32(nfuncs + i)
		d.gid = g.globalID(d.fid)
		d.label = g.buf.NewLabel()
		g.dark[d.addr] = d.label
		s.EntriesCounted = true
		out = append(out, d)
	}
	return out
}

// darkPlan checks that the entry of f can be redirected to a counting
// stub by a jump at at (f's entry, or after the endbr64 there: decision
// 95), with the conditions of an instrumented function's entry jump, and
// returns the instructions to relocate, or why not.
func darkPlan(b *cfg.Binary, f *cfg.Function, reason string, into *cfg.Branches, at uint64) (*darkEntry, string) {
	if reason == skipAfterProfile {
		return nil, "it runs after the profile is written"
	}
	if reason == skipCloneChild {
		return nil, "a clone child runs it on its parent's thread block"
	}
	skip := at - f.Addr // the endbr64 the jump leaves, or nothing
	if f.Size < skip+5 {
		if skip > 0 {
			return nil, "shorter than endbr64 and the 5-byte entry jump"
		}
		return nil, "shorter than the 5-byte entry jump"
	}
	if cfg.HoldsSigreturn(b.Code(f.Addr)) {
		return nil, "the signal return trampoline must keep its bytes"
	}
	if f.HasName(cfg.IsCopiedName) {
		return nil, "the program copies it and runs the copy"
	}
	if f.HasName(cfg.IsContextName) {
		// The runtime's replacement has moved %gs to the block of the
		// context it switches to by the time the function runs: a
		// count there would hang an activation of the stack left on
		// that block [decision 122].
		return nil, "it switches user contexts: the runtime's replacement calls it"
	}
	if f.Discovered() && f.Source&cfg.FromCall == 0 {
		// Known only by addresses taken, and left out: nothing proves
		// its bytes are code, and a table in .text that looks like a
		// procedure (libcrypto's AES tables) would get a jump written
		// over it [decision 114].
		return nil, "found only by its address being taken, it may be data"
	}
	// Its original body runs, so no branch at all, its own included,
	// may land in the bytes the entry jump overwrites, nor on the jump
	// after an endbr64.
	for a := f.Addr + 1; a < at+5; a++ {
		if len(into.Sources(a)) > 0 {
			return nil, fmt.Sprintf("code branches into its first %d bytes", skip+5)
		}
	}
	code := b.Code(f.Addr)
	if uint64(len(code)) < f.Size {
		return nil, "its bytes are not in the file"
	}
	code = code[:f.Size]
	d := &darkEntry{addr: f.Addr, at: at}
	for off := int(skip); off < int(skip)+5; {
		in, err := x86.Decode(code[off:], f.Addr+uint64(off))
		if err != nil {
			return nil, fmt.Sprintf("its first instructions do not decode at %#x", f.Addr+uint64(off))
		}
		switch {
		case in.Kind == x86.Call || in.Kind == x86.CallIndirect:
			// The callee would see a return address in the stub, which
			// has no unwind information.
			return nil, "a call among its first 5 bytes"
		case in.Kind.HasTarget() && in.Target >= f.Addr && in.Target < f.Addr+uint64(off+in.Len):
			return nil, "a branch among its first bytes leads back into them"
		}
		d.insts = append(d.insts, in)
		off += in.Len
	}
	d.code = code[skip : d.end()-f.Addr]
	// A jump to the entry from the function's own body would run the
	// stub again and count a second entry for one call.
	for off := 0; off < len(code); {
		in, err := x86.Decode(code[off:], f.Addr+uint64(off))
		if err != nil {
			off++
			continue
		}
		if (in.Kind == x86.Jmp || in.Kind == x86.Jcc) && (in.Target == f.Addr || in.Target == at) {
			return nil, fmt.Sprintf("the jump at %#x inside it leads to its entry", in.Addr)
		}
		off += in.Len
	}
	return d, ""
}

// emitDark emits the stubs after all instrumented code. stub is the
// address of the runtime's blpp_dark.
//
// In a flow-only, frequency-only image each function gets a slot: its
// calls word, at a fixed offset in every thread block's slot counters,
// which is its flat record's counter (rec_new). The stub then counts
// inline, as a trivial function's entry does (enterTrivial): the runtime
// ready, %gs the thread's own block, the record made (its calls word not
// 0), then one add. In a context image it counts inline when the
// function is called again from where it was last (darkContextInline).
// Anything else calls blpp_dark. The inline counts change the flags:
// nothing reads them at a function's entry [SysV x86-64 ABI 3.2.1],
// except in hand-written assembly that passes a carry to its own
// routines (keepFlags), whose stub only calls blpp_dark (decision 116).
func (g *gen) emitDark(ds []*darkEntry, stub uint64) error {
	b := g.buf
	for _, d := range ds {
		if !d.keepFlags && g.mode.FlowOnly && !g.mode.Metrics && !g.noSlots && g.slotsSize+8 <= SlotsMax {
			d.slot = int32(runtime.SlotsOffset + g.slotsSize)
			g.slotsSize += 8
		}
		alignTo(b, 16, 15)
		b.SetSP(0)
		b.Bind(d.label)
		slow, body := b.NewLabel(), b.NewLabel()
		if d.slot != 0 {
			g.testReady(slow)
			b.Push(enc.RCX)
			cmpOwnerRCX(b)
			b.Pop(enc.RCX)
			b.JccRel32(enc.CondNE, enc.LabelTarget(slow))
			b.CmpGS64Imm(d.slot, 0)
			b.JccRel32(enc.CondE, enc.LabelTarget(slow))
			b.AddGS64Imm(d.slot, 1)
			b.JmpRel32(enc.LabelTarget(body))
		} else if !g.mode.FlowOnly && !d.keepFlags {
			g.darkContextInline(d, slow, body)
		}
		b.Bind(slow)
		b.LeaRSP(-redZone)
		pushImm32(b, d.gid)
		b.CallRel32(enc.AbsTarget(stub))
		b.LeaRSP(redZone + 8)
		b.Bind(body)
		for i := range d.insts {
			in := &d.insts[i]
			off := in.Addr - d.at
			if err := enc.Relocate(b, &in.Info, d.code[off:], g.target(in.Target)); err != nil {
				return fmt.Errorf("counting stub of the function at %#x: %w", d.addr, err)
			}
		}
		b.JmpRel32(enc.AbsTarget(d.end()))
	}
	return b.Err()
}

// darkContextInline is the inline part of a context-mode stub: when the
// thread's newest uninstrumented activation (Thread.DarkList, DarkRec) is
// this function's, called from the same call site of the running record
// (a loop calling it again, or its caller called again from anywhere),
// and no shadow frame lies at or below the entry %rsp (nothing to
// unwind), the entry only counts, the node's calls and the record's, and
// the activation takes the old one's place (DarkRSP). The first node of the list
// must be the function's, as blpp_rt_dark's own fast case wants. Three
// registers are pushed without a red-zone step: nothing below %rsp is
// live at an entry (enterLean). Anything else pops them and takes
// blpp_dark, which finds or makes the record and keeps the activation.
// The byte sequences are enterInline's.
func (g *gen) darkContextInline(d *darkEntry, slow, body enc.Label) {
	b := g.buf
	pop := b.NewLabel()
	g.testReady(slow)
	b.Push(enc.RAX)
	b.Push(enc.RCX)
	b.Push(enc.RDX)
	const saved = 24
	gateRCX(b, pop)
	b.MovRegFromGS(enc.RCX, runtime.OffSP)
	b.LeaRegDisp32(enc.RAX, enc.RSP, int32(saved)) // entry rsp
	b.CmpMemRegD8(enc.RCX, frRSP, enc.RAX)         // the newest frame
	b.JccRel32(enc.CondBE, enc.LabelTarget(pop))
	b.MovRegFromReg(enc.RCX, enc.RAX)          // the entry %rsp, kept
	b.MovRegFromGS(enc.RAX, runtime.OffRecord) // never 0 (childNodeIn)
	b.MovRegFromGS(enc.RDX, runtime.OffCallSite)
	b.SubRegMemD8(enc.RDX, enc.RAX, runtime.RecordFirstSiteOff)
	b.CmpRegMemD8(enc.RDX, enc.RAX, runtime.RecordNSitesOff)
	b.JccRel32(enc.CondAE, enc.LabelTarget(pop))
	b.MovRegFromMemD8(enc.RAX, enc.RAX, runtime.RecordKidsOff)
	b.LeaRegIdxD8(enc.RDX, enc.RAX, enc.RDX, 8, 8) // the list's head word
	b.CmpRegGS(enc.RDX, runtime.OffDarkList)
	b.JccRel32(enc.CondNE, enc.LabelTarget(pop))
	b.MovRegFromMem(enc.RAX, enc.RDX, 0) // its first node, or zero_node (childNodeIn)
	b.CmpMemImm32D8(enc.RAX, runtime.NodeFuncOff, d.gid)
	b.JccRel32(enc.CondNE, enc.LabelTarget(pop))
	b.MovRegFromMemD8(enc.RDX, enc.RAX, runtime.NodeRecOff)
	b.CmpRegGS(enc.RDX, runtime.OffDarkRec)
	b.JccRel32(enc.CondNE, enc.LabelTarget(pop))
	b.MovGSFromReg(runtime.OffDarkRSP, enc.RCX) // the activation to follow callbacks of
	b.IncMemD8(enc.RAX, runtime.NodeCountOff)
	b.IncMemD32(enc.RDX, countsOff) // the record's calls
	b.Pop(enc.RDX)
	b.Pop(enc.RCX)
	b.Pop(enc.RAX)
	b.JmpRel32(enc.LabelTarget(body))
	b.SetSP(-saved)
	b.Bind(pop)
	b.Pop(enc.RDX)
	b.Pop(enc.RCX)
	b.Pop(enc.RAX)
	b.JmpRel32(enc.LabelTarget(slow))
}

// darkFuncs writes the function table's entries of the left-out
// functions (ids NFuncs and up) that have stubs: their slots. The others
// stay zero.
func darkFuncs(ds []*darkEntry, put func(fid int32, f runtime.Func)) {
	for _, d := range ds {
		put(d.fid, runtime.Func{Slot: uint64(d.slot)})
	}
}

// darkPatches redirects each left-out function's entry to its stub.
func darkPatches(ds []*darkEntry, addrOf func(enc.Label) uint64) ([]elfw.Patch, error) {
	var ps []elfw.Patch
	for _, d := range ds {
		jmp, err := enc.JmpRel32At(d.at, addrOf(d.label))
		if err != nil {
			return nil, fmt.Errorf("dark entry at %#x: %w", d.addr, err)
		}
		ps = append(ps, elfw.Patch{Addr: d.at, Bytes: jmp})
	}
	return ps, nil
}

// darkTarget is gen.target's look-up of a left-out function's stub.
func (g *gen) darkTarget(a uint64) (enc.Target, bool) {
	if l, ok := g.dark[a]; ok {
		return enc.LabelTarget(l), true
	}
	return enc.Target{}, false
}

// skipAfterProfile is Rewrite's reason for _fini: counting its entry
// would be lost anyway.
const skipAfterProfile = "runs after the profile is written"
