package ehwrite

import (
	"debug/elf"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// A testBinary the round-trip tests read: its .eh_frame and
// .gcc_except_table.
type testBinary struct {
	name           string
	path           string
	eh             []byte
	ehAddr         uint64
	gct            []byte
	gctAddr        uint64
	opts           ehframe.Options
	frame          *ehframe.Frame
	lastCodeAddrHi uint64 // end of the highest executable section
}

// testBinaries builds the exc.cc fixtures and adds the installed C++
// runtime and C library, whose tables are large and varied.
func testBinaries(t *testing.T) []*testBinary {
	t.Helper()
	var paths []string
	var names []string
	for _, cfg := range fixture.ExcConfigs() {
		if cfg.CC == "clang++" {
			fixture.RequireTool(t, "clang++", "clang")
		}
		paths = append(paths, fixture.BuildExc(t, cfg))
		names = append(names, "exc.cc-"+cfg.String())
	}
	for _, p := range []string{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
			names = append(names, filepath.Base(p))
		}
	}
	var out []*testBinary
	for i, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		b := &testBinary{name: names[i], path: p}
		s := f.Section(".eh_frame")
		if s == nil {
			t.Fatalf("%s: no .eh_frame", p)
		}
		b.eh, err = s.Data()
		if err != nil {
			t.Fatal(err)
		}
		b.ehAddr = s.Addr
		if g := f.Section(".gcc_except_table"); g != nil {
			if b.gct, err = g.Data(); err != nil {
				t.Fatal(err)
			}
			b.gctAddr = g.Addr
		}
		if g := f.Section(".got"); g != nil {
			b.opts.DataBase = g.Addr
		}
		for _, sec := range f.Sections {
			if sec.Flags&elf.SHF_ALLOC != 0 && sec.Addr+sec.Size > b.lastCodeAddrHi {
				b.lastCodeAddrHi = sec.Addr + sec.Size
			}
		}
		f.Close()
		if b.frame, err = ehframe.ParseFrame(b.eh, b.ehAddr, b.opts); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, b)
	}
	return out
}

// newPlace is where a copy of b's tables goes in the tests: past the
// end of the image, page-aligned, plus extra.
func (b *testBinary) newPlace(extra uint64) uint64 {
	return (b.lastCodeAddrHi+0xfff)&^0xfff + 0x10000 + extra
}

// sameCIE compares what a copy must keep of a CIE.
func sameCIE(t *testing.T, where string, got, want *ehframe.CIE) {
	t.Helper()
	if got.Version != want.Version || got.Augmentation != want.Augmentation || got.CodeAlign != want.CodeAlign ||
		got.DataAlign != want.DataAlign || got.RAReg != want.RAReg || got.FDEEnc != want.FDEEnc ||
		got.LSDAEnc != want.LSDAEnc || got.PersonalityEnc != want.PersonalityEnc || got.Personality != want.Personality ||
		got.Signal != want.Signal || !paddedCopy(got.Initial, want.Initial) {
		t.Errorf("%s: CIE\n%+v\nwant\n%+v", where, got, want)
	}
}

// paddedCopy reports whether got is want followed by DW_CFA_nop padding.
func paddedCopy(got, want []byte) bool {
	if len(got) < len(want) || string(got[:len(want)]) != string(want) {
		return false
	}
	for _, c := range got[len(want):] {
		if c != 0 {
			return false
		}
	}
	return true
}

func TestCopyFrameRoundTrip(t *testing.T) {
	for _, b := range testBinaries(t) {
		t.Run(b.name, func(t *testing.T) {
			var sizes []int
			for _, extra := range []uint64{0, 0x123458} {
				addr := b.newPlace(extra)
				bld := NewBuilder(addr)
				if err := bld.CopyFrame(b.frame); err != nil {
					t.Fatalf("CopyFrame: %v", err)
				}
				sec, table := bld.Finish()
				sizes = append(sizes, len(sec))
				got, err := ehframe.ParseFrame(sec, addr, b.opts)
				if err != nil {
					t.Fatalf("ParseFrame of the copy: %v", err)
				}
				if len(got.Entries) != len(b.frame.Entries) || len(got.CIEs) != len(b.frame.CIEs) {
					t.Fatalf("copy has %d FDEs and %d CIEs, original %d and %d", len(got.Entries), len(got.CIEs), len(b.frame.Entries), len(b.frame.CIEs))
				}
				for i, c := range got.CIEs {
					sameCIE(t, "CIE "+b.name, c, b.frame.CIEs[i])
				}
				byAddr := map[uint64]*ehframe.Entry{}
				bad := 0
				for i, e := range got.Entries {
					o := b.frame.Entries[i]
					byAddr[addr+uint64(e.Off)] = e
					if e.Begin != o.Begin || e.End != o.End || e.LSDA != o.LSDA {
						t.Errorf("FDE %d: [%#x,%#x) LSDA %#x, original [%#x,%#x) LSDA %#x", i, e.Begin, e.End, e.LSDA, o.Begin, o.End, o.LSDA)
						continue
					}
					sameCIE(t, "FDE's CIE", e.CIE, o.CIE)
					gr, err1 := e.Rows()
					or, err2 := o.Rows()
					if err1 != nil || err2 != nil || !reflect.DeepEqual(gr, or) {
						if bad++; bad < 5 {
							t.Errorf("FDE %d [%#x,%#x): rows differ (%v, %v)\n%+v\n%+v", i, o.Begin, o.End, err1, err2, gr, or)
						}
					}
				}
				nonEmpty := 0
				for _, e := range b.frame.Entries {
					if e.End > e.Begin {
						nonEmpty++
					}
				}
				if len(table) != nonEmpty {
					t.Errorf("%d table entries, %d non-empty FDEs", len(table), nonEmpty)
				}
				for _, h := range table {
					if e := byAddr[h.FDEAddr]; e == nil || e.Begin != h.Begin {
						t.Errorf("table entry %+v leads to no FDE starting there", h)
					}
				}
				if extra == 0 {
					t.Logf("%d CIEs, %d FDEs copied: %d bytes (original %d)", len(got.CIEs), len(got.Entries), len(sec), len(b.eh))
				}
			}
			if sizes[0] != sizes[1] {
				t.Errorf("size %d at one address, %d at another", sizes[0], sizes[1])
			}
		})
	}
}

// TestAddFDERoundTrip describes every FDE of the binaries again, moved
// by a distance, from its rows, and checks that the new programs give
// the same rows (moved) and that the LSDA pointers and CIEs survive.
func TestAddFDERoundTrip(t *testing.T) {
	for _, b := range testBinaries(t) {
		t.Run(b.name, func(t *testing.T) {
			const shift = 0x40_0000
			addr := b.newPlace(shift)
			bld := NewBuilder(addr)
			var want [][]ehframe.Row
			var wantFDE []*ehframe.Entry
			for _, e := range b.frame.Entries {
				rows, err := e.Rows()
				if err != nil {
					t.Fatalf("FDE at %#x: %v", e.Off, err)
				}
				moved := make([]ehframe.Row, len(rows))
				for i, r := range rows {
					moved[i] = ehframe.Row{Addr: r.Addr + shift, State: r.State}
				}
				if err := bld.AddFDE(e.CIE, e.Begin+shift, e.End+shift, moved, e.LSDA); err != nil {
					t.Fatalf("AddFDE for FDE at %#x: %v", e.Off, err)
				}
				want = append(want, moved)
				wantFDE = append(wantFDE, e)
			}
			sec, table := bld.Finish()
			got, err := ehframe.ParseFrame(sec, addr, b.opts)
			if err != nil {
				t.Fatalf("ParseFrame: %v", err)
			}
			if len(got.Entries) != len(want) {
				t.Fatalf("%d FDEs, want %d", len(got.Entries), len(want))
			}
			// Both lists are sorted by Begin; so are the originals, moved.
			bad := 0
			progSize := 0
			for i, e := range got.Entries {
				o := wantFDE[i]
				if e.Begin != o.Begin+shift || e.End != o.End+shift || e.LSDA != o.LSDA {
					t.Fatalf("FDE %d: [%#x,%#x) LSDA %#x, want [%#x,%#x) LSDA %#x", i, e.Begin, e.End, e.LSDA, o.Begin+shift, o.End+shift, o.LSDA)
				}
				sameCIE(t, "FDE's CIE", e.CIE, o.CIE)
				rows, err := e.Rows()
				if err != nil || !reflect.DeepEqual(rows, want[i]) {
					if bad++; bad < 5 {
						t.Errorf("FDE %d [%#x,%#x): %v\n got %+v\nwant %+v", i, e.Begin, e.End, err, rows, want[i])
					}
				}
				progSize += len(e.Program)
			}
			origSize := 0
			for _, e := range b.frame.Entries {
				origSize += len(e.Program)
			}
			if len(table) == 0 {
				t.Error("no table entries")
			}
			t.Logf("%d FDEs rebuilt from rows: programs %d bytes (original %d, with padding)", len(got.Entries), progSize, origSize)
		})
	}
}

// TestEncodeLSDARoundTrip re-encodes every LSDA of the binaries for the
// function moved elsewhere, at two addresses, and parses it back.
func TestEncodeLSDARoundTrip(t *testing.T) {
	for _, b := range testBinaries(t) {
		if b.gct == nil {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			n := 0
			for _, e := range b.frame.Entries {
				if e.LSDA == 0 {
					continue
				}
				l, err := ehframe.ParseLSDA(b.gct, b.gctAddr, e.LSDA, e.Begin, b.opts)
				if err != nil {
					t.Fatalf("ParseLSDA for FDE at %#x: %v", e.Off, err)
				}
				const shift = 0x80_0000
				moved := &ehframe.LSDA{LPStart: e.Begin + shift, TTypeEnc: l.TTypeEnc}
				hasTypes := false
				for _, c := range l.CallSites {
					m := c
					m.Start += shift
					m.End += shift
					if m.LandingPad != 0 {
						m.LandingPad += shift
					}
					for _, a := range c.Actions {
						hasTypes = hasTypes || a.Kind != ehframe.Cleanup
					}
					moved.CallSites = append(moved.CallSites, m)
				}
				if !hasTypes {
					moved.TTypeEnc = 0xff
				}
				var sizes []int
				for _, at := range []uint64{b.gctAddr + shift, b.newPlace(0x1001)} {
					enc, err := EncodeLSDA(moved, at, e.Begin+shift)
					if err != nil {
						t.Fatalf("EncodeLSDA for FDE at %#x: %v\n%+v", e.Off, err, l)
					}
					sizes = append(sizes, len(enc))
					back, err := ehframe.ParseLSDA(enc, at, at, e.Begin+shift, ehframe.Options{})
					if err != nil {
						t.Fatalf("ParseLSDA of the re-encoded LSDA of FDE at %#x: %v", e.Off, err)
					}
					if !reflect.DeepEqual(back, moved) {
						t.Fatalf("FDE at %#x: round trip\n got %+v\nwant %+v", e.Off, back, moved)
					}
				}
				if sizes[0] != sizes[1] {
					t.Errorf("FDE at %#x: LSDA size %d at one address, %d at another", e.Off, sizes[0], sizes[1])
				}
				n++
			}
			t.Logf("%d LSDAs re-encoded and parsed back", n)
		})
	}
}
