package x86

import (
	"debug/elf"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"testing"
)

// decodeBoth decodes code at addr through the table and without it, and
// reports how the two differ ("" when they agree: same instruction, or
// errors with the same text).
func decodeBoth(code []byte, addr uint64) (Inst, string) {
	got, gerr := Decode(code, addr)
	want, werr := decodeNoMemo(code, addr)
	switch {
	case (gerr == nil) != (werr == nil):
		return want, fmt.Sprintf("error %v, without the table %v", gerr, werr)
	case gerr != nil:
		if gerr.Error() != werr.Error() {
			return want, fmt.Sprintf("error %q, without the table %q", gerr, werr)
		}
	case !reflect.DeepEqual(got, want):
		return want, fmt.Sprintf("%+v, without the table %+v", got, want)
	}
	return want, ""
}

// decodeNoMemo is Decode without the table.
func decodeNoMemo(code []byte, addr uint64) (Inst, error) {
	if len(code) > maxLen {
		code = code[:maxLen]
	}
	l, err := scan(code)
	if err != nil {
		return Inst{}, &DecodeError{Addr: addr, Bytes: append([]byte(nil), code...), Err: err}
	}
	return decode(code[:l.n], addr, &l)
}

// TestMemoAgrees: Decode through the table answers exactly as decoding
// afresh, for every instruction of a linear sweep of real binaries'
// .text, each decoded twice (the second time from the table, at another
// address), and for instructions whose displacement is changed at
// random, which the table answers from the entry of the original.
// Decode checks each entry before keeping it (retargets), so a wrong
// retarget only costs speed; a wrong key or lookup shows here.
func TestMemoAgrees(t *testing.T) {
	n, found := 0, 0
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
				if d != "" {
					t.Errorf("%s+%#x: %s", p, off, d)
					bad++
				}
				if in.Len == 0 {
					off++
					continue
				}
				n++
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
	t.Logf("%d instructions of %d binaries", n, found)
}
