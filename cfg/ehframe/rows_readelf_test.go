package ehframe

import (
	"bufio"
	"bytes"
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

// This file checks Entry.Rows and CIE.InitialState against GNU readelf's
// interpretation of the call frame programs (--debug-dump=frames-interp)
// on compiled fixtures and installed binaries: for every FDE, the table
// of CFA and register rules, row by row.

// x86RegNames are readelf's names of the x86-64 DWARF registers
// [SysV x86-64 ABI 3.6.2, Figure 3.36]; the return-address column is "ra".
var x86RegNames = func() []string {
	n := []string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp"}
	for i := 8; i < 16; i++ {
		n = append(n, fmt.Sprintf("r%d", i))
	}
	n = append(n, "rip")
	for i := 0; i < 16; i++ {
		n = append(n, fmt.Sprintf("xmm%d", i))
	}
	for i := 0; i < 8; i++ {
		n = append(n, fmt.Sprintf("st%d", i))
	}
	for i := 0; i < 8; i++ {
		n = append(n, fmt.Sprintf("mm%d", i))
	}
	n = append(n, "rflags", "es", "cs", "ss", "ds", "fs", "gs", "", "", "fs.base", "gs.base", "", "", "tr", "ldtr", "mxcsr", "fcw", "fsw")
	return n
}()

func regName(r uint64) string {
	if r < uint64(len(x86RegNames)) && x86RegNames[r] != "" {
		return x86RegNames[r]
	}
	return fmt.Sprintf("r%d", r)
}

func regNumber(name string, ra uint64) (uint64, bool) {
	if name == "ra" {
		return ra, true
	}
	for i, n := range x86RegNames {
		if n == name {
			return uint64(i), true
		}
	}
	if v, err := strconv.ParseUint(strings.TrimPrefix(name, "r"), 10, 64); err == nil && strings.HasPrefix(name, "r") {
		return v, true
	}
	return 0, false
}

// readelfTable is one CIE or FDE of readelf's frames-interp output.
type readelfTable struct {
	off  int
	cie  bool
	cols []string   // register column names after LOC and CFA
	rows [][]string // per row: address, CFA, then one cell per column
}

var (
	readelfEntry = regexp.MustCompile(`^([0-9a-f]{8,}) [0-9a-f]+ [0-9a-f]+ (CIE|FDE)`)
	readelfRow   = regexp.MustCompile(`^[0-9a-f]{16} `)
	readelfCell  = regexp.MustCompile(`r\d+ \([^)]*\)|\S+`)
)

func readelfFrames(t *testing.T, readelf, file string) map[int]*readelfTable {
	t.Helper()
	cmd := exec.Command(readelf, "-wN", "--debug-dump=frames-interp", file)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readelf: %v", err)
	}
	tables := map[int]*readelfTable{}
	var cur *readelfTable
	inEH := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Contents of ") {
			inEH = strings.HasPrefix(line, "Contents of the .eh_frame section")
			cur = nil
			continue
		}
		if !inEH {
			continue
		}
		if m := readelfEntry.FindStringSubmatch(line); m != nil {
			off, _ := strconv.ParseUint(m[1], 16, 64)
			cur = &readelfTable{off: int(off), cie: m[2] == "CIE"}
			tables[cur.off] = cur
			continue
		}
		if cur == nil {
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "LOC" && f[1] == "CFA" {
			cur.cols = f[2:]
			continue
		}
		if readelfRow.MatchString(line) {
			cells := readelfCell.FindAllString(line, -1)
			for i, c := range cells {
				if j := strings.Index(c, " ("); j > 0 {
					cells[i] = c[:j] // "r9 (r9)": keep the number
				}
			}
			cur.rows = append(cur.rows, cells)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return tables
}

// cell renders a rule the way readelf does.
func cell(r Rule, ok bool) string {
	if !ok {
		return "u"
	}
	switch r.Kind {
	case Undefined:
		return "u"
	case SameValue:
		return "s"
	case Offset:
		return fmt.Sprintf("c%+d", r.Off)
	case ValOffset:
		return fmt.Sprintf("v%+d", r.Off)
	case Register:
		return fmt.Sprintf("r%d", r.Reg)
	case Expression:
		return "exp"
	case ValExpression:
		return "vexp"
	}
	return "?"
}

func cfaCell(c CFA) string {
	if c.Expr != nil {
		return "exp"
	}
	return fmt.Sprintf("%s%+d", regName(c.Reg), c.Off)
}

// render projects rows onto readelf's columns and merges consecutive
// rows that then look alike (readelf shows neither DW_CFA_GNU_args_size
// nor the difference between no rule and DW_CFA_undefined).
func render(rows []Row, cols []uint64) [][]string {
	var out [][]string
	for _, r := range rows {
		line := []string{fmt.Sprintf("%016x", r.Addr), cfaCell(r.State.CFA)}
		for _, c := range cols {
			line = append(line, cell(r.State.Rule(c)))
		}
		if n := len(out); n > 0 && slicesEqual(out[n-1][1:], line[1:]) {
			continue
		}
		out = append(out, line)
	}
	return out
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// normalise drops readelf rows at or past end (except the first) and
// merges rows that repeat the one before.
func normalise(rows [][]string, end uint64) [][]string {
	var out [][]string
	for i, r := range rows {
		addr, _ := strconv.ParseUint(r[0], 16, 64)
		if i > 0 && addr >= end {
			continue
		}
		if n := len(out); n > 0 && slicesEqual(out[n-1][1:], r[1:]) {
			continue
		}
		// Same address twice: the later row wins.
		if n := len(out); n > 0 && out[n-1][0] == r[0] {
			out[n-1] = r
			continue
		}
		out = append(out, r)
	}
	return out
}

// compareFrames checks every CIE and FDE of file against readelf and
// returns how many FDEs agree and how many there are.
func compareFrames(t *testing.T, readelf, file string) (agree, total int) {
	t.Helper()
	eh := openEHFrame(t, file)
	if eh == nil {
		t.Skip("no .eh_frame")
	}
	fr, err := ParseFrame(eh.data, eh.addr, eh.opts)
	if err != nil {
		t.Fatalf("ParseFrame: %v", err)
	}
	tables := readelfFrames(t, readelf, file)
	bad := 0
	report := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	colsOf := func(tb *readelfTable, ra uint64) []uint64 {
		var cols []uint64
		for _, c := range tb.cols {
			n, ok := regNumber(c, ra)
			if !ok {
				report("%s: readelf column %q is no known register", file, c)
			}
			cols = append(cols, n)
		}
		return cols
	}
	for _, c := range fr.CIEs {
		tb := tables[c.Off]
		if tb == nil || !tb.cie {
			report("CIE at %#x: readelf lists none", c.Off)
			continue
		}
		st, err := c.InitialState()
		if err != nil {
			report("CIE at %#x: %v", c.Off, err)
			continue
		}
		if len(tb.rows) == 0 {
			// readelf prints no table for a CIE without initial
			// instructions (glibc's signal-frame CIE).
			if !st.Equal(State{}) {
				report("CIE at %#x: initial state %+v, readelf shows none", c.Off, st)
			}
			continue
		}
		got := render([]Row{{State: st}}, colsOf(tb, c.RAReg))
		if len(tb.rows) != 1 || !slicesEqual(got[0][1:], tb.rows[0][1:]) {
			report("CIE at %#x: initial state %v, readelf %v", c.Off, got, tb.rows)
		}
	}
	for _, e := range fr.Entries {
		total++
		tb := tables[e.Off]
		if tb == nil || tb.cie {
			report("FDE at %#x: readelf lists none", e.Off)
			continue
		}
		rows, err := e.Rows()
		checkFirstRow(t, e, rows, err)
		if err != nil {
			report("FDE at %#x [%#x,%#x): %v", e.Off, e.Begin, e.End, err)
			continue
		}
		if rows[0].Addr != e.Begin {
			report("FDE at %#x: first row at %#x, not Begin %#x", e.Off, rows[0].Addr, e.Begin)
		}
		want := tb.rows
		cols := colsOf(tb, e.CIE.RAReg)
		if len(want) == 0 {
			// readelf prints no table for an FDE without instructions:
			// the CIE's state holds throughout.
			ctb := tables[e.CIEOff]
			if ctb != nil && len(ctb.rows) == 0 && len(rows) == 1 && rows[0].State.Equal(State{}) {
				agree++ // no rules at all, and readelf shows none
				continue
			}
			if ctb == nil || len(ctb.rows) != 1 {
				report("FDE at %#x: no rows and no CIE table", e.Off)
				continue
			}
			cols = colsOf(ctb, e.CIE.RAReg)
			want = [][]string{append([]string{fmt.Sprintf("%016x", e.Begin)}, ctb.rows[0][1:]...)}
		}
		want = normalise(want, e.End)
		got := render(rows, cols)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			report("FDE at %#x [%#x,%#x):\n got    %v\n readelf %v", e.Off, e.Begin, e.End, got, want)
			continue
		}
		agree++
	}
	return agree, total
}

func TestRowsReadelf(t *testing.T) {
	readelf := fixture.RequireTool(t, "readelf", "binutils")
	type bin struct {
		name string
		path func(t *testing.T) string
	}
	var bins []bin
	for _, cfg := range fixture.ExcConfigs() {
		bins = append(bins, bin{"exc.cc-" + cfg.String(), func(t *testing.T) string { return fixture.BuildExc(t, cfg) }})
	}
	for _, src := range []string{"cold.c", "setjmp.c", "threads.c", "switch.c"} {
		for _, cfg := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, {CC: "clang", Opt: "-O2"}, {CC: "gcc", Opt: "-O0", Static: true}} {
			bins = append(bins, bin{src + "-" + cfg.String(), func(t *testing.T) string { return fixture.Build(t, src, cfg) }})
		}
	}
	for _, p := range []string{"/bin/bash", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"} {
		if _, err := os.Stat(p); err == nil {
			bins = append(bins, bin{filepath.Base(p), func(*testing.T) string { return p }})
		}
	}
	var sumAgree, sumTotal int
	for _, b := range bins {
		t.Run(b.name, func(t *testing.T) {
			agree, total := compareFrames(t, readelf, b.path(t))
			if total == 0 {
				t.Error("no FDE compared with readelf")
			}
			sumAgree += agree
			sumTotal += total
			t.Logf("%d/%d FDEs agree with readelf", agree, total)
		})
	}
	t.Logf("in all: %d/%d FDEs agree with readelf", sumAgree, sumTotal)
}
