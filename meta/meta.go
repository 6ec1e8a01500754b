// Package meta is the metadata table the rewriter stores in a non-loaded
// section (.blpp.meta) of an instrumented binary (DESIGN decision 12): for
// every function, its original address ranges, name, blocks, edges and
// loop depths, and its call sites. A report needs only the instrumented
// binary and a profile: it rebuilds each function's Ball-Larus numbering
// from the stored graph with package pathnum, which is deterministic, and
// checks the path count against the stored one. Path expansion (a path
// number, or a partial path's stopping block and register, to blocks,
// edges and instructions) is defined here once, on the table
// (Table.ExpandPath, Table.ExpandPartial), for every report.
//
// This package owns the encoding. The format is versioned; Decode trusts
// nothing in its input.
package meta

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/blpp/blpp/internal/varint"
	"github.com/blpp/blpp/pathnum"
)

// Magic starts the section; Version is the encoding's version. Decode
// reads MinVersion to Version: version 2 added EntriesCounted, version 3
// the original bytes under the rewriter's patches (Table.Patched),
// version 4 the Dispatch edges (decision 134), version 5 each
// instrumented function's length before its graph (DecodeSome skips the
// graphs it is not asked for).
const (
	Magic      = "BLPPMETA"
	Version    = 5
	MinVersion = 1
	// SectionName is the section's name in the instrumented binary.
	SectionName = ".blpp.meta"
)

// Errors.
var (
	ErrBadMagic = errors.New("not blpp metadata")
	ErrVersion  = errors.New("unsupported metadata version")
	ErrCorrupt  = errors.New("corrupt metadata")
)

// header is the section's magic and version, read and written by
// internal/varint.
var header = varint.Header{Magic: Magic, MinVersion: MinVersion, Version: Version,
	ErrBadMagic: ErrBadMagic, ErrVersion: ErrVersion, ErrCorrupt: ErrCorrupt}

// EdgeKind mirrors cfg.EdgeKind (same numbering); it is stored as a byte.
type EdgeKind uint8

// Block is a basic block of the original binary.
type Block struct {
	Addr, End uint64
	Insts     uint32
	LoopDepth uint32
}

// Edge is a CFG edge; To == -1 is EXIT.
type Edge struct {
	From, To int32
	Kind     EdgeKind
	// Break: the edge ends a path like a backedge (pathnum.Edge.Break).
	Break bool
	// Dispatch: an edge of a replicated dispatch jump
	// (pathnum.Edge.Dispatch).
	Dispatch bool
}

// breakBit and dispatchBit mark Edge.Break and Edge.Dispatch in the
// encoded kind byte.
const (
	breakBit    = 0x80
	dispatchBit = 0x40
)

// Func describes one function of the original binary.
type Func struct {
	Name  string
	Entry uint64
	Size  uint64
	// Instrumented is false for functions left alone; they keep a name,
	// an address and the reason.
	Instrumented bool
	Reason       string
	// EntriesCounted says, for a function left alone, that its entry
	// was redirected through a stub that counts it, so profiles hold its
	// calls in records without paths (decision 70).
	EntriesCounted bool
	Blocks         []Block // Blocks[0] is the entry
	Edges          []Edge
	NumPaths       uint64
	CallSites      []uint64 // addresses of call instructions, in block order
	// Skipped says that DecodeSome left the instrumented function's
	// graph out: Blocks, Edges, NumPaths and CallSites are empty, and
	// Numbering refuses it.
	Skipped bool
}

// Table is the whole metadata of an instrumented binary.
type Table struct {
	// OrigBuildID is the build-id of the original binary, if it had one.
	OrigBuildID []byte
	// MaxPaths is the path limit the rewriter numbered with (pathnum's
	// overflow policy depends on it, so renumbering must use it too).
	MaxPaths uint64
	// InstrID identifies this instrumentation of the binary: the runtime
	// writes it into profiles as their build-id, so a report can refuse a
	// profile of a different rewrite of the same program (other
	// --include/--exclude, another blpp version). The original's build-id
	// cannot tell them apart.
	InstrID []byte
	Funcs   []Func
	// Encoded holds functions already encoded (EncodeFunc), by a writer
	// that drops each function's graph once it is written: they come
	// before Funcs in the table. Decode leaves it empty.
	Encoded []EncodedFunc
	// Patched holds, for every patch the rewriter wrote over the
	// original code (the 5-byte jumps at instrumented functions' entries
	// and their other entries, and at the entries of left-out functions
	// whose entries are counted), its address and the original bytes it
	// covers, in address order, so that reports decode the original
	// instructions (OrigCode). PatchedKnown is false for tables of
	// versions before 3, which did not record them.
	Patched      []Patch
	PatchedKnown bool

	// cache holds each function's numbering and expanded paths
	// (expand.go); it is filled on first use.
	cache map[uint32]*funcCache
}

// A Patch is a range of original code that the rewriter overwrote: its
// address and the bytes that were there.
type Patch struct {
	Addr uint64
	Orig []byte
}

// Weight is the edge weight used when numbering: the same function of
// loop depth the rewriter used (analysis.Weight), repeated here so that
// meta does not depend on the analysis packages.
func Weight(depth uint32) float64 {
	if depth > 12 {
		depth = 12
	}
	return math.Pow(10, float64(depth))
}

// Numbering rebuilds f's Ball-Larus numbering from the stored graph.
func (f *Func) Numbering(maxPaths uint64) (*pathnum.Numbering, error) {
	if !f.Instrumented {
		return nil, fmt.Errorf("%s: not instrumented", f.Name)
	}
	if f.Skipped {
		return nil, fmt.Errorf("%s: its graph was not decoded (meta.DecodeSome)", f.Name)
	}
	g := &pathnum.Graph{NumNodes: len(f.Blocks) + 1, Entry: 0, Exit: len(f.Blocks), Edges: make([]pathnum.Edge, len(f.Edges))}
	for i, e := range f.Edges {
		to := int(e.To)
		if e.To < 0 {
			to = len(f.Blocks)
		}
		g.Edges[i] = pathnum.Edge{From: int(e.From), To: to, Weight: Weight(f.Blocks[e.From].LoopDepth), Break: e.Break, Dispatch: e.Dispatch}
	}
	n, err := pathnum.Number(g, pathnum.Options{MaxPaths: maxPaths})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name, err)
	}
	if n.NumPaths != f.NumPaths {
		return nil, fmt.Errorf("%s: %w: numbering gives %d paths, table says %d", f.Name, ErrCorrupt, n.NumPaths, f.NumPaths)
	}
	return n, nil
}

// ComputeInstrID derives t's InstrID from everything else in the table.
func (t *Table) ComputeInstrID() {
	t.EncodeWithID()
}

// EncodeWithID sets t's InstrID (ComputeInstrID) and returns Encode(t),
// encoding the table once: the ID is the hash of the encoding with an
// empty ID, which differs from the final one only in that field.
func (t *Table) EncodeWithID() []byte {
	c := *t
	c.InstrID = nil
	// Room for the ID: it goes in where the encoding is, moving what
	// follows it (libLLVM's table is some 60 MB; a copy of it, and the
	// arrays append doubled through, were the main goroutine's page
	// faults [decision 118]).
	const idSize = 20
	b := encode(&c, idSize+binary.MaxVarintLen64)
	sum := sha256.Sum256(b)
	t.InstrID = sum[:idSize]
	// The empty ID is one zero byte (its length) after the build-id and
	// MaxPaths (Encode).
	at := len(binary.AppendUvarint(appendBytes(header.Append(nil), t.OrigBuildID), t.MaxPaths))
	id := appendBytes(nil, t.InstrID)
	n := len(b)
	b = slices.Grow(b, len(id)-1)[:n+len(id)-1]
	copy(b[at+len(id):], b[at+1:n])
	copy(b[at:], id)
	return b
}

// Encode serialises t.
func Encode(t *Table) []byte { return encode(t, 0) }

// encode is Encode into an array with room for extra bytes more.
func encode(t *Table, extra int) []byte { return encodeAs(t, extra, true) }

// encodeAs is encode with or without the functions' lengths (versions
// 5 on, and before; the tests make tables of older versions with it).
func encodeAs(t *Table, extra int, lengths bool) []byte {
	// The size: exact for what is encoded already, EncodeFunc's guess
	// for the rest.
	n := 64 + len(t.OrigBuildID) + len(t.InstrID) + extra
	for _, e := range t.Encoded {
		n += len(e)
	}
	for i := range t.Funcs {
		f := &t.Funcs[i]
		n += 24 + binary.MaxVarintLen32 + len(f.Name) + 8*len(f.Blocks) + 4*len(f.Edges) + 4*len(f.CallSites)
	}
	for _, p := range t.Patched {
		n += 2*binary.MaxVarintLen64 + len(p.Orig)
	}
	b := header.Append(make([]byte, 0, n))
	b = appendBytes(b, t.OrigBuildID)
	b = binary.AppendUvarint(b, t.MaxPaths)
	b = appendBytes(b, t.InstrID)
	b = binary.AppendUvarint(b, uint64(len(t.Encoded)+len(t.Funcs)))
	for _, e := range t.Encoded {
		b = append(b, e...)
	}
	for i := range t.Funcs {
		if f := &t.Funcs[i]; !lengths && f.Instrumented {
			b = appendGraph(appendFuncHead(b, f), f)
		} else {
			b = appendFunc(b, f)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(t.Patched)))
	for _, p := range t.Patched {
		b = binary.AppendUvarint(b, p.Addr)
		b = appendBytes(b, p.Orig)
	}
	return b
}

// EncodedFunc is the encoding of one function (EncodeFunc), as Encode
// writes it in the table (Table.Encoded).
type EncodedFunc []byte

// EncodeFunc encodes f as Encode does in a table.
func EncodeFunc(f *Func) EncodedFunc {
	// Room for typical varints and the graph's length, so that it is not
	// copied while it grows.
	n := 24 + binary.MaxVarintLen32 + len(f.Name) + 8*len(f.Blocks) + 4*len(f.Edges) + 4*len(f.CallSites)
	return appendFunc(make([]byte, 0, n), f)
}

// appendFunc appends the encoding of f.
func appendFunc(b []byte, f *Func) []byte {
	b = appendFuncHead(b, f)
	if !f.Instrumented {
		return b
	}
	// The graph, then its length moved in before it (DecodeSome skips
	// it by the length).
	at := len(b)
	b = appendGraph(b, f)
	var n [binary.MaxVarintLen64]byte
	return slices.Insert(b, at, n[:binary.PutUvarint(n[:], uint64(len(b)-at))]...)
}

// appendFuncHead appends f's name, address, size and whether it is
// instrumented, and an uninstrumented function's reason: all of it but
// an instrumented function's graph.
func appendFuncHead(b []byte, f *Func) []byte {
	b = appendBytes(b, []byte(f.Name))
	b = binary.AppendUvarint(b, f.Entry)
	b = binary.AppendUvarint(b, f.Size)
	if !f.Instrumented {
		b = append(b, byte(b2i(f.EntriesCounted)<<1))
		return appendBytes(b, []byte(f.Reason))
	}
	return append(b, 1)
}

// appendGraph appends f's blocks, edges, path count and call sites.
func appendGraph(b []byte, f *Func) []byte {
	b = binary.AppendUvarint(b, uint64(len(f.Blocks)))
	for _, bl := range f.Blocks {
		b = binary.AppendUvarint(b, bl.Addr)
		b = binary.AppendUvarint(b, bl.End-bl.Addr)
		b = binary.AppendUvarint(b, uint64(bl.Insts))
		b = binary.AppendUvarint(b, uint64(bl.LoopDepth))
	}
	b = binary.AppendUvarint(b, uint64(len(f.Edges)))
	for _, e := range f.Edges {
		b = binary.AppendUvarint(b, uint64(e.From))
		b = binary.AppendVarint(b, int64(e.To))
		k := byte(e.Kind) &^ (breakBit | dispatchBit)
		if e.Break {
			k |= breakBit
		}
		if e.Dispatch {
			k |= dispatchBit
		}
		b = append(b, k)
	}
	b = binary.AppendUvarint(b, f.NumPaths)
	b = binary.AppendUvarint(b, uint64(len(f.CallSites)))
	for _, c := range f.CallSites {
		b = binary.AppendUvarint(b, c)
	}
	return b
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// Decode parses and validates a metadata section.
func Decode(data []byte) (*Table, error) { return DecodeSome(data, nil) }

// DecodeSome is Decode of the graphs of the instrumented functions need
// names (by index; nil: all) alone: the others are Skipped, with their
// names, addresses and sizes. A whole-process profile's view of a few
// functions of a library of a hundred thousand needs no more. Tables
// before version 5, whose functions have no length, are decoded whole.
func DecodeSome(data []byte, need func(fn uint32) bool) (*Table, error) {
	r, v, err := header.Open(data)
	if err != nil {
		return nil, err
	}
	t := &Table{OrigBuildID: append([]byte(nil), r.Bytes()...)}
	t.MaxPaths = r.Uvarint()
	t.InstrID = append([]byte(nil), r.Bytes()...)
	nf := r.Count(4)
	t.Funcs = make([]Func, 0, nf)
	for i := 0; i < nf && r.Err == nil; i++ {
		f := Func{Name: string(r.Bytes()), Entry: r.Uvarint(), Size: r.Uvarint()}
		switch k := r.Byte(); {
		case k == 0 || k == 2 && v >= 2:
			f.EntriesCounted = k == 2
			f.Reason = string(r.Bytes())
			t.Funcs = append(t.Funcs, f)
			continue
		case k == 1:
			f.Instrumented = true
		default:
			r.Fail("bad instrumented flag")
		}
		if v < 5 {
			decodeGraph(r, &f)
			t.Funcs = append(t.Funcs, f)
			continue
		}
		body := r.Bytes()
		if r.Err != nil {
			break
		}
		if need != nil && !need(uint32(i)) {
			f.Skipped = true
			t.Funcs = append(t.Funcs, f)
			continue
		}
		// The graph is read where it lies, r cut to its end.
		whole, end := r.B, r.Off
		r.B, r.Off = r.B[:end], end-len(body)
		decodeGraph(r, &f)
		if r.Err == nil && r.Off != end {
			r.Fail("function graph shorter than its length")
		}
		r.B = whole
		t.Funcs = append(t.Funcs, f)
	}
	if v >= 3 {
		t.PatchedKnown = true
		np := r.Count(3)
		t.Patched = make([]Patch, 0, np)
		var end uint64
		for i := 0; i < np && r.Err == nil; i++ {
			p := Patch{Addr: r.Uvarint(), Orig: append([]byte(nil), r.Bytes()...)}
			switch {
			case len(p.Orig) == 0 || p.Addr+uint64(len(p.Orig)) < p.Addr:
				r.Fail("bad patch range")
			case i > 0 && p.Addr < end:
				r.Fail("patches out of order or overlapping")
			}
			end = p.Addr + uint64(len(p.Orig))
			t.Patched = append(t.Patched, p)
		}
	}
	if err := r.End(); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeGraph reads an instrumented function's blocks, edges, path count
// and call sites into f.
func decodeGraph(r *varint.Reader, f *Func) {
	nb := r.Count(4)
	if nb == 0 && r.Err == nil {
		r.Fail("instrumented function without blocks")
	}
	f.Blocks = make([]Block, nb)
	for j := range f.Blocks {
		addr := r.Uvarint()
		size := r.Uvarint()
		if addr+size < addr {
			r.Fail("block range wraps")
		}
		f.Blocks[j] = Block{Addr: addr, End: addr + size, Insts: uint32(r.Uvarint()), LoopDepth: uint32(r.Uvarint())}
	}
	ne := r.Count(3)
	f.Edges = make([]Edge, ne)
	for j := range f.Edges {
		from, to := r.Uvarint(), r.Varint()
		if from >= uint64(nb) || to < -1 || to >= int64(nb) {
			r.Fail("edge endpoint out of range")
		}
		k := r.Byte()
		f.Edges[j] = Edge{From: int32(from), To: int32(to), Kind: EdgeKind(k &^ (breakBit | dispatchBit)), Break: k&breakBit != 0, Dispatch: k&dispatchBit != 0}
	}
	f.NumPaths = r.Uvarint()
	nc := r.Count(1)
	f.CallSites = make([]uint64, nc)
	for j := range f.CallSites {
		f.CallSites[j] = r.Uvarint()
	}
}
