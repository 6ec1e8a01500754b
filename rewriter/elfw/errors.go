package elfw

import (
	"errors"
	"fmt"
)

// Sentinel errors. Write wraps them in a FormatError (the input file is
// malformed or of a kind it does not handle) or an Error (a request in
// Options cannot be honoured), so errors.Is finds them either way.
var (
	// ErrUnsupported: the file is an ELF file, but not a 64-bit
	// little-endian x86-64 executable (ET_EXEC or ET_DYN).
	ErrUnsupported = errors.New("not an x86-64 ELF executable")
	// ErrMalformed: a header, table or entry of the input is inconsistent.
	ErrMalformed = errors.New("malformed ELF file")
	// ErrTooManySegments: more than MaxSegments new segments were asked
	// for; the program header table has room for that many only.
	ErrTooManySegments = errors.New("too many new segments")
	// ErrBadSegment: a new segment's name, flags or size is unusable.
	ErrBadSegment = errors.New("unusable segment")
	// ErrBelowFree: a new segment starts below the first free address
	// (NextFreeAddr), where it would overlap the image or the new program
	// header table.
	ErrBelowFree = errors.New("address below the first free address")
	// ErrUnaligned: a new segment's address is not page-aligned.
	ErrUnaligned = errors.New("address not page-aligned")
	// ErrOverlap: two new segments, or two patches, or a patch and a field
	// Write itself rewrites, cover the same bytes.
	ErrOverlap = errors.New("overlapping ranges")
	// ErrNotFileBacked: a patch is not entirely inside the file-backed part
	// of one existing PT_LOAD segment, or a code address is not inside the
	// file-backed part of an executable segment.
	ErrNotFileBacked = errors.New("range not file-backed in one loadable segment")
	// ErrNotExecutable: an entry or exit-hook address lies in a segment
	// without PF_X.
	ErrNotExecutable = errors.New("address not in an executable segment")
	// ErrStatic: the binary has no program interpreter and is no shared
	// object, so nobody runs its DT_INIT or DT_FINI; static binaries need
	// a different exit hook.
	ErrStatic = errors.New("statically linked: the dynamic loader does not run DT_INIT or DT_FINI")
	// ErrNoFiniSlot: .dynamic has neither a DT_FINI entry nor a spare
	// DT_NULL slot to turn into one.
	ErrNoFiniSlot = errors.New("no DT_FINI entry and no spare DT_NULL slot in the dynamic section")
	// ErrNoInitSlot: .dynamic has neither a DT_INIT entry nor a spare
	// DT_NULL slot to turn into one.
	ErrNoInitSlot = errors.New("no DT_INIT entry and no spare DT_NULL slot in the dynamic section")
	// ErrBadSection: a new section has an unusable name, or one that
	// another new section has.
	ErrBadSection = errors.New("unusable section")
	// ErrBadSymbol: a new symbol has an unusable name, or its address is
	// in no section.
	ErrBadSymbol = errors.New("unusable symbol")
	// ErrNoDynsym: a symbol marked Dynamic cannot go in .dynsym: the file
	// has no dynamic symbol table, or no symbol of that name in it.
	ErrNoDynsym = errors.New("no dynamic symbol to extend")
)

// FormatError reports a problem with the input file at a file offset.
type FormatError struct {
	Off uint64 // file offset of the offending header or entry
	Msg string // what is wrong, lowercase, no trailing period
	Err error  // ErrMalformed or ErrUnsupported
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("elf: offset %#x: %s", e.Off, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Error reports a request in Options that Write cannot honour.
type Error struct {
	Op   string // "segment", "patch", "entry", "init", "fini", "section", "eh_frame_hdr", "symbol"
	Name string // segment or section name; empty for the others
	Addr uint64 // virtual address concerned; 0 when there is none
	Err  error  // one of the sentinel errors
	// Detail says more when the sentinel alone is not enough.
	Detail string
}

func (e *Error) Error() string {
	s := e.Op
	if e.Name != "" {
		s += fmt.Sprintf(" %q", e.Name)
	}
	if e.Addr != 0 {
		s += fmt.Sprintf(" at %#x", e.Addr)
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

func malformed(off uint64, format string, args ...any) error {
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Err: ErrMalformed}
}

func unsupported(off uint64, format string, args ...any) error {
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Err: ErrUnsupported}
}
