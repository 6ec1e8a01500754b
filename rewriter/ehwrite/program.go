package ehwrite

import (
	"encoding/binary"
	"fmt"

	"github.com/blpp/blpp/cfg/ehframe"
)

// Program returns the call frame instructions that, run after cie's
// initial instructions, give rows for an FDE [begin, end): see
// Builder.AddFDE. Rows whose state repeats the previous one cost
// nothing.
func Program(cie *ehframe.CIE, begin, end uint64, rows []ehframe.Row) ([]byte, error) {
	init, err := cie.InitialState()
	if err != nil {
		return nil, fmt.Errorf("CIE initial state: %w", err)
	}
	if len(rows) == 0 || rows[0].Addr != begin {
		return nil, fmt.Errorf("%w: the first row must be at the FDE's start %#x", ErrRows, begin)
	}
	var p []byte
	prev, loc := init, begin
	for i, r := range rows {
		if i > 0 && r.Addr <= rows[i-1].Addr {
			return nil, fmt.Errorf("%w: row %d at %#x does not follow %#x", ErrRows, i, r.Addr, rows[i-1].Addr)
		}
		if r.Addr >= end && i > 0 {
			return nil, fmt.Errorf("%w: row %d at %#x is past the FDE's end %#x", ErrRows, i, r.Addr, end)
		}
		for k := 1; k < len(r.State.Regs); k++ {
			if r.State.Regs[k].Reg <= r.State.Regs[k-1].Reg {
				return nil, fmt.Errorf("%w: row %d: registers not sorted (%d after %d)", ErrRows, i, r.State.Regs[k].Reg, r.State.Regs[k-1].Reg)
			}
		}
		if r.State.Equal(prev) {
			continue
		}
		if r.Addr != loc {
			if p, err = appendAdvance(p, cie, r.Addr-loc); err != nil {
				return nil, fmt.Errorf("row %d: %w", i, err)
			}
			loc = r.Addr
		}
		if p, err = appendDiff(p, cie, init, prev, r.State); err != nil {
			return nil, fmt.Errorf("row %d at %#x: %w", i, r.Addr, err)
		}
		prev = r.State
	}
	return p, nil
}

func appendAdvance(p []byte, cie *ehframe.CIE, delta uint64) ([]byte, error) {
	if cie.CodeAlign == 0 || delta%cie.CodeAlign != 0 {
		return nil, fmt.Errorf("%w: advance of %#x bytes with code alignment %d", ErrRows, delta, cie.CodeAlign)
	}
	d := delta / cie.CodeAlign
	switch {
	case d < 0x40:
		return append(p, ehframe.CFAAdvanceLoc|byte(d)), nil
	case d <= 0xff:
		return append(p, ehframe.CFAAdvanceLoc1, byte(d)), nil
	case d <= 0xffff:
		return binary.LittleEndian.AppendUint16(append(p, ehframe.CFAAdvanceLoc2), uint16(d)), nil
	case d <= 0xffffffff:
		return binary.LittleEndian.AppendUint32(append(p, ehframe.CFAAdvanceLoc4), uint32(d)), nil
	}
	return nil, fmt.Errorf("%w: advance of %#x bytes does not fit DW_CFA_advance_loc4", ErrRows, delta)
}

// factored divides a byte offset by the CIE's data alignment factor.
func factored(cie *ehframe.CIE, off int64) (int64, error) {
	if cie.DataAlign == 0 || off%cie.DataAlign != 0 {
		return 0, fmt.Errorf("%w: offset %d with data alignment %d", ErrRows, off, cie.DataAlign)
	}
	return off / cie.DataAlign, nil
}

// appendDiff writes what changes from state from to state to.
func appendDiff(p []byte, cie *ehframe.CIE, init, from, to ehframe.State) ([]byte, error) {
	var err error
	if !from.CFA.Equal(to.CFA) {
		if p, err = appendCFA(p, cie, from.CFA, to.CFA); err != nil {
			return nil, err
		}
	}
	// Walk both sorted register lists together.
	i, j := 0, 0
	for i < len(from.Regs) || j < len(to.Regs) {
		switch {
		case j == len(to.Regs) || i < len(from.Regs) && from.Regs[i].Reg < to.Regs[j].Reg:
			// A rule that disappears: DW_CFA_restore removes one when
			// the CIE has none for the register. Where the CIE has one
			// (gas moves the rules at an FDE's start into its CIE: a
			// hand-written block that starts inside its frame, decision
			// 174), DW_CFA_same_value says what no rule means to the
			// unwinders: the register holds the caller's value. Not for
			// the return address, which no row may lose.
			reg := from.Regs[i].Reg
			if _, ok := init.Rule(reg); ok {
				if reg == cie.RAReg {
					return nil, fmt.Errorf("%w: the return address column %d loses its rule, which the CIE gives", ErrRows, reg)
				}
				p = appendUleb(append(p, ehframe.CFASameValue), reg)
			} else {
				p = appendRestore(p, reg)
			}
			i++
		case i == len(from.Regs) || to.Regs[j].Reg < from.Regs[i].Reg:
			if p, err = appendRule(p, cie, init, to.Regs[j]); err != nil {
				return nil, err
			}
			j++
		default:
			if !from.Regs[i].Rule.Equal(to.Regs[j].Rule) {
				if p, err = appendRule(p, cie, init, to.Regs[j]); err != nil {
					return nil, err
				}
			}
			i++
			j++
		}
	}
	if from.ArgsSize != to.ArgsSize {
		p = appendUleb(append(p, ehframe.CFAArgsSize), to.ArgsSize)
	}
	return p, nil
}

func appendCFA(p []byte, cie *ehframe.CIE, from, to ehframe.CFA) ([]byte, error) {
	if to.Expr != nil {
		p = appendUleb(append(p, ehframe.CFADefCFAExpr), uint64(len(to.Expr)))
		return append(p, to.Expr...), nil
	}
	sameReg := from.Expr == nil && from.Reg == to.Reg
	sameOff := from.Expr == nil && from.Off == to.Off
	switch {
	case sameReg && to.Off >= 0:
		return appendUleb(append(p, ehframe.CFADefCFAOff), uint64(to.Off)), nil
	case sameReg:
		f, err := factored(cie, to.Off)
		if err != nil {
			return nil, err
		}
		return appendSleb(append(p, ehframe.CFADefCFAOffSF), f), nil
	case sameOff:
		return appendUleb(append(p, ehframe.CFADefCFAReg), to.Reg), nil
	case to.Off >= 0:
		p = appendUleb(append(p, ehframe.CFADefCFA), to.Reg)
		return appendUleb(p, uint64(to.Off)), nil
	}
	f, err := factored(cie, to.Off)
	if err != nil {
		return nil, err
	}
	p = appendUleb(append(p, ehframe.CFADefCFASF), to.Reg)
	return appendSleb(p, f), nil
}

func appendRestore(p []byte, reg uint64) []byte {
	if reg < 0x40 {
		return append(p, ehframe.CFARestore|byte(reg))
	}
	return appendUleb(append(p, ehframe.CFARestoreExt), reg)
}

// appendRule sets one register's rule, as DW_CFA_restore when that gives
// the rule back.
func appendRule(p []byte, cie *ehframe.CIE, init ehframe.State, rr ehframe.RegRule) ([]byte, error) {
	reg, r := rr.Reg, rr.Rule
	if ir, ok := init.Rule(reg); ok && ir.Equal(r) {
		return appendRestore(p, reg), nil
	}
	switch r.Kind {
	case ehframe.Undefined:
		return appendUleb(append(p, ehframe.CFAUndefined), reg), nil
	case ehframe.SameValue:
		return appendUleb(append(p, ehframe.CFASameValue), reg), nil
	case ehframe.Offset, ehframe.ValOffset:
		f, err := factored(cie, r.Off)
		if err != nil {
			return nil, fmt.Errorf("register %d: %w", reg, err)
		}
		switch {
		case r.Kind == ehframe.Offset && f >= 0 && reg < 0x40:
			return appendUleb(append(p, ehframe.CFAOffset|byte(reg)), uint64(f)), nil
		case r.Kind == ehframe.Offset && f >= 0:
			return appendUleb(appendUleb(append(p, ehframe.CFAOffsetExt), reg), uint64(f)), nil
		case r.Kind == ehframe.Offset:
			return appendSleb(appendUleb(append(p, ehframe.CFAOffsetExtSF), reg), f), nil
		case f >= 0:
			return appendUleb(appendUleb(append(p, ehframe.CFAValOffset), reg), uint64(f)), nil
		}
		return appendSleb(appendUleb(append(p, ehframe.CFAValOffSF), reg), f), nil
	case ehframe.Register:
		return appendUleb(appendUleb(append(p, ehframe.CFARegister), reg), r.Reg), nil
	case ehframe.Expression, ehframe.ValExpression:
		op := byte(ehframe.CFAExpression)
		if r.Kind == ehframe.ValExpression {
			op = ehframe.CFAValExpr
		}
		p = appendUleb(appendUleb(append(p, op), reg), uint64(len(r.Expr)))
		return append(p, r.Expr...), nil
	}
	return nil, fmt.Errorf("%w: register %d: unknown rule kind %v", ErrRows, reg, r.Kind)
}
