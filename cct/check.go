package cct

import "fmt"

// FuncInfo is what the binary's metadata says about one function, indexed
// like the binary's function table [DESIGN 12].
type FuncInfo struct {
	NumPaths     uint64 // path numbers are in [0, NumPaths)
	NumBlocks    uint32
	NumCallSites uint32
}

// CheckAgainst checks that p fits the executable (module tag 0)
// described by funcs (CheckModule).
func (p *Profile) CheckAgainst(funcs []FuncInfo) error { return p.CheckModule(0, funcs) }

// CheckModule checks that the functions of module tag in p fit the module
// described by funcs, indexed by local function index: every function
// index is in the table, every path ID is below its function's NumPaths,
// every call site of a record whose parent is of this module at most the
// parent's NumCallSites (call sites count from 1, and belong to the
// parent's module) and every partial's block below NumBlocks (or
// BlockUnknown). Functions of other modules are not looked at. It
// reports the first misfit as a *ModelError wrapping ErrMismatch. p
// should be valid (CheckValid); an invalid p gives a wrong answer but no
// panic.
func (p *Profile) CheckModule(tag uint32, funcs []FuncInfo) error {
	bad := func(thread, rec, path, part int, format string, args ...any) error {
		return &ModelError{Thread: thread, Record: rec, Path: path, Partial: part, Msg: fmt.Sprintf(format, args...), Err: ErrMismatch}
	}
	n := uint64(len(funcs))
	mine := func(fid uint32) bool { return FidTag(fid) == tag }
	for ti := range p.Threads {
		t := &p.Threads[ti]
		for ri := range t.Records {
			r := &t.Records[ri]
			if r.Parent >= 0 && r.Parent < ri {
				caller := t.Records[r.Parent].Func
				if mine(caller) && uint64(FidLocal(caller)) < n && r.CallSite > funcs[FidLocal(caller)].NumCallSites {
					return bad(ti, ri, -1, -1, "call site %d, but function %d has %d call sites", r.CallSite, caller, funcs[FidLocal(caller)].NumCallSites)
				}
			}
			if !mine(r.Func) {
				continue
			}
			fn := FidLocal(r.Func)
			if uint64(fn) >= n {
				return bad(ti, ri, -1, -1, "function %d, but the binary has %d functions", r.Func, n)
			}
			np := funcs[fn].NumPaths
			for pi, path := range r.Paths {
				if path.ID >= np {
					return bad(ti, ri, pi, -1, "path id %d, but function %d has %d paths", path.ID, r.Func, np)
				}
			}
		}
		for ki, q := range t.Partials {
			if !mine(q.Func) {
				continue
			}
			fn := FidLocal(q.Func)
			if uint64(fn) >= n {
				return bad(ti, -1, -1, ki, "function %d, but the binary has %d functions", q.Func, n)
			}
			if nb := funcs[fn].NumBlocks; q.Block >= nb && q.Block != BlockUnknown {
				return bad(ti, -1, -1, ki, "block %d, but function %d has %d blocks", q.Block, q.Func, nb)
			}
		}
	}
	return nil
}
