package ehframe

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// This file checks Parse against GNU readelf on real binaries: every FDE
// readelf lists (offset, CIE, pc=BEGIN..END) must be found, in the same
// order, with the same values.

// 00000018 0000000000000014 0000001c FDE cie=00000000 pc=0000000000031750..0000000000031772
var readelfFDE = regexp.MustCompile(`^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ FDE cie=([0-9a-f]+) pc=([0-9a-f]+)\.\.([0-9a-f]+)`)

func readelfFDEs(readelf, file string) ([]FDE, error) {
	// -wN: do not follow .gnu_debuglink to separate debug files (readelf
	// fails when they are not installed).
	cmd := exec.Command(readelf, "-wN", "--debug-dump=frames", file)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return nil, err
	}
	var fdes []FDE
	// Only the .eh_frame part: readelf also dumps .debug_frame if there is one.
	inEH := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Contents of ") {
			inEH = strings.HasPrefix(line, "Contents of the .eh_frame section")
			continue
		}
		m := readelfFDE.FindStringSubmatch(line)
		if !inEH || m == nil {
			continue
		}
		var v [4]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(m[i+1], 16, 64); err != nil {
				return nil, fmt.Errorf("readelf line %q: %v", line, err)
			}
		}
		fdes = append(fdes, FDE{Off: int(v[0]), CIEOff: int(v[1]), Begin: v[2], End: v[3]})
	}
	return fdes, sc.Err()
}

var ehBinaries = []string{
	"/bin/bash",
	"/usr/bin/python3.11",
	"/usr/bin/gdb",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/bin/git",
	"/usr/bin/perl",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
}

// ehSection is the .eh_frame of an ELF file, with the Options that read
// it (.got as the data base).
type ehSection struct {
	f    *elf.File
	data []byte
	addr uint64
	opts Options
}

// openEHFrame opens file for the test (closing it at cleanup) and returns
// its .eh_frame, nil when it has none.
func openEHFrame(t *testing.T, file string) *ehSection {
	t.Helper()
	f, err := elf.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	s := f.Section(".eh_frame")
	if s == nil {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	eh := &ehSection{f: f, data: data, addr: s.Addr}
	if got := f.Section(".got"); got != nil {
		eh.opts.DataBase = got.Addr
	}
	return eh
}

func TestReadelfRealBinaries(t *testing.T) {
	readelf := fixture.RequireTool(t, "readelf", "binutils")
	n := 0
	for _, p := range ehBinaries {
		if _, err := os.Stat(p); err != nil {
			// bash and libc are on every Debian system: their absence
			// means the test compared less than it claims.
			if p == "/bin/bash" || strings.HasSuffix(p, "/libc.so.6") {
				t.Errorf("%s: %v", p, err)
			}
			continue
		}
		n++
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Parallel()
			eh := openEHFrame(t, p)
			if eh == nil {
				t.Fatal("no .eh_frame")
			}
			f := eh.f
			got, err := Parse(eh.data, eh.addr, eh.opts)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want, err := readelfFDEs(readelf, p)
			if err != nil {
				t.Fatalf("readelf: %v", err)
			}
			match := 0
			for i := 0; i < len(got) && i < len(want); i++ {
				g := got[i]
				g.LSDA = 0
				if g == want[i] {
					match++
				} else if i-match < 10 {
					t.Errorf("FDE %d: got %+v, readelf %+v", i, got[i], want[i])
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d FDEs, readelf lists %d", len(got), len(want))
			}
			if len(want) == 0 {
				t.Error("readelf lists no FDE: nothing compared")
			}
			// LSDAs must lie in .gcc_except_table, where g++ puts them.
			lsda, inTable := 0, 0
			gct := f.Section(".gcc_except_table")
			for _, fd := range got {
				if fd.LSDA == 0 {
					continue
				}
				lsda++
				if gct != nil && fd.LSDA >= gct.Addr && fd.LSDA < gct.Addr+gct.Size {
					inTable++
				}
			}
			if inTable != lsda {
				t.Errorf("%d of %d LSDAs outside .gcc_except_table", lsda-inTable, lsda)
			}
			t.Logf("%s: %d/%d FDEs agree with readelf (%.2f%%); %d LSDAs, all in .gcc_except_table",
				p, match, len(want), 100*float64(match)/float64(max(len(want), 1)), lsda)
		})
	}
	if n < 5 {
		t.Logf("only %d reference binaries present", n)
	}
}

// TestReadelfCompiled checks a freshly linked C++ program with
// exceptions, so that zPLR CIEs and LSDAs are covered even where no
// installed C++ binary is.
func TestReadelfCompiled(t *testing.T) {
	readelf := fixture.RequireTool(t, "readelf", "binutils")
	gxx := fixture.RequireTool(t, "g++", "g++")
	dir := t.TempDir()
	src := filepath.Join(dir, "x.cc")
	bin := filepath.Join(dir, "x")
	code := `#include <stdexcept>
#include <cstdio>
struct G { ~G() { std::puts("g"); } };
__attribute__((noinline)) int f(int x) { G g; if (x > 3) throw std::runtime_error("x"); return x * 2; }
int main(int argc, char **) {
	try { return f(argc); } catch (const std::exception &e) { std::puts(e.what()); }
	return 0;
}
`
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gxx, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("g++: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".eh_frame")
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data, s.Addr, Options{})
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want, err := readelfFDEs(readelf, bin)
	if err != nil {
		t.Fatal(err)
	}
	lsda := 0
	for i := range got {
		if got[i].LSDA != 0 {
			lsda++
		}
		g := got[i]
		g.LSDA = 0
		if i >= len(want) || g != want[i] {
			t.Errorf("FDE %d: %+v, readelf %v", i, got[i], want[min(i, len(want)-1)])
		}
	}
	if len(got) != len(want) || lsda == 0 {
		t.Errorf("%d FDEs (%d with LSDA), readelf %d", len(got), lsda, len(want))
	}
}
