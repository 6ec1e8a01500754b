package addrmap

import (
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/blpp/blpp/internal/varint"
)

// Magic starts the section; Version is the encoding's version.
const (
	Magic   = "BLPPAMAP"
	Version = 1
	// SectionName is the section's name in the instrumented binary.
	SectionName = ".blpp.map"
)

// Errors.
var (
	ErrBadMagic = errors.New("not a blpp address map")
	ErrVersion  = errors.New("unsupported address map version")
	ErrCorrupt  = errors.New("corrupt address map")
)

// header is the section's magic and version, read and written by
// internal/varint.
var header = varint.Header{Magic: Magic, MinVersion: Version, Version: Version,
	ErrBadMagic: ErrBadMagic, ErrVersion: ErrVersion, ErrCorrupt: ErrCorrupt}

// Inst is one original instruction and the addresses of its copies, in
// increasing order.
type Inst struct {
	Addr   uint64
	Copies []uint64
	// Joins, for an unconditional jmp, are the places where a copy of it
	// was left out because it would have jumped to the next instruction
	// (in a loop copy, to the block laid out after its own). Control
	// reaches the instruction at a join only through the left-out jmp,
	// so that instruction's executions there are the jmp's in that copy.
	// Increasing; nil for most instructions.
	Joins []uint64
}

// Func is one instrumented function: its original entry and its
// instructions in increasing address order (fragments such as foo.cold
// included, so some may lie below Entry).
type Func struct {
	Entry uint64
	Insts []Inst
}

// Map is the address map of one instrumented binary: its instrumented
// functions in the order of the metadata table (.blpp.meta).
type Map struct {
	Funcs []Func
}

// Lookup returns the copies of the instruction at orig, searching every
// function; nil when the map has none.
func (m *Map) Lookup(orig uint64) []uint64 {
	for i := range m.Funcs {
		if c := m.Funcs[i].Lookup(orig); c != nil {
			return c
		}
	}
	return nil
}

// Lookup returns the copies of f's instruction at orig, nil if f has no
// instruction there.
func (f *Func) Lookup(orig uint64) []uint64 {
	k := sort.Search(len(f.Insts), func(k int) bool { return f.Insts[k].Addr >= orig })
	if k < len(f.Insts) && f.Insts[k].Addr == orig {
		return f.Insts[k].Copies
	}
	return nil
}

// Inst returns f's instruction at orig, nil if there is none.
func (f *Func) Inst(orig uint64) *Inst {
	k := sort.Search(len(f.Insts), func(k int) bool { return f.Insts[k].Addr >= orig })
	if k < len(f.Insts) && f.Insts[k].Addr == orig {
		return &f.Insts[k]
	}
	return nil
}

// Index maps every original instruction address of m to its copies.
func (m *Map) Index() map[uint64][]uint64 {
	out := map[uint64][]uint64{}
	for _, f := range m.Funcs {
		for _, in := range f.Insts {
			out[in.Addr] = in.Copies
		}
	}
	return out
}

// Recorder collects (original address, copy address) pairs of one
// function in any order; Func sorts and groups them.
type Recorder struct {
	pairs, joins [][2]uint64
	// buf is Code's scratch encoding, kept for the next function: the
	// Code gets one array of exactly its length (grown from nothing, the
	// encodings were 130 MB of garbage in a large library's rewrite).
	buf []byte
}

// Add records that the instruction at orig has a copy at addr.
func (r *Recorder) Add(orig, addr uint64) { r.pairs = append(r.pairs, [2]uint64{orig, addr}) }

// AddJoin records a join of the jmp at orig at addr (Inst.Joins).
func (r *Recorder) AddJoin(orig, addr uint64) { r.joins = append(r.joins, [2]uint64{orig, addr}) }

// Reset empties r, keeping its arrays for the next function.
func (r *Recorder) Reset() { r.pairs, r.joins = r.pairs[:0], r.joins[:0] }

// Grow makes room for n more copies.
func (r *Recorder) Grow(n int) { r.pairs = slices.Grow(r.pairs, n) }

// sortPairs sorts p in place (the recorder's order is no one else's
// business) and returns it.
func sortPairs(p [][2]uint64) [][2]uint64 {
	slices.SortFunc(p, func(a, b [2]uint64) int {
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return cmp.Compare(a[1], b[1])
	})
	return p
}

// Func returns the function entered at entry with the recorded copies.
func (r *Recorder) Func(entry uint64) Func {
	p := sortPairs(r.pairs)
	// Every instruction's copies are consecutive in p: they share one
	// array, sized first, rather than one allocation each.
	ninst, ncopy := 0, 0
	for i, x := range p {
		if i == 0 || x != p[i-1] {
			ncopy++
		}
		if i == 0 || x[0] != p[i-1][0] {
			ninst++
		}
	}
	f := Func{Entry: entry, Insts: make([]Inst, 0, ninst)}
	copies := make([]uint64, 0, ncopy)
	for i, x := range p {
		if i > 0 && x == p[i-1] {
			continue
		}
		copies = append(copies, x[1])
		end := len(copies)
		if n := len(f.Insts); n > 0 && f.Insts[n-1].Addr == x[0] {
			f.Insts[n-1].Copies = copies[end-len(f.Insts[n-1].Copies)-1 : end : end]
			continue
		}
		f.Insts = append(f.Insts, Inst{Addr: x[0], Copies: copies[end-1 : end : end]})
	}
	joins := sortPairs(r.joins)
	for i, x := range joins {
		if i > 0 && x == joins[i-1] {
			continue
		}
		k := sort.Search(len(f.Insts), func(k int) bool { return f.Insts[k].Addr >= x[0] })
		if k < len(f.Insts) && f.Insts[k].Addr == x[0] {
			in := &f.Insts[k]
			if n := len(in.Joins); n == 0 || in.Joins[n-1] != x[1] {
				in.Joins = append(in.Joins, x[1])
			}
		}
		// A join of an instruction without a copy cannot be: the
		// first copy of a function always holds every instruction.
	}
	return f
}

// Encode serialises m. Layout (all integers unsigned LEB128 varints
// unless said otherwise):
//
//	magic "BLPPAMAP", version (uint32 little endian)
//	number of functions
//	per function: entry, number of instructions, then per instruction
//	  its address as a zigzag varint delta (from the entry for the first
//	  instruction, else from the previous instruction's address, which
//	  makes it positive), the number of copies (at least 1), and each copy
//	  as a zigzag varint delta from the previous copy or join written in
//	  the whole section (0 before the first), then the number of joins
//	  (Inst.Joins, usually 0) and each join as such a delta.
//
// Relocated code follows the original order, so both deltas are small.
func Encode(m *Map) []byte {
	e := NewEncoder(len(m.Funcs))
	for i := range m.Funcs {
		e.Add(&m.Funcs[i])
	}
	return e.Bytes()
}

// Encoder writes the encoding of a map one function at a time, so that a
// large binary's map need not be held whole (Func's per-instruction slices
// take several times the encoding's size). Encode(m) is NewEncoder with
// len(m.Funcs) and Add of each function in order.
type Encoder struct {
	b        []byte
	prevCopy uint64
}

// NewEncoder starts the encoding of a map of nfuncs functions.
func NewEncoder(nfuncs int) *Encoder {
	b := header.Append(nil)
	return &Encoder{b: binary.AppendUvarint(b, uint64(nfuncs))}
}

// Add appends the next function.
func (e *Encoder) Add(f *Func) {
	b, prevCopy := e.b, e.prevCopy
	b = binary.AppendUvarint(b, f.Entry)
	b = binary.AppendUvarint(b, uint64(len(f.Insts)))
	prev := f.Entry
	for _, in := range f.Insts {
		b = binary.AppendVarint(b, int64(in.Addr-prev))
		prev = in.Addr
		b = binary.AppendUvarint(b, uint64(len(in.Copies)))
		for _, c := range in.Copies {
			b = binary.AppendVarint(b, int64(c-prevCopy))
			prevCopy = c
		}
		b = binary.AppendUvarint(b, uint64(len(in.Joins)))
		for _, c := range in.Joins {
			b = binary.AppendVarint(b, int64(c-prevCopy))
			prevCopy = c
		}
	}
	e.b, e.prevCopy = b, prevCopy
}

// Code is one function's part of the encoding, made apart from the
// others (Recorder.Code, on any goroutine) and added in order by
// AddCode: the same bytes as Add of the function. Every copy but the
// function's first is written as a delta from one of its own, so only
// that one depends on what came before; Code keeps it as an address.
type Code struct {
	head, tail  []byte
	first, last uint64 // the first and the last copy or join written
	n           int    // instructions
}

// Shift moves every copy and join of the function by d bytes.
func (c *Code) Shift(d int) {
	c.first += uint64(d)
	c.last += uint64(d)
}

// AddCode appends the next function, as Add would.
func (e *Encoder) AddCode(c *Code) {
	if need := len(e.b) + len(c.head) + binary.MaxVarintLen64 + len(c.tail); need > cap(e.b) {
		// Doubling: append grows a large array by a quarter, which for
		// a large library's map copied it about five times over.
		e.b = slices.Grow(e.b, max(need, 2*cap(e.b))-len(e.b))
	}
	e.b = append(e.b, c.head...)
	if c.n == 0 {
		return
	}
	e.b = binary.AppendVarint(e.b, int64(c.first-e.prevCopy))
	e.b = append(e.b, c.tail...)
	e.prevCopy = c.last
}

// Code returns the encoding of the function Func(entry) returns,
// without making it.
func (r *Recorder) Code(entry uint64) Code {
	p, js := sortPairs(r.pairs), sortPairs(r.joins)
	n := 0
	for i, x := range p {
		if i == 0 || x[0] != p[i-1][0] {
			n++
		}
	}
	c := Code{n: n}
	b := binary.AppendUvarint(r.buf[:0], entry)
	b = binary.AppendUvarint(b, uint64(n))
	prev, prevCopy := entry, uint64(0)
	head := -1 // the head's length, once the first copy is met
	put := func(v uint64) {
		if head < 0 {
			head, c.first = len(b), v // the first copy: AddCode writes it
		} else {
			b = binary.AppendVarint(b, int64(v-prevCopy))
		}
		prevCopy = v
	}
	k := 0 // next join
	for i := 0; i < len(p); {
		a := p[i][0]
		m := i + 1
		for m < len(p) && p[m][0] == a {
			m++
		}
		b = binary.AppendVarint(b, int64(a-prev))
		prev = a
		ncopy := 0
		for q := i; q < m; q++ {
			if q == i || p[q] != p[q-1] {
				ncopy++
			}
		}
		b = binary.AppendUvarint(b, uint64(ncopy))
		for q := i; q < m; q++ {
			if q == i || p[q] != p[q-1] {
				put(p[q][1])
			}
		}
		// The joins of this instruction, distinct; those of addresses
		// without a copy are dropped, as Func drops them.
		for k < len(js) && js[k][0] < a {
			k++
		}
		nj, k0 := 0, k
		for q := k; q < len(js) && js[q][0] == a; q++ {
			if q == k0 || js[q] != js[q-1] {
				nj++
			}
			k = q + 1
		}
		b = binary.AppendUvarint(b, uint64(nj))
		for q := k0; q < k; q++ {
			if q == k0 || js[q] != js[q-1] {
				put(js[q][1])
			}
		}
		i = m
	}
	r.buf = b[:0]
	all := make([]byte, len(b))
	copy(all, b)
	if head < 0 {
		c.head = all
	} else {
		c.head, c.tail = all[:head:head], all[head:]
	}
	c.last = prevCopy
	return c
}

// Bytes returns the encoding so far; it is complete once every function
// announced to NewEncoder has been added.
func (e *Encoder) Bytes() []byte { return e.b }

// Decode parses and validates an address map: instructions strictly
// increasing within a function, every instruction with at least one copy,
// copies of one instruction strictly increasing, no trailing bytes.
func Decode(data []byte) (*Map, error) {
	r, _, err := header.Open(data)
	if err != nil {
		return nil, err
	}
	m := &Map{}
	nf := r.Count(2)
	m.Funcs = make([]Func, 0, nf)
	var prevCopy uint64
	for i := 0; i < nf && r.Err == nil; i++ {
		f := Func{Entry: r.Uvarint()}
		ni := r.Count(3)
		f.Insts = make([]Inst, 0, ni)
		prev := f.Entry
		for j := 0; j < ni && r.Err == nil; j++ {
			d := r.Varint()
			if j > 0 && d <= 0 {
				r.Fail("instructions out of order")
			}
			in := Inst{Addr: prev + uint64(d)}
			if j > 0 && in.Addr < prev {
				r.Fail("instruction address wraps")
			}
			prev = in.Addr
			nc := r.Count(1)
			if nc == 0 && r.Err == nil {
				r.Fail("instruction without a copy")
			}
			in.Copies = make([]uint64, 0, nc)
			for k := 0; k < nc && r.Err == nil; k++ {
				c := prevCopy + uint64(r.Varint())
				if k > 0 && c <= in.Copies[k-1] {
					r.Fail("copies out of order")
				}
				prevCopy = c
				in.Copies = append(in.Copies, c)
			}
			if nj := r.Count(1); nj > 0 {
				in.Joins = make([]uint64, 0, nj)
				for k := 0; k < nj && r.Err == nil; k++ {
					c := prevCopy + uint64(r.Varint())
					if k > 0 && c <= in.Joins[k-1] {
						r.Fail("joins out of order")
					}
					prevCopy = c
					in.Joins = append(in.Joins, c)
				}
			}
			f.Insts = append(f.Insts, in)
		}
		m.Funcs = append(m.Funcs, f)
	}
	if err := r.End(); err != nil {
		return nil, err
	}
	return m, nil
}

// ErrNoMap is returned by FromELF for a binary without the section.
var ErrNoMap = errors.New("no " + SectionName + " section: not a binary instrumented by blpp rewrite (or rewritten before the address map existed)")

// FromELF reads and decodes the address map of an instrumented binary.
func FromELF(f *elf.File) (*Map, error) {
	s := f.Section(SectionName)
	if s == nil {
		return nil, ErrNoMap
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SectionName, err)
	}
	return Decode(data)
}
