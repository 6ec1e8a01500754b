package callgrind

import (
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

const mainObj = "/bin/prog"

// sample exercises name compression, relative subpositions (including one
// after a calls= cost line, which must not move the reference), both jcnd=
// forms, cob= scoping, UnknownObject, a foreign object and totals:.
const sample = `# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 42
cmd:  ./prog
part: 1

desc: Trigger: Program termination

positions: instr line
events: Ir
summary: 68

ob=(1) /bin/prog
fl=(1) prog.c
fn=(1) main
0x1000 10 1
+4 * 1
cfn=(2) leaf
calls=3 +0xfc 20
* * 30
+5 +1 2
jcnd=2/5 -9 -1
* *
+2 * 5
cob=(2) /lib/libc.so.6
cfi=(9) printf.c
cfn=(3) printf
calls=1 0x5000 0
* * 100
cfn=(2)
calls=1 0x1100 20
* * 7

ob=(3) ???
fl=(2) ???
fn=(4) 0x0000000000109030 [PLT]
0x109030 0 2
jump=2 +6 0
* *
+6 0 2
cob=(2)
cfn=(3)
calls=2 0x5000 0
* * 40

ob=(1)
fl=(1)
fn=(5) leaf'2
0x1100 20 4
cfn=(5)
calls=1 0x1100 20
* * 3
fn=(2)
0x1100 20 1
cob=(3)
cfn=(4)
calls=1 0x109030 0
* * 40
jcnd=5 3 0x1200 22
* *

ob=(2)
fl=(9)
fn=(3)
0x5000 1 50
cob=(1)
cfn=(2)
calls=4 0x1100 20
* * 8

totals: 68
`

func TestParseSample(t *testing.T) {
	p, err := Parse(strings.NewReader(sample), mainObj)
	if err != nil {
		t.Fatal(err)
	}
	main := func(a uint64) Loc { return Loc{mainObj, a} }
	libc := func(a uint64) Loc { return Loc{"/lib/libc.so.6", a} }
	unk := func(a uint64) Loc { return Loc{UnknownObject, a} }
	want := &Profile{
		Object: mainObj,
		Exec:   map[uint64]uint64{0x1000: 1, 0x1004: 1, 0x1009: 2, 0x100b: 5, 0x1100: 5},
		Calls: map[[2]uint64]uint64{
			{0x1004, 0x1100}: 3,
			{0x100b, 0x1100}: 1,
			{0x1100, 0x1100}: 1,
		},
		Jumps: map[[2]uint64]Jump{
			{0x1009, 0x1000}: {Count: 2, Executed: 5, Conditional: true},
			{0x1100, 0x1200}: {Count: 3, Executed: 5, Conditional: true},
		},
		External: map[Arc]uint64{
			{main(0x100b), libc(0x5000)}:  1,
			{unk(0x109036), libc(0x5000)}: 2,
			{main(0x1100), unk(0x109030)}: 1,
			{libc(0x5000), main(0x1100)}:  4,
		},
		Names: map[Loc]string{
			main(0x1100):  "leaf",
			libc(0x5000):  "printf",
			unk(0x109030): "0x0000000000109030 [PLT]",
		},
		UnknownExec:  map[uint64]uint64{0x109030: 2, 0x109036: 2},
		UnknownJumps: map[[2]uint64]Jump{{0x109030, 0x109036}: {Count: 2}},
		PIDs:         []int{42},
		Parts:        1,
	}
	compareProfiles(t, p, want)
}

// compareProfiles reports every field in which got and want differ.
func compareProfiles(t *testing.T, got, want *Profile) {
	t.Helper()
	if got.Object != want.Object {
		t.Errorf("Object = %q, want %q", got.Object, want.Object)
	}
	diffMap(t, "Exec", got.Exec, want.Exec)
	diffMap(t, "Calls", got.Calls, want.Calls)
	diffMap(t, "Jumps", got.Jumps, want.Jumps)
	diffMap(t, "External", got.External, want.External)
	diffMap(t, "Names", got.Names, want.Names)
	diffMap(t, "UnknownExec", got.UnknownExec, want.UnknownExec)
	diffMap(t, "UnknownJumps", got.UnknownJumps, want.UnknownJumps)
	if !slices.Equal(got.PIDs, want.PIDs) {
		t.Errorf("PIDs = %v, want %v", got.PIDs, want.PIDs)
	}
	if got.Parts != want.Parts {
		t.Errorf("Parts = %d, want %d", got.Parts, want.Parts)
	}
}

func diffMap[K comparable, V comparable](t *testing.T, name string, got, want map[K]V) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	n := 0
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			if n++; n <= 10 {
				t.Errorf("%s[%v] = %v (present %v), want %v", name, k, g, ok, v)
			}
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			if n++; n <= 10 {
				t.Errorf("%s[%v] = %v, want absent", name, k, v)
			}
		}
	}
	if n > 10 {
		t.Errorf("%s: %d differences in all", name, n)
	}
}

func TestParseObjectAbsent(t *testing.T) {
	_, err := Parse(strings.NewReader(sample), "/bin/other")
	if !errors.Is(err, ErrNoProfile) {
		t.Fatalf("err = %v, want ErrNoProfile", err)
	}
}

// TestParseCombinedParts reads a file holding two dumps
// (--combine-dumps=yes): name ids carry over, positions restart, each
// totals: checks its own part, and the counts add up.
func TestParseCombinedParts(t *testing.T) {
	in := `version: 1
pid: 7
part: 1
positions: instr
events: Ir
ob=(1) /bin/prog
fn=(1) f
0x10 3
+2 3
totals: 6
part: 2
positions: instr
events: Ir
ob=(1)
fn=(1)
0x10 1
cfn=(1)
calls=2 +0
* 9
-4 5
totals: 6
`
	p, err := Parse(strings.NewReader(in), mainObj)
	if err != nil {
		t.Fatal(err)
	}
	compareProfiles(t, p, &Profile{
		Object:       mainObj,
		Exec:         map[uint64]uint64{0x10: 4, 0x12: 3, 0xc: 5},
		Calls:        map[[2]uint64]uint64{{0x10, 0x10}: 2},
		Jumps:        map[[2]uint64]Jump{},
		External:     map[Arc]uint64{},
		Names:        map[Loc]string{{mainObj, 0x10}: "f"},
		UnknownExec:  map[uint64]uint64{},
		UnknownJumps: map[[2]uint64]Jump{},
		PIDs:         []int{7},
		Parts:        2,
	})
}

// TestParseOptionalForms covers what other writers may produce: no
// positions: line before a cost-free file, CRLF line ends, tabs, hex costs,
// missing trailing costs, several events with Ir not first.
func TestParseOptionalForms(t *testing.T) {
	in := "positions: instr line\r\nevents: Dr Ir Dw\r\nob=/bin/prog\r\nfn=f\r\n0x10\t3\t7\t0x2\r\n+1 4 1\r\n+1 4\r\n"
	p, err := Parse(strings.NewReader(in), mainObj)
	if err != nil {
		t.Fatal(err)
	}
	diffMap(t, "Exec", p.Exec, map[uint64]uint64{0x10: 2})
}

func TestParseErrors(t *testing.T) {
	const hdr = "positions: instr line\nevents: Ir\nob=/bin/prog\nfn=f\n" // 4 lines
	tests := []struct {
		name string
		in   string
		line int
		is   error
		msg  string
	}{
		{"too many costs", "events: Ir\n16 1 1 1\n", 2, ErrSyntax, "3 costs"},
		{"calls without cost line", hdr + "calls=1 0x10 1\nfn=g\n", 6, ErrSyntax, "not followed by its cost line"},
		{"calls at end", hdr + "0x10 1 1\ncalls=1 0x10 1\n", 6, ErrSyntax, "without its cost line"},
		{"jump at end", hdr + "jump=1 0x10 1\n", 5, ErrSyntax, "without its source position"},
		{"jump source with costs", hdr + "jump=1 0x10 1\n0x12 1 4\n", 6, ErrSyntax, "carries costs"},
		{"undefined id", hdr + "fn=(3)\n", 5, ErrSyntax, "used before it is defined"},
		{"redefined id", hdr + "fn=(1) a\nfn=(1) b\n", 6, ErrSyntax, "redefined"},
		{"unclosed id", hdr + "fn=(1 a\n", 5, ErrSyntax, "lacks ')'"},
		{"huge id", hdr + "fn=(99999999999999999999) a\n", 5, ErrSyntax, "not a number"},
		{"no instr", "events: Ir\nfn=f\n12 5\n", 3, ErrNoInstr, ""},
		{"no Ir", "positions: instr\nevents: Dr\nfn=f\n0x10 5\n", 4, ErrNoIr, ""},
		{"below zero", hdr + "0x10 1 1\n-17 1 1\n", 6, ErrSyntax, "below zero"},
		{"address overflow", hdr + "0xffffffffffffffff 1 1\n+1 1 1\n", 6, ErrSyntax, "overflows"},
		{"bad cost", hdr + "0x10 1 abc\n", 5, ErrSyntax, "not a number"},
		{"bad subposition", hdr + "0x10 1x 1\n", 5, ErrSyntax, "line subposition"},
		{"star junk", hdr + "0x10 1 1\n*x 1 1\n", 6, ErrSyntax, "junk"},
		{"too few subpositions", hdr + "0x10\n", 5, ErrSyntax, "1 subpositions"},
		{"calls target short", hdr + "calls=1 0x10\n", 5, ErrSyntax, "target has 1"},
		{"calls no count", hdr + "calls=\n", 5, ErrSyntax, "without a count"},
		{"jcnd one count", hdr + "jcnd=1\n", 5, ErrSyntax, "two counts"},
		{"jcnd bad slash", hdr + "jcnd=1/x 0x10 1\n", 5, ErrSyntax, "count"},
		{"totals mismatch", hdr + "0x10 1 5\ntotals: 6\n", 6, ErrSyntax, "sum to 5"},
		{"Ir overflow", hdr + "0x10 1 18446744073709551615\n0x11 1 1\n", 6, ErrSyntax, "overflows"},
		{"Exec overflow", "events: Ir\npositions: instr\nob=/bin/prog\n0x10 18446744073709551615\ntotals: 18446744073709551615\nob=/bin/prog\n0x10 1\n", 7, ErrSyntax, "overflows"},
		{"unrecognised", hdr + "hello world\n", 5, ErrSyntax, "unrecognised"},
		{"unknown key", hdr + "xyz=1\n", 5, ErrSyntax, "unrecognised"},
		{"version", "version: 2\n", 1, ErrSyntax, "not supported"},
		{"bad pid", "pid: x\n", 1, ErrSyntax, "not a number"},
		{"cost before events", "positions: instr\n0x10 1\n", 2, ErrSyntax, "before the events"},
		{"empty events", "events:\n", 1, ErrSyntax, "no event"},
		{"unknown position", "positions: instr col\n", 1, ErrSyntax, "unknown subposition"},
		{"duplicate position", "positions: instr instr\n", 1, ErrSyntax, "twice"},
		{"long line", "events: Ir\nfn=" + strings.Repeat("a", maxLine+10) + "\n", 2, ErrSyntax, "longer than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tc.in), mainObj)
			if err == nil {
				t.Fatal("no error")
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v (%T), want *ParseError", err, err)
			}
			if pe.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", pe.Line, tc.line, err)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want it to wrap %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %q, want it to contain %q", err, tc.msg)
			}
		})
	}
}

func TestParseFileNamesFile(t *testing.T) {
	path := t.TempDir() + "/cg.1"
	if err := os.WriteFile(path, []byte("events: Ir\nbogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(path, mainObj)
	if err == nil || !strings.Contains(err.Error(), path+":2") {
		t.Fatalf("err = %v, want it to name %s:2", err, path)
	}
}

func TestBaseName(t *testing.T) {
	for in, want := range map[string]string{
		"fib'2":          "fib",
		"fib":            "fib",
		"a'b":            "a'b",
		"x'":             "x'",
		"'3":             "'3",
		"f'12":           "f",
		"<&'a T as Foo>": "<&'a T as Foo>",
	} {
		if got := baseName(in); got != want {
			t.Errorf("baseName(%q) = %q, want %q", in, got, want)
		}
	}
}
