package ehwrite

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/blpp/blpp/cfg/ehframe"
)

// testCIE returns the CIE gcc emits for C++ on x86-64 ("zPLR", code 1,
// data -8, return address 16, CFA rsp+8, ra at c-8), parsed from bytes
// at secAddr, with the personality slot at persAddr.
func testCIE(t *testing.T, aug string) *ehframe.CIE {
	t.Helper()
	const secAddr = 0x40_0000
	body := []byte{0, 0, 0, 0, 1}
	body = append(append(body, aug...), 0)
	body = append(body, 1, 0x78, 16)
	switch aug {
	case "zPLR":
		body = append(body, 7, 0x9b)
		body = binary.LittleEndian.AppendUint32(body, uint32(0x1000-(len(body)+4)))
		body = append(body, 0x1b, 0x1b)
	case "zR":
		body = append(body, 1, 0x1b)
	}
	body = append(body, 0x0c, 7, 8, 0x90, 1)
	sec := binary.LittleEndian.AppendUint32(nil, uint32(len(body)))
	sec = append(sec, body...)
	f, err := ehframe.ParseFrame(sec, secAddr, ehframe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f.CIEs[0]
}

const (
	rbx = 3
	rbp = 6
	rsp = 7
	ra  = 16
)

func TestProgram(t *testing.T) {
	cie := testCIE(t, "zR")
	raRule := ehframe.RegRule{Reg: ra, Rule: ehframe.Rule{Kind: ehframe.Offset, Off: -8}}
	st := func(reg uint64, off int64, rr ...ehframe.RegRule) ehframe.State {
		regs := append(rr, raRule)
		slices.SortFunc(regs, func(a, b ehframe.RegRule) int { return cmp.Compare(a.Reg, b.Reg) })
		return ehframe.State{CFA: ehframe.CFA{Reg: reg, Off: off}, Regs: regs}
	}
	saved := func(reg uint64, off int64) ehframe.RegRule {
		return ehframe.RegRule{Reg: reg, Rule: ehframe.Rule{Kind: ehframe.Offset, Off: off}}
	}
	tests := []struct {
		name string
		rows []ehframe.Row
		want []byte
	}{
		{"initial state only", []ehframe.Row{{Addr: 0x1000, State: st(rsp, 8)}}, nil},
		{"push rbp; mov rsp,rbp; leave", []ehframe.Row{
			{Addr: 0x1000, State: st(rsp, 8)},
			{Addr: 0x1001, State: st(rsp, 16, saved(rbp, -16))},
			{Addr: 0x1004, State: st(rbp, 16, saved(rbp, -16))},
			{Addr: 0x1104, State: st(rsp, 8, saved(rbp, -16))},
		}, []byte{0x41, 0x0e, 16, 0x86, 2, 0x43, 0x0d, rbp, 0x03, 0x00, 0x01, 0x0c, rsp, 8}},
		{"pop restores, equal rows skipped, advance_loc4", []ehframe.Row{
			{Addr: 0x1000, State: st(rsp, 16, saved(rbx, -16))},
			{Addr: 0x1002, State: st(rsp, 16, saved(rbx, -16))},
			{Addr: 0x11_1000, State: st(rsp, 8)},
		}, []byte{0x0e, 16, 0x83, 2, 0x04, 0x00, 0x00, 0x11, 0x00, 0x0e, 8, 0xc3}},
		{"rules of every kind", []ehframe.Row{{Addr: 0x1000, State: ehframe.State{
			CFA:      ehframe.CFA{Expr: []byte{0x77, 8}},
			ArgsSize: 16,
			Regs: []ehframe.RegRule{
				{Reg: 0, Rule: ehframe.Rule{Kind: ehframe.SameValue}},
				{Reg: 1, Rule: ehframe.Rule{Kind: ehframe.Undefined}},
				{Reg: 2, Rule: ehframe.Rule{Kind: ehframe.Register, Reg: 5}},
				{Reg: rbx, Rule: ehframe.Rule{Kind: ehframe.Offset, Off: 16}},
				{Reg: 4, Rule: ehframe.Rule{Kind: ehframe.ValOffset, Off: -24}},
				{Reg: 5, Rule: ehframe.Rule{Kind: ehframe.ValOffset, Off: 8}},
				{Reg: rbp, Rule: ehframe.Rule{Kind: ehframe.Expression, Expr: []byte{0x9c}}},
				{Reg: 8, Rule: ehframe.Rule{Kind: ehframe.ValExpression, Expr: []byte{0x9c, 0x9c}}},
				{Reg: ra, Rule: ehframe.Rule{Kind: ehframe.Offset, Off: -8}},
				{Reg: 100, Rule: ehframe.Rule{Kind: ehframe.Offset, Off: -8}},
			},
		}}}, []byte{
			0x0f, 2, 0x77, 8, // def_cfa_expression
			0x08, 0, // same_value
			0x07, 1, // undefined
			0x09, 2, 5, // register
			0x11, rbx, 0x7e, // offset_extended_sf (16 / -8 = -2)
			0x14, 4, 3, // val_offset (-24 / -8 = 3)
			0x15, 5, 0x7f, // val_offset_sf
			0x10, rbp, 1, 0x9c, // expression
			0x16, 8, 2, 0x9c, 0x9c, // val_expression
			0x05, 100, 1, // offset_extended
			0x2e, 16, // GNU_args_size
		}},
		{"CFA register then offset, negative CFA offset, restore_extended", []ehframe.Row{
			{Addr: 0x1000, State: st(rsp, 8, saved(100, -16))},
			{Addr: 0x1001, State: st(rbp, 8, saved(100, -16))},
			{Addr: 0x1002, State: st(rbp, -16)},
			{Addr: 0x1003, State: st(rbx, -24)},
		}, []byte{0x05, 100, 2, 0x41, 0x0d, rbp, 0x41, 0x13, 2, 0x06, 100, 0x41, 0x12, rbx, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			end := tc.rows[len(tc.rows)-1].Addr + 1
			got, err := Program(cie, 0x1000, end, tc.rows)
			if err != nil {
				t.Fatalf("Program: %v", err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("Program = % x\nwant      % x", got, tc.want)
			}
			// And the program gives the rows back (minus repeats).
			b := NewBuilder(0x60_0000)
			if err := b.AddFDE(cie, 0x1000, end, tc.rows, 0); err != nil {
				t.Fatal(err)
			}
			sec, _ := b.Finish()
			f, err := ehframe.ParseFrame(sec, 0x60_0000, ehframe.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := f.Entries[0].Rows()
			if err != nil {
				t.Fatal(err)
			}
			var want []ehframe.Row
			for i, r := range tc.rows {
				if i == 0 || !r.State.Equal(want[len(want)-1].State) {
					want = append(want, r)
				}
			}
			if !reflect.DeepEqual(rows, want) {
				t.Errorf("rows\n%+v\nwant\n%+v", rows, want)
			}
		})
	}
}

// TestProgramCIERule: a rule the CIE gives (gas moves the rules at an
// FDE's start into a CIE of its own) that a row drops is written as
// DW_CFA_same_value, and reads back as that (decision 174).
func TestProgramCIERule(t *testing.T) {
	sec := []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
		0x0c, 7, 8, 0x90, 1, 0x83, 2} // CFA rsp+8, ra at c-8, rbx at c-16
	binary.LittleEndian.PutUint32(sec, uint32(len(sec)-4))
	f, err := ehframe.ParseFrame(sec, 0x40_0000, ehframe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cie := f.CIEs[0]
	init, err := cie.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := init.Rule(rbx); !ok {
		t.Fatalf("the CIE gives rbx no rule: %+v", init)
	}
	dropped := ehframe.State{CFA: init.CFA, Regs: []ehframe.RegRule{{Reg: ra, Rule: ehframe.Rule{Kind: ehframe.Offset, Off: -8}}}}
	rows := []ehframe.Row{{Addr: 0x1000, State: init}, {Addr: 0x1004, State: dropped}}
	got, err := Program(cie, 0x1000, 0x1008, rows)
	if err != nil {
		t.Fatalf("Program: %v", err)
	}
	if want := []byte{0x44, 0x08, rbx}; !bytes.Equal(got, want) {
		t.Errorf("Program = % x, want % x", got, want)
	}
	b := NewBuilder(0x60_0000)
	if err := b.AddFDE(cie, 0x1000, 0x1008, rows, 0); err != nil {
		t.Fatal(err)
	}
}

func TestAddFDEErrors(t *testing.T) {
	zr, zplr := testCIE(t, "zR"), testCIE(t, "zPLR")
	init, err := zr.InitialState()
	if err != nil {
		t.Fatal(err)
	}
	odd := init
	odd.CFA.Off = -3
	lost := ehframe.State{CFA: init.CFA}
	tests := []struct {
		name  string
		cie   *ehframe.CIE
		begin uint64
		rows  []ehframe.Row
		lsda  uint64
		want  error
		addr  uint64
	}{
		{"LSDA without L", zr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: init}}, 0x5000, ErrAugmentation, 0},
		{"no rows", zr, 0x1000, nil, 0, ErrRows, 0},
		{"first row not at begin", zr, 0x1000, []ehframe.Row{{Addr: 0x1001, State: init}}, 0, ErrRows, 0},
		{"rows out of order", zr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: init}, {Addr: 0x1008, State: odd}, {Addr: 0x1004, State: init}}, 0, ErrRows, 0},
		{"row past end", zr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: init}, {Addr: 0x1010, State: lost}}, 0, ErrRows, 0},
		{"offset not a multiple of the data alignment", zr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: odd}}, 0, ErrRows, 0},
		{"registers not sorted", zr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: ehframe.State{CFA: init.CFA, Regs: []ehframe.RegRule{init.Regs[0], {Reg: 3}}}}}, 0, ErrRows, 0},
		{"the return address's rule cannot be dropped", zr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: lost}}, 0, ErrRows, 0},
		{"pc_begin too far for sdata4 pcrel", zr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: init}}, 0, ErrRange, 0x1_0000_0000},
		{"LSDA too far", zplr, 0x1000, []ehframe.Row{{Addr: 0x1000, State: init}}, 0x2_0000_0000, ErrRange, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(max(tc.addr, 0x60_0000))
			err := b.AddFDE(tc.cie, tc.begin, tc.begin+0x10, tc.rows, tc.lsda)
			if !errors.Is(err, tc.want) {
				t.Errorf("AddFDE: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestCopyFramePersonality(t *testing.T) {
	c := testCIE(t, "zPLR")
	init, _ := c.InitialState()
	for _, addr := range []uint64{0x60_0000, 0x3000_0000} {
		b := NewBuilder(addr)
		if err := b.AddFDE(c, 0x2000, 0x2040, []ehframe.Row{{Addr: 0x2000, State: init}}, 0x7000); err != nil {
			t.Fatal(err)
		}
		if err := b.AddFDE(c, 0x3000, 0x3040, []ehframe.Row{{Addr: 0x3000, State: init}}, 0); err != nil {
			t.Fatal(err)
		}
		sec, table := b.Finish()
		f, err := ehframe.ParseFrame(sec, addr, ehframe.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(f.CIEs) != 1 {
			t.Errorf("%d CIEs, want one copy", len(f.CIEs))
		}
		if f.CIEs[0].Personality != c.Personality || f.CIEs[0].PersonalityEnc != 0x9b {
			t.Errorf("personality %#x (enc %#x), want %#x", f.CIEs[0].Personality, f.CIEs[0].PersonalityEnc, c.Personality)
		}
		if f.Entries[0].LSDA != 0x7000 || f.Entries[1].LSDA != 0 {
			t.Errorf("LSDAs %#x, %#x", f.Entries[0].LSDA, f.Entries[1].LSDA)
		}
		if want := []HdrEntry{{0x2000, addr + uint64(f.Entries[0].Off)}, {0x3000, addr + uint64(f.Entries[1].Off)}}; !reflect.DeepEqual(table, want) {
			t.Errorf("table %+v, want %+v", table, want)
		}
		if !bytes.HasSuffix(sec, []byte{0, 0, 0, 0}) || len(sec)%4 != 0 {
			t.Error("no zero terminator")
		}
	}
}

// parseHdr decodes an .eh_frame_hdr written by BuildHdr.
func parseHdr(t *testing.T, h []byte, addr uint64) (ehFrame uint64, table []HdrEntry) {
	t.Helper()
	if len(h) < 12 || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 || h[3] != 0x3b {
		t.Fatalf("header % x", h[:min(len(h), 12)])
	}
	ehFrame = addr + 4 + uint64(int64(int32(binary.LittleEndian.Uint32(h[4:]))))
	n := int(binary.LittleEndian.Uint32(h[8:]))
	if len(h) != 12+8*n {
		t.Fatalf("%d bytes for %d entries", len(h), n)
	}
	for i := 0; i < n; i++ {
		p := h[12+8*i:]
		table = append(table, HdrEntry{
			Begin:   addr + uint64(int64(int32(binary.LittleEndian.Uint32(p)))),
			FDEAddr: addr + uint64(int64(int32(binary.LittleEndian.Uint32(p[4:])))),
		})
	}
	return ehFrame, table
}

func TestBuildHdr(t *testing.T) {
	in := []HdrEntry{{0x5000, 0x90_0100}, {0x1000, 0x90_0020}, {0x3000, 0x90_0040}}
	h, err := BuildHdr(0x80_0000, 0x90_0000, in)
	if err != nil {
		t.Fatal(err)
	}
	eh, table := parseHdr(t, h, 0x80_0000)
	if eh != 0x90_0000 {
		t.Errorf("eh_frame_ptr %#x", eh)
	}
	want := []HdrEntry{{0x1000, 0x90_0020}, {0x3000, 0x90_0040}, {0x5000, 0x90_0100}}
	if !reflect.DeepEqual(table, want) {
		t.Errorf("table %+v, want %+v", table, want)
	}
	if in[0].Begin != 0x5000 {
		t.Error("BuildHdr sorted its argument")
	}
	if _, err := BuildHdr(0x80_0000, 0x90_0000, append(in, HdrEntry{0x3000, 0x90_0200})); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate: %v", err)
	}
	if _, err := BuildHdr(0x80_0000, 0x90_0000, []HdrEntry{{0x1_0000_1000, 0x90_0000}}); !errors.Is(err, ErrRange) {
		t.Errorf("far FDE: %v", err)
	}
	if _, err := BuildHdr(0x80_0000, 0x1_9000_0000, nil); !errors.Is(err, ErrRange) {
		t.Errorf("far eh_frame: %v", err)
	}
	if h, err := BuildHdr(0x80_0000, 0x90_0000, nil); err != nil || len(h) != 12 {
		t.Errorf("empty table: %d bytes, %v", len(h), err)
	}
}

// TestBuildHdrMatchesLinker rebuilds the .eh_frame_hdr of real binaries
// from their FDEs: it must equal, byte for byte, the one ld wrote.
func TestBuildHdrMatchesLinker(t *testing.T) {
	for _, b := range testBinaries(t) {
		t.Run(b.name, func(t *testing.T) {
			path := b.path
			f, err := elf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			hs := f.Section(".eh_frame_hdr")
			if hs == nil {
				t.Skip("no .eh_frame_hdr")
			}
			want, err := hs.Data()
			if err != nil {
				t.Fatal(err)
			}
			var table []HdrEntry
			for _, e := range b.frame.Entries {
				if e.End > e.Begin {
					table = append(table, HdrEntry{Begin: e.Begin, FDEAddr: b.ehAddr + uint64(e.Off)})
				}
			}
			got, err := BuildHdr(hs.Addr, b.ehAddr, table)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("BuildHdr: %d bytes, ld wrote %d; first difference at %d", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestEncodeLSDA(t *testing.T) {
	const fn, at = 0x40_1000, 0x50_0000
	tInt, tExc := ehframe.TypeRef{Value: 0x60_0100}, ehframe.TypeRef{Value: 0x60_0200}
	catchAll := ehframe.Action{Kind: ehframe.Catch}
	l := &ehframe.LSDA{LPStart: fn, TTypeEnc: 0x9b, CallSites: []ehframe.CallSite{
		{Start: fn + 0x10, End: fn + 0x15, LandingPad: fn + 0x80, Actions: []ehframe.Action{{Kind: ehframe.Catch, Type: tInt}, {Kind: ehframe.Catch, Type: tExc}, catchAll}},
		{Start: fn + 0x15, End: fn + 0x20},
		{Start: fn + 0x20, End: fn + 0x28, LandingPad: fn + 0x90, Actions: []ehframe.Action{{Kind: ehframe.Cleanup}, {Kind: ehframe.Catch, Type: tExc}, catchAll}},
		{Start: fn + 0x30, End: fn + 0x38, LandingPad: fn + 0xa0, Actions: []ehframe.Action{{Kind: ehframe.Spec, Spec: []ehframe.TypeRef{tInt}}}},
		{Start: fn + 0x38, End: fn + 0x40, LandingPad: fn + 0xa8, Actions: []ehframe.Action{{Kind: ehframe.Spec, Spec: []ehframe.TypeRef{}}}},
		{Start: fn + 0x40, End: fn + 0x48, LandingPad: fn + 0xb0, Actions: []ehframe.Action{{Kind: ehframe.Spec, Spec: []ehframe.TypeRef{tInt}}}},
	}}
	enc, err := EncodeLSDA(l, at, fn)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ehframe.ParseLSDA(enc, at, at, fn, ehframe.Options{})
	if err != nil {
		t.Fatalf("ParseLSDA: %v\n% x", err, enc)
	}
	if !reflect.DeepEqual(ehframe.StripNumbering(back), l) {
		t.Errorf("round trip\n got %+v\nwant %+v", back, l)
	}
	// The type table holds int, exc and catch(...) once each (the last
	// as a raw zero), the specs (int) and () once each, and the action
	// table shares the tail (exc, ...): header 5 bytes, call sites 29
	// (landing pads past 0x7f take two bytes), 3 + 1 + 2 action records
	// of 2 bytes, 3 types of 4, specs 2 + 1.
	if want := 5 + 29 + 6*2 + 3*4 + 3; len(enc) != want {
		t.Errorf("LSDA of %d bytes, want %d: % x", len(enc), want, enc)
	}
	cleanupOnly := &ehframe.LSDA{LPStart: fn, TTypeEnc: 0xff, CallSites: []ehframe.CallSite{
		{Start: fn, End: fn + 8, LandingPad: fn + 0x10, Actions: []ehframe.Action{{Kind: ehframe.Cleanup}}}}}
	enc, err = EncodeLSDA(cleanupOnly, at, fn)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0xff, 0xff, 0x01, 4, 0, 8, 0x10, 1, 0, 0}; !bytes.Equal(enc, want) {
		t.Errorf("cleanup-only LSDA % x, want % x", enc, want)
	}

	bad := []struct {
		name string
		l    *ehframe.LSDA
		want error
	}{
		{"before the function", &ehframe.LSDA{CallSites: []ehframe.CallSite{{Start: fn - 1, End: fn + 1}}}, ErrCallSites},
		{"overlap", &ehframe.LSDA{CallSites: []ehframe.CallSite{{Start: fn, End: fn + 8}, {Start: fn + 4, End: fn + 10}}}, ErrCallSites},
		{"unsorted", &ehframe.LSDA{CallSites: []ehframe.CallSite{{Start: fn + 8, End: fn + 10}, {Start: fn, End: fn + 4}}}, ErrCallSites},
		{"landing pad at the function start", &ehframe.LSDA{CallSites: []ehframe.CallSite{{Start: fn, End: fn + 8, LandingPad: fn}}}, ErrCallSites},
		{"actions without landing pad", &ehframe.LSDA{CallSites: []ehframe.CallSite{{Start: fn, End: fn + 8, Actions: []ehframe.Action{{Kind: ehframe.Cleanup}}}}}, ErrCallSites},
		{"catch without type encoding", &ehframe.LSDA{TTypeEnc: 0xff, CallSites: []ehframe.CallSite{{Start: fn, End: fn + 8, LandingPad: fn + 8, Actions: []ehframe.Action{catchAll}}}}, ErrEncoding},
		{"uleb128 types", &ehframe.LSDA{TTypeEnc: 0x01, CallSites: []ehframe.CallSite{{Start: fn, End: fn + 8, LandingPad: fn + 8, Actions: []ehframe.Action{catchAll}}}}, ErrEncoding},
		{"type too far for pcrel sdata4", &ehframe.LSDA{TTypeEnc: 0x9b, CallSites: []ehframe.CallSite{{Start: fn, End: fn + 8, LandingPad: fn + 8, Actions: []ehframe.Action{{Kind: ehframe.Catch, Type: ehframe.TypeRef{Value: 0x1_0000_0000}}}}}}, ErrRange},
		{"type too big for udata4", &ehframe.LSDA{TTypeEnc: 0x03, CallSites: []ehframe.CallSite{{Start: fn, End: fn + 8, LandingPad: fn + 8, Actions: []ehframe.Action{{Kind: ehframe.Catch, Type: ehframe.TypeRef{Value: 0x1_0000_0000}}}}}}, ErrRange},
	}
	for _, tc := range bad {
		if _, err := EncodeLSDA(tc.l, at, fn); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestFDEInPlace checks what writing an FDE in place gives: a failing
// AddFDEProgram leaves nothing of its entry in the section (the entry's
// length field and first fields are written before the failing field),
// the section after it is the one written without the failure, and a
// builder given room by Reserve (its CIE copy included) writes its FDEs
// and hands the section over without growing or copying it (a large
// library's section is some 30 MB).
func TestFDEInPlace(t *testing.T) {
	c := testCIE(t, "zPLR")
	init, _ := c.InitialState()
	prog, err := Program(c, 0x2000, 0x2040, []ehframe.Row{{Addr: 0x2000, State: init}})
	if err != nil {
		t.Fatal(err)
	}
	const addr = 0x60_0000
	clean := NewBuilder(addr)
	failed := NewBuilder(addr)
	for _, b := range []*Builder{clean, failed} {
		if err := b.AddFDEProgram(c, 0x2000, 0x2040, prog, nil, 0x7000); err != nil {
			t.Fatal(err)
		}
	}
	// pc_begin fits; the LSDA, written last, is too far for sdata4.
	if err := failed.AddFDEProgram(c, 0x3000, 0x3040, prog, nil, 0x2_0000_0000); !errors.Is(err, ErrRange) {
		t.Fatalf("AddFDEProgram with an LSDA out of range: %v, want %v", err, ErrRange)
	}
	for _, b := range []*Builder{clean, failed} {
		if err := b.AddFDEProgram(c, 0x3000, 0x3040, prog, nil, 0); err != nil {
			t.Fatal(err)
		}
	}
	want, wantTable := clean.Finish()
	got, gotTable := failed.Finish()
	if !bytes.Equal(got, want) || !reflect.DeepEqual(gotTable, wantTable) {
		t.Errorf("after a failed FDE:\n% x\nwant\n% x", got, want)
	}

	b := NewBuilder(addr)
	const n = 100
	b.Reserve(nil, n, n*len(prog))
	first := &b.buf[:1][0]
	for i := range uint64(n) {
		if err := b.AddFDEProgram(c, 0x2000+0x40*i, 0x2040+0x40*i, prog, nil, 0x7000); err != nil {
			t.Fatal(err)
		}
	}
	sec, table := b.Finish()
	f, err := ehframe.ParseFrame(sec, addr, ehframe.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != n || len(table) != n {
		t.Errorf("%d FDEs parsed, %d in the table, want %d", len(f.Entries), len(table), n)
	}
	if &sec[0] != first {
		t.Error("the section was copied or grown after Reserve")
	}
}
