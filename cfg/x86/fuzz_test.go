package x86

import (
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode. It must not panic; a
// success must describe an instruction inside the input whose fields lie
// inside the instruction, and decoding exactly Len bytes must give the
// same answer (the decoder never looks past the instruction), and
// DecodeInfo, through its table of decoded instructions, must answer as
// Decode does (twice: the second time from the table, at another
// address).
func FuzzDecode(f *testing.F) {
	for _, h := range []string{
		"f3 0f 1e fa", "3e ff e0", "f2 c3", "eb fe", "c7 f8 10 00 00 00",
		"c5 f8 77 90", "c5 fe 6f 05 10 00 00 00", "62 e1 fe 48 6f 05 40 00 00 00",
		"62 f3 75 48 25 15 10 00 00 00 ff", "8f ea 78 10 05 10 00 00 00 34 12 00 00",
		"81 3d 10 00 00 00 78 56 34 12", "66 2e 0f 1f 84 00 00 00 00 00",
		"48 b8 88 77 66 55 44 33 22 11", "0f 0f 05 10 00 00 00 9e", "66 0f 78 c1 04 08",
		"67 e3 fd", "64 c5 fe 6f 05 10 00 00 00", "62 f4 7c 08 01 c0",
	} {
		f.Add(mustHex(f, h))
	}
	f.Fuzz(func(t *testing.T, code []byte) {
		for _, at := range []uint64{0x400000, 0x7f0000001230} {
			if _, d := decodeBoth(code, at); d != "" {
				t.Fatalf("through the table at %#x: %s", at, d)
			}
		}
		inst, err := Decode(code, 0x400000)
		if err == nil {
			if d := plainAgrees(&inst.Info, code); d != "" {
				t.Fatal(d)
			}
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Addr != 0x400000 || len(de.Bytes) > maxLen {
				t.Fatalf("error %v: not a well-formed *DecodeError", err)
			}
			return
		}
		if inst.Len < 1 || inst.Len > maxLen || inst.Len > len(code) {
			t.Fatalf("Len %d for %d input bytes", inst.Len, len(code))
		}
		if inst.BranchSize != 0 && (inst.BranchSize != 1 && inst.BranchSize != 4 ||
			inst.BranchOff < 1 || inst.BranchOff+inst.BranchSize > inst.Len) {
			t.Fatalf("branch field %d+%d outside %d bytes", inst.BranchOff, inst.BranchSize, inst.Len)
		}
		if inst.RIPRel && (inst.RIPDispOff < 1 || inst.RIPDispOff+4 > inst.Len) {
			t.Fatalf("rip disp at %d outside %d bytes", inst.RIPDispOff, inst.Len)
		}
		if inst.Kind.HasTarget() != (inst.BranchSize != 0) {
			t.Fatalf("kind %v with branch size %d", inst.Kind, inst.BranchSize)
		}
		again, err := Decode(code[:inst.Len], 0x400000)
		if err != nil || again.Len != inst.Len || again.Op != inst.Op || again.Kind != inst.Kind ||
			again.Target != inst.Target || again.RIPTarget != inst.RIPTarget {
			t.Fatalf("decoding the %d bytes alone differs: %+v, %v", inst.Len, again, err)
		}
		_ = inst.String()
	})
}
