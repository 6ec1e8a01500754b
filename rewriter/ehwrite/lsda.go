package ehwrite

import (
	"fmt"

	"github.com/blpp/blpp/cfg/ehframe"
)

// EncodeLSDA lays l out as a fresh LSDA to be loaded at addr, for a
// function whose FDE starts at funcStart, in the layout g++ uses for
// __gxx_personality_v0 [Itanium C++ ABI: exception handling §7]:
//
//   - lpstart omitted, so landing pads are relative to funcStart (a
//     landing pad at funcStart itself cannot be written: 0 means none);
//   - call sites in uleb128, relative to funcStart; they must be sorted,
//     not overlap, and lie at or after funcStart (ErrCallSites);
//   - the action table rebuilt from the chains, identical chains and
//     common tails shared;
//   - the type table rebuilt from the catch types and exception
//     specifications, each type once, encoded with l.TTypeEnc for its
//     new place (pcrel entries relative to their own address; a type
//     Value 0, catch(...), as a raw 0); exception specifications follow
//     the TType base as 0-terminated uleb128 lists of type indices.
//
// The size depends on the call sites and types, not on addr. Types are
// not aligned (libgcc and libc++abi read them unaligned).
func EncodeLSDA(l *ehframe.LSDA, addr, funcStart uint64) ([]byte, error) {
	// Call sites.
	var prevEnd uint64
	for i, c := range l.CallSites {
		switch {
		case c.Start < funcStart || c.End < c.Start:
			return nil, fmt.Errorf("LSDA: %w: call site %d [%#x,%#x) for a function at %#x", ErrCallSites, i, c.Start, c.End, funcStart)
		case i > 0 && c.Start < prevEnd:
			return nil, fmt.Errorf("LSDA: %w: call site %d [%#x,%#x) starts before the previous one ends (%#x)", ErrCallSites, i, c.Start, c.End, prevEnd)
		case c.LandingPad != 0 && c.LandingPad <= funcStart:
			return nil, fmt.Errorf("LSDA: %w: call site %d: landing pad %#x not after the function start %#x", ErrCallSites, i, c.LandingPad, funcStart)
		}
		prevEnd = c.End
	}

	// Types and exception specifications. Tables read from a binary keep
	// their numbering: the landing pads compare the selector with the
	// filter values as constants. Otherwise types are numbered in order
	// of first use as g++ does; type index i (from 1) is the entry i back
	// from the TType base.
	var types []uint64
	var specs []byte
	needTypes := false
	var filterOf func(a ehframe.Action) (int64, error)
	if keepNumbering(l) {
		var err error
		if types, specs, err = numberedTables(l); err != nil {
			return nil, err
		}
		needTypes = len(types) > 0 || len(specs) > 0
		filterOf = func(a ehframe.Action) (int64, error) { return a.Filter, nil }
	} else {
		filterOf = firstUseNumbering(&types, &specs, &needTypes)
	}
	return encodeLSDA(l, addr, funcStart, &types, &specs, &needTypes, filterOf)
}

// firstUseNumbering numbers types and specifications in order of first
// use, appending them to *types and *specs.
func firstUseNumbering(types *[]uint64, specs *[]byte, needTypes *bool) func(a ehframe.Action) (int64, error) {
	typeIndex := map[uint64]int{}
	index := func(t ehframe.TypeRef) int {
		if i, ok := typeIndex[t.Value]; ok {
			return i
		}
		*types = append(*types, t.Value)
		typeIndex[t.Value] = len(*types)
		return len(*types)
	}
	specAt := map[string]int{}
	return func(a ehframe.Action) (int64, error) {
		switch a.Kind {
		case ehframe.Cleanup:
			return 0, nil
		case ehframe.Catch:
			*needTypes = true
			return int64(index(a.Type)), nil
		case ehframe.Spec:
			*needTypes = true
			var list []byte
			for _, t := range a.Spec {
				list = appendUleb(list, uint64(index(t)))
			}
			list = append(list, 0)
			off, ok := specAt[string(list)]
			if !ok {
				off = len(*specs)
				*specs = append(*specs, list...)
				specAt[string(list)] = off
			}
			return -int64(off) - 1, nil
		}
		return 0, fmt.Errorf("LSDA: unknown action kind %v", a.Kind)
	}
}

// keepNumbering reports whether every catch and specification of l
// carries the filter and type indices it was read with.
func keepNumbering(l *ehframe.LSDA) bool {
	any := false
	for _, c := range l.CallSites {
		for _, a := range c.Actions {
			switch a.Kind {
			case ehframe.Catch:
				if a.Filter <= 0 || a.Type.Index != uint64(a.Filter) {
					return false
				}
				any = true
			case ehframe.Spec:
				if a.Filter >= 0 {
					return false
				}
				for _, t := range a.Spec {
					if t.Index == 0 {
						return false
					}
				}
				any = true
			}
		}
	}
	return any
}

// maxTableIndex bounds the type indices and specification offsets
// numberedTables accepts (they size arrays).
const maxTableIndex = 1 << 16

// numberedTables rebuilds the type table (types[i-1] is type index i)
// and the specification area with every entry where the original had
// it. Two actions that put different things in one place are an error.
func numberedTables(l *ehframe.LSDA) (types []uint64, specs []byte, err error) {
	set := make(map[uint64]bool)
	put := func(t ehframe.TypeRef) error {
		if t.Index > maxTableIndex {
			return fmt.Errorf("LSDA: %w: type index %d", ErrCallSites, t.Index)
		}
		for uint64(len(types)) < t.Index {
			types = append(types, 0)
		}
		if set[t.Index] && types[t.Index-1] != t.Value {
			return fmt.Errorf("LSDA: %w: type index %d names two types (%#x, %#x)", ErrCallSites, t.Index, types[t.Index-1], t.Value)
		}
		set[t.Index] = true
		types[t.Index-1] = t.Value
		return nil
	}
	used := map[int]bool{}
	for _, c := range l.CallSites {
		for _, a := range c.Actions {
			switch a.Kind {
			case ehframe.Catch:
				if err := put(a.Type); err != nil {
					return nil, nil, err
				}
			case ehframe.Spec:
				var list []byte
				for _, t := range a.Spec {
					if err := put(t); err != nil {
						return nil, nil, err
					}
					list = appendUleb(list, t.Index)
				}
				list = append(list, 0)
				if -a.Filter-1 > maxTableIndex {
					return nil, nil, fmt.Errorf("LSDA: %w: specification offset %d", ErrCallSites, -a.Filter-1)
				}
				off := int(-a.Filter - 1)
				for len(specs) < off+len(list) {
					specs = append(specs, 0)
				}
				for k, c := range list {
					if used[off+k] && specs[off+k] != c {
						return nil, nil, fmt.Errorf("LSDA: %w: specifications overlap at offset %d", ErrCallSites, off)
					}
					used[off+k] = true
					specs[off+k] = c
				}
			}
		}
	}
	return types, specs, nil
}

// encodeLSDA writes the LSDA with the given type table, specification
// area and filter numbering.
func encodeLSDA(l *ehframe.LSDA, addr, funcStart uint64, typesp *[]uint64, specsp *[]byte, needTypesp *bool, filterOf func(ehframe.Action) (int64, error)) ([]byte, error) {
	var cs []byte

	// Action records. A chain is written from its tail, so every record's
	// successor is already placed and its offset known; a tail seen
	// before is reused. The next-record field counts from itself.
	var actions []byte
	recordAt := map[string]int{} // chain suffix key -> offset of its first record
	actionOf := make([]uint64, len(l.CallSites))
	for i, c := range l.CallSites {
		if len(c.Actions) == 0 {
			continue
		}
		if c.LandingPad == 0 {
			return nil, fmt.Errorf("LSDA: %w: call site %d has actions but no landing pad", ErrCallSites, i)
		}
		next := -1
		for k := len(c.Actions) - 1; k >= 0; k-- {
			key := chainKey(c.Actions[k:])
			if off, ok := recordAt[key]; ok {
				next = off
				continue
			}
			f, err := filterOf(c.Actions[k])
			if err != nil {
				return nil, err
			}
			off := len(actions)
			actions = appendSleb(actions, f)
			if next < 0 {
				actions = appendSleb(actions, 0)
			} else {
				actions = appendSleb(actions, int64(next-len(actions)))
			}
			recordAt[key] = off
			next = off
		}
		actionOf[i] = uint64(next) + 1
	}
	for i, c := range l.CallSites {
		cs = appendUleb(cs, c.Start-funcStart)
		cs = appendUleb(cs, c.End-c.Start)
		if c.LandingPad != 0 {
			cs = appendUleb(cs, c.LandingPad-funcStart)
		} else {
			cs = appendUleb(cs, 0)
		}
		cs = appendUleb(cs, actionOf[i])
	}

	types, specs, needTypes := *typesp, *specsp, *needTypesp
	ttEnc := byte(ehframe.PEOmit)
	size := 0
	if needTypes {
		ttEnc = l.TTypeEnc
		if ttEnc == ehframe.PEOmit {
			return nil, fmt.Errorf("LSDA: %w: catch clauses or specifications and no type-table encoding", ErrEncoding)
		}
		if err := checkPointerEnc(ttEnc); err != nil {
			return nil, fmt.Errorf("LSDA type table: %w", err)
		}
		if size = pointerSize(ttEnc, 0); ttEnc&0x0f == ehframe.PEUleb128 || ttEnc&0x0f == ehframe.PESleb128 {
			return nil, fmt.Errorf("LSDA type table: %w: %#02x is not a fixed-size format", ErrEncoding, ttEnc)
		}
		if ttEnc&0x70 == ehframe.PETextrel || ttEnc&0x70 == ehframe.PEDatarel {
			return nil, fmt.Errorf("LSDA type table: %w: %#02x needs a base", ErrEncoding, ttEnc)
		}
	}

	// Header: lpstart omitted, ttype encoding [, ttype offset], call-site
	// encoding and length.
	out := []byte{ehframe.PEOmit, ttEnc}
	tail := []byte{ehframe.PEUleb128}
	tail = appendUleb(tail, uint64(len(cs)))
	tail = append(append(tail, cs...), actions...)
	if needTypes {
		// The TType base is after the type table; the offset counts from
		// the end of the offset field itself.
		out = appendUleb(out, uint64(len(tail)+len(types)*size))
	}
	out = append(out, tail...)
	if needTypes {
		for i := len(types) - 1; i >= 0; i-- {
			var err error
			field := addr + uint64(len(out))
			if out, err = appendPointer(out, ttEnc, types[i], field, ehframe.Options{}, true, "type entry"); err != nil {
				return nil, fmt.Errorf("LSDA: %w", err)
			}
		}
		out = append(out, specs...)
	}
	return out, nil
}

// chainKey identifies an action chain by value.
func chainKey(acts []ehframe.Action) string {
	var k []byte
	for _, a := range acts {
		k = append(k, byte(a.Kind))
		k = appendSleb(k, a.Filter)
		k = appendUleb(k, a.Type.Value)
		k = appendUleb(k, uint64(len(a.Spec)))
		for _, t := range a.Spec {
			k = appendUleb(k, t.Value)
		}
	}
	return string(k)
}
