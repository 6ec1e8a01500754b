package elfw

import (
	"bytes"
	"debug/elf"
	"errors"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// libCfg builds testdata/modules/rw_lib.c as a shared object.
var libCfg = fixture.Config{CC: "gcc", Opt: "-O2", Extra: []string{"-shared", "-fPIC", "-Wl,-soname,librw.so"}}

// dropDyn returns a copy of b whose dynamic entries with the given tags
// are gone (the entries after them move up) and whose terminator is
// followed by keep spare slots: the slots between get a harmless tag
// (DT_DEBUG), so the table keeps its size.
func dropDyn(t *testing.T, b []byte, keep int, tags ...elf.DynTag) []byte {
	t.Helper()
	b = append([]byte(nil), b...)
	im, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	off, n, err := im.dynTable()
	if err != nil {
		t.Fatal(err)
	}
	es, _ := im.dynEntries(off, n)
	var kept []elf.DynTag
	var vals []uint64
	for _, e := range es {
		drop := false
		for _, tag := range tags {
			drop = drop || e.Tag == tag
		}
		if !drop {
			kept, vals = append(kept, e.Tag), append(vals, e.Val)
		}
	}
	for i := 0; i < n; i++ {
		at := off + uint64(i)*dynSize
		switch {
		case i < len(kept):
			le.PutUint64(b[at:], uint64(kept[i]))
			le.PutUint64(b[at+8:], vals[i])
		case i < n-1-keep:
			le.PutUint64(b[at:], uint64(elf.DT_DEBUG))
			le.PutUint64(b[at+8:], 0)
		default: // the terminator and the spare slots after it
			le.PutUint64(b[at:], uint64(elf.DT_NULL))
			le.PutUint64(b[at+8:], 0)
		}
	}
	return b
}

// TestInitFiniHooks: Options.Init and Fini on a shared object set DT_INIT
// and DT_FINI, rewriting the existing entries or taking spare DT_NULL
// slots in order, and refuse cleanly when the slots run out.
func TestInitFiniHooks(t *testing.T) {
	lib := readFixture(t, "modules/rw_lib.c", libCfg)
	if a, ok := OrigInit(lib); !ok || a == 0 {
		t.Fatalf("OrigInit: %#x, %v: a gcc shared object has DT_INIT (_init)", a, ok)
	}
	lay, err := PlanLayout(lib)
	if err != nil {
		t.Fatal(err)
	}
	free := lay.FreeAddr
	code := Segment{Addr: free, Data: make([]byte, 64), Flags: elf.PF_R | elf.PF_X, Name: ".x"}
	initA, finiA := free+16, free+32
	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{"entries present", lib, nil},
		{"no DT_INIT, DT_FINI", dropDyn(t, lib, 2, elf.DT_INIT, elf.DT_FINI), nil},
		{"no DT_INIT", dropDyn(t, lib, 1, elf.DT_INIT), nil},
		{"one spare slot for two", dropDyn(t, lib, 1, elf.DT_INIT, elf.DT_FINI), ErrNoFiniSlot},
		{"no spare slot", dropDyn(t, lib, 0, elf.DT_INIT, elf.DT_FINI), ErrNoInitSlot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Write(tt.in, Options{Segments: []Segment{code}, Init: initA, Fini: finiA})
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("Write: %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(bytes.NewReader(out.File))
			if err != nil {
				t.Fatal(err)
			}
			if a, ok := OrigInit(out.File); !ok || a != initA {
				t.Errorf("DT_INIT %#x, %v: want %#x", a, ok, initA)
			}
			if a, ok := OrigFini(out.File); !ok || a != finiA {
				t.Errorf("DT_FINI %#x, %v: want %#x", a, ok, finiA)
			}
			// e_entry and every other dynamic entry are untouched.
			g, _ := elf.NewFile(bytes.NewReader(tt.in))
			if f.Entry != g.Entry {
				t.Errorf("e_entry %#x, want it untouched (%#x)", f.Entry, g.Entry)
			}
			for _, tag := range []elf.DynTag{elf.DT_SONAME, elf.DT_NEEDED, elf.DT_INIT_ARRAY, elf.DT_FINI_ARRAY, elf.DT_GNU_HASH, elf.DT_VERSYM} {
				w, _ := g.DynValue(tag)
				v, _ := f.DynValue(tag)
				if len(w) != len(v) || len(w) > 0 && w[0] != v[0] {
					t.Errorf("%v: %#x, was %#x", tag, v, w)
				}
			}
		})
	}
	if _, err := Write(readFixture(t, "loops.c", staticCfg), Options{Init: 0x401000}); !errors.Is(err, ErrStatic) {
		t.Errorf("Init on a static executable: %v, want ErrStatic", err)
	}
}
