package enc

import (
	"errors"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
)

// FuzzRelocate decodes arbitrary bytes at orig and relocates the
// instruction to base, its branch aimed either at its original target or
// at a label just after the relocated code. Relocate may refuse only with
// ErrUnsupported, Finish only with ErrRange; otherwise the result must
// decode to an instruction with the same targets (checkRelocated).
func FuzzRelocate(f *testing.F) {
	for _, tc := range relocCases {
		f.Add(mustHex(f, tc.in), uint64(relocA), uint64(relocB), false)
		f.Add(mustHex(f, tc.in), uint64(relocA), uint64(relocB), true)
	}
	f.Add(mustHex(f, "48 8b 05 f9 00 00 00"), uint64(0x401000), uint64(1<<40), false)
	f.Add(mustHex(f, "eb fe"), uint64(0x10), ^uint64(0)-0x100, false)
	f.Add(mustHex(f, "66 eb 10"), uint64(0x401000), uint64(0x402000), false)
	f.Fuzz(func(t *testing.T, code []byte, orig, base uint64, toLabel bool) {
		in, err := x86.Decode(code, orig)
		if err != nil {
			return
		}
		var b Buf
		next := b.NewLabel()
		to := AbsTarget(in.Target)
		if toLabel {
			to = LabelTarget(next)
		}
		if err := Relocate(&b, &in.Info, code, to); err != nil {
			var re *RelocError
			if !errors.Is(err, ErrUnsupported) || !errors.As(err, &re) || re.Addr != orig {
				t.Fatalf("%v: %v", &in, err)
			}
			if b.Len() != 0 {
				t.Fatalf("refused instruction left %d bytes", b.Len())
			}
			return
		}
		if b.Len() != RelocatedSize(&in.Info) {
			t.Fatalf("%v: emitted %d bytes, RelocatedSize says %d", &in, b.Len(), RelocatedSize(&in.Info))
		}
		b.Bind(next)
		out, err := b.Finish(base)
		if err != nil {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("%v at %#x: %v", &in, base, err)
			}
			return
		}
		want := in.Target
		if toLabel {
			want = base + uint64(len(out))
		}
		if err := checkRelocated(&in, code, out, base, want); err != nil {
			t.Fatalf("%v at %#x: %v", &in, base, err)
		}
	})
}
