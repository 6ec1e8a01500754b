package report

// This file builds the model's stacks (ProfileStack, one per record of
// the folded calling-context tree) on first use: only the exporters and
// a few views read them. A stack holds its leaf and its parent's index,
// not its frames to the root nor its block counts: for a whole-process
// profile (clang: 2.1 M contexts, 41 frames deep on average) those were
// gigabytes (decisions 137, 139). buildFuncs has checked every path and
// partial they expand, so building them cannot fail.

import "github.com/blpp/blpp/cct"

// stackFilter is a FilterModules or ModuleView call made before the
// stacks were built, applied to them when they are.
type stackFilter struct {
	hidden map[uint32]bool
	splice bool
}

// stackSource is what the stacks are built from and what StackBlocks
// expands: the folded profile's records, partials and fork prefixes,
// those two by record, and with samples each record's sampled value as
// NewModel computed it.
type stackSource struct {
	recs              []cct.Record
	parts, prefixes   []cct.Partial
	partsOf, prefixOf map[int32][]int32 // record → indices in parts, prefixes
	sampled           []uint64          // per folded record, nil without samples
}

// newStackSource takes what the stacks need from the folded profile.
func newStackSource(folded *cct.Profile) *stackSource {
	s := &stackSource{partsOf: map[int32][]int32{}, prefixOf: map[int32][]int32{}}
	if len(folded.Threads) > 0 {
		th := &folded.Threads[0]
		s.recs, s.parts, s.prefixes = th.Records, th.Partials, th.Prefixes
	}
	for i := range s.parts {
		if r := s.parts[i].Record; r >= 0 && r < len(s.recs) {
			s.partsOf[int32(r)] = append(s.partsOf[int32(r)], int32(i))
		}
	}
	for i := range s.prefixes {
		if r := s.prefixes[i].Record; r >= 0 && r < len(s.recs) {
			s.prefixOf[int32(r)] = append(s.prefixOf[int32(r)], int32(i))
		}
	}
	return s
}

// Stacks returns the stacks of the model (ProfileStack), building them
// the first time. The slice is the model's: do not modify it.
func (m *Model) Stacks() []ProfileStack {
	if !m.stacksBuilt && m.src != nil {
		m.stacks = m.buildStacks(m.src)
		for _, f := range m.stackFilters {
			m.stacks = filterStacks(m.stacks, f.hidden, f.splice)
		}
		m.stackFilters, m.stacksBuilt = nil, true
	}
	return m.stacks
}

// StackFrames returns the frames of stack i, leaf first, in buf's
// storage: the leaf at its function's entry, then each caller at the
// call instruction that led to the frame before it.
func (m *Model) StackFrames(i int, buf []StackFrame) []StackFrame {
	stacks := m.Stacks()
	st := &stacks[i]
	buf = append(buf[:0], st.Leaf)
	for st.Parent >= 0 {
		p := &stacks[st.Parent]
		buf = append(buf, StackFrame{p.Leaf.Func, st.CallAddr})
		st = p
	}
	return buf
}

// StackBlocks returns the executions of each block of stack i's leaf
// function (meta.Func.Blocks) in that context, in buf's storage; nil
// when the leaf is not instrumented. Summed over the stacks of a
// function they are its FuncProfile.Blocks, and the stack's Insns is
// Σ blocks × block instructions.
func (m *Model) StackBlocks(i int, buf []uint64) []uint64 {
	st := &m.Stacks()[i]
	if st.rec < 0 {
		return st.blocks
	}
	fp := m.Profile(st.Leaf.Func)
	if fp.Blocks == nil {
		return nil
	}
	buf = append(buf[:0], make([]uint64, len(fp.Blocks))...)
	m.recordBlocks(m.src, int(st.rec), buf)
	return buf
}

// recordBlocks adds the blocks of folded record ri's paths and partials
// into blocks and takes its fork prefixes away (never below zero); it
// returns the instructions so taken away.
func (m *Model) recordBlocks(s *stackSource, ri int, blocks []uint64) (taken uint64) {
	r := &s.recs[ri]
	id := m.id(r.Func)
	t := m.Modules[id.Module].Table
	for _, path := range r.Paths {
		if e, err := t.ExpandPath(id.Func, path.ID); err == nil {
			addBlocks(blocks, e, path.Count)
		}
	}
	for _, qi := range s.partsOf[int32(ri)] {
		q := &s.parts[qi]
		if e, err := expandPartial(t, id.Func, q); err == nil && e != nil {
			addBlocks(blocks, e, q.Count)
		}
	}
	for _, qi := range s.prefixOf[int32(ri)] {
		q := &s.prefixes[qi]
		_, pt, fn, ok := m.prefixFunc(q)
		if !ok {
			continue
		}
		e, err := expandPartial(pt, fn, q)
		if err != nil || e == nil {
			continue
		}
		for _, b := range e.Blocks {
			if int(b) < len(blocks) {
				d := min(blocks[b], q.Count)
				blocks[b] -= d
				taken = satAdd(taken, satMul(d, uint64(pt.Funcs[fn].Blocks[b].Insts)))
			}
		}
	}
	return taken
}

// buildStacks builds one stack per record of the folded profile, in
// record order, then one per function with partial paths that had no
// record. The metrics of all stacks come from one allocation.
func (m *Model) buildStacks(s *stackSource) []ProfileStack {
	nm := len(m.Metrics) - 1
	recs := s.recs
	stacks := make([]ProfileStack, len(recs), len(recs)+1)
	metrics := make([]uint64, nm*len(recs))
	var scratch []uint64
	for ri := range recs {
		r := &recs[ri]
		id := m.id(r.Func)
		t := m.Modules[id.Module].Table
		st := &stacks[ri]
		st.Leaf = StackFrame{id, m.Func(id).Entry}
		st.Parent, st.rec = -1, int32(ri)
		if r.Parent >= 0 && r.Parent < ri { // a parent at or after ri ends the chain
			st.Parent = int32(r.Parent)
			st.CallAddr = m.CallSiteAddr(m.id(recs[r.Parent].Func), r.CallSite)
		}
		st.Calls = r.Calls
		st.Metrics, metrics = metrics[:nm:nm], metrics[nm:]
		for _, path := range r.Paths {
			e, err := t.ExpandPath(id.Func, path.ID)
			if err != nil {
				continue // not so: buildFuncs expanded it
			}
			c := path.Count
			st.Count = satAdd(st.Count, c)
			st.Insns = satAdd(st.Insns, satMul(e.Insns, c))
			for j, v := range path.Metrics {
				st.Metrics[j] = satAdd(st.Metrics[j], v)
			}
		}
		for _, qi := range s.partsOf[int32(ri)] {
			q := &s.parts[qi]
			if e, err := expandPartial(t, id.Func, q); err == nil && e != nil {
				st.Insns = satAdd(st.Insns, satMul(e.Insns, q.Count))
			}
		}
		// A fork child's prefixes ran in the parent (cct.Thread.Prefixes):
		// the context the prefix ran in loses it, as its function did
		// (buildFuncs), so that the stacks of a function still add up to
		// its counts. What is taken away depends on the blocks' counts.
		if len(s.prefixOf[int32(ri)]) > 0 {
			if fp := m.Profile(id); fp.Blocks != nil {
				scratch = append(scratch[:0], make([]uint64, len(fp.Blocks))...)
				st.Insns -= min(st.Insns, m.recordBlocks(s, ri, scratch))
			}
		}
	}
	orphan := map[FuncID]int{} // function → stack of its partials without a record
	for qi := range s.parts {
		q := &s.parts[qi]
		if q.Record >= 0 && q.Record < len(recs) {
			continue
		}
		id := m.id(q.Func)
		t := m.Modules[id.Module].Table
		fp := m.Profile(id)
		e, err := expandPartial(t, id.Func, q)
		if err != nil || e == nil {
			continue // stopping block unknown: counted, not expanded
		}
		si, ok := orphan[id]
		if !ok {
			si = len(stacks)
			orphan[id] = si
			stacks = append(stacks, ProfileStack{Leaf: StackFrame{id, t.Funcs[id.Func].Entry}, Parent: -1, rec: -1,
				Metrics: make([]uint64, nm), blocks: make([]uint64, len(fp.Blocks))})
		}
		stacks[si].Insns = satAdd(stacks[si].Insns, satMul(e.Insns, q.Count))
		addBlocks(stacks[si].blocks, e, q.Count)
	}
	// Stacks follow the folded records, as the contexts do.
	for i := range min(len(stacks), len(s.sampled)) {
		stacks[i].Sampled = s.sampled[i]
	}
	return stacks
}

// filterStacks keeps the stacks whose leaf is of a module not hidden.
// With splice a kept stack's parent is its nearest kept ancestor (the
// frames of hidden modules are left out); without, a stack whose parent
// is hidden becomes a root (its frames end at the first hidden one).
func filterStacks(in []ProfileStack, hidden map[uint32]bool, splice bool) []ProfileStack {
	newIdx := make([]int32, len(in))
	n := 0
	for i := range in {
		if !hidden[in[i].Leaf.Func.Module] {
			n++
		}
	}
	out := make([]ProfileStack, 0, n)
	for i := range in {
		st := in[i]
		if hidden[st.Leaf.Func.Module] {
			newIdx[i] = -1
			continue
		}
		p, addr := st.Parent, st.CallAddr
		for p >= 0 && hidden[in[p].Leaf.Func.Module] {
			if !splice {
				p = -1
				break
			}
			addr, p = in[p].CallAddr, in[p].Parent
		}
		st.Parent, st.CallAddr = -1, addr
		if p >= 0 {
			st.Parent = newIdx[p]
		}
		newIdx[i] = int32(len(out))
		out = append(out, st)
	}
	return out
}
