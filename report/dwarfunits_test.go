package report

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// unitsConfigs are the builds of testdata/units: gcc's DWARF 5, the same
// with compressed debug sections (-gz), and clang's.
var unitsConfigs = []struct {
	name, cc string
	flags    []string
}{
	{"gcc", "gcc", []string{"-O2", "-g"}},
	{"gcc-gz", "gcc", []string{"-O2", "-g", "-gz"}},
	{"clang", "clang-16", []string{"-O2", "-g"}},
}

// buildUnits links the three units of testdata/units into one executable.
func buildUnits(t testing.TB, cc string, flags []string) string {
	t.Helper()
	ccPath := fixture.RequireTool(t, cc, cc) // gcc, clang-16: package and command share the name
	dir := filepath.Join(fixture.Root(t), "report", "testdata", "units")
	out := filepath.Join(t.TempDir(), "units")
	args := append(append([]string{}, flags...), "-o", out,
		filepath.Join(dir, "ua.c"), filepath.Join(dir, "ub.c"), filepath.Join(dir, "uc.c"))
	if b, err := exec.Command(ccPath, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", cc, args, err, b)
	}
	return out
}

// readWhole reads every unit of d at once, as NewDebugInfo did before it
// read units when asked: the reference the lazy lookups must equal.
func readWhole(d *dwarf.Data) *DebugInfo {
	di := &DebugInfo{}
	origins := map[dwarf.Offset]*origin{}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil || cu == nil {
			break
		}
		if cu.Tag == dwarf.TagCompileUnit {
			if t := readUnit(d, cu.Offset, origins); t != nil {
				di.rows = append(di.rows, t.rows...)
				di.scopes = append(di.scopes, t.scopes...)
			}
		}
		r.SkipChildren()
	}
	return di.finish()
}

func framesString(fs []*Scope) string {
	var b strings.Builder
	for _, s := range fs {
		fmt.Fprintf(&b, "%s@%s:%d %v call %s:%d/%d; ", s.SymbolName(), s.DeclFile, s.DeclLine, s.Ranges, s.CallFile, s.CallLine, s.CallDiscriminator)
	}
	return b.String()
}

// TestLazyUnits: for every address of the text of an executable of three
// compile units (one with two address ranges, one inline function in
// all), the lazy lookups give the rows and frames that reading every unit
// gives; so do Rows over each function and the whole-module scopes.
func TestLazyUnits(t *testing.T) {
	for _, c := range unitsConfigs {
		t.Run(c.name, func(t *testing.T) {
			exe := buildUnits(t, c.cc, c.flags)
			f, err := elf.Open(exe)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if c.name == "gcc-gz" && f.Section(".debug_info").Flags&elf.SHF_COMPRESSED == 0 {
				t.Fatal("-gz: .debug_info is not compressed")
			}
			d, err := f.DWARF()
			if err != nil {
				t.Fatal(err)
			}
			whole := readWhole(d)
			lazy := NewDebugInfo(f)
			if lazy == nil || lazy.units == nil || whole == nil {
				t.Fatalf("no DWARF: lazy %v, whole %v", lazy, whole)
			}
			if n := len(lazy.units.units); n < 3 {
				t.Fatalf("%d compile units, want at least 3", n)
			}
			text := f.Section(".text")
			lines := 0
			for a := text.Addr; a < text.Addr+text.Size; a++ {
				lr, lok := lazy.LineAt(a)
				wr, wok := whole.LineAt(a)
				if lr != wr || lok != wok {
					t.Fatalf("LineAt(%#x): lazy %+v %v, whole %+v %v", a, lr, lok, wr, wok)
				}
				if lok {
					lines++
				}
				if l, w := framesString(lazy.Frames(a)), framesString(whole.Frames(a)); l != w {
					t.Fatalf("Frames(%#x):\nlazy  %s\nwhole %s", a, l, w)
				}
			}
			if lines == 0 {
				t.Fatal("no address has a line")
			}
			syms, _ := f.Symbols()
			for _, s := range syms {
				if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 {
					continue
				}
				l, w := lazy.Rows(s.Value, s.Value+s.Size), whole.Rows(s.Value, s.Value+s.Size)
				if fmt.Sprint(l) != fmt.Sprint(w) {
					t.Errorf("Rows of %s:\nlazy  %v\nwhole %v", s.Name, l, w)
				}
			}
			// The text and beyond, in one query across every unit.
			if l, w := lazy.Rows(0, ^uint64(0)), whole.Rows(0, ^uint64(0)); fmt.Sprint(l) != fmt.Sprint(w) {
				t.Errorf("Rows of everything differ: lazy %d rows, whole %d", len(l), len(w))
			}
			if l, w := framesString(lazy.allScopes()), framesString(whole.allScopes()); l != w {
				t.Errorf("allScopes:\nlazy  %s\nwhole %s", l, w)
			}
			if lazy.HasLines() != whole.HasLines() {
				t.Errorf("HasLines: lazy %v, whole %v", lazy.HasLines(), whole.HasLines())
			}
		})
	}
}

// TestLazyUnitsReadOne: a line of main reads main's unit and no other.
func TestLazyUnitsReadOne(t *testing.T) {
	exe := buildUnits(t, "gcc", []string{"-O2", "-g"})
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	main := fixture.FuncAddrs(t, exe)["main"]
	di := NewDebugInfo(f)
	if di == nil || di.units == nil {
		t.Fatal("no compile units")
	}
	if at := di.At(main); !strings.HasPrefix(at, "ua.c:") {
		t.Fatalf("main at %q, want ua.c", at)
	}
	read := 0
	for _, u := range di.units.units {
		if u.read {
			read++
		}
	}
	if read != 1 {
		t.Errorf("%d of %d units read for one line of main, want 1", read, len(di.units.units))
	}
}

// FuzzLazyUnits: compile units from mutated .debug_info and .debug_line
// of the fixture must not panic in indexing or in any lookup.
func FuzzLazyUnits(f *testing.F) {
	exe := buildUnits(f, "gcc", []string{"-O2", "-g"})
	ef, err := elf.Open(exe)
	if err != nil {
		f.Fatal(err)
	}
	defer ef.Close()
	sec := func(name string) []byte {
		s := ef.Section(name)
		if s == nil {
			return nil
		}
		b, err := s.Data()
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	abbrev, info, line, str, lineStr, rng := sec(".debug_abbrev"), sec(".debug_info"), sec(".debug_line"), sec(".debug_str"), sec(".debug_line_str"), sec(".debug_rnglists")
	text := ef.Section(".text")
	f.Add(info, line)
	f.Add(info[:len(info)/2], line[:len(line)/3])
	f.Fuzz(func(t *testing.T, info, line []byte) {
		d, err := dwarf.New(bytes.Clone(abbrev), nil, nil, info, line, nil, nil, bytes.Clone(str))
		if err != nil {
			return
		}
		for _, s := range []struct {
			name string
			b    []byte
		}{{".debug_line_str", lineStr}, {".debug_rnglists", rng}} {
			if s.b != nil && d.AddSection(s.name, bytes.Clone(s.b)) != nil {
				return
			}
		}
		di := debugInfoOf(d)
		for a := text.Addr; a < text.Addr+text.Size; a += 7 {
			di.At(a)
			di.Frames(a)
		}
		di.Rows(0, ^uint64(0))
		di.HasLines()
		di.allScopes()
	})
}

// libcDebugFile is the separate debug file of the system's libc, or "".
func libcDebugFile(t testing.TB) string {
	lib, err := elf.Open("/lib/x86_64-linux-gnu/libc.so.6")
	if err != nil {
		return ""
	}
	defer lib.Close()
	id := noteBuildID(lib)
	if len(id) < 2 {
		return ""
	}
	p := fmt.Sprintf("/usr/lib/debug/.build-id/%x/%x.debug", id[:1], id[1:])
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// BenchmarkLinesLargeModule: the lines of 16 functions of libc, what a
// report of a short program asks, from libc's debug file (a few MB of
// compressed DWARF in 1,600 units): lazy reads the units holding them,
// whole reads every unit as before decision 126.
func BenchmarkLinesLargeModule(b *testing.B) {
	path := libcDebugFile(b)
	if path == "" {
		b.Skip("no debug file for libc.so.6 (install the Debian package libc6-dbg)")
	}
	f, err := elf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	var addrs []uint64
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 && len(addrs) < 16 && s.Value%7 == 0 {
			addrs = append(addrs, s.Value)
		}
	}
	for _, mode := range []string{"lazy", "whole"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				var di *DebugInfo
				if mode == "lazy" {
					di = NewDebugInfo(f)
				} else {
					d, err := f.DWARF()
					if err != nil {
						b.Fatal(err)
					}
					di = readWhole(d)
				}
				n := 0
				for _, a := range addrs {
					if di.At(a) != "" {
						n++
					}
				}
				if n == 0 {
					b.Fatal("no lines")
				}
			}
		})
	}
}
