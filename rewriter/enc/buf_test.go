package enc

import (
	"bytes"
	"errors"
	"testing"
)

func TestLabelsForwardAndBackward(t *testing.T) {
	var b Buf
	top, out := b.NewLabel(), b.NewLabel()
	b.Bind(top)
	b.Nop(3)
	b.JccRel32(CondNE, LabelTarget(out)) // 3: 0f 85 rel32, ends at 9
	b.JmpRel32(LabelTarget(top))         // 9: e9 rel32, ends at 14
	b.Bind(out)
	b.Ret()
	got, err := b.Finish(0x1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x0f, 0x1f, 0x00, 0x0f, 0x85, 5, 0, 0, 0, 0xe9, 0xf2, 0xff, 0xff, 0xff, 0xc3}
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
	if off, ok := b.Offset(out); !ok || off != 14 {
		t.Errorf("Offset(out) = %d, %v; want 14, true", off, ok)
	}
	// Label-to-label fields do not depend on the base.
	again, err := b.Finish(0x7fff_0000_0000)
	if err != nil || !bytes.Equal(again, want) {
		t.Errorf("Finish at another base: % x, %v", again, err)
	}
}

func TestAbsoluteTargets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		base   uint64
		target uint64
		want   []byte // rel32 of a call at base
		err    error
	}{
		{"forward", 0x400000, 0x400105, []byte{0, 1, 0, 0}, nil},
		{"backward", 0x400000, 0x3ff000, []byte{0xfb, 0xef, 0xff, 0xff}, nil},
		{"max", 0x400000, 0x400005 + 0x7fffffff, []byte{0xff, 0xff, 0xff, 0x7f}, nil},
		{"min", 0x90000000, 0x90000005 - 0x80000000, []byte{0, 0, 0, 0x80}, nil},
		{"too far forward", 0x400000, 0x400005 + 0x80000000, nil, ErrRange},
		{"too far back", 0x90000000, 0x90000005 - 0x80000001, nil, ErrRange},
		{"far away", 0x400000, 0x7f00_0000_0000, nil, ErrRange},
		{"wraps below zero", 0x10, 0xffff_ffff_ffff_fff0, []byte{0xdb, 0xff, 0xff, 0xff}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Buf
			b.CallRel32(AbsTarget(tc.target))
			got, err := b.Finish(tc.base)
			if tc.err != nil {
				var fe *FixupError
				if !errors.Is(err, tc.err) || !errors.As(err, &fe) || fe.Off != 1 {
					t.Fatalf("err = %v, want a *FixupError at offset 1 wrapping %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[1:], tc.want) {
				t.Fatalf("rel32 % x, want % x", got[1:], tc.want)
			}
		})
	}
}

func TestDisplacementAfterImmediateIsFromInstructionEnd(t *testing.T) {
	// A rip-relative field followed by an immediate counts from the end
	// of the instruction, not from the end of the field.
	var b Buf
	b.emit(0x81, 0x3d)
	b.field(AbsTarget(0x1000), len(b.code)+8)
	b.emit32(0x12345678)
	got, err := b.Finish(0x1000)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x81, 0x3d, 0xf6, 0xff, 0xff, 0xff, 0x78, 0x56, 0x34, 0x12}
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
}

func TestFinishErrors(t *testing.T) {
	t.Run("unbound", func(t *testing.T) {
		var b Buf
		l := b.NewLabel()
		b.Nop(2)
		b.JmpRel32(LabelTarget(l))
		_, err := b.Finish(0)
		var fe *FixupError
		if !errors.Is(err, ErrUnbound) || !errors.As(err, &fe) || fe.Off != 3 {
			t.Fatalf("err = %v, want ErrUnbound at offset 3", err)
		}
	})
	t.Run("unused unbound label is fine", func(t *testing.T) {
		var b Buf
		b.NewLabel()
		b.Ret()
		if _, err := b.Finish(0); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("end of address space", func(t *testing.T) {
		var b Buf
		b.Nop(16)
		if _, err := b.Finish(^uint64(0) - 8); !errors.Is(err, ErrRange) {
			t.Fatalf("err = %v, want ErrRange", err)
		}
	})
}

func TestOperandErrorsAreStickyAndEmitNothing(t *testing.T) {
	var other Buf
	foreign := other.NewLabel()
	foreign = foreign + 5
	for _, tc := range []struct {
		name string
		emit func(b *Buf)
	}{
		{"bad register", func(b *Buf) { b.Push(Reg(16)) }},
		{"bad register in mov", func(b *Buf) { b.MovRegFromGS(Reg(99), 0) }},
		{"rsp index", func(b *Buf) { b.LockIncMem(RAX, RSP, 0) }},
		{"rsp index in add", func(b *Buf) { b.LockAddMemImm(RAX, RSP, 0, 1) }},
		{"zero target", func(b *Buf) { b.JmpRel32(Target{}) }},
		{"foreign label", func(b *Buf) { b.CallRel32(LabelTarget(foreign)) }},
		{"negative label", func(b *Buf) { b.LeaRegRIP(RAX, LabelTarget(-1)) }},
		{"bad condition", func(b *Buf) { b.JccRel32(Cond(16), AbsTarget(0)) }},
		{"negative nop", func(b *Buf) { b.Nop(-1) }},
		{"bind foreign", func(b *Buf) { b.Bind(foreign) }},
		{"bind twice", func(b *Buf) { l := b.NewLabel(); b.Bind(l); b.Bind(l) }},
		{"truncate past end", func(b *Buf) { b.Truncate(100) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Buf
			b.Int3()
			tc.emit(&b)
			if b.Len() != 1 {
				t.Errorf("Len = %d after a failing call, want 1", b.Len())
			}
			b.Ret() // later calls still work but the error stays
			var oe *OperandError
			if err := b.Err(); !errors.As(err, &oe) || !errors.Is(err, ErrOperand) || oe.Off != 1 {
				t.Fatalf("Err() = %v, want an *OperandError at offset 1", err)
			}
			if _, err := b.Finish(0); !errors.Is(err, ErrOperand) {
				t.Fatalf("Finish err = %v, want ErrOperand", err)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	var b Buf
	keep, drop, at := b.NewLabel(), b.NewLabel(), b.NewLabel()
	b.Bind(keep)
	b.JmpRel32(LabelTarget(keep))
	mark := b.Len()
	b.Bind(at)
	b.Nop(1)
	b.Bind(drop)
	b.JmpRel32(AbsTarget(1 << 60)) // would be out of range
	b.Truncate(mark)
	if b.Len() != mark {
		t.Fatalf("Len = %d, want %d", b.Len(), mark)
	}
	if _, ok := b.Offset(drop); ok {
		t.Error("label bound after the mark is still bound")
	}
	if off, ok := b.Offset(at); !ok || off != mark {
		t.Error("label bound at the mark lost its binding")
	}
	b.Bind(drop) // may be bound again
	b.Ret()
	got, err := b.Finish(0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{0xe9, 0xfb, 0xff, 0xff, 0xff, 0xc3}; !bytes.Equal(got, want) {
		t.Fatalf("got % x, want % x", got, want)
	}
}

func TestNopLengths(t *testing.T) {
	for n := 0; n <= 40; n++ {
		var b Buf
		b.Nop(n)
		if b.Len() != n {
			t.Fatalf("Nop(%d) emitted %d bytes", n, b.Len())
		}
	}
}

func TestStrings(t *testing.T) {
	if RAX.String() != "rax" || R15.String() != "r15" || Reg(20).String() != "Reg(20)" {
		t.Error("Reg.String")
	}
	if CondNE.String() != "ne" || CondG.String() != "g" || Cond(16).String() != "Cond(16)" {
		t.Error("Cond.String")
	}
	if LabelTarget(3).String() != "L3" || AbsTarget(0x10).String() != "0x10" || (Target{}).String() != "invalid target" {
		t.Error("Target.String")
	}
	if a, ok := AbsTarget(7).Addr(); !ok || a != 7 {
		t.Error("Target.Addr")
	}
	if _, ok := AbsTarget(7).Label(); ok {
		t.Error("Target.Label on an address")
	}
}

// The %rsp log follows every template that moves the stack pointer, and
// SetSP declares a depth (as at the start of an out-of-line slow path).
func TestSPLog(t *testing.T) {
	var b Buf
	b.LeaRSP(-128)
	b.Push(RAX)
	b.Pushfq()
	b.PushImm32(7)
	b.AddGS64Imm(0x10, 1) // does not move %rsp
	b.Popfq()
	b.LeaRSP(128 + 16)
	b.SetSP(-136)
	b.SetSP(-136) // no change, no entry
	b.Pop(RAX)
	want := []SPMark{{8, -128}, {9, -136}, {10, -144}, {15, -152}, {29, -144}, {37, -136}, {38, -128}} // at 37: 0, then SetSP
	got := b.SPLog()
	if len(got) != len(want) {
		t.Fatalf("log %v, want %d entries", got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want SP %d", i, got[i], want[i].SP)
		}
	}
	if got[len(got)-1].Off != b.Len() || b.SP() != -128 {
		t.Errorf("last %+v, len %d, sp %d", got[len(got)-1], b.Len(), b.SP())
	}
	b.Truncate(9)
	if n := len(b.SPLog()); n != 2 || b.SP() != -136 {
		t.Errorf("after Truncate(9): %v", b.SPLog())
	}
}

// TestJmpRel8At: the short jump counts its displacement from its end,
// both ways, and refuses a target a byte cannot reach.
func TestJmpRel8At(t *testing.T) {
	for _, c := range []struct {
		from, to uint64
		want     []byte
	}{
		{0x1000, 0x1002, []byte{0xeb, 0x00}},
		{0x1000, 0x1081, []byte{0xeb, 0x7f}},
		{0x1000, 0x0f82, []byte{0xeb, 0x80}},
	} {
		got, err := JmpRel8At(c.from, c.to)
		if err != nil || !bytes.Equal(got, c.want) {
			t.Errorf("JmpRel8At(%#x, %#x) = % x, %v; want % x", c.from, c.to, got, err, c.want)
		}
	}
	for _, to := range []uint64{0x1082, 0x0f81} {
		if got, err := JmpRel8At(0x1000, to); err == nil {
			t.Errorf("JmpRel8At(0x1000, %#x) = % x, want an error", to, got)
		}
	}
}
