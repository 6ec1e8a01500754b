package ehframe

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// The LSDA (language-specific data area) of a C++ function, as g++ and
// clang++ lay it out in .gcc_except_table for __gxx_personality_v0
// [Itanium C++ ABI: exception handling §7 (LSDA), as implemented by
// libstdc++'s eh_personality.cc and parse_lsda_header]:
//
//	header:      lpstart encoding (u8), [lpstart]
//	             ttype encoding (u8), [ttype offset (uleb128), from just after itself to the TType base]
//	             call-site encoding (u8), call-site table length (uleb128)
//	call sites:  start, length, landing pad (call-site encoding; start relative to the function,
//	             landing pad relative to lpstart, 0 = none), action (uleb128: 0 = none, else 1 + offset
//	             into the action table)
//	actions:     type filter (sleb128), offset to the next record (sleb128, from that field; 0 = end)
//	types:       read backwards from the TType base: filter i > 0 is the entry at base - i*size;
//	             filter -i < 0 is an exception specification, a 0-terminated list of uleb128 type
//	             indices at base + i - 1.

// ActionKind is what an action record asks of the personality routine.
type ActionKind uint8

const (
	Cleanup ActionKind = iota // filter 0: run the landing pad, then resume unwinding
	Catch                     // filter > 0: a catch clause for Type
	Spec                      // filter < 0: an exception specification listing Spec
)

var actionKindNames = [...]string{Cleanup: "cleanup", Catch: "catch", Spec: "spec"}

func (k ActionKind) String() string {
	if int(k) < len(actionKindNames) {
		return actionKindNames[k]
	}
	return fmt.Sprintf("ActionKind(%d)", uint8(k))
}

// TypeRef is one entry of the type table, decoded but not dereferenced:
// with DW_EH_PE_indirect in the TType encoding, Value is the address of
// the slot holding the std::type_info pointer, else the type_info's
// address. Value 0 in a catch is catch(...).
type TypeRef struct {
	Value uint64
	// Index is the entry's 1-based index in the type table it was read
	// from (0 when not read from a table). Landing pads compare the
	// selector the personality routine hands them with these indices as
	// compiled-in constants, so a rewritten table must keep them.
	Index uint64
}

// Action is one record of a call site's action chain.
type Action struct {
	Kind ActionKind
	Type TypeRef   // Catch: the type caught
	Spec []TypeRef // Spec: the types allowed; empty for throw()
	// Filter is the record's type filter as read (0 when not read from
	// a table): the type index of a catch, minus one minus the byte
	// offset of a specification after the TType base. It is the
	// selector a landing pad receives.
	Filter int64
}

// CallSite is one entry of the call-site table. Addresses are absolute.
type CallSite struct {
	Start, End uint64 // the code range [Start, End)
	LandingPad uint64 // 0: no landing pad (an exception here keeps unwinding)
	Actions    []Action
}

// LSDA is the decoded exception table of one function.
type LSDA struct {
	LPStart   uint64 // base of landing pads (the function start when omitted)
	TTypeEnc  byte   // DW_EH_PE encoding of the type table, 0xff when there is none
	CallSites []CallSite
}

// ErrActionChain: an action record chain that loops or leaves the section.
var ErrActionChain = errors.New("bad action chain")

const lsdaSection = ".gcc_except_table"

// ParseLSDA decodes the LSDA at lsdaAddr for the function that starts at
// funcStart (its FDE's pc_begin). sec is the section holding the LSDA
// (.gcc_except_table) and secAddr its address. Landing pads, call sites
// and type entries come back as absolute addresses. Errors are
// *FormatError with Section ".gcc_except_table".
//
// The personality routine is trusted to be __gxx_personality_v0 (or a
// compatible one, such as clang's or gcc's Objective-C/Go personalities
// that share the layout); the FDE says which, ParseLSDA does not check.
func ParseLSDA(sec []byte, secAddr, lsdaAddr, funcStart uint64, opts Options) (*LSDA, error) {
	l, err := parseLSDA(sec, secAddr, lsdaAddr, funcStart, opts)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.Section = lsdaSection
		}
		return nil, err
	}
	return l, nil
}

func parseLSDA(sec []byte, secAddr, lsdaAddr, funcStart uint64, opts Options) (*LSDA, error) {
	if lsdaAddr < secAddr || lsdaAddr-secAddr >= uint64(len(sec)) {
		return nil, &FormatError{Off: 0, Msg: fmt.Sprintf("LSDA address %#x outside the section [%#x, %#x)", lsdaAddr, secAddr, secAddr+uint64(len(sec))), Err: ErrTruncated}
	}
	p := parser{addr: secAddr, opts: opts}
	start := int(lsdaAddr - secAddr)
	b := newBuf(sec[start:], start)
	l := &LSDA{LPStart: funcStart, TTypeEnc: PEOmit}

	// Header.
	if enc := b.U8("lpstart encoding"); b.Err == nil && enc != PEOmit {
		l.LPStart = p.pointer(&b, enc, "lpstart")
	}
	ttBase := -1 // section offset of the TType base
	encOff := b.Off
	l.TTypeEnc = b.U8("ttype encoding")
	if b.Err == nil && l.TTypeEnc != PEOmit {
		if _, err := typeSize(l.TTypeEnc); err != nil {
			return nil, &FormatError{Off: encOff, Msg: err.Error(), Err: ErrEncoding}
		}
		if err := checkEncoding(l.TTypeEnc, true); err != nil {
			return nil, &FormatError{Off: encOff, Msg: "ttype " + err.Error(), Err: ErrEncoding}
		}
		ttOff := b.uleb("ttype offset")
		if b.Err == nil {
			if ttOff > uint64(len(sec)-b.Off) {
				return nil, &FormatError{Off: encOff + 1, Msg: fmt.Sprintf("TType base %d bytes on, past the section end", ttOff), Err: ErrTruncated}
			}
			ttBase = b.Off + int(ttOff)
		}
	}
	csEncOff := b.Off
	csEnc := b.U8("call-site encoding")
	if b.Err == nil {
		if err := checkCallSiteEncoding(csEnc); err != nil {
			return nil, &FormatError{Off: csEncOff, Msg: err.Error(), Err: ErrEncoding}
		}
	}
	csLen := b.uleb("call-site table length")
	cs := b.sub(csLen, "call-site table")
	if b.Err != nil {
		return nil, b.Err
	}
	actionTable := b.Off // the action table follows the call sites

	r := lsdaReader{p: &p, sec: sec, ttEnc: l.TTypeEnc, ttBase: ttBase}
	for len(cs.Data) > 0 {
		recOff := cs.Off
		s := p.pointer(&cs, csEnc, "call-site start")
		n := p.pointer(&cs, csEnc, "call-site length")
		lp := p.pointer(&cs, csEnc, "landing pad")
		act := cs.uleb("call-site action")
		if cs.Err != nil {
			return nil, cs.Err
		}
		var c CallSite
		var carry1, carry2 uint64
		c.Start, carry1 = bits.Add64(funcStart, s, 0)
		c.End, carry2 = bits.Add64(c.Start, n, 0)
		if lp != 0 {
			var carry3 uint64
			c.LandingPad, carry3 = bits.Add64(l.LPStart, lp, 0)
			carry2 |= carry3
		}
		if carry1|carry2 != 0 {
			return nil, &FormatError{Off: recOff, Msg: fmt.Sprintf("call site %#x+%#x (landing pad %#x) wraps past 2^64", s, n, lp), Err: ErrOverflow}
		}
		if act != 0 {
			if act-1 >= uint64(len(sec)-actionTable) {
				return nil, &FormatError{Off: recOff, Msg: fmt.Sprintf("action offset %d past the section end", act-1), Err: ErrActionChain}
			}
			acts, err := r.chain(actionTable + int(act-1))
			if err != nil {
				return nil, err
			}
			c.Actions = acts
		}
		l.CallSites = append(l.CallSites, c)
	}
	return l, nil
}

// checkCallSiteEncoding accepts the absolute value formats: call-site
// fields are offsets, so an application (pcrel...) makes no sense for
// them even though libgcc would apply it.
func checkCallSiteEncoding(enc byte) error {
	if enc == PEOmit || enc&0xf0 != 0 {
		return fmt.Errorf("call-site encoding %#02x: want an absolute value format", enc)
	}
	return checkEncoding(enc, false)
}

// typeSize is the size of one type-table entry: a fixed-size format is
// needed to index the table.
func typeSize(enc byte) (int, error) {
	if n := FixedSize(enc); n > 0 {
		return n, nil
	}
	return 0, fmt.Errorf("ttype encoding %#02x: not a fixed-size format", enc)
}

type lsdaReader struct {
	p      *parser
	sec    []byte
	ttEnc  byte
	ttBase int // -1 without a type table
}

// chain follows the action records from section offset off.
func (r *lsdaReader) chain(off int) ([]Action, error) {
	var acts []Action
	seen := map[int]bool{}
	for {
		if seen[off] {
			return nil, &FormatError{Off: off, Msg: "action chain loops", Err: ErrActionChain}
		}
		seen[off] = true
		b := newBuf(r.sec[off:], off)
		filter := b.sleb("action type filter")
		nextOff := b.Off
		next := b.sleb("next action")
		if b.Err != nil {
			return nil, b.Err
		}
		a := Action{Filter: filter}
		switch {
		case filter == 0:
			a.Kind = Cleanup
		case filter > 0:
			a.Kind = Catch
			t, err := r.typeEntry(uint64(filter), off)
			if err != nil {
				return nil, err
			}
			a.Type = t
		default:
			a.Kind = Spec
			spec, err := r.spec(filter, off)
			if err != nil {
				return nil, err
			}
			a.Spec = spec
		}
		acts = append(acts, a)
		if next == 0 {
			return acts, nil
		}
		to := int64(nextOff) + next
		if next < -int64(len(r.sec)) || next > int64(len(r.sec)) || to < 0 || to >= int64(len(r.sec)) {
			return nil, &FormatError{Off: nextOff, Msg: fmt.Sprintf("next action %+d leaves the section", next), Err: ErrActionChain}
		}
		off = int(to)
	}
}

// typeEntry decodes type-table entry i (1-based, counting back from the
// TType base). at is the offset of the record that asks, for errors.
func (r *lsdaReader) typeEntry(i uint64, at int) (TypeRef, error) {
	if r.ttBase < 0 {
		return TypeRef{}, &FormatError{Off: at, Msg: fmt.Sprintf("type index %d and no type table", i), Err: ErrActionChain}
	}
	size, _ := typeSize(r.ttEnc)
	if i > uint64(r.ttBase/size) {
		return TypeRef{}, &FormatError{Off: at, Msg: fmt.Sprintf("type index %d before the section start", i), Err: ErrTruncated}
	}
	off := r.ttBase - int(i)*size
	b := newBuf(r.sec[off:], off)
	// A raw zero is a null pointer whatever the application (libgcc's
	// read_encoded_value_with_base): catch(...).
	raw := b.Bytes(uint64(size), "type entry")
	if b.Err != nil {
		return TypeRef{}, b.Err
	}
	zero := true
	for _, c := range raw {
		zero = zero && c == 0
	}
	if zero {
		return TypeRef{Index: i}, nil
	}
	b = newBuf(r.sec[off:], off)
	v := r.p.pointer(&b, r.ttEnc, "type entry")
	if b.Err != nil {
		return TypeRef{}, b.Err
	}
	return TypeRef{Value: v, Index: i}, nil
}

// spec reads the exception specification of filter (< 0).
func (r *lsdaReader) spec(filter int64, at int) ([]TypeRef, error) {
	if r.ttBase < 0 {
		return nil, &FormatError{Off: at, Msg: fmt.Sprintf("exception specification %d and no type table", filter), Err: ErrActionChain}
	}
	if filter == math.MinInt64 || -filter-1 >= int64(len(r.sec)-r.ttBase) {
		return nil, &FormatError{Off: at, Msg: fmt.Sprintf("exception specification %d past the section end", filter), Err: ErrTruncated}
	}
	off := r.ttBase + int(-filter-1)
	b := newBuf(r.sec[off:], off)
	spec := []TypeRef{}
	for {
		idxOff := b.Off
		i := b.uleb("exception specification")
		if b.Err != nil {
			return nil, b.Err
		}
		if i == 0 {
			return spec, nil
		}
		t, err := r.typeEntry(i, idxOff)
		if err != nil {
			return nil, err
		}
		spec = append(spec, t)
	}
}

// StripNumbering returns a copy of l without the filters and type
// indices it was read with: the model of what the table means, for
// comparing tables that number their types differently.
func StripNumbering(l *LSDA) *LSDA {
	if l == nil {
		return nil
	}
	c := *l
	c.CallSites = nil
	for _, cs := range l.CallSites {
		n := cs
		n.Actions = nil
		for _, a := range cs.Actions {
			a.Filter = 0
			a.Type.Index = 0
			if a.Spec != nil {
				spec := make([]TypeRef, len(a.Spec))
				for i, t := range a.Spec {
					spec[i] = TypeRef{Value: t.Value}
				}
				a.Spec = spec
			}
			n.Actions = append(n.Actions, a)
		}
		c.CallSites = append(c.CallSites, n)
	}
	return &c
}
