package report

// This file builds the model's stacks (ProfileStack, one per record of
// the folded calling-context tree) on first use: only the exporters and
// a few views read them, and for a whole-process profile they are most of
// the model's memory (every record's frames, leaf to root, and its leaf's
// block counts). buildFuncs has checked every path and partial they
// expand, so building them cannot fail (decision 137).

import "github.com/blpp/blpp/cct"

// stackFilter is a FilterModules or ModuleView call made before the
// stacks were built, applied to them when they are.
type stackFilter struct {
	hidden map[uint32]bool
	splice bool
}

// lazyStacks is what the stacks are built from: the folded profile and,
// with samples, each record's sampled value as NewModel computed it.
type lazyStacks struct {
	folded  *cct.Profile
	sampled []uint64 // per folded record, nil without samples
}

// Stacks returns the stacks of the model (ProfileStack), building them
// the first time. The slice is the model's: do not modify it.
func (m *Model) Stacks() []ProfileStack {
	if m.lazy != nil {
		m.stacks = m.buildStacks(m.lazy)
		for _, f := range m.stackFilters {
			m.stacks = filterStacks(m.stacks, f.hidden, f.splice)
		}
		m.lazy, m.stackFilters = nil, nil
	}
	return m.stacks
}

// buildStacks builds one stack per record of the folded profile, in
// record order, then one per function with partial paths that had no
// record. Frames, metrics and block counts of all stacks come from three
// allocations sized in a first pass.
func (m *Model) buildStacks(l *lazyStacks) []ProfileStack {
	folded := l.folded
	nm := len(folded.Metrics) - 1
	var recs []cct.Record
	var parts, prefixes []cct.Partial
	if len(folded.Threads) > 0 {
		recs = folded.Threads[0].Records
		parts = folded.Threads[0].Partials
		prefixes = folded.Threads[0].Prefixes
	}
	// Frames of record ri: its own, then its parent's (parents come
	// first; a parent at or after ri ends the chain, as it always has).
	nf := make([]int32, len(recs))
	var nframes, nblocks int
	for ri := range recs {
		r := &recs[ri]
		nf[ri] = 1
		if r.Parent >= 0 && r.Parent < ri {
			nf[ri] += nf[r.Parent]
		}
		nframes += int(nf[ri])
		if fp := m.Profile(m.id(r.Func)); fp.Blocks != nil {
			nblocks += len(fp.Blocks)
		}
	}
	stacks := make([]ProfileStack, len(recs), len(recs)+1)
	frames := make([]StackFrame, nframes)
	metrics := make([]uint64, nm*len(recs))
	blocks := make([]uint64, nblocks)
	for ri := range recs {
		r := &recs[ri]
		id := m.id(r.Func)
		t := m.Modules[id.Module].Table
		fp := m.Profile(id)
		st := &stacks[ri]
		st.Frames, frames = frames[:nf[ri]:nf[ri]], frames[nf[ri]:]
		m.fillFrames(st.Frames, recs, ri)
		st.Calls = r.Calls
		st.Metrics, metrics = metrics[:nm:nm], metrics[nm:]
		if fp.Blocks != nil {
			st.Blocks, blocks = blocks[:len(fp.Blocks):len(fp.Blocks)], blocks[len(fp.Blocks):]
		}
		for _, path := range r.Paths {
			e, err := t.ExpandPath(id.Func, path.ID)
			if err != nil {
				continue // not so: buildFuncs expanded it
			}
			c := path.Count
			addBlocks(st.Blocks, e, c)
			st.Count = satAdd(st.Count, c)
			st.Insns = satAdd(st.Insns, satMul(e.Insns, c))
			for j, v := range path.Metrics {
				st.Metrics[j] = satAdd(st.Metrics[j], v)
			}
		}
	}
	orphan := map[FuncID]int{} // function → stack of its partials without a record
	for qi := range parts {
		q := &parts[qi]
		id := m.id(q.Func)
		t := m.Modules[id.Module].Table
		fp := m.Profile(id)
		e, err := expandPartial(t, id.Func, q)
		if err != nil || e == nil {
			continue // stopping block unknown: counted, not expanded
		}
		si := -1
		if q.Record >= 0 && q.Record < len(recs) {
			si = q.Record
		} else if k, ok := orphan[id]; ok {
			si = k
		} else {
			si = len(stacks)
			orphan[id] = si
			stacks = append(stacks, ProfileStack{Frames: []StackFrame{{id, t.Funcs[id.Func].Entry}}, Metrics: make([]uint64, nm),
				Blocks: make([]uint64, len(fp.Blocks))})
		}
		stacks[si].Insns = satAdd(stacks[si].Insns, satMul(e.Insns, q.Count))
		addBlocks(stacks[si].Blocks, e, q.Count)
	}
	// A fork child's prefixes ran in the parent (cct.Thread.Prefixes):
	// the context the prefix ran in loses it, as its function did
	// (buildFuncs), so that the stacks of a function still add up to its
	// counts.
	for qi := range prefixes {
		q := &prefixes[qi]
		_, t, fn, ok := m.prefixFunc(q)
		if !ok {
			continue
		}
		e, err := expandPartial(t, fn, q)
		if err != nil || e == nil || q.Record < 0 || q.Record >= len(recs) {
			continue
		}
		st := &stacks[q.Record]
		var insns uint64
		for _, b := range e.Blocks {
			if int(b) < len(st.Blocks) {
				d := min(st.Blocks[b], q.Count)
				st.Blocks[b] -= d
				insns = satAdd(insns, satMul(d, uint64(t.Funcs[fn].Blocks[b].Insts)))
			}
		}
		st.Insns -= min(st.Insns, insns)
	}
	// Stacks follow the folded records, as the contexts do.
	for i := range min(len(stacks), len(l.sampled)) {
		stacks[i].Sampled = l.sampled[i]
	}
	return stacks
}

// fillFrames fills out, sized by buildStacks, with the frames of record
// ri, leaf first.
func (m *Model) fillFrames(out []StackFrame, recs []cct.Record, ri int) {
	r := &recs[ri]
	id := m.id(r.Func)
	out[0] = StackFrame{id, m.Func(id).Entry}
	for k := 1; k < len(out); k++ {
		parent := &recs[r.Parent]
		pid := m.id(parent.Func)
		out[k] = StackFrame{pid, m.CallSiteAddr(pid, r.CallSite)}
		r = parent
	}
}

// filterStacks keeps the stacks whose leaf is of a module not hidden,
// without the frames of hidden modules: with splice those frames are
// left out, without the stack ends at the first of them.
func filterStacks(in []ProfileStack, hidden map[uint32]bool, splice bool) []ProfileStack {
	var stacks []ProfileStack
	for _, st := range in {
		if len(st.Frames) == 0 || hidden[st.Frames[0].Func.Module] {
			continue
		}
		var fr []StackFrame
		for _, f := range st.Frames {
			if hidden[f.Func.Module] {
				if !splice {
					break
				}
				continue
			}
			fr = append(fr, f)
		}
		st.Frames = fr
		stacks = append(stacks, st)
	}
	return stacks
}
