package report

// This file is the model's calls per call site, which the PGO exports
// (BOLT fdata, LLVM sample call targets) write: how often each call or
// tail-call instruction transferred control to each target. It must equal
// what the instruction did (callgrind's calls= counts), not what the
// calling context tree hangs under the site: a callback from uninstrumented
// code (qsort calling its comparator) enters under the call site that
// entered the uninstrumented code [DESIGN 7], and counting those entries
// as calls from the site made BOLT believe a block that ran once ran a
// million times.
//
// So a direct call runs as often as its block (blocks end at every call,
// decision 2) and always reaches its one target, and a direct tail jump as
// often as its tail-call edge; only indirect calls take their callees from
// the tree: the records under the site. An indirect call into
// uninstrumented code that calls back (a function pointer to qsort) still
// counts the callbacks: the tree does not tell them apart there.

import (
	"sort"

	"github.com/blpp/blpp/cfg/x86"
)

// A siteCall is the transfers of one call or tail-jump instruction of an
// instrumented function to one target.
type siteCall struct {
	Caller FuncID
	// Site is the instruction's index in the caller's CallSites, -1 for a
	// tail jump that is not a call site there.
	Site int
	Addr uint64 // the instruction
	// Target is the address control went to; Callee the model's function
	// entered there, when HasCallee. A call through a GOT slot (call
	// *foo@GOTPCREL(%rip)) goes to another module: Target is 0 and
	// External names the symbol.
	Target    uint64
	External  string
	Callee    FuncID
	HasCallee bool
	Tail      bool
	Count     uint64
}

// siteCalls lists every call that ran, by caller, instruction and
// target.
func (m *Model) siteCalls() []siteCall {
	entries := m.entryFuncs()
	tree := !m.FlowOnly && m.hasCallers()
	var indirect map[siteKey]map[FuncID]uint64
	if tree {
		indirect = m.treeCalls()
	}
	slots := make([]map[uint64]string, len(m.Modules))
	var out []siteCall
	for _, fi := range m.FuncIDs() {
		mf := m.Func(fi)
		if !mf.Instrumented {
			continue
		}
		fp := m.Profile(fi)
		siteOf := map[uint64]int{}
		for ci, addr := range mf.CallSites {
			siteOf[addr] = ci
		}
		for ci, addr := range mf.CallSites {
			in, ok := m.instAt(fi.Module, addr)
			if !ok {
				// No code to decode (a model of the metadata alone):
				// the tree is all there is.
				in.Kind = x86.CallIndirect
			}
			switch in.Kind {
			case x86.Call:
				if c := m.blockCountAt(fi, addr); c > 0 {
					sc := siteCall{Caller: fi, Site: ci, Addr: addr, Target: in.Target, Count: c}
					sc.Callee, sc.HasCallee = entries[entryKey{fi.Module, in.Target}]
					out = append(out, sc)
				}
			case x86.CallIndirect:
				if slots[fi.Module] == nil {
					slots[fi.Module] = gotSlotSymbols(m.Modules[fi.Module].File)
				}
				if name, ok := slots[fi.Module][in.RIPTarget]; ok && in.RIPRel && in.Len > 0 {
					// The loader's doing, not the program's: one target,
					// run as often as the block; what the tree hangs under
					// the site are callbacks (main under _start's call of
					// __libc_start_main).
					if c := m.blockCountAt(fi, addr); c > 0 {
						out = append(out, siteCall{Caller: fi, Site: ci, Addr: addr, External: name, Count: c})
					}
					continue
				}
				for callee, c := range indirect[siteKey{fi, uint32(ci)}] {
					out = append(out, siteCall{Caller: fi, Site: ci, Addr: addr, Target: m.Func(callee).Entry, Callee: callee, HasCallee: true, Count: c})
				}
			}
		}
		for ei, e := range mf.Edges {
			if e.Kind != edgeTailCall || fp.Edges[ei] == 0 {
				continue
			}
			a, ok := m.lastInst(fi, int(e.From))
			if !ok {
				continue
			}
			t, ok := m.directTarget(fi.Module, a)
			if !ok {
				continue // an indirect tail jump: no mark in the tree either (decision 31)
			}
			site, ok := siteOf[a]
			if !ok {
				site = -1
			}
			sc := siteCall{Caller: fi, Site: site, Addr: a, Target: t, Tail: true, Count: fp.Edges[ei]}
			sc.Callee, sc.HasCallee = entries[entryKey{fi.Module, t}]
			out = append(out, sc)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := &out[i], &out[j]
		if a.Caller != b.Caller {
			return a.Caller.less(b.Caller)
		}
		if a.Addr != b.Addr {
			return a.Addr < b.Addr
		}
		return a.Target < b.Target
	})
	return out
}

// entryKey is an address in a module.
type entryKey struct {
	module uint32
	addr   uint64
}

// entryFuncs maps every function entry of the model, other entries of
// joined procedures included, to its function.
func (m *Model) entryFuncs() map[entryKey]FuncID {
	out := map[entryKey]FuncID{}
	for _, fi := range m.FuncIDs() {
		f := m.Func(fi)
		out[entryKey{fi.Module, f.Entry}] = fi
		for _, e := range f.Edges {
			if e.Kind == edgeEntry && e.To >= 0 && int(e.To) < len(f.Blocks) {
				out[entryKey{fi.Module, f.Blocks[e.To].Addr}] = fi
			}
		}
	}
	return out
}

// siteKey is a call site: function and local call-site index.
type siteKey struct {
	fn   FuncID
	site uint32
}

// treeCalls sums the records' activations by call site and callee.
func (m *Model) treeCalls() map[siteKey]map[FuncID]uint64 {
	out := map[siteKey]map[FuncID]uint64{}
	stacks := m.Stacks()
	for i := range stacks {
		st := &stacks[i]
		if st.Parent < 0 || st.Calls == 0 {
			continue
		}
		caller := stacks[st.Parent].Leaf.Func
		f := m.Func(caller)
		for k, a := range f.CallSites {
			if a != st.CallAddr {
				continue
			}
			key := siteKey{caller, uint32(k)}
			if out[key] == nil {
				out[key] = map[FuncID]uint64{}
			}
			out[key][st.Leaf.Func] = satAdd(out[key][st.Leaf.Func], st.Calls)
			break
		}
	}
	return out
}

// hasCallers reports whether any stack has more than one frame.
func (m *Model) hasCallers() bool {
	stacks := m.Stacks()
	for i := range stacks {
		if stacks[i].Parent >= 0 {
			return true
		}
	}
	return false
}
