package enc

import (
	"errors"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
)

// TestRelocateRealFunctions moves every function of three large Debian
// binaries (stripped: bounds from .eh_frame via cfg; -short: bash only)
// 1 MiB up and checks each relocated instruction by decoding the result:
// branches inside the function reach the relocated copy of their
// destination, everything else reaches its original target, rip-relative
// operands address the same bytes, and address-independent instructions
// are unchanged.
func TestRelocateRealFunctions(t *testing.T) {
	// libc adds xbegin (lock elision) and jrcxz (string functions).
	paths := []string{"/bin/bash", "/usr/bin/python3.11", "/lib/x86_64-linux-gnu/libc.so.6"}
	if testing.Short() {
		paths = paths[:1]
	}
	for _, path := range paths {
		t.Run(path, func(t *testing.T) {
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s not present: %v", path, err)
			}
			bin, err := cfg.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			var st relocStats
			for _, fn := range bin.Functions() {
				if fn.PLT {
					continue
				}
				for _, r := range fn.Ranges() {
					code := bin.Code(r.Addr)
					if r.Size == 0 || uint64(len(code)) < r.Size {
						continue
					}
					relocateRange(t, code[:r.Size], r.Addr, &st)
					if t.Failed() {
						return
					}
				}
			}
			t.Logf("%d ranges (%d skipped: not linearly decodable, %d refused), %d instructions: %d copied, %d rip-relative, %d branches (%d inside the range), %d xbegin, %d rel8-only expanded; %v",
				st.ranges, st.undecodable, st.refused, st.insts, st.forms[formCopy], st.forms[formRIP],
				st.forms[formJmp]+st.forms[formCall]+st.forms[formJcc], st.internal, st.forms[formXbegin],
				st.forms[formLoop], time.Since(start).Round(time.Millisecond))
			if st.insts == 0 {
				t.Fatal("no instruction relocated")
			}
		})
	}
}

type relocStats struct {
	ranges, undecodable, insts, refused, internal int
	forms                                         [formLoop + 1]int
}

// relocateRange relocates the instructions of code (loaded at addr) to
// addr+1MiB and checks the result.
func relocateRange(t *testing.T, code []byte, addr uint64, st *relocStats) {
	t.Helper()
	st.ranges++
	var insts []x86.Inst
	for off := 0; off < len(code); {
		in, err := x86.Decode(code[off:], addr+uint64(off))
		if err != nil {
			st.undecodable++ // data or padding inside the range
			return
		}
		insts = append(insts, in)
		off += in.Len
	}
	// starts maps an address inside the range to its instruction, for
	// branches that stay inside.
	starts := func(a uint64) (int, bool) {
		i := sort.Search(len(insts), func(i int) bool { return insts[i].Addr >= a })
		return i, i < len(insts) && insts[i].Addr == a
	}

	var b Buf
	labels := make([]Label, len(insts))
	for i := range labels {
		labels[i] = b.NewLabel()
	}
	for i := range insts {
		in := &insts[i]
		b.Bind(labels[i])
		to := AbsTarget(in.Target)
		if j, ok := starts(in.Target); ok && in.Kind.HasTarget() {
			to = LabelTarget(labels[j])
		}
		before := b.Len()
		if err := Relocate(&b, &in.Info, code[in.Addr-addr:], to); err != nil {
			if errors.Is(err, ErrUnsupported) {
				st.refused++
				return
			}
			t.Fatalf("%#x %v: %v", in.Addr, in, err)
		}
		if got := b.Len() - before; got != RelocatedSize(&in.Info) {
			t.Fatalf("%#x %v: emitted %d bytes, RelocatedSize says %d", in.Addr, in, got, RelocatedSize(&in.Info))
		}
	}
	newAddr := addr + 1<<20
	out, err := b.Finish(newAddr)
	if err != nil {
		t.Fatalf("range %#x: %v", addr, err)
	}

	// The relocated code decodes linearly into the expected number of
	// instructions (three for each expanded rel8-only branch) ...
	want := len(insts)
	for i := range insts {
		if formOf(&insts[i].Info) == formLoop {
			want += 2
		}
	}
	got := 0
	for off := 0; off < len(out); got++ {
		in, err := x86.Decode(out[off:], newAddr+uint64(off))
		if err != nil {
			t.Fatalf("relocated range %#x at +%#x: %v", addr, off, err)
		}
		off += in.Len
	}
	if got != want {
		t.Fatalf("range %#x: %d instructions after relocation, want %d", addr, got, want)
	}
	// ... and each original instruction's copy does what it did.
	for i := range insts {
		in := &insts[i]
		off, _ := b.Offset(labels[i])
		dest := in.Target
		if j, ok := starts(in.Target); ok && in.Kind.HasTarget() {
			o, _ := b.Offset(labels[j])
			dest = newAddr + uint64(o)
			st.internal++
		}
		if err := checkRelocated(in, code[in.Addr-addr:], out[off:], newAddr+uint64(off), dest); err != nil {
			t.Fatalf("%#x %v: %v", in.Addr, in, err)
		}
		st.insts++
		st.forms[formOf(&in.Info)]++
	}
}
