package enc

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeAt(t testing.TB, code []byte, addr uint64) x86.Inst {
	t.Helper()
	in, err := x86.Decode(code, addr)
	if err != nil {
		t.Fatal(err)
	}
	if in.Len != len(code) {
		t.Fatalf("% x: decoded %d of %d bytes", code, in.Len, len(code))
	}
	return in
}

// The instruction is at relocA originally and is moved to relocB; unless
// a case says otherwise the branch keeps its original destination.
const (
	relocA = 0x401000
	relocB = 0x402000
)

// Expected bytes were assembled by hand: most destinations are 0x401100,
// which from an instruction ending at 0x402000+n is 0x401100-0x402000-n =
// -0xf00-n, so rel32/disp32 fields read (0x100-n) f0 ff ff.
var relocCases = []struct {
	name, in, want string
}{
	// Address-independent instructions stay as they are.
	{"mov", "48 89 e5", "48 89 e5"},
	{"notrack jmp reg", "3e ff e0", "3e ff e0"},
	{"notrack jmp table", "3e ff 24 c5 00 10 40 00", "3e ff 24 c5 00 10 40 00"},
	{"call reg", "ff d0", "ff d0"},
	{"bnd ret", "f2 c3", "f2 c3"},
	{"ret imm", "c2 08 00", "c2 08 00"},
	{"endbr64", "f3 0f 1e fa", "f3 0f 1e fa"},
	{"syscall", "0f 05", "0f 05"},
	{"hlt", "f4", "f4"},
	{"ud2", "0f 0b", "0f 0b"},
	{"rep movsq", "f3 48 a5", "f3 48 a5"},
	{"lock cmpxchg", "f0 48 0f b1 0a", "f0 48 0f b1 0a"},
	{"fs load", "64 48 8b 04 25 28 00 00 00", "64 48 8b 04 25 28 00 00 00"},
	{"nopw", "66 2e 0f 1f 84 00 00 00 00 00", "66 2e 0f 1f 84 00 00 00 00 00"},

	// rip-relative operands: disp32 re-aimed at the same address.
	{"mov rip", "48 8b 05 f9 00 00 00", "48 8b 05 f9 f0 ff ff"},
	{"lea rip", "48 8d 3d f9 00 00 00", "48 8d 3d f9 f0 ff ff"},
	{"cmp rip imm32", "81 3d f6 00 00 00 78 56 34 12", "81 3d f6 f0 ff ff 78 56 34 12"},
	{"movb rip imm8", "c6 05 f9 00 00 00 01", "c6 05 f9 f0 ff ff 01"},
	{"fs rip", "64 48 8b 05 f8 00 00 00", "64 48 8b 05 f8 f0 ff ff"},
	{"vex rip", "c5 fe 6f 05 f8 00 00 00", "c5 fe 6f 05 f8 f0 ff ff"},
	{"vex rip imm8", "c4 e3 7d 18 05 f6 00 00 00 01", "c4 e3 7d 18 05 f6 f0 ff ff 01"},
	{"evex rip", "62 e1 fe 48 6f 05 f6 00 00 00", "62 e1 fe 48 6f 05 f6 f0 ff ff"},
	{"jmp *rip", "ff 25 fa 00 00 00", "ff 25 fa f0 ff ff"},
	{"notrack jmp *rip", "3e ff 25 f9 00 00 00", "3e ff 25 f9 f0 ff ff"},
	{"call *rip", "ff 15 fa 00 00 00", "ff 15 fa f0 ff ff"},

	// Direct branches: rel32 forms, prefixes dropped.
	{"jmp rel8", "eb 10", "e9 0d f0 ff ff"},             // to 0x401012
	{"jmp rel32", "e9 fb 00 00 00", "e9 fb f0 ff ff"},   // to 0x401100
	{"bnd jmp", "f2 e9 fa 00 00 00", "e9 fb f0 ff ff"},  // to 0x401100
	{"rex.w jmp rel8", "66 48 eb 10", "e9 0f f0 ff ff"}, // to 0x401014
	{"je rel8", "74 05", "0f 84 01 f0 ff ff"},           // to 0x401007
	{"jg rel8 back", "7f fe", "0f 8f fa ef ff ff"},      // to 0x401000
	{"hinted je", "2e 74 05", "0f 84 02 f0 ff ff"},      // to 0x401008
	{"bnd je", "f2 74 05", "0f 84 02 f0 ff ff"},         // to 0x401008
	{"jne rel32", "0f 85 fa 00 00 00", "0f 85 fa f0 ff ff"},
	{"jo rel32", "0f 80 fa 00 00 00", "0f 80 fa f0 ff ff"},
	{"call", "e8 fb 00 00 00", "e8 fb f0 ff ff"},
	{"tls call", "66 66 48 e8 f8 00 00 00", "e8 fb f0 ff ff"},
	{"xbegin", "c7 f8 fa 00 00 00", "c7 f8 fa f0 ff ff"},

	// rel8-only branches: kept, through a trampoline.
	{"loop", "e2 fe", "e2 02 eb 05 e9 f7 ef ff ff"}, // to 0x401000
	{"loope", "e1 10", "e1 02 eb 05 e9 09 f0 ff ff"},
	{"loopne", "e0 10", "e0 02 eb 05 e9 09 f0 ff ff"},
	{"jrcxz", "e3 10", "e3 02 eb 05 e9 09 f0 ff ff"},
	{"jecxz", "67 e3 10", "67 e3 02 eb 05 e9 09 f0 ff ff"}, // to 0x401013
}

func TestRelocateTable(t *testing.T) {
	for _, tc := range relocCases {
		t.Run(tc.name, func(t *testing.T) {
			code := mustHex(t, tc.in)
			in := decodeAt(t, code, relocA)
			var b Buf
			if err := Relocate(&b, &in.Info, code, AbsTarget(in.Target)); err != nil {
				t.Fatal(err)
			}
			if b.Len() != RelocatedSize(&in.Info) {
				t.Errorf("emitted %d bytes, RelocatedSize says %d", b.Len(), RelocatedSize(&in.Info))
			}
			got, err := b.Finish(relocB)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustHex(t, tc.want); !bytes.Equal(got, want) {
				t.Fatalf("got % x, want % x", got, want)
			}
			if err := checkRelocated(&in, code, got, relocB, in.Target); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRelocateToLabel(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"eb 10", "e9 01 00 00 00 cc"},
		{"74 10", "0f 84 01 00 00 00 cc"},
		{"e8 00 00 00 00", "e8 01 00 00 00 cc"},
		{"c7 f8 00 00 00 00", "c7 f8 01 00 00 00 cc"},
		{"e2 10", "e2 02 eb 05 e9 01 00 00 00 cc"},
	} {
		code := mustHex(t, tc.in)
		in := decodeAt(t, code, relocA)
		var b Buf
		l := b.NewLabel()
		if err := Relocate(&b, &in.Info, code, LabelTarget(l)); err != nil {
			t.Fatal(err)
		}
		b.Int3()
		b.Bind(l)
		got, err := b.Finish(relocB)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustHex(t, tc.want); !bytes.Equal(got, want) {
			t.Errorf("%s: got % x, want % x", tc.in, got, want)
		}
	}
}

func TestRelocateErrors(t *testing.T) {
	jmp := decodeAt(t, mustHex(t, "eb 10"), relocA)
	wrongTarget := jmp
	wrongTarget.Target++
	rip := decodeAt(t, mustHex(t, "48 8b 05 f9 00 00 00"), relocA)
	wrongRIP := rip
	wrongRIP.RIPTarget--
	wrongOff := rip
	wrongOff.RIPDispOff = 5
	je := decodeAt(t, mustHex(t, "74 05"), relocA)
	forged := je
	forged.Kind = x86.Call
	var other Buf
	other.NewLabel()
	for _, tc := range []struct {
		name string
		in   *x86.Inst
		code string
		to   Target
		err  error
	}{
		{"66 rel8 jmp", ptr(decodeAt(t, mustHex(t, "66 eb 10"), relocA)), "66 eb 10", AbsTarget(0x401013), ErrUnsupported},
		{"66 jrcxz", ptr(decodeAt(t, mustHex(t, "66 e3 10"), relocA)), "66 e3 10", AbsTarget(0x401013), ErrUnsupported},
		{"66 je", ptr(decodeAt(t, mustHex(t, "66 74 10"), relocA)), "66 74 10", AbsTarget(0x401013), ErrUnsupported},
		{"nil", nil, "90", AbsTarget(0), ErrOperand},
		{"no target", &jmp, "eb 10", Target{}, ErrOperand},
		{"foreign label", &jmp, "eb 10", LabelTarget(3), ErrOperand},
		{"short code", &jmp, "eb", AbsTarget(0), ErrInconsistent},
		{"wrong target", &wrongTarget, "eb 10", AbsTarget(0), ErrInconsistent},
		{"other bytes", &jmp, "e9 10 00 00 00", AbsTarget(0), ErrInconsistent},
		{"wrong rip target", &wrongRIP, "48 8b 05 f9 00 00 00", AbsTarget(0), ErrInconsistent},
		{"wrong rip offset", &wrongOff, "48 8b 05 f9 00 00 00", AbsTarget(0), ErrInconsistent},
		{"jcc posing as call", &forged, "74 05", AbsTarget(0), ErrInconsistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Buf
			b.NewLabel()
			var in *x86.Info
			if tc.in != nil {
				in = &tc.in.Info
			}
			err := Relocate(&b, in, mustHex(t, tc.code), tc.to)
			var re *RelocError
			if !errors.Is(err, tc.err) || !errors.As(err, &re) {
				t.Fatalf("err = %v, want a *RelocError wrapping %v", err, tc.err)
			}
			if tc.in != nil && re.Addr != relocA {
				t.Errorf("error at %#x, want %#x", re.Addr, relocA)
			}
			if b.Len() != 0 || b.Err() != nil {
				t.Errorf("a refused instruction left %d bytes / error %v in the buffer", b.Len(), b.Err())
			}
		})
	}
}

func TestRelocateOutOfReach(t *testing.T) {
	code := mustHex(t, "48 8b 05 f9 00 00 00")
	in := decodeAt(t, code, relocA)
	var b Buf
	if err := Relocate(&b, &in.Info, code, Target{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Finish(1 << 40); !errors.Is(err, ErrRange) {
		t.Fatalf("err = %v, want ErrRange", err)
	}
}

func ptr[T any](v T) *T { return &v }
