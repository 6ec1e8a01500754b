package main

// BOLT's profile and the disassembly against the real tools (issue 26):
// llvm-bolt-16 reads the fdata of testdata/boltprof.c (static functions,
// a .cold fragment, .isra/.constprop clones, a qsort callback), built
// with and without --emit-relocs, symbolized and stripped, matches every
// function with 100% profile accuracy and writes a program that runs the
// same; the calls the fdata gives each call instruction are callgrind's;
// and report --asm shows objdump's instructions of the original.

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// boltTool finds llvm-bolt in LLVM 16's bindir: Debian's llvm-bolt-16
// symlink cannot find its runtime library (DESIGN, facts measured).
func boltTool(t *testing.T) string {
	t.Helper()
	llvmConfig := fixture.RequireTool(t, "llvm-config-16", "llvm-16")
	bindir, err := exec.Command(llvmConfig, "--bindir").Output()
	if err != nil {
		t.Fatal(err)
	}
	bolt := filepath.Join(strings.TrimSpace(string(bindir)), "llvm-bolt")
	if _, err := os.Stat(bolt); err != nil {
		fixture.RequireTool(t, "llvm-bolt-16", "bolt-16")
	}
	return bolt
}

// fdataLine is one branch of an fdata file.
type fdataLine struct {
	fromOutside    bool
	from, to       string
	fromOff, toOff uint64
	count          uint64
}

func parseFdata(t *testing.T, text string) []fdataLine {
	t.Helper()
	var out []fdataLine
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(l)
		if len(f) != 8 {
			t.Fatalf("fdata line %q: want 8 fields", l)
		}
		fo, err1 := strconv.ParseUint(f[2], 16, 64)
		to, err2 := strconv.ParseUint(f[5], 16, 64)
		c, err3 := strconv.ParseUint(f[7], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatalf("fdata line %q: %v", l, err)
		}
		out = append(out, fdataLine{f[0] == "0", f[1], f[4], fo, to, c})
	}
	return out
}

func TestBoltFdataMatches(t *testing.T) {
	bolt := boltTool(t)
	for _, relocs := range []bool{false, true} {
		for _, strip := range []bool{false, true} {
			cfg := fixture.Config{Opt: "-O2", PIE: true, Strip: strip, Extra: []string{"-g"}}
			name := "plain"
			if relocs {
				cfg.Extra = append(cfg.Extra, "-Wl,--emit-relocs")
				name = "emit-relocs"
			}
			if strip {
				name += "-stripped"
			}
			t.Run(name, func(t *testing.T) {
				exe := fixture.Build(t, "boltprof.c", cfg)
				want, _, code := runBinary(t, exe, nil)
				if code != 0 {
					t.Fatalf("boltprof exits %d", code)
				}
				dir := t.TempDir()
				inst, prof, stdout := profiled(t, dir, exe)
				if stdout != string(want) {
					t.Fatalf("instrumented boltprof printed %q, want %q", stdout, want)
				}
				fdata := filepath.Join(dir, "boltprof.fdata")
				mustBlpp(t, "export", prof, "--binary", inst, "--format", "bolt-fdata", "-o", fdata)
				text, _ := os.ReadFile(fdata)
				lines := parseFdata(t, string(text))
				out := filepath.Join(dir, "boltprof.bolt")
				logb, err := exec.Command(bolt, exe, "-o", out, "-data="+fdata, "-reorder-blocks=ext-tsp", "-print-cfg").CombinedOutput()
				log := string(logb)
				if err != nil {
					t.Fatalf("llvm-bolt: %v\n%s", err, log)
				}
				for _, bad := range []string{"objects was ignored", "stale", "match only", "ERROR"} {
					if strings.Contains(log, bad) {
						t.Errorf("llvm-bolt says %q:\n%s\nfdata:\n%s", bad, grepBolt(log), text)
					}
				}
				// Every function the fdata names is one of BOLT's, with a
				// profile that matches (BOLT prints "Profile Acc" for
				// functions with a profile).
				acc := boltAccuracy(t, log)
				named := map[string]bool{}
				for _, l := range lines {
					for _, n := range []string{l.from, l.to} {
						if !strings.HasSuffix(n, "@PLT") {
							named[n] = true
						}
					}
				}
				// llvm-bolt builds no CFG for what it will not optimize
				// (a function with a .cold fragment outside relocation
				// mode); its profile still matched (nothing ignored).
				withCFG := 0
				for n := range named {
					if a, ok := acc[n]; ok {
						withCFG++
						if a < 99 {
							t.Errorf("llvm-bolt's profile accuracy for %s is %.1f%%, want at least 99%%", n, a)
						}
					}
				}
				if withCFG < 5 {
					t.Errorf("llvm-bolt gives a profile accuracy to %d of the fdata's %d functions", withCFG, len(named))
				}
				if len(named) < 6 {
					t.Errorf("only %d functions in the fdata:\n%s", len(named), text)
				}
				if !strip {
					for _, n := range []string{"cmp_int/1", "weigh.isra.0/1", "scale_by.constprop.0/1", "main"} {
						if !named[n] {
							t.Errorf("no %s in the fdata", n)
						}
					}
				} else if !regexp.MustCompile(`(?m)^1 __BOLT_FDE_FUNCat[0-9a-f]+ `).Match(text) {
					t.Errorf("no __BOLT_FDE_FUNCat function in a stripped binary's fdata:\n%s", text)
				}
				t.Logf("%d functions in the fdata, none ignored; %d with a CFG, accuracy >= 99%%", len(named), withCFG)
				got, stderr, code := runBinary(t, out, nil)
				if code != 0 || string(got) != string(want) {
					t.Errorf("the BOLTed binary printed %q (exit %d, stderr %q), want %q", got, code, stderr, want)
				}
				if !relocs && !strip {
					checkCallsAgainstCallgrind(t, exe, lines)
				}
			})
		}
	}
}

// grepBolt keeps llvm-bolt's summary lines.
func grepBolt(log string) string {
	var b strings.Builder
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, "BOLT-") || strings.Contains(l, "rror") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// boltAccuracy reads the "Profile Acc" of each function from llvm-bolt
// -print-cfg.
func boltAccuracy(t *testing.T, log string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	fn := regexp.MustCompile(`^Binary Function "([^"(]+)(\(\*\d+\))?" after building cfg`)
	acc := regexp.MustCompile(`^\s*Profile Acc\s*:\s*([0-9.]+)%`)
	cur := ""
	for _, l := range strings.Split(log, "\n") {
		if m := fn.FindStringSubmatch(l); m != nil {
			cur = m[1]
		} else if m := acc.FindStringSubmatch(l); m != nil && cur != "" {
			v, _ := strconv.ParseFloat(m[1], 64)
			out[cur] = v
			cur = ""
		}
	}
	return out
}

// checkCallsAgainstCallgrind requires every call the fdata gives from a
// call instruction to be as frequent as callgrind's calls from that
// instruction (the qsort call ran once; its comparator's million entries
// are callbacks, not calls from it).
func checkCallsAgainstCallgrind(t *testing.T, exe string, lines []fdataLine) {
	t.Helper()
	fixture.RequireTool(t, "valgrind", "valgrind")
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, _ := f.Symbols()
	addrOf := map[string]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			addrOf[s.Name] = s.Value
		}
	}
	cg, err := callgrind.Run(exe, callgrind.Options{OutDir: t.TempDir(), Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	fromSite := map[uint64]uint64{}
	for k, c := range cg.Calls {
		fromSite[k[0]] += c
	}
	for a, c := range cg.External {
		if a.From.Object == cg.Object {
			fromSite[a.From.Addr] += c
		}
	}
	base := regexp.MustCompile(`/\d+$`)
	checked, qsort := 0, false
	for _, l := range lines {
		if l.fromOutside || l.toOff != 0 || l.from == l.to {
			continue
		}
		fa, ok := addrOf[base.ReplaceAllString(l.from, "")]
		if !ok {
			t.Errorf("no symbol %s in %s", l.from, exe)
			continue
		}
		site := fa + l.fromOff
		if !isCall(f, site) {
			continue // a tail jump: callgrind may file it as a jump
		}
		if l.count != fromSite[site] {
			t.Errorf("fdata: %s+%#x (%#x) calls %s %d times; callgrind: %d", l.from, l.fromOff, site, l.to, l.count, fromSite[site])
		}
		checked++
		qsort = qsort || l.to == "qsort@PLT"
	}
	t.Logf("%d calls checked against callgrind, qsort among them: %v", checked, qsort)
	if checked < 5 || !qsort {
		t.Errorf("checked %d calls against callgrind (qsort among them: %v)", checked, qsort)
	}
}

// isCall reports whether the instruction at addr of f is a call.
func isCall(f *elf.File, addr uint64) bool {
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_EXECINSTR == 0 || addr < s.Addr || addr-s.Addr >= s.Size {
			continue
		}
		code := make([]byte, 15)
		n, _ := s.ReadAt(code, int64(addr-s.Addr))
		in, err := x86.Decode(code[:n], addr)
		return err == nil && (in.Kind == x86.Call || in.Kind == x86.CallIndirect)
	}
	return false
}

// TestAsmIsObjdumps: report --view hot --asm lists, for every block of
// the hot paths, the instructions objdump -d finds at those addresses of
// the original binary, the entry blocks under blpp's entry jumps
// included.
func TestAsmIsObjdumps(t *testing.T) {
	objdump := fixture.RequireTool(t, "objdump", "binutils")
	exe := fixture.Build(t, "boltprof.c", fixture.Config{Opt: "-O2", PIE: true, Extra: []string{"-g"}})
	dir := t.TempDir()
	inst, prof, _ := profiled(t, dir, exe)
	rep := mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot", "--asm", "--hot", "1", "--top", "0")
	asmLine := regexp.MustCompile(`^\s+0x([0-9a-f]+)  (.*)$`)
	got := map[uint64]string{}
	for _, l := range strings.Split(rep, "\n") {
		if m := asmLine.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			got[a] = m[2]
		}
	}
	dump, err := exec.Command(objdump, "-d", "--no-show-raw-insn", exe).Output()
	if err != nil {
		t.Fatal(err)
	}
	dumpLine := regexp.MustCompile(`^\s+([0-9a-f]+):\s+(.*)$`)
	want := map[uint64]string{}
	for _, l := range strings.Split(string(dump), "\n") {
		if m := dumpLine.FindStringSubmatch(l); m != nil {
			a, _ := strconv.ParseUint(m[1], 16, 64)
			want[a] = m[2]
		}
	}
	entries := 0
	syms := map[uint64]bool{}
	if f, err := elf.Open(exe); err == nil {
		ss, _ := f.Symbols()
		for _, s := range ss {
			syms[s.Value] = true
		}
		f.Close()
	}
	for a, g := range got {
		w, ok := want[a]
		if !ok {
			t.Errorf("%#x: --asm shows %q, objdump has no instruction there", a, g)
			continue
		}
		if normAsm(g) != normAsm(w) {
			t.Errorf("%#x: --asm shows %q, objdump %q", a, g, w)
		}
		if syms[a] {
			entries++
		}
	}
	if len(got) < 30 || entries < 3 {
		t.Errorf("--asm showed %d instructions, %d at function entries:\n%s", len(got), entries, rep)
	}
}

// normAsm puts an AT&T instruction from x86asm or objdump in one form:
// objdump's symbol and comment annotations dropped, branch targets
// without 0x, the q suffix objdump leaves off call, ret, jmp, push and
// pop removed, objdump's movabs, movslq, 0x0(...) and (...,1) spelled as
// x86asm does, 64-bit immediates unsigned, nops alike, spaces collapsed.
func normAsm(s string) string {
	if i := strings.Index(s, " <"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "#"); i >= 0 {
		s = s[:i]
	}
	s = regexp.MustCompile(` \[\d+ bytes\]$`).ReplaceAllString(strings.TrimSpace(s), "")
	f := strings.Fields(strings.ToLower(s))
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "retq", "callq", "jmpq", "pushq", "popq", "leaveq":
		f[0] = strings.TrimSuffix(f[0], "q")
	case "movabs":
		f[0] = "mov"
	case "movsxd":
		f[0] = "movslq"
	case "data16", "xchg":
		if strings.Join(f, " ") == "xchg %ax,%ax" || strings.Join(f, " ") == "data16 nop" {
			return "nop"
		}
	}
	if len(f) == 2 && (f[0] == "call" || strings.HasPrefix(f[0], "j")) {
		f[1] = strings.TrimPrefix(f[1], "0x")
	}
	if len(f) == 2 {
		op := strings.ReplaceAll(f[1], "0x0(", "(")
		op = regexp.MustCompile(`,1\)`).ReplaceAllString(op, ")")
		op = regexp.MustCompile(`\$-0x([0-9a-f]+)`).ReplaceAllStringFunc(op, func(m string) string {
			v, err := strconv.ParseUint(m[4:], 16, 64)
			if err != nil {
				return m
			}
			return "$0x" + strconv.FormatUint(-v, 16)
		})
		f[1] = op
	}
	return strings.Join(f, " ")
}
