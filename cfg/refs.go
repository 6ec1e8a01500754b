package cfg

import (
	"sync"

	"blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// refIndex is the set of data addresses the program's code refers to:
// rip-relative operands and absolute displacements (non-PIC code), found
// by a linear sweep of the executable sections. A table without a bounds
// check ends before the next such address: another table or other data
// begins there.
type refIndex struct {
	once sync.Once
	set  map[uint64]bool
	// calls are the targets of direct calls the same sweep found,
	// branches those of direct jumps and calls.
	calls, branches map[uint64]bool
	// from maps the target of every instruction with a direct target
	// (x86.Kind.HasTarget) to the addresses of those instructions, in
	// address order.
	from map[uint64][]uint64
}

// BranchSources maps the destination of every direct branch, call and
// other instruction with a target that a linear sweep of the executable
// sections finds to the addresses of the instructions, in address
// order. The sweep may decode data as code, so a target may be bogus;
// the rewriter only uses it to stay away from code something may branch
// into. The map is shared: callers must not change it.
func (b *Binary) BranchSources() map[uint64][]uint64 {
	return b.sweepRefs().from
}

// referenced reports whether some instruction of the program refers to
// addr as data. The sweep may decode data as code; a bogus reference only
// ends a table earlier.
func (b *Binary) referenced(addr uint64) bool {
	return b.sweepRefs().set[addr]
}

// calledDirectly reports whether a direct call instruction anywhere in
// the program's code targets addr: such an address starts a procedure,
// even when a procedure that jumps to it was taken for its parent.
func (b *Binary) calledDirectly(addr uint64) bool {
	return b.sweepRefs().calls[addr]
}

func (b *Binary) sweepRefs() *refIndex {
	ri := &b.refs
	ri.once.Do(func() {
		ri.set = make(map[uint64]bool)
		ri.calls = make(map[uint64]bool)
		ri.branches = make(map[uint64]bool)
		ri.from = make(map[uint64][]uint64)
		for _, s := range b.sections {
			if !s.Exec {
				continue
			}
			code := b.Code(s.Addr)
			for off := 0; off < len(code); {
				in, err := x86.Decode(code[off:], s.Addr+uint64(off))
				if err != nil {
					off++
					continue
				}
				if in.RIPRel && !in.Kind.HasTarget() {
					ri.set[in.RIPTarget] = true
				}
				if in.Kind == x86.Call {
					ri.calls[in.Target] = true
				}
				if in.Kind == x86.Call || in.Kind == x86.Jmp || in.Kind == x86.Jcc {
					ri.branches[in.Target] = true
				}
				if in.Kind.HasTarget() {
					ri.from[in.Target] = append(ri.from[in.Target], s.Addr+uint64(off))
				}
				for _, a := range in.Raw.Args {
					if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Segment == 0 && m.Disp > 0 {
						ri.set[uint64(m.Disp)] = true
					}
				}
				off += in.Len
			}
		}
	})
	return ri
}
