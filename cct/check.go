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
	return p.CheckModules([]ModuleFuncs{{Tag: tag, Funcs: funcs}})[0]
}

// ModuleFuncs is the function table of module Tag, for CheckModules.
type ModuleFuncs struct {
	Tag   uint32
	Funcs []FuncInfo
}

// CheckModules is CheckModule of each of mods, in one pass over p's
// records: errs[i] is CheckModule(mods[i].Tag, mods[i].Funcs). A
// whole-process profile's modules each scanned every record.
func (p *Profile) CheckModules(mods []ModuleFuncs) (errs []error) {
	bad := func(thread, rec, path, part int, format string, args ...any) error {
		return &ModelError{Thread: thread, Record: rec, Path: path, Partial: part, Msg: fmt.Sprintf(format, args...), Err: ErrMismatch}
	}
	errs = make([]error, len(mods))
	// The modules of each tag (one in a valid profile), chained from
	// head by next; FidTag is at most MaxTag.
	head := make([]int32, MaxTag+1)
	for i := range head {
		head[i] = -1
	}
	next := make([]int32, len(mods))
	for i := len(mods) - 1; i >= 0; i-- {
		if tag := mods[i].Tag; tag <= MaxTag {
			next[i], head[tag] = head[tag], int32(i)
		}
	}
	for ti := range p.Threads {
		t := &p.Threads[ti]
		for ri := range t.Records {
			r := &t.Records[ri]
			if r.Parent >= 0 && r.Parent < ri {
				caller := t.Records[r.Parent].Func
				for k := head[FidTag(caller)]; k >= 0; k = next[k] {
					funcs := mods[k].Funcs
					if errs[k] == nil && uint64(FidLocal(caller)) < uint64(len(funcs)) && r.CallSite > funcs[FidLocal(caller)].NumCallSites {
						errs[k] = bad(ti, ri, -1, -1, "call site %d, but function %d has %d call sites", r.CallSite, caller, funcs[FidLocal(caller)].NumCallSites)
					}
				}
			}
			for k := head[FidTag(r.Func)]; k >= 0; k = next[k] {
				if errs[k] != nil {
					continue
				}
				funcs := mods[k].Funcs
				fn := FidLocal(r.Func)
				if uint64(fn) >= uint64(len(funcs)) {
					errs[k] = bad(ti, ri, -1, -1, "function %d, but the binary has %d functions", r.Func, len(funcs))
					continue
				}
				np := funcs[fn].NumPaths
				for pi, path := range r.Paths {
					if path.ID >= np {
						errs[k] = bad(ti, ri, pi, -1, "path id %d, but function %d has %d paths", path.ID, r.Func, np)
						break
					}
				}
			}
		}
		for ki, q := range t.Partials {
			for k := head[FidTag(q.Func)]; k >= 0; k = next[k] {
				if errs[k] != nil {
					continue
				}
				funcs := mods[k].Funcs
				fn := FidLocal(q.Func)
				if uint64(fn) >= uint64(len(funcs)) {
					errs[k] = bad(ti, -1, -1, ki, "function %d, but the binary has %d functions", q.Func, len(funcs))
					continue
				}
				if nb := funcs[fn].NumBlocks; q.Block >= nb && q.Block != BlockUnknown {
					errs[k] = bad(ti, -1, -1, ki, "block %d, but function %d has %d blocks", q.Block, q.Func, nb)
				}
			}
		}
	}
	return errs
}
