package rewriter_test

// CET kept (decision 95, issue 29): programs built with
// -fcf-protection=full and linked with the IBT and SHSTK bits keep them
// after rewriting, run as the original does, count exactly, and pass the
// static check of ibtcheck_test.go; the check itself catches a missing
// endbr64 of each kind; and Debian's CET-compiled code (libstdc++, libc,
// a program), whose notes lack the bits, passes it with IBT forced.

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// cetFlags build for CET as a CET-enabled distribution's toolchain does:
// Debian's crt files carry no property, so -z ibt -z shstk sets the bits.
var cetFlags = []string{"-fcf-protection=full", "-Wl,-z,ibt,-z,shstk"}

// requireIBT runs checkIBT on the rewritten file inst of orig and fails
// the test on any violation.
func requireIBT(t *testing.T, what, orig, inst string) ibtStats {
	t.Helper()
	o, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	n, err := os.ReadFile(inst)
	if err != nil {
		t.Fatal(err)
	}
	st, bad, err := checkIBT(o, n)
	if err != nil {
		t.Fatalf("%s: IBT check: %v", what, err)
	}
	for i, b := range bad {
		if i == 10 {
			t.Errorf("%s: ... %d violations in all", what, len(bad))
			break
		}
		t.Errorf("%s: IBT: %s", what, b)
	}
	return st
}

// TestCET rewrites fixtures built for CET (function pointers, jump
// tables, an interpreter, setjmp, C++ exceptions) in both modes: the
// output keeps the IBT and SHSTK bits without a warning, behaves as the
// original, counts exactly (context mode, against callgrind), and every
// indirect-branch target of its new code starts with endbr64.
func TestCET(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	type cetCase struct {
		src  string
		own  []string
		want string // the kind of target the fixture must have
	}
	cases := []cetCase{
		{"funcptr.c", []string{"main", "apply_all"}, "relocated"},
		{"switch.c", []string{"main", "dense", "sparse"}, "table"},
		{"interp.c", []string{"main", "run_vm"}, "table"},
		{"setjmp.c", []string{"main", "run", "level1"}, "return"},
		{"cxx/throw.cpp", []string{"main"}, "pad"},
		{"cxx/features.cpp", []string{"main"}, "pad"},
	}
	var mu sync.Mutex
	total := map[string]int{}
	t.Cleanup(func() { t.Logf("targets checked over all fixtures: %v", total) })
	for _, k := range cases {
		cxx := strings.HasSuffix(k.src, ".cpp")
		configs := []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, {CC: "gcc", Opt: "-O0"}, {CC: "clang", Opt: "-O2", PIE: true}}
		for _, c := range configs {
			k, c := k, c
			c.Extra = cetFlags
			if cxx {
				c.CC = map[string]string{"gcc": "g++", "clang": "clang++"}[c.CC]
				c.Extra = append([]string{"-pthread"}, cetFlags...)
			}
			t.Run(k.src+"/"+c.String(), func(t *testing.T) {
				t.Parallel()
				if c.CC == "clang++" {
					fixture.RequireTool(t, "clang++", "clang")
				}
				what := k.src + " " + c.String()
				orig := fixture.Build(t, k.src, c)
				if f, ok := x86Features(t, orig); !ok || f&3 != 3 {
					t.Fatalf("%s: the original's x86 feature bits are %#x, want IBT and SHSTK", what, f)
				}
				data, err := os.ReadFile(orig)
				if err != nil {
					t.Fatal(err)
				}
				native := runProc(t, orig, nil)
				dir := t.TempDir()
				for _, m := range procModes {
					out, sum, err := rewriter.Rewrite(data, m.opts)
					if err != nil {
						t.Fatalf("%s %s: rewrite: %v", what, m.name, err)
					}
					if len(sum.Warnings) > 0 {
						t.Errorf("%s %s: warnings %q", what, m.name, sum.Warnings)
					}
					inst := filepath.Join(dir, "prog."+m.name)
					if err := os.WriteFile(inst, out, 0o755); err != nil {
						t.Fatal(err)
					}
					if f, ok := x86Features(t, inst); !ok || f&3 != 3 {
						t.Errorf("%s %s: the rewritten binary's x86 feature bits are %#x, want IBT and SHSTK kept", what, m.name, f)
					}
					prof := filepath.Join(dir, m.name+".out")
					got := runProc(t, inst, nil, "BLPP_PROFILE="+prof)
					sameBehaviour(t, what+" "+m.name, native, got)
					st := requireIBT(t, what+" "+m.name, orig, inst)
					if st.First[k.want] == 0 {
						t.Errorf("%s %s: no %s target checked (%+v)", what, m.name, k.want, st)
					}
					mu.Lock()
					total["entries"] += st.Entries
					total["relocated"] += st.Relocated
					total["table"] += st.TableTargets
					total["pad"] += st.Pads
					total["return"] += st.Returns
					total["hooks"] += st.Hooks
					mu.Unlock()
					if m.opts.NoContext {
						continue
					}
					p, err := cct.ReadFile(prof)
					if err != nil {
						t.Fatalf("%s: profile: %v", what, err)
					}
					cg := callgrindOf(t, what, orig, nil, native)
					compareCounts(t, what, inst, p, cg, countCheck{own: k.own})
				}
			})
		}
	}
}

// TestIBTCheckCatches is the mutation test of checkIBT: in a rewritten
// fixture, overwriting the first endbr64 of each kind of target with a
// 4-byte nop must be reported, and the untouched file must pass.
func TestIBTCheckCatches(t *testing.T) {
	for _, k := range []struct{ src, cc string }{{"switch.c", "gcc"}, {"setjmp.c", "gcc"}, {"funcptr.c", "gcc"}, {"cxx/throw.cpp", "g++"}} {
		c := fixture.Config{CC: k.cc, Opt: "-O2", PIE: true, Extra: cetFlags}
		orig := fixture.Build(t, k.src, c)
		data, err := os.ReadFile(orig)
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := rewriter.Rewrite(data, rewriter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		st, bad, err := checkIBT(data, out)
		if err != nil || len(bad) > 0 {
			t.Fatalf("%s: unmutated: %v %q", k.src, err, bad)
		}
		t.Logf("%s: %+v", k.src, st)
		// The offset of an address in the file: .blpp.text's.
		f := openELF(t, out)
		text := f.Section(".blpp.text")
		for kind, a := range st.First {
			mut := append([]byte(nil), out...)
			off := text.Offset + a - text.Addr
			copy(mut[off:], []byte{0x0f, 0x1f, 0x40, 0x00})
			_, bad, err := checkIBT(data, mut)
			if err != nil {
				t.Fatal(err)
			}
			if len(bad) == 0 {
				t.Errorf("%s: the %s target %#x without endbr64 passes the check", k.src, kind, a)
			}
		}
		if len(st.First) == 0 {
			t.Errorf("%s: no target found", k.src)
		}
	}
}

func openELF(t *testing.T, data []byte) *elf.File {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCETDebian checks Debian's own CET-compiled code: libc, libstdc++
// (endbr64 at every exported function and landing pad, notrack jumps
// through switch tables) and a program, rewritten in both modes with IBT
// forced, since Debian links without the note bits. Every indirect-branch
// target of the new code must start with endbr64, and the program must
// run as the original does.
func TestCETDebian(t *testing.T) {
	type debCase struct {
		path, pkg string
		args      []string
	}
	cases := []debCase{
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", "libc6", nil},
		{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "libstdc++6", nil},
		{"sqlite3", "sqlite3", []string{":memory:", "create table t(a,b); insert into t values(1,'x'),(2,'y'),(3,'z'); select a*2, upper(b) from t order by a desc;"}},
	}
	for _, dc := range cases {
		dc := dc
		t.Run(filepath.Base(dc.path), func(t *testing.T) {
			path := dc.path
			if !filepath.IsAbs(path) {
				path = fixture.RequireTool(t, dc.path, dc.pkg)
			} else if _, err := os.Stat(path); err != nil {
				fixture.RequireTool(t, path, dc.pkg)
			}
			path, _ = filepath.EvalSymlinks(path)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for _, m := range procModes {
				out, sum, err := rewriter.Rewrite(data, rewriter.ForceIBT(m.opts))
				if err != nil {
					t.Fatalf("%s: rewrite: %v", m.name, err)
				}
				inst := filepath.Join(dir, filepath.Base(path)+"."+m.name)
				if err := os.WriteFile(inst, out, 0o755); err != nil {
					t.Fatal(err)
				}
				st := requireIBT(t, path+" "+m.name, path, inst)
				skipped := 0
				for _, s := range sum.Skipped {
					if s.Reason == "no room for the entry jump after endbr64" {
						skipped++
					}
				}
				t.Logf("%s %s: %d/%d instrumented, %d left out for endbr64; checked %d entries (%d relocated), %d tables (%d targets), %d landing pads, %d return sites, %d hooks, %d instructions",
					filepath.Base(path), m.name, sum.Instrumented, sum.Functions, skipped, st.Entries, st.Relocated, st.Tables, st.TableTargets, st.Pads, st.Returns, st.Hooks, st.Insts)
				if st.Relocated == 0 {
					t.Errorf("%s: no relocated entry with endbr64 checked", m.name)
				}
				if !m.opts.NoContext && dc.pkg != "libc6" {
					// What keeping IBT costs in code bytes (libc: +0.03%).
					_, plain, err := rewriter.Rewrite(data, m.opts)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%s: new code %d bytes, %d without IBT (%+.2f%%)", filepath.Base(path), sum.CodeBytes, plain.CodeBytes,
						100*float64(sum.CodeBytes-plain.CodeBytes)/float64(plain.CodeBytes))
				}
				if dc.args == nil {
					continue
				}
				want := runProc(t, path, dc.args)
				got := runProc(t, inst, dc.args, "BLPP_PROFILE="+filepath.Join(dir, m.name+".out"))
				sameBehaviour(t, path+" "+m.name, want, got)
			}
		})
	}
}
