package cct

import "fmt"

// FuncInfo is what the binary's metadata says about one function, indexed
// like the binary's function table [DESIGN 12].
type FuncInfo struct {
	NumPaths     uint64 // path numbers are in [0, NumPaths)
	NumBlocks    uint32
	NumCallSites uint32
}

// CheckAgainst checks that p fits the binary described by funcs: every
// function index is in the table, every path ID is below its function's
// NumPaths, every call site at most the calling function's NumCallSites (call
// sites count from 1) and
// every partial's block below NumBlocks (or BlockUnknown). It reports the first misfit as a
// *ModelError wrapping ErrMismatch. p should be valid (CheckValid); an
// invalid p gives a wrong answer but no panic.
func (p *Profile) CheckAgainst(funcs []FuncInfo) error {
	bad := func(thread, rec, path, part int, format string, args ...any) error {
		return &ModelError{Thread: thread, Record: rec, Path: path, Partial: part, Msg: fmt.Sprintf(format, args...), Err: ErrMismatch}
	}
	n := uint64(len(funcs))
	for ti := range p.Threads {
		t := &p.Threads[ti]
		for ri := range t.Records {
			r := &t.Records[ri]
			if uint64(r.Func) >= n {
				return bad(ti, ri, -1, -1, "function %d, but the binary has %d functions", r.Func, n)
			}
			if r.Parent >= 0 && r.Parent < ri {
				caller := t.Records[r.Parent].Func
				if uint64(caller) < n && r.CallSite > funcs[caller].NumCallSites {
					return bad(ti, ri, -1, -1, "call site %d, but function %d has %d call sites", r.CallSite, caller, funcs[caller].NumCallSites)
				}
			}
			np := funcs[r.Func].NumPaths
			for pi, path := range r.Paths {
				if path.ID >= np {
					return bad(ti, ri, pi, -1, "path id %d, but function %d has %d paths", path.ID, r.Func, np)
				}
			}
		}
		for ki, q := range t.Partials {
			if uint64(q.Func) >= n {
				return bad(ti, -1, -1, ki, "function %d, but the binary has %d functions", q.Func, n)
			}
			if nb := funcs[q.Func].NumBlocks; q.Block >= nb && q.Block != BlockUnknown {
				return bad(ti, -1, -1, ki, "block %d, but function %d has %d blocks", q.Block, q.Func, nb)
			}
		}
	}
	return nil
}
