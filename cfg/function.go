package cfg

import (
	"strings"
)

// Source records where the bounds of a function came from (a bit set).
type Source uint16

const (
	FromSymtab Source = 1 << iota // .symtab STT_FUNC symbol
	FromDynsym                    // .dynsym STT_FUNC symbol
	FromFDE                       // .eh_frame FDE range
	FromPLT                       // PLT stub, named from its relocation
	FromEntry                     // the ELF entry point
	// Procedures found in code no symbol or FDE describes (discover.go):
	FromCall    // target of a direct call in analysed code
	FromPointer // address taken: an instruction's immediate or lea, or a pointer in data
	FromJump    // target of a direct jump that leaves another procedure
	FromGap     // start of uncovered code after padding, reached by no procedure's flow
)

func (s Source) String() string {
	var parts []string
	for _, p := range []struct {
		bit  Source
		name string
	}{{FromSymtab, "symtab"}, {FromDynsym, "dynsym"}, {FromFDE, "fde"}, {FromPLT, "plt"}, {FromEntry, "entry"},
		{FromCall, "call"}, {FromPointer, "pointer"}, {FromJump, "jump"}, {FromGap, "gap"}} {
		if s&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "|")
}

// Range is a half-open address range [Addr, Addr+Size).
type Range struct {
	Addr, Size uint64
}

// End returns the address just past the range.
func (r Range) End() uint64 { return r.Addr + r.Size }

// Contains reports whether addr is inside the range.
func (r Range) Contains(addr uint64) bool { return addr >= r.Addr && addr-r.Addr < r.Size }

// Function is a procedure of a binary: its entry, its main body and any
// split-off fragments gcc placed elsewhere (foo.cold).
type Function struct {
	// Name is the best symbol name; stripped functions get "sub_<hex>" and
	// PLT stubs "name@plt".
	Name    string
	Aliases []string // other symbol names at the same entry
	Addr    uint64   // entry address
	Size    uint64   // size of the main body [Addr, Addr+Size)
	// Parts holds the split-off fragments (gcc's foo.cold), each with the
	// symbol name or FDE it came from, joined to this function.
	Parts     []Range
	PartNames []string
	Source    Source
	PLT       bool
	// Entries are the other entries of a procedure joined from several
	// that share code (Program.joinEntries): each was the entry of one of
	// them, is entered from outside as Addr is, and starts a path of its
	// own (EdgeEntry). EntryNames are those procedures' names.
	Entries    []uint64
	EntryNames []string
	// MidFrame: the function's FDE starts inside a call frame (its first
	// unwind row is not the CIE's initial state), as a split-off
	// fragment's does; a real entry starts with the caller's frame.
	MidFrame bool
	// ReturnsTwice: it has no name, and its code saves its caller's
	// context as setjmp does (SavesContext): a stripped static binary's
	// setjmp. Set by Analyze.
	ReturnsTwice bool
	// Pad is the number of padding bytes (nops, int3, zeros) that follow
	// the main body before the next code: room the entry patch may use
	// when the body is shorter than the 5-byte jump, or than endbr64 and
	// the jump after it (decision 95); measured for bodies under 9 bytes.
	Pad uint64
	// NopsFrom, when not 0, is where the nops at the end of the main
	// body begin that the procedure runs through into the next one's
	// entry (Program.padRuns): they were padding after the range that
	// the symbol or FDE gave, and an FDE does not cover them.
	NopsFrom uint64
	// sized: the body's end came from a symbol's or an FDE's size (or a
	// PLT entry's); otherwise it is a guess (the next procedure's start)
	// that discovery may move.
	sized bool
}

// Discovered reports a procedure found only by discovery (discover.go):
// no symbol, FDE, PLT entry or the entry point gives it.
// HasName reports whether the procedure's name or one of its aliases
// matches.
func (f *Function) HasName(match func(string) bool) bool {
	if match(f.Name) {
		return true
	}
	for _, n := range f.Aliases {
		if match(n) {
			return true
		}
	}
	return false
}

func (f *Function) Discovered() bool {
	return f.Source != 0 && f.Source&(FromSymtab|FromDynsym|FromFDE|FromPLT|FromEntry) == 0
}

// IsEntry reports whether control may enter the procedure at addr from
// outside: its entry or one of its Entries.
func (f *Function) IsEntry(addr uint64) bool {
	if addr == f.Addr {
		return true
	}
	for _, e := range f.Entries {
		if e == addr {
			return true
		}
	}
	return false
}

// Ranges returns the main body followed by the fragments.
func (f *Function) Ranges() []Range {
	rs := make([]Range, 0, 1+len(f.Parts))
	rs = append(rs, Range{f.Addr, f.Size})
	return append(rs, f.Parts...)
}

// Contains reports whether addr lies in the body or a fragment.
func (f *Function) Contains(addr uint64) bool {
	if addr >= f.Addr && addr-f.Addr < f.Size {
		return true
	}
	for _, p := range f.Parts {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// TotalSize is the byte size of the body and fragments together.
func (f *Function) TotalSize() uint64 {
	n := f.Size
	for _, p := range f.Parts {
		n += p.Size
	}
	return n
}
