package x86

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// decodeBoth decodes code at addr through the table (DecodeInfo) and
// without it (Decode), and reports how the two differ ("" when they
// agree: the same Info, or errors with the same text). It also checks
// that Args are Raw.Args.
func decodeBoth(code []byte, addr uint64) (Inst, string) {
	got, gerr := DecodeInfo(code, addr)
	want, werr := Decode(code, addr)
	var near Info
	nerr := testDecoder.DecodeInfoTo(&near, code, addr)
	if (nerr == nil) != (gerr == nil) || nerr != nil && nerr.Error() != gerr.Error() || near != got {
		return want, fmt.Sprintf("a Decoder gives %+v (%v), DecodeInfo %+v (%v)", near, nerr, got, gerr)
	}
	switch {
	case (gerr == nil) != (werr == nil):
		return want, fmt.Sprintf("error %v, without the table %v", gerr, werr)
	case gerr != nil:
		if gerr.Error() != werr.Error() {
			return want, fmt.Sprintf("error %q, without the table %q", gerr, werr)
		}
	case got != want.Info:
		return want, fmt.Sprintf("%+v, without the table %+v", got, want.Info)
	}
	for i, a := range want.Raw.Args {
		if back := want.Args[i].x86asm(); back != a {
			return want, fmt.Sprintf("Args[%d] %+v for Raw.Args[%d] %#v", i, want.Args[i], i, a)
		}
	}
	return want, ""
}

// testDecoder is the Decoder of decodeBoth.
var testDecoder = NewDecoder()

// x86asm converts a back to x86asm's operand.
func (a Arg) x86asm() x86asm.Arg {
	switch a.Kind {
	case ArgReg:
		return a.Reg
	case ArgMem:
		return a.Mem()
	case ArgImm:
		return x86asm.Imm(a.Val)
	case ArgRel:
		return x86asm.Rel(a.Val)
	}
	return nil
}

// inTable reports whether the table holds the instruction at the start
// of code.
func inTable(code []byte) bool {
	l, err := scan(code[:min(len(code), maxLen)])
	if err != nil {
		return false
	}
	k0, k1, _, _ := memoKey(code[:l.n], &l)
	_, slots := memoSlots(k0, k1)
	_, _, ok := lookup(slots, k0, k1)
	return ok
}

// TestMemoAgrees: DecodeInfo through the table answers exactly as
// decoding afresh, for every instruction of a linear sweep of real
// binaries' .text, each decoded twice (the second time from the table,
// at another address), and for instructions whose displacement is
// changed at random, which the table answers from the entry of the
// original. DecodeInfo checks each entry before keeping it (retargets,
// pack), so a wrong retarget or packing only costs speed, which the
// share of instructions the table holds shows; a wrong key or lookup
// shows as a difference.
func TestMemoAgrees(t *testing.T) {
	n, found, held, second := 0, 0, 0, 0
	rnd := rand.New(rand.NewSource(1))
	// Two of TestObjdumpRealBinaries' binaries: a million instructions,
	// AVX-512 string functions among them (-short: libc alone).
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/bin/bash"} {
		f, err := elf.Open(p)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		s := f.Section(".text")
		code, err := s.Data()
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		found++
		bad := 0
		for pass := 0; pass < 2; pass++ {
			at := s.Addr + uint64(pass)*0x1230
			for off := 0; off < len(code) && bad < 5; {
				in, d := decodeBoth(code[off:], at+uint64(off))
				if d == "" && in.Len > 0 {
					d = plainAgrees(&in.Info, code[off:])
				}
				if d != "" {
					t.Errorf("%s+%#x: %s", p, off, d)
					bad++
				}
				if in.Len == 0 {
					off++
					continue
				}
				n++
				if pass == 1 {
					second++
					if inTable(code[off:]) {
						held++
					}
				}
				if pass == 1 && (in.RIPRel || in.BranchSize > 0) {
					c := append([]byte(nil), code[off:off+in.Len]...)
					if in.RIPRel {
						rnd.Read(c[in.RIPDispOff : in.RIPDispOff+4])
					}
					if in.BranchSize > 0 {
						rnd.Read(c[in.BranchOff : in.BranchOff+in.BranchSize])
					}
					if _, d := decodeBoth(c, rnd.Uint64()); d != "" {
						t.Errorf("%s+%#x with displacement changed (% x): %s", p, off, c, d)
						bad++
					}
				}
				off += in.Len
			}
		}
		if testing.Short() {
			break
		}
	}
	if found == 0 {
		t.Skip("none of the reference binaries exists")
	}
	t.Logf("%d instructions of %d binaries, %d of %d in the table the second time", n, found, held, second)
	// Two binaries' distinct instructions fit the table; those it does
	// not keep (their retargeting differs) are rare.
	if held < second*99/100 {
		t.Errorf("the table holds %d of %d instructions decoded before", held, second)
	}
}

// memoKeyBytes is the key by its definition: code's bytes, the
// displacements zeroed, the length in byte 15 (memoKey makes it in
// registers).
func memoKeyBytes(code []byte, l *layout) (k0, k1 uint64) {
	var key [16]byte
	copy(key[:], code)
	key[15] = byte(len(code))
	switch l.relSize {
	case 1:
		key[l.immOff] = 0
	case 4:
		clear(key[l.immOff : l.immOff+4])
	}
	if l.ripRel {
		clear(key[l.dispOff : l.dispOff+4])
	}
	return binary.LittleEndian.Uint64(key[:8]), binary.LittleEndian.Uint64(key[8:])
}

// TestMemoKey: memoKey is the key of its definition (memoKeyBytes) for
// every instruction of libc's .text, whether the bytes after the
// instruction are in its slice's array (read and masked off: ones here)
// or not (a copy of exactly its bytes).
func TestMemoKey(t *testing.T) {
	f, err := elf.Open("/usr/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		t.Skip("needs libc.so.6 (Debian package libc6)")
	}
	code, err := f.Section(".text").Data()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	n, bad := 0, 0
	padded := make([]byte, 32)
	for off := 0; off < len(code) && bad < 5; {
		l, err := scan(code[off:min(len(code), off+maxLen)])
		if err != nil {
			off++
			continue
		}
		n++
		want0, want1 := memoKeyBytes(code[off:off+l.n], &l)
		for i := range padded {
			padded[i] = 0xff
		}
		copy(padded, code[off:off+l.n])
		for _, c := range [][]byte{padded[:l.n], code[off : off+l.n : off+l.n]} {
			k0, k1, _, _ := memoKey(c, &l)
			if k0 != want0 || k1 != want1 {
				t.Errorf("+%#x (% x, cap %d): key %#x %#x, want %#x %#x", off, c, cap(c), k0, k1, want0, want1)
				bad++
			}
		}
		off += l.n
	}
	if n < 100000 {
		t.Errorf("%d instructions checked", n)
	}
}

// BenchmarkMemoDecode decodes libc's .text through a Decoder, the way
// the graph builder and code generation do: after the first pass,
// nearly every instruction is answered by a table.
func BenchmarkMemoDecode(b *testing.B) {
	benchDecodeText(b, "/usr/lib/x86_64-linux-gnu/libc.so.6", "libc6")
}

// BenchmarkSweepLLVM decodes libLLVM's .text the same way: a library
// whose distinct instructions do not fit the processor's caches, so the
// tables' look-ups miss.
func BenchmarkSweepLLVM(b *testing.B) {
	benchDecodeText(b, "/usr/lib/x86_64-linux-gnu/libLLVM-16.so.1", "libllvm16")
}

// benchDecodeText decodes the .text of the library at path (from Debian
// package pkg) once per iteration, linearly, through one Decoder.
func benchDecodeText(b *testing.B, path, pkg string) {
	f, err := elf.Open(path)
	if err != nil {
		b.Skipf("needs %s (Debian package %s)", path, pkg)
	}
	s := f.Section(".text")
	code, err := s.Data()
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	d := NewDecoder()
	defer d.Release()
	var in Info
	n := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for off := 0; off < len(code); {
			if d.DecodeInfoTo(&in, code[off:], s.Addr+uint64(off)) != nil || in.Len == 0 {
				off++
				continue
			}
			n++
			off += in.Len
		}
	}
	b.ReportMetric(float64(n)/float64(b.N), "insts/op")
}

// plainAgrees says how Plain(code) differs from what in, the decoding of
// code, implies: in's length for an instruction that moves byte for byte,
// else 0; "" when they agree.
func plainAgrees(in *Info, code []byte) string {
	want := 0
	if in.Kind == Other && !in.RIPRel && in.BranchSize == 0 {
		want = in.Len
	}
	if got := Plain(code); got != want {
		return fmt.Sprintf("Plain gives %d, the decoding (%v, rip-relative %v, length %d) says %d", got, in.Kind, in.RIPRel, in.Len, want)
	}
	return ""
}

// TestDecoderAheadRewritten: a Decoder scans the instruction after the
// one it decodes ahead of time; when the array is written between the
// two decodings, the second must be of the new bytes. Each case puts
// an instruction at 0 and another of the same length at its end,
// decodes the first, writes a third instruction of that length over
// the second, and wants the third's decoding.
func TestDecoderAheadRewritten(t *testing.T) {
	cases := []struct{ first, second, third []byte }{
		// push %rbp; ret written over pop %rbx (one byte each)
		{[]byte{0x55}, []byte{0x5b}, []byte{0xc3}},
		// mov %rsp,%rbp; xor %rax,%rax written over test %rdi,%rdi
		{[]byte{0x48, 0x89, 0xe5}, []byte{0x48, 0x85, 0xff}, []byte{0x48, 0x31, 0xc0}},
		// nop; jmp rel32 written over call rel32
		{[]byte{0x90}, []byte{0xe8, 1, 2, 3, 4}, []byte{0xe9, 4, 3, 2, 1}},
	}
	for i, c := range cases {
		buf := make([]byte, 64)
		copy(buf, c.first)
		copy(buf[len(c.first):], c.second)
		d := NewDecoder()
		var in Info
		if err := d.DecodeInfoTo(&in, buf, 0x1000); err != nil || in.Len != len(c.first) {
			t.Fatalf("case %d: first: %v, length %d", i, err, in.Len)
		}
		copy(buf[len(c.first):], c.third)
		at := uint64(0x1000 + len(c.first))
		if err := d.DecodeInfoTo(&in, buf[len(c.first):], at); err != nil {
			t.Fatalf("case %d: third: %v", i, err)
		}
		want, err := DecodeInfo(buf[len(c.first):], at)
		if err != nil || in != want {
			t.Errorf("case %d: got %+v, want %+v (%v)", i, in, want, err)
		}
		d.Release()
	}
}
