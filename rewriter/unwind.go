package rewriter

import (
	"debug/elf"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/rewriter/ehwrite"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/rewriter/enc"
)

// unwindMark says that the new code from buffer offset off on (up to the
// next mark) stands for the original instruction at addr: a copy of it
// (body) or instrumentation that runs where it would run (the entry
// sequence, an edge trampoline, a slow path). Its unwind rules are the
// original instruction's, with the CFA moved by whatever the
// instrumentation pushed (enc.Buf's SP log).
type unwindMark struct {
	addr uint64
	off  int32 // the code buffer stays under 2 GiB (enc.Buf's fields)
	body bool
}

func (fg *funcGen) mark(addr uint64, body bool) {
	b := fg.g.buf
	fg.cur = addr
	if body {
		b.SetSP(0)
	}
	m := unwindMark{off: int32(b.Len()), addr: addr, body: body}
	if n := len(fg.marks); n > 0 && fg.marks[n-1].off == m.off {
		fg.marks[n-1] = m
		return
	}
	fg.marks = append(fg.marks, m)
}

// landingPads queues the code the unwinder enters at each landing pad:
// the runtime unwinds the shadow frames of the activations the exception
// left (each recorded as a partial path), records this activation's path
// up to the call that raised as a partial path too, and starts the next
// path at the pad, like the ENTRY→pad pseudo edge of its EdgeLanding
// [DESIGN 6, 7]. It reuses the setjmp stub: call site -1 is never a real
// call's, which makes it take the "came back through a non-local exit"
// branch. Normal control flow into the pad's block (if any) jumps past
// this code.
func (fg *funcGen) landingPads() {
	g, b, gr := fg.g, fg.g.buf, fg.f.Graph
	for i, ed := range gr.Edges {
		if ed.Kind != cfg.EdgeLanding {
			continue
		}
		e := cfg.EdgeID(i)
		lp := gr.Blocks[ed.To].Addr
		l := b.NewLabel()
		if fg.lpLabel == nil {
			fg.lpLabel = map[uint64]enc.Label{}
		}
		fg.lpLabel[lp] = l
		to := fg.blocks[ed.To]
		restart := int32(fg.num.EntryInc[e])
		fg.addCold(func() {
			b.Bind(l)
			fg.mark(lp, false)
			b.SetSP(0)
			g.endbr() // the unwinder jumps here (decision 95)
			fg.nonLocalArrival(restart, to)
		})
	}
}

// nonLocalArrival is the code where control arrives from a newer
// activation (an exception's landing pad, a __builtin_setjmp receiver):
// the setjmp stub with call site -1 unwinds the activations left and
// restarts the path at restart in Thread.R; then the block at to.
func (fg *funcGen) nonLocalArrival(restart int32, to enc.Label) {
	b := fg.g.buf
	b.LeaRSP(-redZone)
	b.PushImm32(-1)
	b.PushImm32(restart)
	b.PushImm32(0)
	b.PushImm32(fg.gid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.SetjmpRet))
	b.LeaRSP(redZone + 32)
	fg.reload() // the runtime restarted the path in Thread.R
	b.JmpRel32(enc.LabelTarget(to))
}

// ehSection is the read-only segment of new exception-handling data:
// the LSDAs of relocated functions, then a complete .eh_frame (every
// original CIE and FDE, moved, plus one FDE per relocated function),
// then its .eh_frame_hdr search table, which PT_GNU_EH_FRAME points at.
type ehSection struct {
	addr                          uint64
	data                          []byte
	lsdaSize, frameOff, hdrOff    uint64
	frameSize, hdrSize            uint64
	withFDE, withLSDA, withoutFDE int
}

// ehFunc is what the FDE of one relocated function needs: the CIE, the
// call frame program (prog, or progErr, from rows) and the exception
// table. The function's worker makes it where the code was emitted
// (pipeline.go); shift moves it to where the code landed.
type ehFunc struct {
	fg      *funcGen
	cie     *ehframe.CIE
	rows    []ehframe.Row // kept only when progErr says what is wrong with them
	prog    []byte
	progErr error
	lsda    *ehframe.LSDA // nil: none
}

// program makes ef's call frame program from its rows, and drops them
// (into rowsPool, whence unwindInfo takes its array).
func (ef *ehFunc) program(codeAddr uint64) {
	ef.prog, ef.progErr = ehwrite.Program(ef.cie, codeAddr+uint64(ef.fg.start), codeAddr+uint64(ef.fg.end), ef.rows)
	if ef.progErr == nil {
		rows := ef.rows[:0]
		rowsPool.Put(&rows)
		ef.rows = nil
	}
}

// rowsPool keeps the arrays of unwind rows between functions.
var rowsPool sync.Pool

// origScratch is what unwindInfo works with and leaves for the next
// function: the original entries' rows and the marks' states.
type origScratch struct {
	rows   []ehframe.Row
	states []*ehframe.State
}

var origPool = sync.Pool{New: func() any { return new(origScratch) }}

// shift moves ef's addresses by d bytes (its function's code moved so
// far); fg has moved already.
func (ef *ehFunc) shift(d int, codeAddr uint64) {
	if d == 0 {
		return
	}
	if ef.lsda != nil {
		ef.lsda.LPStart += uint64(d)
		for i := range ef.lsda.CallSites {
			cs := &ef.lsda.CallSites[i]
			cs.Start += uint64(d)
			cs.End += uint64(d)
			if cs.LandingPad != 0 {
				cs.LandingPad += uint64(d)
			}
		}
	}
	if ef.progErr != nil {
		// The program does not depend on where the code is; its error
		// names addresses.
		for i := range ef.rows {
			ef.rows[i].Addr += uint64(d)
		}
		ef.program(codeAddr)
	}
}

// unwindInfo works out the unwind rows and exception table of fg's new
// code at codeAddr. ok is false when the original has no unwind
// information for it (then neither does the copy: unwinding through it
// fails as it did before). An error means the copy would unwind or catch
// differently from the original: the function must stay uninstrumented.
//
// spLog is the %rsp log of the buffer the function was emitted into and
// sp0 the displacement in force where it began (where the log has no
// entry before the function's start).
func unwindInfo(b *cfg.Binary, frame *ehframe.Frame, opts ehframe.Options, fg *funcGen, spLog []enc.SPMark, sp0 int32, codeAddr uint64) (ef *ehFunc, ok bool, err error) {
	// The rows of the original entries the function's code comes from
	// (an entry and its fragments'), read once each.
	var entryRows []ehframe.Row
	var rowsOf *ehframe.Entry
	rowCache := map[*ehframe.Entry][]ehframe.Row{}
	// The original rows go one after the other into one array, and the
	// marks' states point into it, until the function's rows are made;
	// both arrays serve the next function (decision 118). What the
	// function keeps of them are copies of the states, whose register
	// rules are arrays of their own.
	sc := origPool.Get().(*origScratch)
	defer func() {
		clear(sc.states) // no pointers into the rows while pooled
		sc.rows, sc.states = sc.rows[:0], sc.states[:0]
		origPool.Put(sc)
	}()
	// The marks' addresses mostly rise: the entry of the last one and
	// where it stops being the answer (FindUntil), and the row found.
	var findAt, findUntil uint64
	var found *ehframe.Entry
	rowAt := -1
	find := func(addr uint64) *ehframe.Entry {
		if addr < findAt || addr >= findUntil {
			found, findUntil = frame.FindUntil(addr)
			findAt = addr
		}
		return found
	}
	// stateAt points into the rows, which no one changes.
	stateAt := func(addr uint64) (*ehframe.Entry, *ehframe.State, bool, error) {
		e := find(addr)
		if e == nil {
			return nil, nil, false, nil
		}
		if e == rowsOf && rowAt >= 0 && entryRows[rowAt].Addr <= addr && (rowAt+1 == len(entryRows) || addr < entryRows[rowAt+1].Addr) {
			return e, &entryRows[rowAt].State, true, nil
		}
		rows, done := entryRows, e == rowsOf
		if !done {
			rows, done = rowCache[e]
		}
		if !done {
			at := len(sc.rows)
			sc.rows, err = e.AppendRows(sc.rows)
			if err != nil {
				return nil, nil, false, fmt.Errorf("unwind rules of %#x: %w", e.Begin, err)
			}
			// Capped: the next entry's rows may go on in this array,
			// never into these.
			rows = sc.rows[at:len(sc.rows):len(sc.rows)]
			rowCache[e] = rows
		}
		entryRows, rowsOf = rows, e
		i := sort.Search(len(rows), func(i int) bool { return rows[i].Addr > addr })
		if i == 0 {
			rowAt = -1
			return nil, nil, false, fmt.Errorf("no unwind row for %#x", addr)
		}
		rowAt = i - 1
		return e, &rows[i-1].State, true, nil
	}
	// Which original entries the function's code comes from; they must
	// agree on the CIE, and all of it must be covered or none.
	var entries []*ehframe.Entry
	states := slices.Grow(sc.states[:0], len(fg.marks))[:len(fg.marks)]
	clear(states)
	sc.states = states
	// The nops the function runs through into the next one (cfg's
	// padRuns: glibc's __memcpy_chk variants), after the range its FDE
	// covers, run in the state before them: a nop changes no rule.
	f := fg.f.Func
	covered := 0
	for i, m := range fg.marks {
		addr := m.addr
		if f.NopsFrom != 0 && addr >= f.NopsFrom && addr < f.Addr+f.Size && find(addr) == nil {
			addr = f.NopsFrom - 1
		}
		e, st, found, err := stateAt(addr)
		if err != nil {
			return nil, false, err
		}
		if !found {
			continue
		}
		covered++
		states[i] = st
		if !slices.Contains(entries, e) {
			entries = append(entries, e)
		}
	}
	if covered == 0 {
		return nil, false, nil
	}
	if covered != len(fg.marks) {
		return nil, false, fmt.Errorf("unwind information covers only part of the function")
	}
	// One CIE for the whole copy. gcc gives a fragment without exception
	// regions (foo.cold holding only a return path) a CIE without
	// personality; the copy takes the one with the personality routine,
	// and that fragment's instructions get call-site entries without a
	// landing pad below, so exceptions pass through them as before.
	ef = &ehFunc{fg: fg, cie: entries[0].CIE}
	if buf, ok := rowsPool.Get().(*[]ehframe.Row); ok {
		ef.rows = (*buf)[:0]
	}
	for _, e := range entries[1:] {
		if e.CIE.PersonalityEnc != 0xff && ef.cie.PersonalityEnc == 0xff || e.CIE.LSDAEnc != 0xff && ef.cie.LSDAEnc == 0xff {
			ef.cie = e.CIE
		}
	}
	for _, e := range entries {
		if !compatibleCIE(e.CIE, ef.cie) {
			return nil, false, fmt.Errorf("fragments with different CIEs (%#x, %#x)", entries[0].Begin, e.Begin)
		}
	}
	// Rows: the mark's state, with the CFA moved by the instrumentation's
	// pushes where the CFA is %rsp-based [DWARF5 §6.4.1].
	si := sort.Search(len(spLog), func(i int) bool { return spLog[i].Off > fg.start })
	sp := sp0
	if si > 0 {
		sp = spLog[si-1].SP
	}
	mi := 0
	off := fg.start
	// The state and push depth of the step before: a step with both the
	// same (most marks of a row share its state) adds no row.
	var prevState *ehframe.State
	prevSP := sp
	for off < fg.end {
		for mi+1 < len(fg.marks) && int(fg.marks[mi+1].off) <= off {
			mi++
		}
		for si < len(spLog) && spLog[si].Off <= off {
			sp = spLog[si].SP
			si++
		}
		if states[mi] != prevState || sp != prevSP {
			prevState, prevSP = states[mi], sp
			st := *states[mi]
			if sp != 0 && st.CFA.Expr == nil && st.CFA.Reg == dwarfRSP {
				st.CFA.Off -= int64(sp)
			}
			if n := len(ef.rows); n == 0 || !ef.rows[n-1].State.Equal(st) {
				ef.rows = append(ef.rows, ehframe.Row{Addr: codeAddr + uint64(off), State: st})
			}
		}
		next := fg.end
		if mi+1 < len(fg.marks) && int(fg.marks[mi+1].off) < next {
			next = int(fg.marks[mi+1].off)
		}
		if si < len(spLog) && spLog[si].Off < next {
			next = spLog[si].Off
		}
		if next <= off {
			next = off + 1 // defensive: never loop
		}
		off = next
	}
	// The exception table: each call-site record of the original LSDAs,
	// moved to where its instructions went.
	for _, e := range entries {
		if e.LSDA == 0 {
			continue
		}
		sec, secAddr := lsdaSectionData(b, e.LSDA)
		if sec == nil {
			return nil, false, fmt.Errorf("LSDA at %#x is not in file data", e.LSDA)
		}
		l, err := ehframe.ParseLSDA(sec, secAddr, e.LSDA, e.Begin, opts)
		if err != nil {
			return nil, false, err
		}
		if ef.lsda == nil {
			ef.lsda = &ehframe.LSDA{LPStart: codeAddr + uint64(fg.start), TTypeEnc: l.TTypeEnc}
		} else if ef.lsda.TTypeEnc == 0xff {
			ef.lsda.TTypeEnc = l.TTypeEnc
		} else if l.TTypeEnc != 0xff && l.TTypeEnc != ef.lsda.TTypeEnc {
			return nil, false, fmt.Errorf("fragments' LSDAs encode types differently")
		}
		for _, cs := range l.CallSites {
			var lp uint64
			if cs.LandingPad != 0 {
				lab, ok := fg.lpLabel[cs.LandingPad]
				if !ok {
					return nil, false, fmt.Errorf("landing pad %#x has no new code", cs.LandingPad)
				}
				o, _ := fg.g.buf.Offset(lab)
				lp = codeAddr + uint64(o)
			}
			for i, m := range fg.marks {
				if !m.body || m.addr < cs.Start || m.addr >= cs.End {
					continue
				}
				end := fg.end
				if i+1 < len(fg.marks) {
					end = int(fg.marks[i+1].off)
				}
				n := ehframe.CallSite{Start: codeAddr + uint64(m.off), End: codeAddr + uint64(end), LandingPad: lp, Actions: cs.Actions}
				ef.lsda.CallSites = append(ef.lsda.CallSites, n)
			}
		}
	}
	if ef.lsda != nil {
		// Fragments without an LSDA of their own: their calls let
		// exceptions through (no entry would mean std::terminate under
		// the personality routine the copy now has).
		for i, m := range fg.marks {
			if !m.body {
				continue
			}
			if e := find(m.addr); e == nil || e.LSDA != 0 {
				continue
			}
			end := fg.end
			if i+1 < len(fg.marks) {
				end = int(fg.marks[i+1].off)
			}
			ef.lsda.CallSites = append(ef.lsda.CallSites, ehframe.CallSite{Start: codeAddr + uint64(m.off), End: codeAddr + uint64(end)})
		}
		sort.Slice(ef.lsda.CallSites, func(i, j int) bool { return ef.lsda.CallSites[i].Start < ef.lsda.CallSites[j].Start })
		merged := ef.lsda.CallSites[:0]
		for _, cs := range ef.lsda.CallSites {
			if n := len(merged); n > 0 && merged[n-1].End == cs.Start && merged[n-1].LandingPad == cs.LandingPad && reflect.DeepEqual(merged[n-1].Actions, cs.Actions) {
				merged[n-1].End = cs.End
				continue
			}
			merged = append(merged, cs)
		}
		ef.lsda.CallSites = merged
	}
	return ef, true, nil
}

// dwarfRSP is %rsp's DWARF register number on x86-64 [SysV x86-64 ABI
// 3.6.2, Figure 3.36].
const dwarfRSP = 7

// compatibleCIE reports whether an FDE of CIE a may be described under
// CIE b instead: the rows are full states, so only what is not in them
// must agree: the return-address column, the signal-frame flag and,
// where a has one, the personality routine.
func compatibleCIE(a, b *ehframe.CIE) bool {
	if a == b {
		return true
	}
	if a.RAReg != b.RAReg || a.Signal != b.Signal {
		return false
	}
	if a.PersonalityEnc != 0xff && (b.PersonalityEnc == 0xff || a.Personality != b.Personality) {
		return false
	}
	return a.LSDAEnc == 0xff || b.LSDAEnc != 0xff
}

// lsdaSectionData returns the bytes and address of the allocated
// section holding addr.
func lsdaSectionData(b *cfg.Binary, addr uint64) ([]byte, uint64) {
	for _, s := range b.File.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || s.Type == elf.SHT_NOBITS || addr < s.Addr || addr >= s.Addr+s.Size {
			continue
		}
		d := b.Bytes(s.Addr, int(s.Size))
		if d == nil {
			return nil, 0
		}
		return d, s.Addr
	}
	return nil, 0
}

// buildEH lays out the exception-handling segment at addr.
func buildEH(frame *ehframe.Frame, funcs []*ehFunc, rt *rtFrame, codeAddr, addr uint64) (*ehSection, error) {
	out := &ehSection{}
	lsdaAddr := map[*ehFunc]uint64{}
	for _, ef := range funcs {
		if ef.lsda == nil {
			continue
		}
		at := addr + uint64(len(out.data))
		d, err := ehwrite.EncodeLSDA(ef.lsda, at, ef.lsda.LPStart)
		if err != nil {
			return nil, fmt.Errorf("%s: exception table: %w", ef.fg.f.Func.Name, err)
		}
		lsdaAddr[ef] = at
		out.data = append(out.data, d...)
		out.withLSDA++
	}
	out.lsdaSize = uint64(len(out.data))
	for len(out.data)%8 != 0 {
		out.data = append(out.data, 0)
	}
	out.frameOff = uint64(len(out.data))
	bld := ehwrite.NewBuilder(addr + out.frameOff)
	progBytes := 0
	for _, ef := range funcs {
		progBytes += len(ef.prog)
	}
	rtFDEs, rtBytes := rt.size()
	bld.Reserve(frame, len(funcs)+rtFDEs, progBytes+rtBytes)
	if err := bld.CopyFrame(frame); err != nil {
		return nil, fmt.Errorf(".eh_frame: %w", err)
	}
	for _, ef := range funcs {
		begin := codeAddr + uint64(ef.fg.start)
		end := codeAddr + uint64(ef.fg.end)
		if err := bld.AddFDEProgram(ef.cie, begin, end, ef.prog, ef.progErr, lsdaAddr[ef]); err != nil {
			return nil, fmt.Errorf("%s: unwind table: %w", ef.fg.f.Func.Name, err)
		}
		out.withFDE++
	}
	if err := rt.add(bld); err != nil {
		return nil, err
	}
	fd, table := bld.Finish()
	out.data = append(out.data, fd...)
	out.frameSize = uint64(len(fd))
	for len(out.data)%4 != 0 {
		out.data = append(out.data, 0)
	}
	out.hdrOff = uint64(len(out.data))
	hdr, err := ehwrite.BuildHdr(addr+out.hdrOff, addr+out.frameOff, table)
	if err != nil {
		return nil, fmt.Errorf(".eh_frame_hdr: %w", err)
	}
	out.data = append(out.data, hdr...)
	out.hdrSize = uint64(len(hdr))
	return out, nil
}

// unwinder holds what the unwind information of every function comes
// from: the original .eh_frame, parsed once before any code is emitted
// (frame nil: the input has none, and the output gets no tables), or
// the error that refuses it, which unwindTables returns.
type unwinder struct {
	frame *ehframe.Frame
	opts  ehframe.Options
	err   error
	rt    *rtFrame // the runtime's tables, added after the functions'
}

func newUnwinder(b *cfg.Binary) *unwinder {
	u := &unwinder{}
	s := b.File.Section(".eh_frame")
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
		return u
	}
	data := b.Bytes(s.Addr, int(s.Size))
	if data == nil {
		return u
	}
	if got := b.File.Section(".got"); got != nil {
		u.opts.DataBase = got.Addr
	}
	frame, err := ehframe.ParseFrame(data, s.Addr, u.opts)
	if err != nil {
		u.err = fmt.Errorf(".eh_frame: %w", err)
		return u
	}
	u.frame = frame
	return u
}

// funcUnwind is the outcome of unwindInfo for one function.
type funcUnwind struct {
	ef  *ehFunc
	ok  bool
	err error
}

// info works out fg's unwind information where it was emitted (its
// buffer's %rsp log, starting at sp0), for code placed at codeAddr.
func (u *unwinder) info(b *cfg.Binary, fg *funcGen, spLog []enc.SPMark, sp0 int32, codeAddr uint64) funcUnwind {
	if u.frame == nil {
		return funcUnwind{}
	}
	ef, ok, err := unwindInfo(b, u.frame, u.opts, fg, spLog, sp0, codeAddr)
	if err == nil && ok {
		ef.program(codeAddr)
	}
	return funcUnwind{ef, ok, err}
}

// unwindTables builds the exception-handling segment for the code
// generated by g, laid out at codeAddr (size bytes), after it, from
// each function's unwind information (infos, in g.funcs order). It is
// nil when the input has no .eh_frame. A function whose tables cannot be
// made is reported at once as an emitError, so the layout is redone
// without it. The tables are built on a goroutine of their own and wait
// returns them (or buildEH's error): buildEH reads the functions' code
// bounds and unwind programs alone, so the layout's remaining serial
// work (entry jumps, site tables, metadata) goes on meanwhile.
func unwindTables(u *unwinder, g *gen, infos []funcUnwind, codeAddr, size uint64) (wait func() (*ehSection, error), err error) {
	if u.err != nil {
		return nil, u.err
	}
	if u.frame == nil {
		return func() (*ehSection, error) { return nil, nil }, nil
	}
	var efs []*ehFunc
	var failed []emitFailure
	for i, in := range infos {
		if in.err != nil {
			failed = append(failed, emitFailure{g.funcs[i].f, fmt.Errorf("unwind tables: %w", in.err)})
			continue
		}
		if in.ok {
			efs = append(efs, in.ef)
		}
	}
	if len(failed) > 0 {
		return nil, &emitError{failed: failed, released: g.release}
	}
	type result struct {
		eh       *ehSection
		err      error
		panicked any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() {
			// A panic is raised again on the caller's goroutine (wait),
			// whose recover (cmd/blpp) reports it, as emitAll does.
			r.panicked = recover()
			done <- r
		}()
		addr := pageUp(codeAddr + size)
		r.eh, r.err = buildEH(u.frame, efs, u.rt, codeAddr, addr)
		if r.err == nil {
			r.eh.addr = addr
		}
	}()
	return func() (*ehSection, error) {
		r := <-done
		if r.panicked != nil {
			panic(r.panicked)
		}
		return r.eh, r.err
	}, nil
}

// segments is the segment holding the tables (none without them).
func (eh *ehSection) segments() []elfw.Segment {
	if eh == nil {
		return nil
	}
	seg := elfw.Segment{Addr: eh.addr, Data: eh.data, Flags: elf.PF_R, Name: ".blpp.eh"}
	if eh.lsdaSize > 0 {
		seg.Sections = append(seg.Sections, elfw.SubSection{Name: ".gcc_except_table", Off: 0, Size: eh.lsdaSize})
	}
	seg.Sections = append(seg.Sections,
		elfw.SubSection{Name: ".eh_frame", Off: eh.frameOff, Size: eh.frameSize},
		elfw.SubSection{Name: ".eh_frame_hdr", Off: eh.hdrOff, Size: eh.hdrSize})
	return []elfw.Segment{seg}
}

// hdr is where PT_GNU_EH_FRAME must point (zero: unchanged).
func (eh *ehSection) hdr() elfw.EHFrameHdr {
	if eh == nil {
		return elfw.EHFrameHdr{}
	}
	return elfw.EHFrameHdr{Addr: eh.addr + eh.hdrOff, Size: eh.hdrSize}
}
