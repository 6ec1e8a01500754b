package ehframe

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"
)

// Call frame instructions [DWARF5 §6.4.2, Table 7.29] and the GNU
// extensions gcc, clang and glibc emit [LSB 5.0 §10.6.1.1.3 / §10.6.2]
// (DW_CFA_*), shared with the writer (rewriter/ehwrite).
const (
	CFAAdvanceLoc  = 0x40 // high two bits; delta in the low six
	CFAOffset      = 0x80 // high two bits; register in the low six
	CFARestore     = 0xc0 // high two bits; register in the low six
	CFANop         = 0x00
	CFASetLoc      = 0x01
	CFAAdvanceLoc1 = 0x02
	CFAAdvanceLoc2 = 0x03
	CFAAdvanceLoc4 = 0x04
	CFAOffsetExt   = 0x05
	CFARestoreExt  = 0x06
	CFAUndefined   = 0x07
	CFASameValue   = 0x08
	CFARegister    = 0x09
	CFARemember    = 0x0a
	CFARestoreSt   = 0x0b
	CFADefCFA      = 0x0c
	CFADefCFAReg   = 0x0d
	CFADefCFAOff   = 0x0e
	CFADefCFAExpr  = 0x0f
	CFAExpression  = 0x10
	CFAOffsetExtSF = 0x11
	CFADefCFASF    = 0x12
	CFADefCFAOffSF = 0x13
	CFAValOffset   = 0x14
	CFAValOffSF    = 0x15
	CFAValExpr     = 0x16
	CFAArgsSize    = 0x2e // DW_CFA_GNU_args_size
	CFANegOffExt   = 0x2f // DW_CFA_GNU_negative_offset_extended
)

// ErrInstruction: a call frame instruction that is unknown, misplaced or
// malformed.
var ErrInstruction = errors.New("bad call frame instruction")

// RuleKind is how a register's value in the caller is recovered
// [DWARF5 §6.4.1 register rules].
type RuleKind uint8

const (
	Undefined     RuleKind = iota // not recoverable
	SameValue                     // unchanged from the callee
	Offset                        // saved at CFA+Off
	ValOffset                     // the value is CFA+Off
	Register                      // saved in register Reg
	Expression                    // saved at the address Expr computes
	ValExpression                 // the value is what Expr computes
)

var ruleKindNames = [...]string{
	Undefined: "undefined", SameValue: "same-value", Offset: "offset", ValOffset: "val-offset",
	Register: "register", Expression: "expression", ValExpression: "val-expression",
}

func (k RuleKind) String() string {
	if int(k) < len(ruleKindNames) {
		return ruleKindNames[k]
	}
	return fmt.Sprintf("RuleKind(%d)", uint8(k))
}

// Rule is one register rule.
type Rule struct {
	Kind RuleKind
	Off  int64  // Offset, ValOffset: bytes from the CFA (already multiplied by the data alignment)
	Reg  uint64 // Register
	Expr []byte // Expression, ValExpression: the DWARF expression
}

// Equal reports whether two rules are the same.
func (r Rule) Equal(o Rule) bool {
	return r.Kind == o.Kind && r.Off == o.Off && r.Reg == o.Reg && bytes.Equal(r.Expr, o.Expr)
}

// CFA is the rule for the canonical frame address: Reg+Off, or Expr when
// it is non-nil (DW_CFA_def_cfa_expression).
type CFA struct {
	Reg  uint64
	Off  int64
	Expr []byte
}

// Equal reports whether two CFA rules are the same.
func (c CFA) Equal(o CFA) bool {
	return c.Reg == o.Reg && c.Off == o.Off && (c.Expr == nil) == (o.Expr == nil) && bytes.Equal(c.Expr, o.Expr)
}

// RegRule is the rule of one register.
type RegRule struct {
	Reg  uint64
	Rule Rule
}

// State is one row of the unwinding table: the CFA rule and the rules of
// the registers an instruction mentioned, sorted by register. A register
// absent from Regs has no rule (unwinders treat it as same value).
type State struct {
	CFA  CFA
	Regs []RegRule
	// ArgsSize is the last DW_CFA_GNU_args_size: the bytes of outgoing
	// arguments pushed at this point, which the unwinder pops before
	// entering a landing pad. Like libgcc, remember/restore_state do not
	// save it.
	ArgsSize uint64
}

// Rule returns the rule of reg, and whether there is one.
func (s State) Rule(reg uint64) (Rule, bool) {
	i, ok := s.find(reg)
	if !ok {
		return Rule{}, false
	}
	return s.Regs[i].Rule, true
}

// Equal reports whether two states give the same rules.
func (s State) Equal(o State) bool {
	if !s.CFA.Equal(o.CFA) || s.ArgsSize != o.ArgsSize || len(s.Regs) != len(o.Regs) {
		return false
	}
	for i := range s.Regs {
		if s.Regs[i].Reg != o.Regs[i].Reg || !s.Regs[i].Rule.Equal(o.Regs[i].Rule) {
			return false
		}
	}
	return true
}

func (s State) clone() State {
	s.Regs = slices.Clone(s.Regs)
	return s
}

func (s *State) set(reg uint64, r Rule) {
	i, ok := s.find(reg)
	if ok {
		s.Regs[i].Rule = r
		return
	}
	s.Regs = slices.Insert(s.Regs, i, RegRule{Reg: reg, Rule: r})
}

func (s *State) del(reg uint64) {
	if i, ok := s.find(reg); ok {
		s.Regs = slices.Delete(s.Regs, i, i+1)
	}
}

// find returns where reg's rule is in Regs, or would be inserted.
func (s *State) find(reg uint64) (int, bool) {
	return slices.BinarySearchFunc(s.Regs, reg, func(r RegRule, reg uint64) int {
		return cmp.Compare(r.Reg, reg)
	})
}

// Row is the state that holds from Addr to the next row's Addr (or the
// end of the FDE).
type Row struct {
	Addr  uint64
	State State
}

// InitialState runs the CIE's initial instructions [DWARF5 §6.4.1].
func (c *CIE) InitialState() (State, error) {
	m := machine{cie: c, p: parser{addr: c.dataAddr, opts: c.opts}}
	b := newBuf(c.Initial, c.Off+len(c.Raw)-len(c.Initial))
	if err := m.run(&b, true); err != nil {
		return State{}, err
	}
	return m.cur, nil
}

// Rows runs the CIE's initial instructions and then the FDE's program
// from Begin, and returns the table it defines: rows[0] is at Begin, the
// addresses ascend, each row differs from the one before, and rows at or
// past End (which describe no code) are dropped.
func (e *Entry) Rows() ([]Row, error) { return e.rows(nil, false) }

// AppendRows appends Rows' rows to rows and returns the extended slice:
// a caller done with the rows of one entry can give their array to the
// next (the rows' register rules are never in it: they are arrays of
// their own, which the rows may share with each other).
func (e *Entry) AppendRows(rows []Row) ([]Row, error) {
	out, err := e.rows(rows, false)
	if err != nil {
		return rows, err
	}
	return out, nil
}

// FirstRow returns the row at Begin, Rows()[0], and Rows' error: it runs
// the whole program (an error anywhere refuses the entry as Rows does)
// but keeps no other row. Telling whether an FDE starts mid-frame needs
// no more, and the rows of every FDE of a large library were a sixth of
// the rewriter's garbage [decision 118].
func (e *Entry) FirstRow() (Row, error) {
	rows, err := e.rows(nil, true)
	if err != nil {
		return Row{}, err
	}
	return rows[0], nil
}

// rows runs the program and appends its rows to to, only the first
// when first is set.
func (e *Entry) rows(to []Row, first bool) ([]Row, error) {
	init, err := e.CIE.InitialState()
	if err != nil {
		return nil, err
	}
	m := machine{cie: e.CIE, p: parser{addr: e.CIE.dataAddr, opts: e.CIE.opts}, init: init, cur: init.clone(), loc: e.Begin, end: e.End, first: first}
	m.rows, m.base = append(to, Row{Addr: e.Begin, State: init}), len(to)
	b := newBuf(e.Program, e.Off+len(e.raw)-len(e.Program))
	if err := m.run(&b, false); err != nil {
		return nil, err
	}
	m.flush()
	return m.rows, nil
}

// machine interprets call frame instructions.
type machine struct {
	cie      *CIE
	p        parser
	init     State // the CIE's state, for DW_CFA_restore
	cur      State
	stack    []State // DW_CFA_remember_state
	loc, end uint64
	// rows are the rows made, from rows[base] (the rows before are the
	// caller's: AppendRows).
	rows []Row
	base int
	// first keeps rows at its one row, at Begin: the row of a location
	// is made when the program leaves it, and only the first row's
	// location is ever current again (flush), so it ends as Rows makes it.
	first bool
}

// flush records cur as the row at loc, unless it describes no code or
// repeats the previous row.
func (m *machine) flush() {
	if m.loc >= m.end && m.loc != m.rows[m.base].Addr {
		return
	}
	last := &m.rows[len(m.rows)-1]
	if last.Addr == m.loc {
		var prev *State
		if n := len(m.rows); n-m.base >= 2 {
			prev = &m.rows[n-2].State
		}
		last.State = m.keep(prev)
		// Merging into the first row may make it equal its predecessor.
		if n := len(m.rows); n-m.base >= 2 && m.rows[n-2].State.Equal(last.State) {
			m.rows = m.rows[:n-1]
		}
		return
	}
	if m.first || last.State.Equal(m.cur) {
		return
	}
	m.rows = append(m.rows, Row{Addr: m.loc, State: m.keep(&last.State)})
}

// keep returns cur for a row after prev (nil: none). Rows never change
// their register rules, so where cur's are prev's (a push or pop moves
// only the CFA) the row shares prev's array instead of a copy: a large
// library's rows took most of the rewriter's garbage.
func (m *machine) keep(prev *State) State {
	if prev == nil || len(prev.Regs) == 0 || len(prev.Regs) != len(m.cur.Regs) {
		return m.cur.clone()
	}
	for i := range prev.Regs {
		if prev.Regs[i].Reg != m.cur.Regs[i].Reg || !prev.Regs[i].Rule.Equal(m.cur.Regs[i].Rule) {
			return m.cur.clone()
		}
	}
	s := m.cur
	s.Regs = prev.Regs[:len(prev.Regs):len(prev.Regs)]
	return s
}

func (m *machine) fail(b *buf, off int, format string, args ...any) error {
	if b.Err != nil {
		return b.Err
	}
	return &FormatError{Off: off, Msg: fmt.Sprintf(format, args...), Err: ErrInstruction}
}

// advance moves to loc+delta*code alignment, first recording the row
// that ends there.
func (m *machine) advance(b *buf, off int, delta uint64) error {
	hi, d := bits.Mul64(delta, m.cie.CodeAlign)
	to, carry := bits.Add64(m.loc, d, 0)
	if hi != 0 || carry != 0 {
		return m.fail(b, off, "advance by %#x wraps past 2^64", delta)
	}
	return m.moveTo(b, off, to)
}

func (m *machine) moveTo(b *buf, off int, to uint64) error {
	if to < m.loc {
		return m.fail(b, off, "location moves back from %#x to %#x", m.loc, to)
	}
	if to != m.loc {
		m.flush()
		m.loc = to
	}
	return nil
}

// scaled multiplies a factored offset by the data alignment factor.
func (m *machine) scaled(b *buf, off int, v int64) (int64, error) {
	hi, lo := bits.Mul64(uint64(absInt(v)), uint64(absInt(m.cie.DataAlign)))
	if hi != 0 || lo > 1<<62 {
		return 0, m.fail(b, off, "offset %d times data alignment %d overflows", v, m.cie.DataAlign)
	}
	return v * m.cie.DataAlign, nil
}

func absInt(v int64) int64 {
	if v < 0 {
		if v == -1<<63 {
			return 1<<63 - 1
		}
		return -v
	}
	return v
}

// block reads a uleb128 length and that many bytes (a DWARF expression).
func block(b *buf, what string) []byte {
	n := b.uleb(what + " length")
	if b.Err != nil {
		return nil
	}
	if n > uint64(len(b.Data)) {
		b.Fail(ErrTruncated, "%s of %d bytes runs past the end (%d left)", what, n, len(b.Data))
		return nil
	}
	p := b.Bytes(n, what)
	if p == nil {
		p = []byte{}
	}
	return p
}

// run executes instructions until the end of b. initial is set for the
// CIE's initial instructions, where advancing and DW_CFA_restore have no
// meaning.
func (m *machine) run(b *buf, initial bool) error {
	for len(b.Data) > 0 && b.Err == nil {
		off := b.Off
		op := b.U8("call frame instruction")
		var reg uint64
		switch op & 0xc0 {
		case CFAAdvanceLoc:
			if initial {
				return m.fail(b, off, "DW_CFA_advance_loc in a CIE's initial instructions")
			}
			if err := m.advance(b, off, uint64(op&0x3f)); err != nil {
				return err
			}
			continue
		case CFAOffset:
			v, err := m.scaled(b, off, int64(b.uleb("offset")))
			if err != nil {
				return err
			}
			m.cur.set(uint64(op&0x3f), Rule{Kind: Offset, Off: v})
			continue
		case CFARestore:
			if initial {
				return m.fail(b, off, "DW_CFA_restore in a CIE's initial instructions")
			}
			m.restore(uint64(op & 0x3f))
			continue
		}
		switch op {
		case CFANop:
		case CFASetLoc:
			if initial {
				return m.fail(b, off, "DW_CFA_set_loc in a CIE's initial instructions")
			}
			to := m.p.pointer(b, m.cie.FDEEnc, "DW_CFA_set_loc")
			if b.Err != nil {
				return b.Err
			}
			if err := m.moveTo(b, off, to); err != nil {
				return err
			}
		case CFAAdvanceLoc1, CFAAdvanceLoc2, CFAAdvanceLoc4:
			if initial {
				return m.fail(b, off, "DW_CFA_advance_loc%d in a CIE's initial instructions", 1<<(op-CFAAdvanceLoc1))
			}
			var d uint64
			switch op {
			case CFAAdvanceLoc1:
				d = uint64(b.U8("advance_loc1"))
			case CFAAdvanceLoc2:
				d = uint64(b.U16("advance_loc2"))
			default:
				d = uint64(b.U32("advance_loc4"))
			}
			if b.Err != nil {
				return b.Err
			}
			if err := m.advance(b, off, d); err != nil {
				return err
			}
		case CFAOffsetExt, CFAValOffset, CFAOffsetExtSF, CFAValOffSF:
			// The _sf forms take a signed factored offset.
			reg = b.uleb("register")
			var raw int64
			if op == CFAOffsetExtSF || op == CFAValOffSF {
				raw = b.sleb("offset")
			} else {
				raw = int64(b.uleb("offset"))
			}
			v, err := m.scaled(b, off, raw)
			if err != nil {
				return err
			}
			kind := Offset
			if op == CFAValOffset || op == CFAValOffSF {
				kind = ValOffset
			}
			m.cur.set(reg, Rule{Kind: kind, Off: v})
		case CFANegOffExt:
			reg = b.uleb("register")
			v, err := m.scaled(b, off, int64(b.uleb("offset")))
			if err != nil {
				return err
			}
			m.cur.set(reg, Rule{Kind: Offset, Off: -v})
		case CFARestoreExt:
			reg = b.uleb("register")
			if initial {
				return m.fail(b, off, "DW_CFA_restore_extended in a CIE's initial instructions")
			}
			m.restore(reg)
		case CFAUndefined:
			m.cur.set(b.uleb("register"), Rule{Kind: Undefined})
		case CFASameValue:
			m.cur.set(b.uleb("register"), Rule{Kind: SameValue})
		case CFARegister:
			reg = b.uleb("register")
			m.cur.set(reg, Rule{Kind: Register, Reg: b.uleb("register")})
		case CFARemember:
			m.stack = append(m.stack, m.cur.clone())
		case CFARestoreSt:
			if len(m.stack) == 0 {
				return m.fail(b, off, "DW_CFA_restore_state with no remembered state")
			}
			args := m.cur.ArgsSize
			m.cur = m.stack[len(m.stack)-1]
			m.cur.ArgsSize = args
			m.stack = m.stack[:len(m.stack)-1]
		case CFADefCFA:
			reg = b.uleb("register")
			m.cur.CFA = CFA{Reg: reg, Off: int64(b.uleb("offset"))}
			if m.cur.CFA.Off < 0 {
				return m.fail(b, off, "DW_CFA_def_cfa offset does not fit in 63 bits")
			}
		case CFADefCFASF:
			reg = b.uleb("register")
			v, err := m.scaled(b, off, b.sleb("offset"))
			if err != nil {
				return err
			}
			m.cur.CFA = CFA{Reg: reg, Off: v}
		case CFADefCFAReg:
			m.cur.CFA.Reg = b.uleb("register")
			m.cur.CFA.Expr = nil
		case CFADefCFAOff:
			m.cur.CFA.Off = int64(b.uleb("offset"))
			m.cur.CFA.Expr = nil
			if m.cur.CFA.Off < 0 {
				return m.fail(b, off, "DW_CFA_def_cfa_offset does not fit in 63 bits")
			}
		case CFADefCFAOffSF:
			v, err := m.scaled(b, off, b.sleb("offset"))
			if err != nil {
				return err
			}
			m.cur.CFA.Off = v
			m.cur.CFA.Expr = nil
		case CFADefCFAExpr:
			e := block(b, "DW_CFA_def_cfa_expression")
			m.cur.CFA = CFA{Expr: e}
		case CFAExpression, CFAValExpr:
			reg = b.uleb("register")
			e := block(b, "expression")
			kind := Expression
			if op == CFAValExpr {
				kind = ValExpression
			}
			m.cur.set(reg, Rule{Kind: kind, Expr: e})
		case CFAArgsSize:
			m.cur.ArgsSize = b.uleb("DW_CFA_GNU_args_size")
		default:
			// DW_CFA_GNU_window_save (SPARC, AArch64's
			// negate_ra_state), DW_CFA_MIPS_advance_loc8, vendor ops:
			// never emitted for x86-64.
			return m.fail(b, off, "unknown call frame instruction %#02x", op)
		}
	}
	return b.Err
}

// restore returns reg to its rule in the CIE's initial state.
func (m *machine) restore(reg uint64) {
	if r, ok := m.init.Rule(reg); ok {
		m.cur.set(reg, r)
	} else {
		m.cur.del(reg)
	}
}
