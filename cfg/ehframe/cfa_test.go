package ehframe

import (
	"errors"
	"reflect"
	"testing"
)

// oneFDE builds a section with a "zR" CIE (code alignment codeAlign,
// data alignment -8, return address 16, FDE pointers udata4) whose
// initial instructions are initial, and one FDE for [0x1000, 0x1100)
// running prog; it returns the parsed entry.
func oneFDE(t *testing.T, codeAlign uint64, initial, prog []byte) *Entry {
	t.Helper()
	var s section
	c := s.entry((&w{}).u32(0).u8(1).str("zR").uleb(codeAlign).sleb(-8).u8(16).uleb(1).u8(0x03).raw(initial...).b)
	s.entry((&w{}).u32(uint32(len(s.b) + 4 - c)).u32(0x1000).u32(0x100).uleb(0).raw(prog...).b)
	f, err := ParseFrame(s.b, secAddr, Options{})
	if err != nil {
		t.Fatalf("ParseFrame: %v", err)
	}
	if len(f.Entries) != 1 {
		t.Fatalf("%d entries", len(f.Entries))
	}
	return f.Entries[0]
}

// x86-64 DWARF registers used below.
const (
	rbx = 3
	rbp = 6
	rsp = 7
	r12 = 12
	ra  = 16
)

func regs(rr ...RegRule) []RegRule { return rr }

func TestRows(t *testing.T) {
	// The usual CIE: CFA = rsp+8, return address at CFA-8.
	cieInit := []byte{0x0c, rsp, 8, 0x80 | ra, 1}
	initSt := State{CFA: CFA{Reg: rsp, Off: 8}, Regs: regs(RegRule{ra, Rule{Kind: Offset, Off: -8}})}
	raRule := RegRule{ra, Rule{Kind: Offset, Off: -8}}
	tests := []struct {
		name      string
		codeAlign uint64
		prog      []byte
		want      []Row
	}{
		{"empty program", 1, nil, []Row{{0x1000, initSt}}},
		{"push rbp; mov rsp,rbp; ...; leave", 1, []byte{
			0x41, 0x0e, 16, 0x80 | rbp, 2, // +1: cfa rsp+16, rbp at c-16
			0x43, 0x0d, rbp, // +3: cfa rbp+16
			0x02, 0x20, 0x0c, rsp, 8, // +0x20: cfa rsp+8
		}, []Row{
			{0x1000, initSt},
			{0x1001, State{CFA: CFA{Reg: rsp, Off: 16}, Regs: regs(RegRule{rbp, Rule{Kind: Offset, Off: -16}}, raRule)}},
			{0x1004, State{CFA: CFA{Reg: rbp, Off: 16}, Regs: regs(RegRule{rbp, Rule{Kind: Offset, Off: -16}}, raRule)}},
			{0x1024, State{CFA: CFA{Reg: rsp, Off: 8}, Regs: regs(RegRule{rbp, Rule{Kind: Offset, Off: -16}}, raRule)}},
		}},
		{"remember/restore state, restore, advance_loc2/4", 1, []byte{
			0x41, 0x0e, 16, 0x80 | rbx, 2, // +1
			0x0a,                                  // remember
			0x03, 0x10, 0x00, 0x0e, 8, 0xc0 | rbx, // +0x10: cfa rsp+8, restore rbx (no initial rule: gone)
			0x04, 0x01, 0x00, 0x00, 0x00, 0x0b, // +1: restore state
		}, []Row{
			{0x1000, initSt},
			{0x1001, State{CFA: CFA{Reg: rsp, Off: 16}, Regs: regs(RegRule{rbx, Rule{Kind: Offset, Off: -16}}, raRule)}},
			{0x1011, initSt},
			{0x1012, State{CFA: CFA{Reg: rsp, Off: 16}, Regs: regs(RegRule{rbx, Rule{Kind: Offset, Off: -16}}, raRule)}},
		}},
		{"every register rule", 1, []byte{
			0x05, rbx, 3, // offset_extended rbx c-24
			0x11, rbp, 0x7e, // offset_extended_sf rbp sleb -2 -> +16
			0x14, r12, 2, // val_offset r12 v-16
			0x15, 13, 0x7f, // val_offset_sf r13 v+8
			0x09, 14, rbx, // register r14 in rbx
			0x07, 15, // undefined r15
			0x08, 0, // same_value rax
			0x10, 1, 2, 0x77, 0x08, // expression rdx: DW_OP_breg7 8
			0x16, 2, 1, 0x9c, // val_expression rcx
			0x2f, 4, 1, // GNU_negative_offset_extended rsi: -(1*-8) = +8
			0x2e, 0x20, // GNU_args_size 32
			0x00, // nop
		}, []Row{{0x1000, State{CFA: CFA{Reg: rsp, Off: 8}, ArgsSize: 32, Regs: regs(
			RegRule{0, Rule{Kind: SameValue}},
			RegRule{1, Rule{Kind: Expression, Expr: []byte{0x77, 0x08}}},
			RegRule{2, Rule{Kind: ValExpression, Expr: []byte{0x9c}}},
			RegRule{rbx, Rule{Kind: Offset, Off: -24}},
			RegRule{4, Rule{Kind: Offset, Off: 8}},
			RegRule{rbp, Rule{Kind: Offset, Off: 16}},
			RegRule{r12, Rule{Kind: ValOffset, Off: -16}},
			RegRule{13, Rule{Kind: ValOffset, Off: 8}},
			RegRule{14, Rule{Kind: Register, Reg: rbx}},
			RegRule{15, Rule{Kind: Undefined}},
			raRule,
		)}}}},
		{"def_cfa_expression, def_cfa_sf, def_cfa_offset_sf, restore_extended of ra", 1, []byte{
			0x0f, 3, 0x77, 0x08, 0x06, // cfa = *(rsp+8)
			0x80 | ra, 3, // ra at c-24
			0x44, 0x12, rbp, 0x7e, // +4: def_cfa_sf rbp, -2*-8 = 16
			0x06, ra, // restore_extended ra -> c-8
			0x42, 0x13, 0x7d, // +2: def_cfa_offset_sf -3*-8 = 24
		}, []Row{
			{0x1000, State{CFA: CFA{Expr: []byte{0x77, 0x08, 0x06}}, Regs: regs(RegRule{ra, Rule{Kind: Offset, Off: -24}})}},
			{0x1004, State{CFA: CFA{Reg: rbp, Off: 16}, Regs: regs(raRule)}},
			{0x1006, State{CFA: CFA{Reg: rbp, Off: 24}, Regs: regs(raRule)}},
		}},
		{"code alignment 4, set_loc, args_size survives restore_state, rows past End dropped", 4, []byte{
			0x0a, 0x2e, 0x10, // remember; args 16 (at Begin)
			0x41, 0x2e, 0x00, // +4: args 0
			0x01, 0x20, 0x10, 0x00, 0x00, // set_loc 0x1020
			0x0e, 32, // cfa rsp+32
			0x0b,       // restore_state: cfa back, args stays 0
			0x02, 0x50, // +0x140: past End
			0x0e, 64,
		}, []Row{
			{0x1000, State{CFA: CFA{Reg: rsp, Off: 8}, Regs: regs(raRule), ArgsSize: 16}},
			{0x1004, initSt}, // 0x1020 repeats it after restore_state
		}},
		{"equal rows merged", 1, []byte{0x41, 0x0e, 16, 0x41, 0x0e, 16, 0x41, 0x0e, 8}, []Row{
			{0x1000, initSt},
			{0x1001, State{CFA: CFA{Reg: rsp, Off: 16}, Regs: regs(raRule)}},
			{0x1003, initSt},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := oneFDE(t, tc.codeAlign, cieInit, tc.prog)
			got, err := e.Rows()
			if err != nil {
				t.Fatalf("Rows: %v", err)
			}
			checkFirstRow(t, e, got, err)
			want := tc.want
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Rows =\n%+v\nwant\n%+v", got, want)
			}
			for i := 1; i < len(got); i++ {
				if got[i].State.Equal(got[i-1].State) || got[i].Addr <= got[i-1].Addr {
					t.Errorf("row %d repeats or does not ascend", i)
				}
			}
		})
	}
}

// checkFirstRow wants FirstRow to give rows[0] and err, what Rows gave,
// and AppendRows to append rows after other rows, in an array with room
// and without, or give err.
func checkFirstRow(t *testing.T, e *Entry, rows []Row, err error) {
	t.Helper()
	row, ferr := e.FirstRow()
	if (err == nil) != (ferr == nil) || err != nil && err.Error() != ferr.Error() {
		t.Fatalf("FirstRow error %v, Rows error %v", ferr, err)
	}
	if err == nil && !reflect.DeepEqual(row, rows[0]) {
		t.Fatalf("FirstRow = %+v, Rows()[0] = %+v", row, rows[0])
	}
	// The last row before has the first row's state: the rows made must
	// not merge into it.
	before := []Row{{Addr: 1}, {Addr: 2, State: State{ArgsSize: 3}}}
	if err == nil {
		before[1].State = rows[0].State
	}
	for _, room := range []int{0, 1, 64} {
		to := append(make([]Row, 0, len(before)+room), before...)
		got, aerr := e.AppendRows(to)
		if (err == nil) != (aerr == nil) || err != nil && err.Error() != aerr.Error() {
			t.Fatalf("AppendRows error %v, Rows error %v", aerr, err)
		}
		if err == nil && (!reflect.DeepEqual(got[:len(before)], before) || !reflect.DeepEqual(got[len(before):], rows)) {
			t.Fatalf("AppendRows(%d rows, room %d) = %+v, want them and then %+v", len(before), room, got, rows)
		}
	}
}

func TestRowsErrors(t *testing.T) {
	tests := []struct {
		name          string
		initial, prog []byte
		codeAlign     uint64
	}{
		{"unknown op", nil, []byte{0x2d}, 0},
		{"truncated offset", nil, []byte{0x80 | rbx}, 0},
		{"truncated block", nil, []byte{0x10, 1, 5, 0x77}, 0},
		{"restore_state with empty stack", nil, []byte{0x0b}, 0},
		{"location moves back", nil, []byte{0x01, 0x00, 0x0f, 0x00, 0x00}, 0},
		{"advance wraps", nil, []byte{0x04, 0xff, 0xff, 0xff, 0xff}, 1 << 40},
		{"advance in CIE", []byte{0x41}, nil, 0},
		{"restore in CIE", []byte{0xc3}, nil, 0},
		{"offset overflows", nil, []byte{0x11, 3, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40}, 0},
		{"def_cfa offset past 63 bits", nil, []byte{0x0c, 7, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := oneFDE(t, max(tc.codeAlign, 1), tc.initial, tc.prog)
			rows, err := e.Rows()
			if err == nil {
				t.Fatalf("Rows = %+v, want an error", rows)
			}
			checkFirstRow(t, e, rows, err)
			var fe *FormatError
			if !errors.As(err, &fe) || !(fe.Off >= e.Off && fe.Off <= e.Off+len(e.Raw()) || fe.Off >= e.CIE.Off && fe.Off <= e.CIE.Off+len(e.CIE.Raw)) {
				t.Errorf("error %v not located in the entry", err)
			}
			if !errors.Is(err, ErrInstruction) && !errors.Is(err, ErrTruncated) {
				t.Errorf("error %v: want ErrInstruction or ErrTruncated", err)
			}
		})
	}
}

func TestRuleKindString(t *testing.T) {
	for k, want := range map[RuleKind]string{Undefined: "undefined", SameValue: "same-value", Offset: "offset",
		ValOffset: "val-offset", Register: "register", Expression: "expression", ValExpression: "val-expression", 9: "RuleKind(9)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k, want)
		}
	}
	for k, want := range map[ActionKind]string{Cleanup: "cleanup", Catch: "catch", Spec: "spec", 7: "ActionKind(7)"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q, want %q", k, k, want)
		}
	}
}

func TestFind(t *testing.T) {
	var s section
	c := s.cie(1, "zR", 0x03)
	add := func(b, n uint32) { s.fde(c, func(e *w) { e.u32(b).u32(n).uleb(0) }) }
	add(0x3000, 0x100)
	add(0x1000, 0x100)
	add(0x0, 0x0) // discarded
	add(0x1100, 0x80)
	add(0x2000, 0x10)
	f, err := ParseFrame(s.b, secAddr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(f.Entries); i++ {
		if f.Entries[i].Begin < f.Entries[i-1].Begin {
			t.Fatalf("entries not sorted by Begin")
		}
	}
	for pc, want := range map[uint64]uint64{0: 0, 0xfff: 0, 0x1000: 0x1000, 0x10ff: 0x1000, 0x1100: 0x1100, 0x117f: 0x1100,
		0x1180: 0, 0x2005: 0x2000, 0x2010: 0, 0x30ff: 0x3000, 0x3100: 0, 1<<64 - 1: 0} {
		e := f.Find(pc)
		got := uint64(0)
		if e != nil {
			got = e.Begin
		}
		if got != want {
			t.Errorf("Find(%#x) = entry at %#x, want %#x", pc, got, want)
		}
	}
	if len(f.CIEs) != 1 || f.CIEs[0].Off != c || f.CIEs[0].FDEEnc != 0x03 || f.CIEs[0].LSDAEnc != 0xff || f.CIEs[0].PersonalityEnc != 0xff {
		t.Errorf("CIEs = %+v", f.CIEs)
	}
}

// TestFindUntil: from pc up to the address FindUntil gives, Find gives
// what it gave at pc, on ranges that overlap, nest and leave gaps.
func TestFindUntil(t *testing.T) {
	var s section
	c := s.cie(1, "zR", 0x03)
	add := func(b, n uint32) { s.fde(c, func(e *w) { e.u32(b).u32(n).uleb(0) }) }
	add(0x1000, 0x100)
	add(0x1040, 0x20) // nested: wins inside
	add(0x1080, 0x100)
	add(0x1200, 0x10)
	add(0x1208, 0x4)
	f, err := ParseFrame(s.b, secAddr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for pc := uint64(0xff0); pc < 0x1220; pc++ {
		e, until := f.FindUntil(pc)
		if e != f.Find(pc) || until <= pc {
			t.Fatalf("FindUntil(%#x) = %v, %#x; Find = %v", pc, e, until, f.Find(pc))
		}
		for q := pc; q < until && q < 0x1300; q++ {
			if f.Find(q) != e {
				t.Fatalf("FindUntil(%#x) holds until %#x, but Find(%#x) differs", pc, until, q)
			}
		}
	}
}

func TestParseFrameCIE(t *testing.T) {
	var s section
	// zPLRS: personality indirect|pcrel|sdata4, LSDA pcrel|sdata4, FDE pcrel|sdata4.
	c := s.cie(1, "zPLRS", 0x9b, 0x10, 0x20, 0x30, 0x40, 0x1b, 0x1b)
	fd := s.fde(c, func(e *w) { e.u32(0x40).u32(0x80).uleb(4).u32(0) }) // raw 0 LSDA: none
	f, err := ParseFrame(s.b, secAddr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ci := f.CIEs[0]
	persField := uint64(secAddr + c + 4 + 4 + 1 + 6 + 1 + 1 + 1 + 1 + 1)
	want := &CIE{Off: c, Version: 1, Augmentation: "zPLRS", CodeAlign: 1, DataAlign: -8, RAReg: 16,
		FDEEnc: 0x1b, LSDAEnc: 0x1b, PersonalityEnc: 0x9b, Personality: persField + 0x40302010, Signal: true,
		Initial: []byte{0, 0}, Raw: s.b[c : fd-8]}
	got := *ci
	got.hasZ, got.persOff, got.opts, got.dataAddr = false, 0, Options{}, 0
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("CIE =\n%+v\nwant\n%+v", &got, want)
	}
	e := f.Entries[0]
	if e.LSDA != 0 || e.CIE != ci || !reflect.DeepEqual(e.Program, []byte{0, 0, 0}) || len(e.Raw()) != len(s.b)-(fd-8) {
		t.Errorf("entry %+v, program % x", e.FDE, e.Program)
	}
}
