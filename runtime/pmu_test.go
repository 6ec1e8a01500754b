package runtime_test

// blpp_pmu.h is tested through testdata/pmu_test.c: compiled freestanding
// with the runtime's own flags (it must build with no relocation and no
// undefined symbol), and as a hosted program that drives the rdpmc
// protocol on fake pages and opens real events on this kernel. The C
// program prints what it saw; the assertions are here. (An external test
// package: build imports package runtime.)

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/counters"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/runtime/internal/build"
)

// pmuCompile runs gcc on testdata/pmu_test.c with the runtime directory on
// the include path.
func pmuCompile(t *testing.T, out string, flags ...string) {
	t.Helper()
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	rtDir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	args := append(append([]string{"-I", rtDir}, flags...), "-o", out, filepath.Join(rtDir, "testdata", "pmu_test.c"))
	cmd := osexec.Command(gcc, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

func TestPmuFreestanding(t *testing.T) {
	obj := filepath.Join(t.TempDir(), "pmu.o")
	pmuCompile(t, obj, append(append([]string{}, build.CFlags...), "-DPMU_FREESTANDING", "-c")...)
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := build.CheckObject(data); err != nil {
		t.Fatalf("blpp_pmu.h: %v", err)
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && s.Name != "" {
			t.Errorf("blpp_pmu.h needs %s from outside", s.Name)
		}
	}
}

// pmuLines maps each output line "name k=v k=v ..." to its pairs.
type pmuLines map[string]map[string]string

func (l pmuLines) str(t *testing.T, name, key string) string {
	t.Helper()
	kv, ok := l[name]
	if !ok {
		t.Fatalf("no line %q in the output", name)
	}
	v, ok := kv[key]
	if !ok {
		t.Fatalf("line %q has no %s", name, key)
	}
	return v
}

func (l pmuLines) i64(t *testing.T, name, key string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(l.str(t, name, key), 10, 64)
	if err != nil {
		t.Fatalf("%s %s: %v", name, key, err)
	}
	return v
}

func (l pmuLines) u64(t *testing.T, name, key string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(l.str(t, name, key), 10, 64)
	if err != nil {
		t.Fatalf("%s %s: %v", name, key, err)
	}
	return v
}

func TestPmuProtocol(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "pmu_test")
	pmuCompile(t, exe, "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := osexec.CommandContext(ctx, exe).Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", exe, err, out)
	}
	lines := pmuLines{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		kv := map[string]string{}
		for _, p := range f[1:] {
			k, v, _ := strings.Cut(p, "=")
			kv[k] = v
		}
		lines[f[0]] = kv
	}
	t.Logf("pmu_test output:\n%s", out)

	t.Run("fake", func(t *testing.T) {
		tests := []struct {
			name    string
			rc      int64
			val     uint64
			reads   int64
			counter int64 // index-1 passed to rdpmc; -1 when not called
		}{
			// The page changed during the first read: read again, with
			// the new offset (2000 + 5).
			{"fake-retry", 0, 2005, 2, 2},
			// 0xffff_ffff_fff0 from a 48-bit counter is -16; +32.
			{"fake-width", 0, 16, 1, 0},
			// Bits above a 40-bit width are dropped; 7 + 2^40.
			{"fake-offset", 0, 1<<40 + 7, 1, 0},
			{"fake-width64", 0, 0, 1, 0},
			// No counter, or no cap_user_rdpmc: -1 without an rdpmc.
			{"fake-index0", -1, 0, 0, -1},
			{"fake-nocap", -1, 0, 0, -1},
		}
		for _, tt := range tests {
			rc, val := lines.i64(t, tt.name, "rc"), lines.u64(t, tt.name, "val")
			reads, counter := lines.i64(t, tt.name, "reads"), lines.i64(t, tt.name, "counter")
			if rc != tt.rc || val != tt.val || reads != tt.reads || counter != tt.counter {
				t.Errorf("%s: rc %d val %d rdpmc calls %d counter %d; want rc %d val %d calls %d counter %d",
					tt.name, rc, val, reads, counter, tt.rc, tt.val, tt.reads, tt.counter)
			}
		}
	})

	// checkOpen checks an event that opened: read(2) works and advances,
	// the capabilities word is where the header says (the kernel always
	// sets cap_bit0_is_deprecated), and close closes the descriptor.
	checkOpen := func(t *testing.T, name string) {
		if fd0, fd1 := lines.i64(t, name, "fd0"), lines.i64(t, name, "fd1"); fd0 != 0 || fd1 != 0 {
			t.Errorf("%s: blpp_pmu_read_fd returned %d, %d", name, fd0, fd1)
		}
		if v0, v1 := lines.u64(t, name, "v0"), lines.u64(t, name, "v1"); v1 <= v0 {
			t.Errorf("%s: read(2) count did not advance across a busy loop: %d then %d", name, v0, v1)
		}
		if caps := lines.u64(t, name, "caps"); caps&2 == 0 {
			t.Errorf("%s: capabilities %#x without cap_bit0_is_deprecated: wrong offset?", name, caps)
		}
		if lines.i64(t, name, "closed_fd") != -1 || lines.i64(t, name, "closed_page") != 0 {
			t.Errorf("%s: blpp_pmu_close left the event open", name)
		}
		if rc := lines.i64(t, name, "after_close"); rc != -int64(syscall.EBADF) {
			t.Errorf("%s: read(2) after close returned %d, want -EBADF", name, rc)
		}
	}

	t.Run("task-clock", func(t *testing.T) {
		if rc := lines.i64(t, "task-clock", "open"); rc != 0 {
			t.Fatalf("blpp_pmu_open(task-clock) = %d (%v)", rc, syscall.Errno(-rc))
		}
		checkOpen(t, "task-clock")
		// A software event has no hardware counter: no rdpmc.
		if idx, rd := lines.i64(t, "task-clock", "index"), lines.i64(t, "task-clock", "rd0"); idx != 0 || rd != -1 {
			t.Errorf("task-clock: index %d, blpp_pmu_read %d; want 0 and -1", idx, rd)
		}
	})

	// Hardware events may or may not exist here; blpp_pmu_open must agree
	// with counters.Probe, which encodes perf_event_attr on its own.
	for _, name := range []string{"cycles", "instructions"} {
		t.Run(name, func(t *testing.T) {
			spec, _ := counters.Lookup(name)
			st := counters.Probe(spec)
			rc := lines.i64(t, name, "open")
			if rc != 0 {
				if rc >= 0 || lines.i64(t, name, "fd") != -1 {
					t.Fatalf("blpp_pmu_open(%s) = %d, fd %d; want 0 or -errno and a closed event", name, rc, lines.i64(t, name, "fd"))
				}
				t.Logf("%s: blpp_pmu_open = %d (%v); counters: %s", name, rc, syscall.Errno(-rc), st.Describe(spec))
				if st.Works {
					t.Errorf("blpp_pmu_open(%s) failed, but counters.Probe opened it", name)
				}
				return
			}
			if !st.Works {
				t.Errorf("blpp_pmu_open(%s) works, but counters.Probe says %s", name, st.Reason)
			}
			checkOpen(t, name)
			if lines.i64(t, name, "rdpmc") != 1 || lines.i64(t, name, "rd0") != 0 || lines.i64(t, name, "rd1") != 0 {
				t.Logf("%s: opened, no rdpmc (caps %#x, index %d)", name, lines.u64(t, name, "caps"), lines.i64(t, name, "index"))
				return
			}
			// Read with rdpmc right after read(2): never behind it, and
			// advancing across the busy loop.
			v0, v1 := lines.u64(t, name, "v0"), lines.u64(t, name, "v1")
			r0, r1 := lines.u64(t, name, "r0"), lines.u64(t, name, "r1")
			if r0 < v0 || r1 < v1 || r1 <= r0 {
				t.Errorf("%s: read(2) %d, %d; rdpmc %d, %d", name, v0, v1, r0, r1)
			}
			t.Logf("%s: rdpmc works (%d then %d)", name, r0, r1)
		})
	}

	t.Run("tsc", func(t *testing.T) {
		if t0, t1 := lines.u64(t, "tsc", "t0"), lines.u64(t, "tsc", "t1"); t1 <= t0 {
			t.Errorf("rdtsc did not advance: %d then %d", t0, t1)
		}
	})
}
