package ehwrite

import (
	"fmt"

	"blpp/cfg/ehframe"
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
	var cs []byte
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

	// Types and exception specifications, numbered in order of first
	// use as g++ does; type index i (from 1) is the entry i back from
	// the TType base.
	var types []uint64
	typeIndex := map[uint64]int{}
	index := func(t ehframe.TypeRef) int {
		if i, ok := typeIndex[t.Value]; ok {
			return i
		}
		types = append(types, t.Value)
		typeIndex[t.Value] = len(types)
		return len(types)
	}
	var specs []byte
	specAt := map[string]int{}
	needTypes := false
	filterOf := func(a ehframe.Action) (int64, error) {
		switch a.Kind {
		case ehframe.Cleanup:
			return 0, nil
		case ehframe.Catch:
			needTypes = true
			return int64(index(a.Type)), nil
		case ehframe.Spec:
			needTypes = true
			var list []byte
			for _, t := range a.Spec {
				list = appendUleb(list, uint64(index(t)))
			}
			list = append(list, 0)
			off, ok := specAt[string(list)]
			if !ok {
				off = len(specs)
				specs = append(specs, list...)
				specAt[string(list)] = off
			}
			return -int64(off) - 1, nil
		}
		return 0, fmt.Errorf("LSDA: unknown action kind %v", a.Kind)
	}

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

	ttEnc := byte(peOmit)
	size := 0
	if needTypes {
		ttEnc = l.TTypeEnc
		if ttEnc == peOmit {
			return nil, fmt.Errorf("LSDA: %w: catch clauses or specifications and no type-table encoding", ErrEncoding)
		}
		if err := checkPointerEnc(ttEnc); err != nil {
			return nil, fmt.Errorf("LSDA type table: %w", err)
		}
		if size = pointerSize(ttEnc, 0); ttEnc&0x0f == peUleb128 || ttEnc&0x0f == peSleb128 {
			return nil, fmt.Errorf("LSDA type table: %w: %#02x is not a fixed-size format", ErrEncoding, ttEnc)
		}
		if ttEnc&0x70 == peTextrel || ttEnc&0x70 == peDatarel {
			return nil, fmt.Errorf("LSDA type table: %w: %#02x needs a base", ErrEncoding, ttEnc)
		}
	}

	// Header: lpstart omitted, ttype encoding [, ttype offset], call-site
	// encoding and length.
	out := []byte{peOmit, ttEnc}
	tail := []byte{peUleb128}
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
		k = appendUleb(k, a.Type.Value)
		k = appendUleb(k, uint64(len(a.Spec)))
		for _, t := range a.Spec {
			k = appendUleb(k, t.Value)
		}
	}
	return string(k)
}
