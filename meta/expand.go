package meta

// Path expansion: a path number, or the (block, register) pair of an
// activation that stopped mid-path, turned back into the blocks and edges
// of the function it ran [Ball-Larus 96 §3.5; DESIGN 6]. Every report,
// view and export expands paths here, through one cache per table.

import (
	"fmt"

	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/pathnum"
)

// An Expansion is a path, or the executed prefix of a partial path, as
// the function's blocks and edges.
type Expansion struct {
	// Blocks are the real blocks passed through, in order: the virtual
	// EXIT, and the entry node standing for a pseudo edge ENTRY→w, are
	// left out.
	Blocks []int
	// Edges are the indices in Func.Edges of the edges taken: a DAG step
	// is its edge; the last step of a path ended by a backedge v→w
	// (ToExit) counts that backedge; the first step of a path restarted
	// at a loop head (FromEntry) counts nothing, since the path before it
	// counted the backedge actually taken [Ball-Larus 96 §3.3].
	Edges []int
	// Insns is the instructions of one run: the blocks' instruction
	// counts added (a path passes through a block at most once and
	// counts are 32 bits, so it cannot overflow).
	Insns uint64
	// FromEntry says the path begins at the function's entry (one run of
	// it is one activation) rather than at a loop head after a backedge.
	FromEntry bool
	// Ends says the path ends the activation: it reaches the exit by a
	// real exit (a return, a tail call, a call that does not return),
	// not by a backedge or a path-breaking edge.
	Ends bool
}

// funcCache holds one function's numbering and the expansions made so
// far.
type funcCache struct {
	num      *pathnum.Numbering
	err      error
	paths    map[uint64]*Expansion
	partials map[partialKey]*Expansion
}

type partialKey struct {
	block uint32
	reg   int64
}

// cached returns function fn's cache, numbering it on first use.
func (t *Table) cached(fn uint32) (*funcCache, error) {
	if int64(fn) >= int64(len(t.Funcs)) {
		return nil, fmt.Errorf("%w: function %d of %d", ErrCorrupt, fn, len(t.Funcs))
	}
	if t.cache == nil {
		t.cache = map[uint32]*funcCache{}
	}
	c := t.cache[fn]
	if c == nil {
		c = &funcCache{paths: map[uint64]*Expansion{}, partials: map[partialKey]*Expansion{}}
		c.num, c.err = t.Funcs[fn].Numbering(t.MaxPaths)
		t.cache[fn] = c
	}
	return c, c.err
}

// NumberFuncs numbers functions fns (in range, each once) on the
// worker pool and keeps their numberings, so that ExpandPath of any of
// them starts from its cache: a whole-process profile's reader numbers a
// hundred thousand functions. Like the rest of a Table, not safe to call
// alongside other methods.
func (t *Table) NumberFuncs(fns []uint32) {
	if t.cache == nil {
		t.cache = map[uint32]*funcCache{}
	}
	todo := make([]uint32, 0, len(fns))
	for _, fn := range fns {
		if int64(fn) < int64(len(t.Funcs)) && t.cache[fn] == nil {
			todo = append(todo, fn)
		}
	}
	made := make([]*funcCache, len(todo))
	par.Each(len(todo), 0, func(i int) {
		c := &funcCache{paths: map[uint64]*Expansion{}, partials: map[partialKey]*Expansion{}}
		c.num, c.err = t.Funcs[todo[i]].Numbering(t.MaxPaths)
		made[i] = c
	})
	for i, fn := range todo {
		t.cache[fn] = made[i]
	}
}

// FuncNumbering returns function fn's Ball-Larus numbering, rebuilt once
// per table.
func (t *Table) FuncNumbering(fn uint32) (*pathnum.Numbering, error) {
	c, err := t.cached(fn)
	if err != nil {
		return nil, err
	}
	return c.num, nil
}

// ExpandPath expands path id of function fn. The result is shared: do
// not modify it.
func (t *Table) ExpandPath(fn uint32, id uint64) (*Expansion, error) {
	c, err := t.cached(fn)
	if err != nil {
		return nil, err
	}
	if e, ok := c.paths[id]; ok {
		return e, nil
	}
	f := &t.Funcs[fn]
	steps, err := c.num.Regenerate(id)
	if err != nil {
		return nil, fmt.Errorf("%s: path %d: %w", f.Name, id, err)
	}
	e := f.expand(c.num, steps)
	c.paths[id] = e
	return e, nil
}

// ExpandPartial expands the executed prefix of an activation of function
// fn that stopped at block with the path register at reg [DESIGN 6]: the
// blocks in order, ending with block. With chord placement the pair
// identifies the prefix exactly; it is nil (and no error) when the pair
// names no prefix, because the runtime's idea of where the activation
// stopped was stale. A block out of range is an error. The caller deals
// with a block the runtime did not know (cct.BlockUnknown) before asking.
// The result is shared: do not modify it.
func (t *Table) ExpandPartial(fn uint32, block uint32, reg int64) (*Expansion, error) {
	c, err := t.cached(fn)
	if err != nil {
		return nil, err
	}
	f := &t.Funcs[fn]
	if int64(block) >= int64(len(f.Blocks)) {
		return nil, fmt.Errorf("%s: partial path at block %d: out of range", f.Name, block)
	}
	k := partialKey{block, reg}
	if e, ok := c.partials[k]; ok {
		return e, nil
	}
	var e *Expansion
	if steps, err := c.num.Prefix(int(block), reg); err == nil {
		e = f.expand(c.num, steps)
		if len(e.Blocks) == 0 || e.Blocks[len(e.Blocks)-1] != int(block) {
			e.Blocks = append(e.Blocks, int(block))
			e.Insns += uint64(f.Blocks[block].Insts)
		}
	}
	c.partials[k] = e
	return e, nil
}

// expand turns the steps of a path (or prefix) into an Expansion.
func (f *Func) expand(n *pathnum.Numbering, steps []pathnum.Step) *Expansion {
	nodes := n.Nodes(steps)
	e := &Expansion{
		Blocks:    make([]int, 0, len(nodes)),
		FromEntry: len(steps) == 0 || steps[0].Pseudo != pathnum.FromEntry,
		Ends:      len(steps) > 0 && len(nodes) > 0 && nodes[len(nodes)-1] == n.Exit && steps[len(steps)-1].Pseudo != pathnum.ToExit,
	}
	for i, v := range nodes {
		if v == n.Exit || i == 0 && !e.FromEntry {
			continue
		}
		e.Blocks = append(e.Blocks, v)
	}
	for _, s := range steps {
		if s.Pseudo != pathnum.FromEntry && s.Edge >= 0 && s.Edge < len(f.Edges) {
			e.Edges = append(e.Edges, s.Edge)
		}
	}
	for _, b := range e.Blocks {
		e.Insns += uint64(f.Blocks[b].Insts)
	}
	return e
}
