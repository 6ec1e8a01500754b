package elfw

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// dladdrConfigs build testdata/dladdr.c with every hash table style.
var dladdrConfigs = []fixture.Config{
	{CC: "gcc", Opt: "-O2", PIE: true, Extra: []string{"-rdynamic"}},
	{CC: "gcc", Opt: "-O2", Extra: []string{"-rdynamic", "-Wl,--hash-style=sysv"}},
	{CC: "clang", Opt: "-O2", PIE: true, Extra: []string{"-rdynamic", "-Wl,--hash-style=both"}},
}

// symbolsRewrite adds a 64-byte executable segment and, inside it, a
// symbol named after each of names (Dynamic as asked), 16 bytes apart.
func symbolsRewrite(t *testing.T, orig []byte, dynamic bool, names ...string) (*Output, []Symbol) {
	t.Helper()
	free, err := NextFreeAddr(orig)
	if err != nil {
		t.Fatal(err)
	}
	var syms []Symbol
	for i, n := range names {
		syms = append(syms, Symbol{Name: n, Addr: free + uint64(16*i), Size: 16, Dynamic: dynamic})
	}
	out, err := Write(orig, Options{
		Segments: []Segment{{Addr: free, Data: bytes.Repeat([]byte{0xcc}, 16*len(names)), Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"}},
		Symbols:  syms,
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, syms
}

// TestDynamicSymbols adds .dynsym entries for code in a new segment and
// asks dladdr about it at run time: the new symbols name their range, the
// old ones still name theirs, dlsym still finds the original, and the
// program's own dynamic relocations (libc's functions) still resolve.
func TestDynamicSymbols(t *testing.T) {
	for _, cfg := range dladdrConfigs {
		t.Run(cfg.String(), func(t *testing.T) {
			t.Parallel()
			orig := readFixture(t, "dladdr.c", cfg)
			f, err := elf.NewFile(bytes.NewReader(orig))
			if err != nil {
				t.Fatal(err)
			}
			out, syms := symbolsRewrite(t, orig, true, "lookup", "main")
			g, err := elf.NewFile(bytes.NewReader(out.File))
			if err != nil {
				t.Fatal(err)
			}
			checkSymtab(t, f, g, syms, false)
			checkSymtab(t, f, g, syms, true)

			var lookup uint64
			old, _ := f.DynamicSymbols()
			for _, s := range old {
				if s.Name == "lookup" {
					lookup = s.Value
				}
			}
			dir := t.TempDir()
			args := []string{
				fmt.Sprintf("%#x", syms[0].Addr), fmt.Sprintf("%#x", syms[0].Addr+15),
				fmt.Sprintf("%#x", syms[1].Addr+3), fmt.Sprintf("%#x", lookup+1),
			}
			res := run(t, nil, nil, writeExe(t, dir, "new", out.File), args...)
			want := fmt.Sprintf("dlsym original\n%s lookup+0\n%s lookup+0xf\n%s main+0x3\n%s lookup+0x1\n", args[0], args[1], args[2], args[3])
			if res.status != 0 || string(res.stdout) != want {
				t.Errorf("status %d, stdout:\n%s\nwant:\n%s\nstderr: %s", res.status, res.stdout, want, res.stderr)
			}
			// Without the new symbols dladdr finds nothing there: the
			// test tells.
			plain, err := Write(orig, Options{Segments: []Segment{{Addr: syms[0].Addr, Data: make([]byte, 32), Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"}}})
			if err != nil {
				t.Fatal(err)
			}
			res = run(t, nil, nil, writeExe(t, dir, "plain", plain.File), args[0])
			if !strings.Contains(string(res.stdout), args[0]+" ?") {
				t.Errorf("dladdr names the new segment without new symbols:\n%s", res.stdout)
			}
			checkReadelf(t, dir, orig, out.File)
		})
	}
}

// checkSymtab checks the static (.symtab) or dynamic (.dynsym) table of
// the output g against the input f: the old entries unchanged at their
// indices, the new ones appended as global functions in .blpp.text, the
// versions of the old ones unchanged.
func checkSymtab(t *testing.T, f, g *elf.File, syms []Symbol, dynamic bool) {
	t.Helper()
	read := (*elf.File).Symbols
	what := ".symtab"
	if dynamic {
		read, what = (*elf.File).DynamicSymbols, ".dynsym"
	}
	old, err := read(f)
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		t.Fatal(err)
	}
	got, err := read(g)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got) != len(old)+len(syms) {
		t.Fatalf("%s: %d symbols, want %d + %d", what, len(got), len(old), len(syms))
	}
	for i := range old {
		o, n := old[i], got[i]
		// debug/elf reports versions of .dynsym entries; they must
		// survive too.
		if fmt.Sprint(o) != fmt.Sprint(n) {
			t.Errorf("%s[%d] changed: %+v, was %+v", what, i+1, n, o)
		}
	}
	text := g.Section(".blpp.text")
	for i, s := range syms {
		n := got[len(old)+i]
		if n.Name != s.Name || n.Value != s.Addr || n.Size != s.Size || n.Info != funcSymInfo ||
			int(n.Section) >= len(g.Sections) || g.Sections[n.Section] != text {
			t.Errorf("%s: new symbol %+v, want %+v in .blpp.text", what, n, s)
		}
	}
}

// checkReadelf runs readelf on the symbol tables, the versions and the
// hash table histogram: no complaint beyond the original's.
func checkReadelf(t *testing.T, dir string, orig, out []byte) {
	t.Helper()
	readelf := fixture.RequireTool(t, "readelf", "binutils")
	op, np := writeExe(t, dir, "re-orig", orig), writeExe(t, dir, "re-new", out)
	for _, flags := range [][]string{{"-aW"}, {"-Ws"}, {"-W", "--dyn-syms"}, {"-W", "--dyn-syms", "--use-dynamic"}, {"-VW"}, {"-IW"}} {
		o := run(t, nil, nil, readelf, append(flags, op)...)
		n := run(t, nil, nil, readelf, append(flags, np)...)
		if n.status != 0 || string(n.stderr) != string(o.stderr) ||
			bytes.Count(n.stdout, []byte("Warning")) > bytes.Count(o.stdout, []byte("Warning")) {
			t.Errorf("readelf %s: status %d, stderr:\n%s", flags, n.status, trunc(n.stderr))
		}
	}
}

// TestStaticSymbols adds .symtab entries: to a file with .symtab, whose
// old entries keep their indices, and to stripped and static files.
func TestStaticSymbols(t *testing.T) {
	for _, cfg := range []fixture.Config{pieCfg, staticCfg, {CC: "clang", Opt: "-O2", Strip: true}} {
		t.Run(cfg.String(), func(t *testing.T) {
			orig := readFixture(t, "loops.c", cfg)
			f, err := elf.NewFile(bytes.NewReader(orig))
			if err != nil {
				t.Fatal(err)
			}
			out, syms := symbolsRewrite(t, orig, false, "main", "a_new_name", "main", "_Z"+strings.Repeat("x", 2000))
			g, err := elf.NewFile(bytes.NewReader(out.File))
			if err != nil {
				t.Fatal(err)
			}
			checkSymtab(t, f, g, syms, false)
			if d, err := g.DynamicSymbols(); err == nil {
				od, _ := f.DynamicSymbols()
				if len(d) != len(od) {
					t.Errorf(".dynsym grew without Dynamic symbols")
				}
			}
			st := g.Section(".symtab")
			if st.Entsize != symSize || st.Link == 0 || g.Sections[st.Link].Name != ".strtab" {
				t.Errorf(".symtab header %+v", st.SectionHeader)
			}
			for i, s := range f.Sections {
				if s.Name == ".symtab" && (s.Info != st.Info || g.Sections[i] != st) {
					t.Errorf(".symtab moved or changed sh_info: %+v", st.SectionHeader)
				}
			}
			dir := t.TempDir()
			checkReadelf(t, dir, orig, out.File)
			// It still runs.
			want := run(t, nil, nil, writeExe(t, dir, "orig", orig))
			got := run(t, nil, nil, writeExe(t, dir, "new", out.File))
			if got.status != want.status || !bytes.Equal(got.stdout, want.stdout) {
				t.Errorf("rewritten program: status %d, want %d", got.status, want.status)
			}
		})
	}
}

func TestSymbolErrors(t *testing.T) {
	pie := readFixture(t, "dladdr.c", dladdrConfigs[0])
	static := readFixture(t, "loops.c", staticCfg)
	free, _ := NextFreeAddr(pie)
	seg := []Segment{{Addr: free, Data: make([]byte, 16), Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"}}
	tests := []struct {
		name string
		orig []byte
		opts Options
		want error
	}{
		{"no name", pie, Options{Segments: seg, Symbols: []Symbol{{Addr: free}}}, ErrBadSymbol},
		{"NUL", pie, Options{Segments: seg, Symbols: []Symbol{{Name: "a\x00", Addr: free}}}, ErrBadSymbol},
		{"wraps", pie, Options{Segments: seg, Symbols: []Symbol{{Name: "a", Addr: free, Size: ^uint64(0)}}}, ErrBadSymbol},
		{"nowhere", pie, Options{Segments: seg, Symbols: []Symbol{{Name: "a", Addr: free + PageSize}}}, ErrBadSymbol},
		{"not in dynsym", pie, Options{Segments: seg, Symbols: []Symbol{{Name: "not_there", Addr: free, Dynamic: true}}}, ErrNoDynsym},
		{"static dynamic", static, Options{Segments: seg, Symbols: []Symbol{{Name: "main", Addr: free, Dynamic: true}}}, ErrNoDynsym},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Write(tt.orig, tt.opts)
			var e *Error
			if !errors.Is(err, tt.want) || !errors.As(err, &e) || out != nil {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			t.Log(err)
		})
	}
}
