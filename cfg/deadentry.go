package cfg

import (
	"slices"

	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// Dead table entries [decision 98]. clang lowers a switch case it proved
// impossible (__builtin_unreachable, a default over a fully covered enum,
// a type byte whose other values cannot occur) to an empty block placed
// after the function's last instruction, so the table entries of those
// cases hold the address just past the body: into the padding, or onto
// the next function's entry where there is none. LLVM's tables only ever
// lead to blocks of their own function, so such an entry is never taken
// by a correct program, whether or not a bounds check guards the table.
//
// The graph gives these entries no edge; the copy of the table keeps them
// aimed at the original address, so that even a program that took one
// would run exactly the bytes the original runs there. Only the exact end
// of a body whose size a symbol or an FDE gave qualifies, and only where
// filler or another procedure's entry follows it: a wrong size on
// hand-written code would have code of the same function there, which a
// live case may reach.

// IsDead reports whether entry k of the table is dead (listed in Dead).
func (jt *JumpTable) IsDead(k int) bool {
	_, ok := slices.BinarySearch(jt.Dead, k)
	return ok
}

// partEnd reports whether t is the end of one of f's fragments, whose
// sizes their FDEs gave: a fragment joined because the main body's table
// jumps into it is a body of its own, with its own tables, whose
// impossible cases clang sends past its end (libclang-cpp's StmtPrinter
// dispatch reaches 200 such bodies; a copy of one's table cut at its
// first dead entry sent later cases into other tables' copies).
func partEnd(f *Function, t uint64) bool {
	for _, r := range f.Parts {
		if t == r.Addr+r.Size {
			return true
		}
	}
	return false
}

// trapLimit bounds the straight-line run trapsAt follows.
const trapLimit = 8

// trapsAt reports whether the code at t runs straight into an
// instruction that always faults in user mode (ud0, ud1, ud2, hlt)
// within trapLimit instructions, with no branch, call or system call
// before it (not int3, which a debugger or a SIGTRAP handler resumes): gcc's unreachable handler in a
// stripped foo.cold, as CPython 3.11's dispatch table holds for its
// CACHE opcode (mov %r15,0x38(%r12); mov 0x18,%rax; ud2, shared by two
// functions' tables, so no one function joins it). Such an entry is
// dead too: a program that took it would crash there, and the copy of
// the table keeps it aimed at the original bytes, which run as before.
func (bd *builder) trapsAt(t uint64) bool {
	d := x86.NewDecoder()
	defer d.Release()
	var in x86.Info
	for n := 0; n < trapLimit; n++ {
		code := bd.b.Code(t)
		if len(code) == 0 || d.DecodeInfoTo(&in, code, t) != nil {
			return false
		}
		switch in.Kind {
		case x86.Halt:
			return in.Op == x86asm.UD0 || in.Op == x86asm.UD1 || in.Op == x86asm.UD2 || in.Op == x86asm.HLT
		case x86.Other:
		default:
			return false
		}
		if in.Op == x86asm.SYSCALL || !in.FromX86asm() {
			return false
		}
		t += uint64(in.Len)
	}
	return false
}

// deadPad bounds the filler looked at after a body's end: a function's
// alignment is at most 64 bytes.
const deadPad = 64

// deadTarget reports whether t, the target of a table entry outside the
// procedure, is where the compiler puts the cases it proved impossible:
// the end of the sized main body or of a fragment, followed by filler,
// by the entry of another procedure or by the end of the section.
func (bd *builder) deadTarget(t uint64) bool {
	f := bd.f
	if bd.rangeOf(t) >= 0 {
		return false
	}
	if bd.trapsAt(t) {
		return true
	}
	if !(f.sized && t == f.Addr+f.Size || partEnd(f, t)) {
		return false
	}
	code := bd.b.Code(t)
	if len(code) == 0 || padding(code, deadPad) > 0 {
		return true // the section's end, or filler
	}
	return bd.env.funcAt(t) != nil
}
