package ehframe

import (
	"debug/elf"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// lsdaSecAddr is where the synthetic .gcc_except_table sections live.
const lsdaSecAddr = 0x50_0000

// callSiteRec is one call-site record for lsdaBytes, in the encoding's units.
type callSiteRec struct {
	start, length, lp, action uint64
}

// lsdaBytes lays out an LSDA at offset pad of a section: header, call
// sites in csEnc (uleb128, udata4 or sdata4), the action table given as
// (filter, next) pairs already encoded, the spec lists, then the type
// table (entries written by types, in table order: entry 1 last).
func lsdaBytes(pad int, lpEnc byte, lpStart []byte, ttEnc byte, csEnc byte, sites []callSiteRec, actions []byte, specs []byte, types func(e *w, base int)) []byte {
	e := &w{b: make([]byte, pad)}
	e.u8(lpEnc).raw(lpStart...)
	var cs w
	for _, s := range sites {
		for _, v := range []uint64{s.start, s.length, s.lp} {
			switch csEnc {
			case 0x01:
				cs.uleb(v)
			case 0x03, 0x0b:
				cs.u32(uint32(v))
			}
		}
		cs.uleb(s.action)
	}
	var body w
	body.u8(csEnc).uleb(uint64(len(cs.b))).raw(cs.b...).raw(actions...)
	e.u8(ttEnc)
	if ttEnc == 0xff {
		return e.raw(body.b...).b
	}
	// The type table sits before the TType base; specs follow it. The
	// ttype offset, counted from just after itself, is written as a
	// two-byte (padded) uleb128 so the base is known before it is.
	tmp := &w{}
	types(tmp, 0)
	base := len(e.b) + 2 + len(body.b) + len(tmp.b)
	var tt w
	types(&tt, base)
	off := len(body.b) + len(tt.b)
	e.u8(byte(off&0x7f) | 0x80).u8(byte(off >> 7))
	return e.raw(body.b...).raw(tt.b...).raw(specs...).b
}

func TestParseLSDA(t *testing.T) {
	const fn = 0x40_1000
	tests := []struct {
		name string
		sec  []byte
		at   uint64
		opts Options
		want *LSDA
	}{
		{"cleanup only, no type table", lsdaBytes(0, 0xff, nil, 0xff, 0x01,
			[]callSiteRec{{0x10, 0x5, 0x30, 1}, {0x20, 0x8, 0, 0}}, []byte{0, 0}, nil, nil),
			lsdaSecAddr, Options{},
			&LSDA{LPStart: fn, TTypeEnc: 0xff, CallSites: []CallSite{
				{Start: fn + 0x10, End: fn + 0x15, LandingPad: fn + 0x30, Actions: []Action{{Kind: Cleanup}}},
				{Start: fn + 0x20, End: fn + 0x28},
			}}},
		{"catch chain udata4 types, udata4 call sites", lsdaBytes(4, 0xff, nil, 0x03, 0x03,
			[]callSiteRec{{0x4, 0x9, 0x40, 1}, {0x10, 0x4, 0x50, 5}},
			// 1: catch 1, next +1 -> 3: catch 2, end.  5: cleanup, next -> 1 (from field at 6: -6+... )
			[]byte{0x01, 0x01, 0x02, 0x00, 0x00, 0x7b}, nil,
			func(e *w, base int) { e.u32(0).u32(0x60_1230) }),
			lsdaSecAddr + 4, Options{},
			&LSDA{LPStart: fn, TTypeEnc: 0x03, CallSites: []CallSite{
				{Start: fn + 4, End: fn + 0xd, LandingPad: fn + 0x40, Actions: []Action{
					{Kind: Catch, Type: TypeRef{Value: 0x60_1230}}, {Kind: Catch}}},
				{Start: fn + 0x10, End: fn + 0x14, LandingPad: fn + 0x50, Actions: []Action{
					{Kind: Cleanup}, {Kind: Catch, Type: TypeRef{Value: 0x60_1230}}, {Kind: Catch}}},
			}}},
		{"indirect pcrel sdata4 types (PIC g++), sdata4 call sites, spec", lsdaBytes(0, 0xff, nil, 0x9b, 0x0b,
			[]callSiteRec{{0x8, 0x10, 0x80, 1}, {0x20, 0x4, 0x90, 3}},
			// 1: spec -1 (list at base+0), end. 3: spec -3 (list at base+2: empty), end.
			[]byte{0x7f, 0x00, 0x7d, 0x00},
			[]byte{0x02, 0x00, 0x00},
			func(e *w, base int) {
				// entry 2 at base-8, entry 1 at base-4; each pcrel to itself.
				e.u32(uint32(0x2000 - (base - 8)))
				e.u32(uint32(0x3000 - (base - 4)))
			}),
			lsdaSecAddr, Options{},
			&LSDA{LPStart: fn, TTypeEnc: 0x9b, CallSites: []CallSite{
				{Start: fn + 8, End: fn + 0x18, LandingPad: fn + 0x80, Actions: []Action{
					{Kind: Spec, Spec: []TypeRef{{Value: lsdaSecAddr + 0x2000}}}}},
				{Start: fn + 0x20, End: fn + 0x24, LandingPad: fn + 0x90, Actions: []Action{
					{Kind: Spec, Spec: []TypeRef{}}}},
			}}},
		{"explicit lpstart, absptr types", lsdaBytes(0, 0x03, []byte{0x00, 0x20, 0x40, 0x00}, 0x00, 0x01,
			[]callSiteRec{{0, 0x10, 0x8, 1}},
			[]byte{0x01, 0x00}, nil,
			func(e *w, base int) { e.u64(0x60_0010) }),
			lsdaSecAddr, Options{},
			&LSDA{LPStart: 0x40_2000, TTypeEnc: 0x00, CallSites: []CallSite{
				{Start: fn, End: fn + 0x10, LandingPad: 0x40_2008, Actions: []Action{
					{Kind: Catch, Type: TypeRef{Value: 0x60_0010}}}},
			}}},
		{"datarel types", lsdaBytes(0, 0xff, nil, 0x3b, 0x01,
			[]callSiteRec{{0, 0x10, 0x8, 1}},
			[]byte{0x01, 0x00}, nil,
			func(e *w, base int) { e.u32(0x40) }),
			lsdaSecAddr, Options{DataBase: 0x70_0000},
			&LSDA{LPStart: fn, TTypeEnc: 0x3b, CallSites: []CallSite{
				{Start: fn, End: fn + 0x10, LandingPad: fn + 8, Actions: []Action{
					{Kind: Catch, Type: TypeRef{Value: 0x70_0040}}}},
			}}},
		{"empty call-site table", lsdaBytes(0, 0xff, nil, 0xff, 0x01, nil, nil, nil, nil),
			lsdaSecAddr, Options{}, &LSDA{LPStart: fn, TTypeEnc: 0xff}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLSDA(tc.sec, lsdaSecAddr, tc.at, fn, tc.opts)
			if err != nil {
				t.Fatalf("ParseLSDA: %v\n% x", err, tc.sec)
			}
			if !reflect.DeepEqual(StripNumbering(got), tc.want) {
				t.Errorf("ParseLSDA =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// The filters and type indices are kept as read: the landing pads
// compare the selector with them.
func TestParseLSDANumbering(t *testing.T) {
	const fn = 0x40_1000
	sec := lsdaBytes(0, 0xff, nil, 0x9b, 0x0b,
		[]callSiteRec{{0x8, 0x10, 0x80, 1}, {0x20, 0x4, 0x90, 3}, {0x30, 0x4, 0x90, 5}},
		// 1: spec -1, end. 3: spec -3, end. 5: catch 2, end.
		[]byte{0x7f, 0x00, 0x7d, 0x00, 0x02, 0x00},
		[]byte{0x02, 0x00, 0x00},
		func(e *w, base int) {
			e.u32(uint32(0x2000 - (base - 8)))
			e.u32(uint32(0x3000 - (base - 4)))
		})
	got, err := ParseLSDA(sec, lsdaSecAddr, lsdaSecAddr, fn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a0, a1, a2 := got.CallSites[0].Actions[0], got.CallSites[1].Actions[0], got.CallSites[2].Actions[0]
	if a0.Filter != -1 || len(a0.Spec) != 1 || a0.Spec[0].Index != 2 || a1.Filter != -3 || a2.Filter != 2 || a2.Type.Index != 2 {
		t.Errorf("numbering lost: %+v", got.CallSites)
	}
}

func TestParseLSDAErrors(t *testing.T) {
	const fn = 0x40_1000
	tests := []struct {
		name string
		sec  []byte
		at   uint64
		want error
	}{
		{"address before section", []byte{0xff, 0xff, 0x01, 0x00}, lsdaSecAddr - 1, ErrTruncated},
		{"address past section", []byte{0xff, 0xff, 0x01, 0x00}, lsdaSecAddr + 4, ErrTruncated},
		{"truncated header", []byte{0xff, 0xff}, lsdaSecAddr, ErrTruncated},
		{"call-site table past end", []byte{0xff, 0xff, 0x01, 0x10, 0x00}, lsdaSecAddr, ErrTruncated},
		{"pcrel call sites", []byte{0xff, 0xff, 0x1b, 0x00}, lsdaSecAddr, ErrEncoding},
		{"uleb128 type table", []byte{0xff, 0x01, 0x00, 0x01, 0x00}, lsdaSecAddr, ErrEncoding},
		{"ttype offset past end", []byte{0xff, 0x03, 0x40, 0x01, 0x00}, lsdaSecAddr, ErrTruncated},
		{"action past end", []byte{0xff, 0xff, 0x01, 0x04, 0x00, 0x01, 0x02, 0x09}, lsdaSecAddr, ErrActionChain},
		{"catch without type table", []byte{0xff, 0xff, 0x01, 0x04, 0x00, 0x01, 0x02, 0x01, 0x01, 0x00}, lsdaSecAddr, ErrActionChain},
		{"action loop", []byte{0xff, 0xff, 0x01, 0x04, 0x00, 0x01, 0x02, 0x01, 0x00, 0x7f}, lsdaSecAddr, ErrActionChain},
		{"next leaves section", []byte{0xff, 0xff, 0x01, 0x04, 0x00, 0x01, 0x02, 0x01, 0x00, 0x40}, lsdaSecAddr, ErrActionChain},
		{"type index before section", []byte{0xff, 0x03, 0x07, 0x01, 0x04, 0x00, 0x01, 0x02, 0x01, 0x05, 0x00}, lsdaSecAddr, ErrTruncated},
		{"spec past end", []byte{0xff, 0x03, 0x07, 0x01, 0x04, 0x00, 0x01, 0x02, 0x01, 0x40, 0x00}, lsdaSecAddr, ErrTruncated},
		{"spec unterminated", []byte{0xff, 0x03, 0x08, 0x01, 0x04, 0x00, 0x01, 0x02, 0x01, 0x7f, 0x00, 0x80}, lsdaSecAddr, ErrTruncated},
		{"call site wraps", []byte{0xff, 0xff, 0x04, 0x19, 0, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0}, lsdaSecAddr, ErrOverflow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLSDA(tc.sec, lsdaSecAddr, tc.at, fn, Options{})
			if err == nil {
				t.Fatalf("ParseLSDA = %+v, want error %v", got, tc.want)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Section != ".gcc_except_table" || fe.Off < 0 || fe.Off > len(tc.sec) {
				t.Errorf("error %v is not a located .gcc_except_table *FormatError", err)
			}
			if !strings.HasPrefix(err.Error(), "gcc_except_table at offset ") {
				t.Errorf("error text %q", err)
			}
		})
	}
}

// TestParseLSDACompiled decodes every LSDA of exc.cc as built by g++ and
// clang++ and checks it against the symbol table: call sites inside their
// FDE, landing pads inside an FDE of the function, each catch type a
// typeinfo (_ZTI*) or the DW.ref slot of one, and the functions' catch
// clauses and exception specifications as written in the source.
func TestParseLSDACompiled(t *testing.T) {
	for _, cfg := range fixture.ExcConfigs() {
		t.Run(cfg.String(), func(t *testing.T) {
			exe := fixture.BuildExc(t, cfg)
			f, err := elf.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			eh := f.Section(".eh_frame")
			gct := f.Section(".gcc_except_table")
			if eh == nil || gct == nil {
				t.Fatal("no .eh_frame or .gcc_except_table")
			}
			ehData, _ := eh.Data()
			gctData, _ := gct.Data()
			fdes, err := Parse(ehData, eh.Addr, Options{})
			if err != nil {
				t.Fatal(err)
			}
			syms, err := f.Symbols()
			if err != nil {
				t.Fatal(err)
			}
			symAt := map[uint64]string{}
			funcAt := map[uint64]string{}
			for _, s := range syms {
				name, _, _ := strings.Cut(s.Name, "@")
				if strings.HasPrefix(name, "_ZTI") || strings.HasPrefix(name, "DW.ref._ZTI") {
					symAt[s.Value] = strings.TrimPrefix(name, "DW.ref.")
				}
				if elf.ST_TYPE(s.Info) == elf.STT_FUNC {
					funcAt[s.Value] = strings.TrimSuffix(name, ".cold")
				}
			}
			// clang's indirect type entries point at GOT slots: name them
			// after their dynamic relocation.
			for slot, name := range gotSlots(t, f, symAt) {
				symAt[slot] = name
			}
			// Catch types and specs per function, in call-site order.
			types := map[string][]string{}
			n := 0
			for _, fd := range fdes {
				if fd.LSDA == 0 {
					continue
				}
				n++
				l, err := ParseLSDA(gctData, gct.Addr, fd.LSDA, fd.Begin, Options{})
				if err != nil {
					t.Fatalf("LSDA of FDE %#x: %v", fd.Begin, err)
				}
				name := funcAt[fd.Begin]
				for _, c := range l.CallSites {
					if c.Start < fd.Begin || c.End > fd.End || c.Start >= c.End {
						t.Errorf("%s: call site [%#x,%#x) outside FDE [%#x,%#x)", name, c.Start, c.End, fd.Begin, fd.End)
					}
					if c.LandingPad != 0 && (c.LandingPad < fd.Begin || c.LandingPad >= fd.End) {
						t.Errorf("%s: landing pad %#x outside FDE [%#x,%#x)", name, c.LandingPad, fd.Begin, fd.End)
					}
					if c.LandingPad == 0 && len(c.Actions) != 0 {
						t.Errorf("%s: call site %#x has actions but no landing pad", name, c.Start)
					}
					for _, a := range c.Actions {
						var refs []TypeRef
						switch a.Kind {
						case Catch:
							refs = []TypeRef{a.Type}
						case Spec:
							refs = a.Spec
							types[name] = append(types[name], "spec")
						}
						for _, r := range refs {
							s := "..."
							if r.Value != 0 {
								var ok bool
								if s, ok = symAt[r.Value]; !ok {
									t.Errorf("%s: type %#x is no typeinfo symbol", name, r.Value)
								}
							}
							types[name] = append(types[name], s)
						}
					}
				}
			}
			if n == 0 {
				t.Fatal("no FDE has an LSDA")
			}
			catcher := strings.Join(types["_Z7catcheri"], " ")
			for _, want := range []string{"_ZTIi", "_ZTI7MyError", "_ZTISt9exception", "...", "_ZTId"} {
				if !strings.Contains(catcher, want) {
					t.Errorf("catcher's catch types %q lack %s", catcher, want)
				}
			}
			if strings.Contains(strings.Join(cfg.Extra, " "), "c++03") {
				if got := strings.Join(types["_Z4speci"], " "); !strings.Contains(got, "spec _ZTIi") {
					t.Errorf("spec(int) throw(int): types %q, want spec _ZTIi", got)
				}
			}
			t.Logf("%d LSDAs; catcher: %s", n, catcher)
		})
	}
}

// gotSlots names the GOT slots that dynamic relocations fill with a
// typeinfo address: R_X86_64_GLOB_DAT and R_X86_64_64 against a _ZTI
// symbol, R_X86_64_RELATIVE whose addend is a known typeinfo.
func gotSlots(t *testing.T, f *elf.File, symAt map[uint64]string) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	rela := f.Section(".rela.dyn")
	if rela == nil {
		return out
	}
	data, err := rela.Data()
	if err != nil {
		t.Fatal(err)
	}
	dyn, _ := f.DynamicSymbols()
	for i := 0; i+24 <= len(data); i += 24 {
		off := f.ByteOrder.Uint64(data[i:])
		info := f.ByteOrder.Uint64(data[i+8:])
		add := f.ByteOrder.Uint64(data[i+16:])
		switch elf.R_X86_64(info & 0xffffffff) {
		case elf.R_X86_64_GLOB_DAT, elf.R_X86_64_64:
			if s := info >> 32; s >= 1 && int(s) <= len(dyn) {
				name, _, _ := strings.Cut(dyn[s-1].Name, "@")
				if strings.HasPrefix(name, "_ZTI") {
					out[off] = name
				}
			}
		case elf.R_X86_64_RELATIVE:
			if name, ok := symAt[add]; ok {
				out[off] = name
			}
		}
	}
	return out
}
