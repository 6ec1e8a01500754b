package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/internal/wholerun"
	"github.com/blpp/blpp/report"
)

// shareProgram is a real program whose work is mostly in shared objects,
// with a workload (issue 25, acceptance 2).
type shareProgram struct {
	name  string
	argv  []string // argv[0] is the program's path
	stdin []byte
	env   []string // added to the environment of every run
}

func sharePrograms(t *testing.T) []shareProgram {
	var text bytes.Buffer
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&text, "line %d: the quick brown fox %s jumps over the lazy dog %d\n", i, strings.Repeat("ab", i%9), i*i%977)
	}
	var js bytes.Buffer
	js.WriteString("[")
	for i := 0; i < 1500; i++ {
		if i > 0 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, `{"x":%d,"y":"s%d","z":[%d,%d]}`, i, i%37, i%5, i%11)
	}
	js.WriteString("]")
	ps := []shareProgram{
		{"bzip2", []string{"/usr/bin/bzip2", "-c"}, text.Bytes(), nil},
		{"xz -T2", []string{"/usr/bin/xz", "-T2", "-c"}, text.Bytes(), nil},
		// -n: no modification time in the header, which for a pipe is
		// the time the pipe was made (runs a second apart differ).
		{"pigz", []string{"/usr/bin/pigz", "-n", "-p", "2", "-c"}, text.Bytes(), nil},
		{"sed", []string{"/bin/sed", "-E", `s/(quick|lazy) ([a-z]+)/\2-\1/g; /9 /d`}, text.Bytes(), nil},
		{"grep -o", []string{"/bin/grep", "-o", "-E", "(ab)+ jumps|dog [0-9]*7"}, text.Bytes(), nil},
		{"sqlite3", []string{"/usr/bin/sqlite3", ":memory:"}, []byte(`create table t(a integer, b text);
with recursive c(x) as (select 1 union all select x+1 from c where x < 3000) insert into t select x, 'v' || (x % 97) from c;
create index tb on t(b);
select b, count(*), sum(a) from t group by b order by 2 desc, 1 limit 5;
select count(*) from t where b like 'v1%';
`), nil},
		{"jq", []string{"/usr/bin/jq", "-c", `[.[] | select(.x % 3 == 0) | {k: .y, v: (.z | add)}] | group_by(.k) | map({k: .[0].k, n: length}) | .[:3]`}, js.Bytes(), nil},
		{"python3 decimal", []string{"/usr/bin/python3", "-c", `import decimal, json
d = decimal.Context(prec=30)
s = sum((d.divide(decimal.Decimal(i), decimal.Decimal(7)) for i in range(1, 3000)), decimal.Decimal(0))
print(s, len(json.dumps({str(i): [i, i * 0.5] for i in range(2000)})))`}, nil, nil},
	}
	// Direct-threaded interpreters: PHP's hybrid VM and Ruby's VM jump
	// through handler addresses their instructions hold, and Ruby's tags
	// are __builtin_setjmp (decision 169).
	scripts := t.TempDir()
	rb, php := filepath.Join(scripts, "w.rb"), filepath.Join(scripts, "w.php")
	os.WriteFile(rb, []byte(`class Pt; attr_reader :x, :y; def initialize(x, y); @x = x; @y = y; end; def +(o); Pt.new(@x + o.x, @y + o.y); end; end
h = {}
acc = Pt.new(0, 0)
4000.times { |i| acc = acc + Pt.new(i % 7, i % 11); h["k#{i % 97}"] = (h["k#{i % 97}"] || 0) + i }
words = (1..1000).map { |i| (i * 7919 % 10007).to_s(36) }
s = words.sort_by { |w| [w.size, w] }.each_slice(50).map { |sl| sl.join(",") }.select { |l| l =~ /a.*z|q/ }
fib = ->(n) { n < 2 ? n : fib.(n - 1) + fib.(n - 2) }
bad = 0
200.times { |i| begin; Integer("x#{i}"); rescue ArgumentError; bad += 1; end }
puts acc.x, acc.y, h.size, h.values.sum, s.size, fib.(16), bad
`), 0o644)
	os.WriteFile(php, []byte(`<?php
class Pt { public $x; public $y; function __construct($x, $y) { $this->x = $x; $this->y = $y; } function add($o) { return new Pt($this->x + $o->x, $this->y + $o->y); } }
$h = []; $acc = new Pt(0, 0);
for ($i = 0; $i < 4000; $i++) { $acc = $acc->add(new Pt($i % 7, $i % 11)); $k = "k" . ($i % 97); $h[$k] = ($h[$k] ?? 0) + $i; }
$words = []; for ($i = 1; $i <= 1000; $i++) $words[] = base_convert(strval($i * 7919 % 10007), 10, 36);
usort($words, function ($a, $b) { return strlen($a) - strlen($b) ?: strcmp($a, $b); });
$n = 0; foreach (array_chunk($words, 50) as $c) { if (preg_match('/a.*z|q/', implode(",", $c))) $n++; }
function fib($n) { return $n < 2 ? $n : fib($n - 1) + fib($n - 2); }
$bad = 0; for ($i = 0; $i < 200; $i++) { try { throw new Exception("x$i"); } catch (Exception $e) { $bad++; } }
echo $acc->x, " ", $acc->y, " ", count($h), " ", array_sum($h), " ", $n, " ", fib(16), " ", $bad, "\n";
`), 0o644)
	ps = append(ps, shareProgram{"ruby", []string{"/usr/bin/ruby", "--disable-gems", rb}, nil, nil}, shareProgram{"php", []string{"/usr/bin/php", "-n", php}, nil, nil})
	// OCaml's bytecode interpreter threads its code with offsets from
	// its first handler's label (decision 170).
	ps = append(ps, ocamlProgram(t))
	// OpenSSL's digests and ciphers are hand-written assembly with
	// their constants in .text (decision 172).
	ps = append(ps, shareProgram{"openssl", []string{"/usr/bin/openssl", "dgst", "-sha1", "-sha256", "-sha512", "-md5", rb, php}, nil, nil})
	// SWI-Prolog's VM is direct-threaded too; one of its shared
	// dispatch jumps takes an address another handler kept in a register
	// (decision 170).
	pl := filepath.Join(scripts, "w.pl")
	os.WriteFile(pl, []byte(`fib(N, N) :- N < 2, !.
fib(N, F) :- A is N - 1, B is N - 2, fib(A, FA), fib(B, FB), F is FA + FB.
nrev([], []).
nrev([H|T], R) :- nrev(T, RT), append(RT, [H], R).
main :- fib(17, F), numlist(1, 200, L), nrev(L, [X|_]),
	findall(Y, (between(1, 5000, I), Y is (I * 7919) mod 10007), Ys), msort(Ys, S), length(S, N),
	catch(atom_length(_, _), error(E, _), true), functor(E, EN, _),
	format("~w ~w ~w ~w~n", [F, X, N, EN]).
:- initialization((main, halt)).
`), 0o644)
	// --home: under valgrind the program's argv[0] is the mirror's path
	// (Process.Command), from which SWI-Prolog would look for its home.
	ps = append(ps, shareProgram{"swipl", []string{"/usr/bin/swipl", "--home=/usr/lib/swi-prolog", pl}, nil, nil})
	// Jim Tcl's library is stripped and has no unwind tables: its
	// procedures are found by discovery, a switch of its evaluator sends
	// a case to a 5-byte `call abort` in .cold that only its place makes
	// code, and its command procedures, named only by pointers in data,
	// have .cold parts that jump back into them (decision 176).
	tcl := filepath.Join(scripts, "w.tcl")
	os.WriteFile(tcl, []byte(`proc fib {n} { if {$n < 2} { return $n }; return [expr {[fib [expr {$n-1}]] + [fib [expr {$n-2}]]}] }
set total 0
for {set i 0} {$i < 1500} {incr i} {
	set l {}
	for {set j 0} {$j < 20} {incr j} { lappend l [expr {($i * 7 + $j * 13) % 101}] }
	set l [lsort -integer $l]
	foreach x $l {
		switch -- [expr {$x % 4}] {
			0 { incr total $x }
			1 { incr total [string length "ab$x"] }
			2 { set d [dict create a $x b [expr {$x*2}]]; incr total [dict get $d b] }
			default { incr total [llength [split "a,b,c,$x" ,]] }
		}
	}
	catch { error "oops $i" } msg
	append s [string range $msg 0 2]
}
puts "$total [fib 15] [string length $s]"
`), 0o644)
	ps = append(ps, shareProgram{"jimsh", []string{"/usr/bin/jimsh", tcl}, nil, nil})
	// LuaJIT's interpreter is hand-written assembly that dispatches
	// through a table it builds from offsets at start-up (decision 174);
	// -joff keeps it interpreting. No Lua error is raised: the path in
	// progress where one unwinds into the interpreter is not counted.
	lua := filepath.Join(scripts, "w.lua")
	os.WriteFile(lua, []byte(`local function fib(n) if n < 2 then return n end return fib(n-1) + fib(n-2) end
local t = {}
for i = 1, 20000 do t[i] = (i * 7919) % 10007 end
table.sort(t, function(a, b) return a > b end)
local s = 0
for _, v in ipairs(t) do s = s + v end
local m = {}
for i = 1, 5000 do m["k" .. (i % 300)] = (m["k" .. (i % 300)] or 0) + i end
local cnt = 0
for k, v in pairs(m) do cnt = cnt + 1 end
local ok, v = pcall(function(x) return x * 2 end, 21)
local co = coroutine.wrap(function() for i = 1, 3 do coroutine.yield(i) end end)
local cs = co() + co() + co()
local str = string.rep("ab", 100):gsub("a", "x")
print(fib(22), s, t[1], cnt, ok, v, cs, #str, string.format("%.3f", math.sqrt(2)))
`), 0o644)
	ps = append(ps, shareProgram{"luajit", []string{"/usr/bin/luajit", "-joff", lua}, nil, nil})
	// BLPP_SHARE_PROGRAMS names a JSON file of more programs to measure
	// ([{"name": ..., "argv": [...], "stdin": FILE, "env": [...]}, ...]); with it set,
	// they are measured instead of the built-in list.
	if f := os.Getenv("BLPP_SHARE_PROGRAMS"); f != "" {
		ps = extraSharePrograms(t, f)
	}
	var out []shareProgram
	for _, p := range ps {
		if _, err := os.Stat(p.argv[0]); err == nil {
			out = append(out, p)
		} else if os.Getenv(fixture.EnvRequireTools) == "1" {
			t.Errorf("%s is missing: install Debian's %s (.ci/run does)", p.argv[0], debianPackage(p.argv[0]))
		} else {
			t.Logf("skipping %s: %s is missing (Debian package %s)", p.name, p.argv[0], debianPackage(p.argv[0]))
		}
	}
	if gxx, err := exec.LookPath("g++"); err == nil && os.Getenv("BLPP_SHARE_PROGRAMS") == "" {
		dir := t.TempDir()
		src := filepath.Join(dir, "throw.cc")
		os.WriteFile(src, []byte(`#include <map>
#include <string>
#include <stdexcept>
#include <iostream>
#include <algorithm>
#include <vector>
static int f(int i) { if (i % 97 == 0) throw std::runtime_error("x" + std::to_string(i)); return i * 2; }
int main() {
	std::map<std::string, int> m; long s = 0; int caught = 0;
	for (int i = 1; i < 6000; i++) {
		try { s += f(i); m[std::to_string(i % 500)] += i; } catch (const std::exception &e) { caught++; }
	}
	std::vector<std::string> v; for (int i = 0; i < 3000; i++) v.push_back(std::to_string((i * 7919) % 10007));
	std::sort(v.begin(), v.end());
	std::cout << s << " " << caught << " " << m.size() << " " << v[1500] << std::endl;
}
`), 0o644)
		exe := filepath.Join(dir, "throw")
		if b, err := exec.Command(gxx, "-O2", "-o", exe, src).CombinedOutput(); err != nil {
			t.Fatalf("g++: %v\n%s", err, b)
		}
		out = append(out, shareProgram{"C++ throw", []string{exe}, nil, nil})
	}
	return out
}

// shareFloors are the programs whose share is held above 99%: what a
// decision made whole must stay whole. jimsh: decision 176's two rules
// are 2.2% and 0.2% of it.
var shareFloors = map[string]float64{"jimsh": 0.9999}

// TestWholeProcessShare measures the gauge of DESIGN 14 over the whole
// process (issue 25, acceptance 2): for real programs whose work is in
// their libraries, the share of the process's executed instructions
// (callgrind on the original; the loader and the vDSO aside) that blpp
// counts, with the executable alone instrumented (before) and with
// blpp run's whole process (now); the programs behave identically under
// blpp run. It prints the table, and requires the whole process to count
// at least what the executable alone did, and 99%.
func TestWholeProcessShare(t *testing.T) {
	if testing.Short() {
		t.Skip("runs programs under callgrind")
	}
	fixture.RequireTool(t, "valgrind", "valgrind")
	var table strings.Builder
	fmt.Fprintf(&table, "%-16s %12s %12s %14s  %s\n", "program", "share before", "share now", "instructions", "largest left-out objects")
	for _, p := range sharePrograms(t) {
		t.Run(p.name, func(t *testing.T) {
			env := append(os.Environ(), p.env...)
			native := exec.Command(p.argv[0], p.argv[1:]...)
			native.Env = env
			native.Stdin = bytes.NewReader(p.stdin)
			want, err := native.Output()
			if err != nil {
				t.Fatalf("%s: %v", p.argv[0], err)
			}
			inst, wp := setUpWhole(t, p.argv[0], false)
			prof := filepath.Join(t.TempDir(), "blpp.out")
			run, err := wp.Command(inst, p.argv[0], p.argv[0], p.argv[1:], append(env, "BLPP_PROFILE="+prof))
			if err != nil {
				t.Fatal(err)
			}
			run.Stdin = bytes.NewReader(p.stdin)
			var stderr bytes.Buffer
			run.Stderr = &stderr
			got, err := run.Output()
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("blpp run: %v, output same as the original's: %v\n%s", err, bytes.Equal(got, want), stderr.Bytes())
			}
			pr, err := cct.ReadFile(prof)
			if err != nil {
				t.Fatal(err)
			}
			// The modules of the run, with the files they were made from.
			mods := []corpus.ModuleFile{{Orig: p.argv[0], Copy: inst}}
			for _, m := range pr.Modules {
				if m.Tag == 0 {
					continue
				}
				orig := wholerun.Origin(m.Path)
				if orig == "" {
					t.Fatalf("module %s: no origin beside %s", m.Name(), m.Path)
				}
				mods = append(mods, corpus.ModuleFile{Orig: orig, Copy: m.Path})
			}
			cgDir := t.TempDir()
			cg, err := callgrind.Run(p.argv[0], callgrind.Options{Args: p.argv[1:], Stdin: p.stdin, Env: env, OutDir: cgDir, Timeout: 5 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			tab, f, err := report.LoadMeta(inst)
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			plt, err := corpus.PLTRanges(p.argv[0])
			if err != nil {
				t.Fatal(err)
			}
			before := corpus.ProcessShareOf(corpus.DynamicShareOf(tab, cg, plt), cg)
			now, err := corpus.WholeShareOf(cg, cgDir, mods)
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, o := range now.Objects {
				if !o.Loader && len(left) < 2 && !isModule(o.Name, mods) && o.Name != callgrind.UnknownObject {
					left = append(left, fmt.Sprintf("%s %d", filepath.Base(o.Name), o.Insts))
				}
			}
			fmt.Fprintf(&table, "%-16s %11.2f%% %11.3f%% %14d  %s\n", p.name, 100*before.Ratio(), 100*now.Ratio(), now.Executed, strings.Join(left, ", "))
			if now.Ratio() < before.Ratio() {
				t.Errorf("whole-process share %.3f%% below the executable's alone (%.3f%%)", 100*now.Ratio(), 100*before.Ratio())
			}
			// Issue 25 asks for 99%: glibc's string functions, whose
			// entry points share code, count since decision 85.
			floor := 0.99
			if f, ok := shareFloors[p.name]; ok {
				floor = f
			}
			if now.Ratio() < floor {
				t.Errorf("whole-process share %.3f%%, want at least %.2f%%", 100*now.Ratio(), 100*floor)
			}
			// What was left out, when it falls short or -v asks.
			if now.Ratio() < floor || testing.Verbose() {
				for i, l := range now.Left {
					if i == 8 {
						break
					}
					t.Logf("  left out: %12d  %s (%s)", l.Insts, l.Name, l.Reason)
				}
			}
		})
	}
	t.Logf("whole-process share (callgrind on the original; ld.so and the vDSO aside):\n%s", table.String())
}

func isModule(name string, mods []corpus.ModuleFile) bool {
	for _, m := range mods {
		if m.Orig == name {
			return true
		}
		if r, err := filepath.EvalSymlinks(m.Orig); err == nil && r == name {
			return true
		}
	}
	return false
}

func extraSharePrograms(t *testing.T, file string) []shareProgram {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var list []struct {
		Name  string
		Argv  []string
		Stdin string
		Env   []string
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var ps []shareProgram
	for _, e := range list {
		if len(e.Argv) == 0 {
			t.Fatalf("%s: %s has no argv", file, e.Name)
		}
		p := shareProgram{name: e.Name, argv: e.Argv, env: e.Env}
		if e.Stdin != "" {
			if p.stdin, err = os.ReadFile(e.Stdin); err != nil {
				t.Fatal(err)
			}
		}
		ps = append(ps, p)
	}
	return ps
}

// debianPackage names the Debian package that installs the program at
// path, for the message of a test that skips without it.
func debianPackage(path string) string {
	switch b := filepath.Base(path); b {
	case "ocamlrun":
		return "ocaml-base"
	case "swipl":
		return "swi-prolog-nox"
	case "xz":
		return "xz-utils"
	case "php":
		return "php-cli"
	default:
		return b // bzip2, pigz, sed, grep, sqlite3, jq, python3, ruby
	}
}

// ocamlProgram returns ocamlrun running testdata/ocaml/w.byte, an OCaml
// workload (maps, lists, hash tables, variants, exceptions, closures)
// compiled to bytecode by Debian 12's ocamlc 4.13.1 (`ocamlc -o w.byte
// w.ml` in that directory remakes it). The file is kept so that the
// tests need ocaml-base's interpreter alone, not the compiler's 37
// programs, which the /usr/bin sweep would rewrite and run too.
func ocamlProgram(t *testing.T) shareProgram {
	bc := filepath.Join(fixture.Root(t), "testdata", "ocaml", "w.byte")
	return shareProgram{"ocamlrun", []string{"/usr/bin/ocamlrun", bc}, nil, nil}
}
