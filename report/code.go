package report

// This file reads the original program's code out of an instrumented
// binary: the file keeps the original sections where they were, except
// for the bytes the rewriter patched (entry jumps), which the metadata
// keeps (meta.Table.Patched, since metadata version 3). Every view and
// export that shows or counts instructions decodes them here.

import (
	"errors"
	"fmt"

	"github.com/blpp/blpp/cfg/x86"
)

// Why original code cannot be read.
var (
	errNoFile    = errors.New("no binary to decode from")
	errNotInFile = errors.New("not in the file's loaded segments")
	// errPatchedUnknown: metadata before version 3 did not keep the bytes
	// under the entry jumps.
	errPatchedUnknown = errors.New("the metadata does not keep the original bytes under blpp's entry jump (rewrite the program with this blpp)")
)

// origCode returns n bytes of module k's original code at addr.
func (m *Model) origCode(k uint32, addr uint64, n int) ([]byte, error) {
	mod := &m.Modules[k]
	if mod.File == nil {
		return nil, errNoFile
	}
	for _, p := range mod.File.Progs {
		if p.Type != 1 /* PT_LOAD */ || addr < p.Vaddr || addr-p.Vaddr >= p.Filesz {
			continue
		}
		if uint64(n) > p.Filesz-(addr-p.Vaddr) {
			break
		}
		buf := make([]byte, n)
		if _, err := p.ReadAt(buf, int64(addr-p.Vaddr)); err != nil {
			return nil, fmt.Errorf("%#x: %w", addr, err)
		}
		if _, ok := mod.Table.OrigCode(addr, buf); !ok {
			return nil, errPatchedUnknown
		}
		return buf, nil
	}
	return nil, fmt.Errorf("%#x, %d bytes: %w", addr, n, errNotInFile)
}

// BlockInsts decodes block bi of function fn from the original code. The
// decoding must end exactly at the block's end with the number of
// instructions the metadata gives, else it is refused.
func (m *Model) BlockInsts(fn FuncID, bi int) ([]x86.Inst, error) {
	f := m.Func(fn)
	if bi < 0 || bi >= len(f.Blocks) {
		return nil, fmt.Errorf("%s has no block %d", f.Name, bi)
	}
	b := &f.Blocks[bi]
	if b.End <= b.Addr || b.End-b.Addr > 1<<20 {
		return nil, fmt.Errorf("block %#x-%#x: bad range", b.Addr, b.End)
	}
	code, err := m.origCode(fn.Module, b.Addr, int(b.End-b.Addr))
	if err != nil {
		return nil, err
	}
	var out []x86.Inst
	for a := b.Addr; a < b.End; {
		in, err := x86.Decode(code[a-b.Addr:], a)
		if err != nil {
			return nil, fmt.Errorf("decoding %#x: %w", a, err)
		}
		out = append(out, in)
		a += uint64(in.Len)
	}
	if len(out) != int(b.Insts) {
		return nil, fmt.Errorf("block %#x-%#x decodes to %d instructions, the metadata says %d", b.Addr, b.End, len(out), b.Insts)
	}
	return out, nil
}

// lastInst is the address of the last instruction of block bi of
// function fn: where BOLT sees the block's branch or fall-through leave.
func (m *Model) lastInst(fn FuncID, bi int) (uint64, bool) {
	insts, err := m.BlockInsts(fn, bi)
	if err != nil || len(insts) == 0 {
		return 0, false
	}
	return insts[len(insts)-1].Addr, true
}

// instAt decodes the original instruction at addr in module k.
func (m *Model) instAt(k uint32, addr uint64) (x86.Inst, bool) {
	var code []byte
	for n := 15; n > 0 && code == nil; n-- { // shorter near a segment's end
		code, _ = m.origCode(k, addr, n)
	}
	if code == nil {
		return x86.Inst{}, false
	}
	in, err := x86.Decode(code, addr)
	return in, err == nil
}

// directTarget returns the target of the direct call or jump at addr in
// module k's original code.
func (m *Model) directTarget(k uint32, addr uint64) (uint64, bool) {
	in, ok := m.instAt(k, addr)
	if !ok || !in.Kind.HasTarget() {
		return 0, false
	}
	return in.Target, true
}
