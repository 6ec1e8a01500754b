package report

import (
	"crypto/md5"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/blpp/blpp/internal/cursor"
)

// Pseudo probes are LLVM's block identities for sample profiles
// (clang -fpseudo-probe-for-profiling): the compiler numbers each IR block
// and call of a function before it optimizes anything, and records where
// each probe ended up in the machine code, with the inline context it
// ended up in, in two non-loaded sections [llvm/MC/MCPseudoProbe.h]. A
// sample profile keyed by probe index instead of source line locates a
// count exactly where the compiler reading it will look for it: code that
// the line table puts at line 0 (merged, hoisted or tail-duplicated
// instructions; a fifth of Lua's executed instructions) and blocks that
// share a source line keep their counts apart.

// ErrPseudoProbe: a .pseudo_probe or .pseudo_probe_desc section does not
// decode.
var ErrPseudoProbe = errors.New("malformed pseudo probe section")

// A ProbeKind is what a probe marks.
type ProbeKind uint8

const (
	ProbeBlock        ProbeKind = 0
	ProbeIndirectCall ProbeKind = 1
	ProbeDirectCall   ProbeKind = 2
)

func (k ProbeKind) String() string {
	switch k {
	case ProbeBlock:
		return "block"
	case ProbeIndirectCall:
		return "indirect call"
	case ProbeDirectCall:
		return "direct call"
	}
	return fmt.Sprintf("ProbeKind(%d)", uint8(k))
}

// Probe attributes [llvm/IR/PseudoProbe.h, PseudoProbeAttributes].
const (
	probeAttrSentinel = 0x2 // the address field holds the GUID of a split function
	probeAttrDisc     = 0x4 // a discriminator follows the address (LLVM 17 on)
)

// A Probe is one probe of a function: its index among the function's
// probes, and the address of the instruction it precedes.
type Probe struct {
	Addr  uint64
	Index uint32
	Kind  ProbeKind
	Disc  uint32
}

// A ProbeNode is one function in the inline forest of the probes: an
// outlined function at the top, below it the functions inlined into it,
// each at the call probe (Site) of its caller that it replaced.
type ProbeNode struct {
	GUID     uint64
	Site     uint32 // the caller's call probe; 0 for an outlined function
	Probes   []Probe
	Children []*ProbeNode
}

// A ProbeDesc is a function's entry of .pseudo_probe_desc: its GUID (the
// low 64 bits of the MD5 of its name), the hash of its CFG when probed,
// which the compiler compares to see whether a profile is stale, and its
// name.
type ProbeDesc struct {
	GUID, Hash uint64
	Name       string
}

// PseudoProbes are the decoded sections of one binary.
type PseudoProbes struct {
	Desc  map[uint64]ProbeDesc
	Roots []*ProbeNode // the outlined functions, in section order
}

// ProbeGUID is LLVM's Function::getGUID of a name as pseudo probes use
// it: the MD5 of the name, its first 8 bytes read little-endian.
func ProbeGUID(name string) uint64 {
	h := md5.Sum([]byte(name))
	return binary.LittleEndian.Uint64(h[:8])
}

// ReadPseudoProbes decodes the pseudo probe sections of f; nil and no
// error when it has none. starts gives the entry of each function by its
// probe GUID (ProbeGUID of its symbol name): clang 16 writes the first
// probe of each function as an offset from the function's entry. They
// must be the original entries: a binary blpp rewrote has symbols of the
// same names at the relocated copies.
func ReadPseudoProbes(f *elf.File, starts map[uint64]uint64) (*PseudoProbes, error) {
	ps, ds := f.Section(".pseudo_probe"), f.Section(".pseudo_probe_desc")
	if ps == nil || ds == nil {
		return nil, nil
	}
	for _, s := range []*elf.Section{ps, ds} {
		if s.Type == elf.SHT_NOBITS || s.Size > 1<<30 {
			return nil, fmt.Errorf("%s: %w: %d bytes of type %v", s.Name, ErrPseudoProbe, s.Size, s.Type)
		}
	}
	desc, err := ds.Data()
	if err != nil {
		return nil, fmt.Errorf(".pseudo_probe_desc: %w", err)
	}
	probes, err := ps.Data()
	if err != nil {
		return nil, fmt.Errorf(".pseudo_probe: %w", err)
	}
	return decodePseudoProbes(desc, probes, starts)
}

// probeError locates a decoding failure in one of the two sections.
type probeError struct {
	Section string
	Off     int
	Msg     string
	Err     error
}

func (e *probeError) Error() string {
	return fmt.Sprintf("%s at offset %#x: %s", e.Section, e.Off, e.Msg)
}

func (e *probeError) Unwrap() error { return e.Err }

func probeCursor(data []byte, section string) cursor.Cursor {
	return cursor.Cursor{Data: data, Short: ErrPseudoProbe, Located: func(off int, msg string, sentinel error) error {
		return &probeError{section, off, msg, sentinel}
	}}
}

// uleb reads an unsigned LEB128 number of at most 64 bits [DWARF5 7.6].
func uleb(c *cursor.Cursor, what string) uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		b := c.U8(what)
		if c.Err != nil {
			return 0
		}
		if shift == 63 && b > 1 || shift > 63 {
			c.Fail(ErrPseudoProbe, "%s: LEB128 number over 64 bits", what)
			return 0
		}
		v |= uint64(b&0x7f) << shift
		if b&0x80 == 0 {
			return v
		}
	}
}

// sleb reads a signed LEB128 number of at most 64 bits.
func sleb(c *cursor.Cursor, what string) int64 {
	var v int64
	var shift uint
	for {
		b := c.U8(what)
		if c.Err != nil {
			return 0
		}
		if shift == 63 && b != 0 && b != 0x7f || shift > 63 {
			c.Fail(ErrPseudoProbe, "%s: LEB128 number over 64 bits", what)
			return 0
		}
		v |= int64(b&0x7f) << shift
		shift += 7
		if b&0x80 == 0 {
			if shift < 64 && b&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

// maxProbeDepth bounds the inline nesting a section may claim; real
// inline stacks are a few dozen deep.
const maxProbeDepth = 256

// decodePseudoProbes decodes the two sections [llvm/MC/MCPseudoProbe.h]:
//
//	.pseudo_probe_desc: { GUID u64, Hash u64, NameSize uleb, Name }...
//	.pseudo_probe:      FUNCTION_BODY...
//	FUNCTION_BODY: [INLINE_SITE uleb, inlinees only] GUID u64 NPROBES uleb
//	               NINLINED uleb PROBE{NPROBES} FUNCTION_BODY{NINLINED}
//	PROBE: INDEX uleb, TYPE u8 (kind in bits 0-3, attributes in 4-6, bit 7:
//	       the address is a sleb delta from the previous probe's, else a
//	       u64), ADDRESS, [DISCRIMINATOR uleb when attribute 4 is set]
//
// starts gives function addresses by GUID, for a first probe given as a
// delta from its function's start.
func decodePseudoProbes(desc, probes []byte, starts map[uint64]uint64) (*PseudoProbes, error) {
	pp := &PseudoProbes{Desc: map[uint64]ProbeDesc{}}
	c := probeCursor(desc, ".pseudo_probe_desc")
	for len(c.Data) > 0 && c.Err == nil {
		d := ProbeDesc{GUID: c.U64("GUID"), Hash: c.U64("hash")}
		n := uleb(&c, "name size")
		d.Name = string(c.Bytes(n, "name"))
		if c.Err == nil {
			pp.Desc[d.GUID] = d
		}
	}
	if c.Err != nil {
		return nil, c.Err
	}
	c = probeCursor(probes, ".pseudo_probe")
	// last is the address deltas count from. LLVM before 18 writes each
	// function's first probe as an address; from 18 on, as a delta from
	// the function's start, and no address at all (LLVM's decoder tells
	// the two apart the same way).
	var last uint64
	addrBased := false
	var body func(inlinee bool, depth int) *ProbeNode
	body = func(inlinee bool, depth int) *ProbeNode {
		if depth > maxProbeDepth {
			c.Fail(ErrPseudoProbe, "inline nesting deeper than %d", maxProbeDepth)
			return nil
		}
		n := &ProbeNode{}
		if inlinee {
			n.Site = uint32(uleb(&c, "inline site"))
		}
		n.GUID = c.U64("GUID")
		if !inlinee && !addrBased {
			// An outlined function's first probe counts from its
			// start; the probes of a function with no symbol (all its
			// copies inlined, some of them listed as a tree of their
			// own) go on from the previous probe, as LLVM's decoder
			// has it.
			if a, ok := starts[n.GUID]; ok {
				last = a
			}
		}
		nprobes, nkids := uleb(&c, "probe count"), uleb(&c, "inlinee count")
		// Each probe takes 3 bytes or more and each inlinee 10; a count
		// the section cannot hold is refused before anything is made.
		if c.Err == nil && (nprobes > uint64(len(c.Data))/3 || nkids > uint64(len(c.Data))/10) {
			c.Fail(ErrPseudoProbe, "%d probes and %d inlinees in %d bytes", nprobes, nkids, len(c.Data))
		}
		if c.Err != nil {
			return nil
		}
		n.Probes = make([]Probe, 0, nprobes)
		for i := uint64(0); i < nprobes && c.Err == nil; i++ {
			p := Probe{Index: uint32(uleb(&c, "probe index"))}
			t := c.U8("probe type")
			p.Kind = ProbeKind(t & 0xf)
			attr := t >> 4 & 0x7
			if t&0x80 != 0 {
				p.Addr = last + uint64(sleb(&c, "address delta"))
			} else {
				p.Addr = c.U64("address")
			}
			if attr&probeAttrDisc != 0 {
				p.Disc = uint32(uleb(&c, "discriminator"))
			}
			if attr&probeAttrSentinel != 0 {
				// A split function's marker: no probe of its own.
				if a, ok := starts[p.Addr]; ok && t&0x80 == 0 {
					last = a
				}
				continue
			}
			if t&0x80 == 0 {
				addrBased = true
			}
			last = p.Addr
			n.Probes = append(n.Probes, p)
		}
		for i := uint64(0); i < nkids && c.Err == nil; i++ {
			if k := body(true, depth+1); k != nil {
				n.Children = append(n.Children, k)
			}
		}
		return n
	}
	for len(c.Data) > 0 && c.Err == nil {
		if n := body(false, 0); n != nil {
			pp.Roots = append(pp.Roots, n)
		}
	}
	if c.Err != nil {
		return nil, c.Err
	}
	return pp, nil
}
