package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
)

// probeSamples is one function of a probe-based sample profile: samples
// per probe index (and discriminator), call targets per call probe, and
// the functions inlined at its call probes.
type probeSamples struct {
	name    string
	hash    uint64
	head    uint64
	body    map[sampleLoc]uint64 // sampleLoc.off is the probe index
	targets map[sampleLoc]map[string]uint64
	inlined map[probeSite]*probeSamples
}

// probeSite is an inlined call: the caller's call probe and the callee.
type probeSite struct {
	index uint32
	guid  uint64
}

func newProbeSamples(d ProbeDesc) *probeSamples {
	return &probeSamples{name: d.Name, hash: d.Hash, body: map[sampleLoc]uint64{},
		targets: map[sampleLoc]map[string]uint64{}, inlined: map[probeSite]*probeSamples{}}
}

func (ps *probeSamples) top() (string, uint64)     { return ps.name, ps.head }
func (ps *probeSamples) writeBody(w *bufio.Writer) { writeProbeBody(w, ps, 1) }

func (ps *probeSamples) total() uint64 {
	var t uint64
	for _, c := range ps.body {
		t = satAdd(t, c)
	}
	for _, c := range ps.inlined {
		t = satAdd(t, c.total())
	}
	return t
}

// blockCounts finds the execution count of the instruction at an address
// from the blocks of the instrumented functions.
type blockCounts struct {
	blocks []countedBlock // sorted by addr, disjoint
}

type countedBlock struct {
	addr, end uint64
	count     uint64
	fn        FuncID
}

func newBlockCounts(m *Model) blockCounts {
	var bc blockCounts
	for _, fi := range m.FuncIDs() {
		mf := m.Func(fi)
		if !mf.Instrumented {
			continue
		}
		fp := m.Profile(fi)
		for bi, b := range mf.Blocks {
			bc.blocks = append(bc.blocks, countedBlock{b.Addr, b.End, fp.Blocks[bi], fi})
		}
	}
	sort.Slice(bc.blocks, func(i, j int) bool { return bc.blocks[i].addr < bc.blocks[j].addr })
	return bc
}

// at returns the block holding addr; false when no instrumented function's
// block does.
func (bc blockCounts) at(addr uint64) (countedBlock, bool) {
	i := sort.Search(len(bc.blocks), func(i int) bool { return bc.blocks[i].end > addr })
	if i < len(bc.blocks) && bc.blocks[i].addr <= addr {
		return bc.blocks[i], true
	}
	return countedBlock{}, false
}

// exportProbeSample writes m as a probe-based LLVM text sample profile, as
// llvm-profgen writes one for a -fpseudo-probe-for-profiling binary and
// clang -fpseudo-probe-for-profiling -fprofile-sample-use reads it:
//
//	name:total_samples:head_samples
//	 probe_index: samples [callee:samples ...]
//	 call_probe_index: inlined_callee:total_samples
//	  probe_index: samples ...
//	  !CFGChecksum: hash
//	 !CFGChecksum: hash
//
// A probe's samples are the execution count of the instruction it
// precedes, summed over its copies (unrolling and tail duplication copy a
// probe with its block; each copy runs its share), as llvm-profgen sums
// them; a probe that never ran is left out, which a probe-based profile
// reads as 0. A function blpp did not instrument gets no profile of its
// own: the compiler treats a function without a profile as unknown, while
// a profile with a few probes would call the rest of it cold. (Its copies
// inlined into instrumented functions are counted there.)
// Inlined functions come from the probes' inline forest, call targets
// from the calling context tree (call probes mark the call instruction).
func exportProbeSample(w io.Writer, m *Model, pp *PseudoProbes) error {
	bc := newBlockCounts(m)
	// Call targets by the address of their call instruction.
	targets := map[uint64]map[string]uint64{}
	for k, ts := range m.callTargets() {
		mf := m.Func(k.fn)
		if int(k.site) < len(mf.CallSites) {
			targets[mf.CallSites[k.site]] = ts
		}
	}
	// The outlined functions by GUID, for their head samples.
	outlined := map[uint64]FuncID{}
	for _, fi := range m.FuncIDs() {
		outlined[ProbeGUID(RawName(m.Func(fi).Name))] = fi
	}
	top := map[uint64]*probeSamples{}
	var add func(ps *probeSamples, n *ProbeNode)
	add = func(ps *probeSamples, n *ProbeNode) {
		for _, p := range n.Probes {
			b, ok := bc.at(p.Addr)
			if !ok || b.count == 0 {
				continue
			}
			loc := sampleLoc{int(p.Index), int(p.Disc)}
			ps.body[loc] = satAdd(ps.body[loc], b.count)
			if p.Kind == ProbeBlock {
				continue
			}
			for name, c := range targets[p.Addr] {
				if ps.targets[loc] == nil {
					ps.targets[loc] = map[string]uint64{}
				}
				ps.targets[loc][name] = satAdd(ps.targets[loc][name], c)
			}
		}
		for _, k := range n.Children {
			d, ok := pp.Desc[k.GUID]
			if !ok {
				continue
			}
			site := probeSite{k.Site, k.GUID}
			c := ps.inlined[site]
			if c == nil {
				c = newProbeSamples(d)
				ps.inlined[site] = c
			}
			add(c, k)
		}
	}
	for _, n := range pp.Roots {
		d, ok := pp.Desc[n.GUID]
		if !ok || len(n.Probes) == 0 {
			continue
		}
		// The function the probes are in: instrumented, or left out.
		// (A tree is mostly the function it names, but clang also
		// lists probes of inlined code whose inline context it lost as
		// a tree of the inlined function's own; llvm-profgen counts
		// them for that function, and so does this.)
		if _, ok := bc.at(n.Probes[0].Addr); !ok {
			continue
		}
		if fi, ok := outlined[n.GUID]; ok && !m.Func(fi).Instrumented {
			// Probes of its inlined copies alone would make the
			// outlined copy look cold.
			continue
		}
		ps := top[n.GUID]
		if ps == nil {
			ps = newProbeSamples(d)
			top[n.GUID] = ps
			// Head samples are the activations of the function's
			// outlined copy; none for a function inlined everywhere.
			if fi, ok := outlined[n.GUID]; ok && m.Func(fi).Instrumented {
				fp := m.Profile(fi)
				ps.head = fp.Calls
				if ps.head == 0 && len(fp.Blocks) > 0 {
					ps.head = fp.Blocks[0]
				}
			}
		}
		add(ps, n)
	}
	return writeSampleProfile(w, top)
}

func writeProbeBody(w *bufio.Writer, ps *probeSamples, depth int) {
	writeBodyLines(w, ps.body, ps.targets, depth)
	sites := make([]probeSite, 0, len(ps.inlined))
	for s := range ps.inlined {
		sites = append(sites, s)
	}
	sort.Slice(sites, func(i, j int) bool {
		if sites[i].index != sites[j].index {
			return sites[i].index < sites[j].index
		}
		return ps.inlined[sites[i]].name < ps.inlined[sites[j]].name
	})
	ind := indent(depth)
	for _, s := range sites {
		c := ps.inlined[s]
		if c.total() == 0 {
			continue
		}
		fmt.Fprintf(w, "%s%d: %s:%d\n", ind, s.index, c.name, c.total())
		writeProbeBody(w, c, depth+1)
	}
	fmt.Fprintf(w, "%s!CFGChecksum: %d\n", ind, ps.hash)
}
