package rewriter

import (
	"testing"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
)

// TestThunkUsesFromInfo: code generation decodes through x86's table
// (DecodeInfo, no x86asm operands), and from that decoding alone a use
// of a GOT slot that holds sigaction must become a use of its thunk. The
// rewriter once read x86asm's operands there, found none, and copied
// the uses unchanged (TestSignalsThroughPointers, -fno-plt).
func TestThunkUsesFromInfo(t *testing.T) {
	const at, slot = 0x1071, 0x3f90 // as in sigptr.c built -fno-plt
	for _, tc := range []struct {
		name string
		code []byte // at address at; the rip displacement reaches slot
		want []byte // emitted in its place; nil: not a thunk use
	}{
		{"mov slot,%rax", []byte{0x48, 0x8b, 0x05, 0x18, 0x2f, 0, 0}, []byte{0x48, 0x8d, 0x05}},
		{"mov slot,%r12", []byte{0x4c, 0x8b, 0x25, 0x18, 0x2f, 0, 0}, []byte{0x4c, 0x8d, 0x25}},
		{"call *slot", []byte{0xff, 0x15, 0x19, 0x2f, 0, 0}, []byte{0xe8}},
		{"jmp *slot", []byte{0xff, 0x25, 0x19, 0x2f, 0, 0}, []byte{0xe9}},
		{"mov slot,%eax (4 bytes of it)", []byte{0x8b, 0x05, 0x19, 0x2f, 0, 0}, nil},
		{"mov another slot,%rax", []byte{0x48, 0x8b, 0x05, 0x20, 0x2f, 0, 0}, nil},
		{"mov %rax,slot", []byte{0x48, 0x89, 0x05, 0x18, 0x2f, 0, 0}, nil},
		{"call *%fs:slot", []byte{0x64, 0xff, 0x15, 0x18, 0x2f, 0, 0}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Twice: decoded afresh, then answered from the table.
			for round := 0; round < 2; round++ {
				var in x86.Info
				if err := x86.NewDecoder().DecodeInfoTo(&in, tc.code, at); err != nil {
					t.Fatal(err)
				}
				g := &gen{buf: &enc.Buf{}, slotThunks: map[uint64]*callThunk{}}
				th := &callThunk{slot: slot, kind: thunkSigaction}
				th.label = g.buf.NewLabel()
				g.slotThunks[slot] = th
				fg := &funcGen{g: g}
				got := fg.copyThunkUse(&in)
				if got != (tc.want != nil) {
					t.Fatalf("round %d: copyThunkUse = %v (rip target %#x, op %v, args %+v)", round, got, in.RIPTarget, in.Op, in.Args[:2])
				}
				if !got {
					continue
				}
				g.buf.Bind(th.label)
				code, err := g.buf.Finish(0x10000)
				if err != nil {
					t.Fatal(err)
				}
				if len(code) < len(tc.want) || string(code[:len(tc.want)]) != string(tc.want) {
					t.Fatalf("round %d: emitted % x, want it to start % x", round, code, tc.want)
				}
			}
		})
	}
}
