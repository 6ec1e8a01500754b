package rewriter

// Dropping the analysis while the layout runs: a large binary's graphs
// and numberings go function by function as their code is appended, the
// rest once no function can fail [decision 91].

import (
	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
)

// releaseSize is how much original code the instrumented functions of a
// binary hold at least for the layout to drop each function's analysis
// once its code is appended (gen.release): libLLVM's graphs and
// numberings took half a gigabyte, the largest part of what the
// rewriter holds while it emits code [decision 91].
const releaseSize = 16 << 20

// startRelease decides whether the layout drops each function's
// analysis once its code is appended (gen.release) and, if it does,
// drops at once what no function's code needs: the program's graphs,
// the branch sources (into) and the binary's reference index.
func (g *gen) startRelease(res *analysis.Result, chosen []*analysis.Func, into **cfg.Branches, force bool) {
	// A large binary's functions drop their analysis once their code is
	// appended; if the layout then fails, the next starts from a new
	// analysis (Rewrite). The branch sources are done with.
	var origSize uint64
	for _, f := range chosen {
		origSize += f.Func.TotalSize()
	}
	g.release = origSize >= releaseSize || force
	if g.release {
		clear(res.Program.Graphs)
		*into = nil
		g.b.DropRefs()
	}
}

// releaseAnalysis drops the graphs and numberings of every procedure,
// and what the instrumented functions' plans derived from them, once
// the code, its tables and the metadata's functions are made.
func releaseAnalysis(res *analysis.Result, g *gen) {
	for _, f := range res.Funcs {
		f.Graph, f.Numbering = nil, nil
	}
	clear(res.Program.Graphs)
	for _, fg := range g.funcs {
		fg.dropAnalysis()
	}
}

// dropAnalysis drops the function's graph and numbering and the parts of its
// plan made from them, all but what the layout reads once the code is
// emitted: the entries, and the counts the summary takes (funcStats).
func (fp *funcPlan) dropAnalysis() {
	fp.f.Graph, fp.f.Numbering = nil, nil
	fp.num, fp.liveIn, fp.blocks, fp.loopOf = nil, nil, nil, nil
	fp.tabOf, fp.loadOf, fp.tailSite, fp.forkSites, fp.leaveSite, fp.forkSite, fp.siteAddrs, fp.nCalls = nil, nil, nil, nil, nil, nil, nil, 0
	fp.loops, fp.loopCopies, fp.copyBack = nil, nil, nil
}

// funcStats are the counts of a function's plan that the summary adds
// up (Summary.LoopCopies and the next three).
type funcStats struct {
	loopCopies, partialCopies, loopRegs, loopSwaps int
}

func (fp *funcPlan) stats() funcStats {
	st := funcStats{loopCopies: len(fp.loopCopies), loopRegs: len(fp.loops)}
	for _, lc := range fp.loopCopies {
		if lc.partial {
			st.partialCopies++
		}
	}
	for _, l := range fp.loops {
		if l.swap {
			st.loopSwaps++
		}
	}
	return st
}
