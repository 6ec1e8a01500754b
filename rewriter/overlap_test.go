package rewriter_test

// Code that other code enters one byte into an instruction (glibc's
// skipped lock prefix: testdata/lockskip.c) [decision 67].

import (
	"debug/elf"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// overlapConfigs build the overlap fixtures: PIE and not, both
// compilers, and a static build whose C library uses the idiom itself.
var overlapConfigs = []fixture.Config{
	{CC: "gcc", Opt: "-O2", PIE: true},
	{CC: "clang", Opt: "-O2"},
	{CC: "gcc", Opt: "-O2", Static: true},
}

// TestLockSkip rewrites testdata/lockskip.c, whose functions branch over
// a lock prefix into the instruction behind it, and requires the
// rewritten program to behave as the original, every such function to be
// instrumented, and every block count (those of the instruction after a
// prefix included) to equal callgrind's.
func TestLockSkip(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	args := []string{"300"}
	own := []string{"main", "cas", "fetch_add", "decrement", "spin_add"}
	for _, c := range overlapConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "lockskip.c", c)
			want := runProc(t, orig, args)
			cg := callgrindOf(t, "lockskip.c "+c.String(), orig, args, want)
			for _, m := range procModes {
				what := "lockskip.c " + c.String() + " " + m.name
				inst := filepath.Join(dir, "lockskip-"+m.name+".blpp")
				sum := rewriteSum(t, orig, inst, m.opts)
				// The C library of a static build skips lock prefixes
				// too; none of its functions may be left out for it.
				// (A jump table read past its end can still reach into
				// an instruction elsewhere: __parse_one_specmb.)
				for _, s := range sum.Skipped {
					var in, at uint64
					if _, err := fmt.Sscanf(s.Detail, "%x: control reaches the middle of the instruction at %x", &in, &at); err == nil && in == at+1 && afterLock(t, orig, in) {
						t.Errorf("%s: %s left out: %s: %s", what, s.Name, s.Reason, s.Detail)
					}
				}
				prof := runProfiledArgs(t, what, inst, args, want)
				doc := compareCounts(t, what, inst, prof, cg, countCheck{own: own, ownOnly: c.Static})
				// Both ways through each of the four prefixes ran:
				// the instruction behind each prefix starts a block,
				// which counted.
				skips := 0
				for _, fn := range doc.Functions {
					if fn.Name == "main" || !contains(own, fn.Name) {
						continue
					}
					for _, b := range fn.Blocks {
						var a uint64
						if _, err := fmtSscan(b.Addr, &a); err != nil {
							t.Fatal(err)
						}
						if afterLock(t, orig, a) {
							skips++
							if b.Count == 0 {
								t.Errorf("%s: %s: the skip to %s never ran", what, fn.Name, b.Addr)
							}
						}
					}
				}
				if skips != 4 {
					t.Errorf("%s: %d blocks start one byte into a lock-prefixed instruction, want 4", what, skips)
				}
			}
		})
	}
}

// runProfiledArgs is runProfiled with arguments.
func runProfiledArgs(t *testing.T, what, inst string, args []string, want procResult) *cct.Profile {
	t.Helper()
	prof := filepath.Join(filepath.Dir(inst), "blpp.out")
	got := runProc(t, inst, args, "BLPP_PROFILE="+prof, "BLPP_QUIET=1")
	sameBehaviour(t, what, want, got)
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	checkLatency(t, what, p)
	return p
}

// afterLock reports whether the byte before addr in the executable
// exe is a lock prefix.
func afterLock(t *testing.T, exe string, addr uint64) bool {
	t.Helper()
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr > p.Vaddr && addr-p.Vaddr <= p.Filesz {
			var b [1]byte
			if _, err := p.ReadAt(b[:], int64(addr-1-p.Vaddr)); err != nil {
				t.Fatal(err)
			}
			return b[0] == 0xf0
		}
	}
	return false
}

func contains(names []string, n string) bool {
	for _, s := range names {
		if s == n {
			return true
		}
	}
	return false
}

// TestEntryJump rewrites testdata/entryjump.c, whose sum_to loops back
// two bytes into itself and whose copy_end jumps three bytes into
// copy_fwd (glibc's __mempcpy and __memmove), both inside the bytes the
// entry jump replaces. Both must be instrumented, behave as the
// original and count exactly: copy_fwd from its moved entry, with the
// activations copy_end sends there.
// TestSharedTail rewrites testdata/sharedtail.c, whose procedures share
// code as glibc's memmove family does, and requires them to be one
// instrumented procedure with several entries (decision 85), named after
// its largest member, every entry counted as callgrind counts it, the
// ones reached through a pointer and a run through alignment nops
// included, and the program to behave as the original.
func TestSharedTail(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	args := []string{"300"}
	own := []string{"main", "copy_chk", "big_chk", "big_copy"}
	for _, c := range overlapConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "sharedtail.c", c)
			want := runProc(t, orig, args)
			cg := callgrindOf(t, "sharedtail.c "+c.String(), orig, args, want)
			syms := funcAddrs(t, orig, "pcopy", "copy", "big_copy")
			for _, m := range procModes {
				what := "sharedtail.c " + c.String() + " " + m.name
				inst := filepath.Join(dir, "sharedtail-"+m.name+".blpp")
				rewriteSum(t, orig, inst, m.opts)
				prof := runProfiledArgs(t, what, inst, args, want)
				doc := compareCounts(t, what, inst, prof, cg, countCheck{own: own, ownOnly: c.Static})
				joined := false
				for _, fn := range doc.Functions {
					if fn.Name == "pcopy" || fn.Name == "copy" {
						t.Errorf("%s: %s is a procedure of its own, not an entry of big_copy", what, fn.Name)
					}
					if fn.Name != "big_copy" || !fn.Instrumented {
						continue
					}
					joined = true
					for _, name := range []string{"pcopy", "copy", "big_copy"} {
						at, n := fmt.Sprintf("%#x", syms[name]), uint64(0)
						for _, b := range fn.Blocks {
							if b.Addr == at {
								n = b.Count
							}
						}
						if n == 0 || n != cg.Exec[syms[name]] {
							t.Errorf("%s: entry %s (%s) counted %d times, callgrind %d", what, name, at, n, cg.Exec[syms[name]])
						}
					}
				}
				if !joined {
					t.Errorf("%s: no instrumented procedure big_copy", what)
				}
			}
		})
	}
}

func TestEntryJump(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	args := []string{"200"}
	own := []string{"main", "sum_to", "copy_fwd"}
	for _, c := range overlapConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			orig := fixture.Build(t, "entryjump.c", c)
			want := runProc(t, orig, args)
			cg := callgrindOf(t, "entryjump.c "+c.String(), orig, args, want)
			syms := funcAddrs(t, orig, "copy_fwd", "copy_end")
			for _, m := range procModes {
				what := "entryjump.c " + c.String() + " " + m.name
				inst := filepath.Join(dir, "entryjump-"+m.name+".blpp")
				rewriteSum(t, orig, inst, m.opts)
				prof := runProfiledArgs(t, what, inst, args, want)
				doc := compareCounts(t, what, inst, prof, cg, countCheck{own: own, ownOnly: c.Static})
				for _, fn := range doc.Functions {
					if fn.Name == "copy_end" {
						t.Errorf("%s: copy_end is a procedure of its own, not an entry of copy_fwd", what)
					}
					if fn.Name != "copy_fwd" || !fn.Instrumented {
						continue
					}
					// copy_end, which jumps past copy_fwd's first
					// instruction, is another entry of copy_fwd
					// (decision 85): both count at copy_fwd+3.
					body := fmt.Sprintf("%#x", syms["copy_fwd"]+3)
					found := false
					for _, b := range fn.Blocks {
						if b.Addr == body {
							found = true
							if n := b.Count; n != cg.Exec[syms["copy_fwd"]]+cg.Exec[syms["copy_end"]] || n == 0 {
								t.Errorf("%s: copy_fwd+3 ran %d times, want copy_fwd's calls and copy_end's", what, n)
							}
						}
					}
					if !found || len(fn.Blocks) == 0 || fn.Blocks[0].Addr != fmt.Sprintf("%#x", syms["copy_fwd"]) {
						t.Errorf("%s: copy_fwd's blocks do not start at its entry and at %s: %v", what, body, fn.Blocks)
					}
				}
			}
		})
	}
}
