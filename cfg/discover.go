package cfg

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/blpp/blpp/internal/par"
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
				// The procedures whose jump table leads to a
				// discovered entry: that entry may be a case of
				// theirs.
				cases := map[uint64][]*Function{}
				for _, f := range p.Funcs {
					if g := p.Graph(f); g != nil && g.Reason == ReasonEscapingJump && g.escapeTable {
						if _, ok := evOf[g.escape]; ok {
							cases[g.escape] = append(cases[g.escape], f)
						}
					}
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
					if parent := caseParent(f, ev, g, odd || contra[a], cases[a], jumpers[a]); parent != nil {
						drop = append(drop, a)
						parent.Parts = append(parent.Parts, Range{f.Addr, f.Size})
						parent.PartNames = append(parent.PartNames, f.Name)
						continue
					}
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

// caseParent returns the procedure that the discovered range f is a
// case of, or nil. gcc puts a switch's unlikely case in the function's
// .cold part: in a library built without unwind tables and stripped
// (Jim Tcl's libjim), that is a few bytes (call abort) after another
// .cold part's noreturn call, which discovery takes for a procedure of
// its own (its only evidence: it follows other code), while the
// switch's table leads into it and so leaves its function
// uninstrumented. Such a range is a part of the function whose table
// leads to it when nothing else says it is a procedure: no call, no
// pointer in data or code, no other procedure's jump, one table, code
// that decodes (odd: it does not, or other flow contradicts it), and
// neither range has an FDE (a procedure without one was built without
// unwind tables, and so were its parts).
func caseParent(f *Function, ev evidence, g *Graph, odd bool, tables []*Function, jumpers map[*Function]bool) *Function {
	if ev&(evCall|evCodeRef|evDataRef) != 0 || odd || len(tables) != 1 || len(f.Parts) != 0 || f.Source&FromFDE != 0 {
		return nil
	}
	parent := tables[0]
	if parent == f || parent.Source&FromFDE != 0 || g == nil || !(g.Instrumentable() || g.Reason == ReasonTooShort || g.Reason == ReasonEscapingJump) {
		return nil
	}
	for j := range jumpers {
		if j != parent {
			return nil
		}
	}
	return parent
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
			// A range only its place makes a procedure (weak
			// evidence) that the procedure it jumps into jumps to is
			// a stripped .cold part going back into its function
			// (Jim Tcl's `jmp` after an error call, into the epilogue
			// of a command procedure only a pointer in data names):
			// that jump contradicts nothing.
			ev0, ok := evOf[f.Addr]
			weak := ok && !ev0.strong()
			for _, t := range s.jumps {
				if i := p.containing(t); i >= 0 {
					g := p.Funcs[i]
					if weak && slices.Contains(scans[g].jumps, f.Addr) {
						continue
					}
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
