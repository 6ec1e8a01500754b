package rewriter

// The metadata section the layout writes for reports: the functions,
// their blocks and edges, and the original bytes under the patches.

import (
	"fmt"
	"sort"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/phase"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter/elfw"
)

// encodeMeta encodes the metadata section (meta.Table) of the layout:
// the instrumented functions' encodings, then the functions left alone
// (skipped, in the order their ids follow), and the original bytes
// under the code's patches. instrID is what profiles carry as their
// build-id.
func (g *gen) encodeMeta(patched []meta.Patch, skipped []Skipped) (data, instrID []byte) {
	tab := &meta.Table{OrigBuildID: g.b.BuildID, MaxPaths: MaxPaths, Patched: patched, PatchedKnown: true}
	for _, fg := range g.funcs {
		tab.Encoded = append(tab.Encoded, fg.meta)
	}
	// Functions left alone follow, so reports can list them; profile
	// function indices only refer to the instrumented ones before them.
	for _, s := range skipped {
		var entry uint64
		fmt.Sscanf(s.Entry, "0x%x", &entry)
		tab.Funcs = append(tab.Funcs, meta.Func{Name: s.Name, Entry: entry, Size: s.Size, Reason: s.Reason, EntriesCounted: s.EntriesCounted})
	}
	data = tab.EncodeWithID()
	phase.Mark("meta")
	// The functions' encodings are in data now: the output's copy need
	// not find them beside it.
	for _, fg := range g.funcs {
		fg.meta = meta.EncodedFunc{}
	}
	return data, tab.InstrID
}

// patchedCode returns the original bytes under each patch of the code,
// in address order, for the metadata (meta.Table.Patched).
func patchedCode(b *cfg.Binary, ps []elfw.Patch) ([]meta.Patch, error) {
	out := make([]meta.Patch, 0, len(ps))
	for _, p := range ps {
		orig := b.Bytes(p.Addr, len(p.Bytes))
		if orig == nil {
			return nil, fmt.Errorf("patch at %#x: not in the file's sections", p.Addr)
		}
		out = append(out, meta.Patch{Addr: p.Addr, Orig: append([]byte(nil), orig...)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, nil
}

// metaFunc returns f's entry in the metadata. Its blocks and edges go
// into mf's arrays (a scratch the caller reuses), its call sites are
// sites.
func metaFunc(f *analysis.Func, sites []uint64, mf *meta.Func) {
	g := f.Graph
	*mf = meta.Func{Name: f.Func.Name, Entry: f.Func.Addr, Size: f.Func.TotalSize(), Instrumented: true, NumPaths: f.Numbering.NumPaths,
		Blocks: mf.Blocks[:0], Edges: mf.Edges[:0], CallSites: sites}
	for _, blk := range g.Blocks {
		mf.Blocks = append(mf.Blocks, meta.Block{Addr: blk.Addr, End: blk.End, Insts: uint32(blk.Insts), LoopDepth: uint32(blk.LoopDepth)})
	}
	for i, e := range g.Edges {
		mf.Edges = append(mf.Edges, meta.Edge{From: int32(e.From), To: int32(e.To), Kind: meta.EdgeKind(e.Kind), Break: g.BreaksPath(cfg.EdgeID(i)), Dispatch: e.Dispatch})
	}
}
