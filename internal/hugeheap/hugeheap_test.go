package hugeheap

import (
	"bufio"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

func TestCandidates(t *testing.T) {
	maps := `55d0c0a00000-55d0c0c00000 r-xp 00000000 fd:01 1234   /usr/bin/blpp
c000000000-c004000000 rw-p 00000000 00:00 0 
7f0000000000-7f0000100000 rw-p 00000000 00:00 0 
7f0000200000-7f0000600000 rw-p 00000000 00:00 0                          [anon:Go: heap]
7f0000600000-7f0000a00000 rw-p 00000000 fd:01 99   /tmp/data
7f0000a00000-7f0000e00000 rw-s 00000000 00:05 7    /dev/zero (deleted)
7f0000e00000-7f0001200000 r--p 00000000 00:00 0 
7ffc00000000-7ffc00400000 rw-p 00000000 00:00 0                          [stack]
7ffd00000000-7ffd00200000 rw-p 00000000 00:00 0
zzzz-7ffd00400000 rw-p 00000000 00:00 0
7ffd00800000 rw-p 00000000 00:00 0
7ffd00a00000-7ffd00900000 rw-p 00000000 00:00 0`
	got := Candidates([]byte(maps))
	want := []Region{
		{0xc000000000, 0xc004000000},     // the heap, unnamed
		{0x7f0000200000, 0x7f0000600000}, // named by the runtime
		{0x7ffd00000000, 0x7ffd00200000}, // exactly one huge page, no newline after it
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Candidates = %#x, want %#x", got, want)
	}
}

func TestReserveSize(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		expect, limit, mem uint64
		mode               int
		want               uint64
	}{
		{7000 * mib, 1850 * mib, 24 << 30, 0, 1850 * mib}, // the memory limit holds it
		{400 * mib, 1850 * mib, 24 << 30, 0, 400 * mib},
		{400 * mib, 1850 * mib, 512 * mib, 1, 256 * mib}, // half the machine
		{400 * mib, 1850 * mib, 0, 0, 400 * mib},         // machine size unknown
		{400 * mib, 1850 * mib, 24 << 30, 2, 0},          // strict overcommit
		{10 * mib, 1850 * mib, 24 << 30, 0, 0},           // too small to matter
	} {
		if got := ReserveSize(c.expect, c.limit, c.mem, c.mode); got != c.want {
			t.Errorf("ReserveSize(%d, %d, %d, %d) = %d, want %d", c.expect, c.limit, c.mem, c.mode, got, c.want)
		}
	}
}

// TestStartAdvises checks, in this process, that the heap a large
// allocation lands in carries the advice (VmFlags "hg" in
// /proc/self/smaps [proc_pid_smaps(5)]) once Start has run, and that the
// allocation lies in what Start reserved (the region advised first).
func TestStartAdvises(t *testing.T) {
	if m := Mode(); m != "madvise" {
		t.Skipf("transparent huge pages are %q here, not madvise: Start does nothing", m)
	}
	stop := Start(256 << 20)
	defer stop()
	b := make([]byte, 96<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	addr := uint64(uintptr(unsafe.Pointer(&b[0])))
	flags, ok := vmFlags(t, addr)
	if !ok {
		t.Fatalf("no mapping holds %#x", addr)
	}
	if !strings.Contains(" "+flags+" ", " hg ") {
		t.Errorf("the mapping of a 96 MiB allocation at %#x has VmFlags %q: no hg (MADV_HUGEPAGE)", addr, flags)
	}
}

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that
// holds addr.
func vmFlags(t *testing.T, addr uint64) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if fs := strings.Fields(l); len(fs) > 1 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			lo, hi, _ := strings.Cut(fs[0], "-")
			s, err1 := strconv.ParseUint(lo, 16, 64)
			e, err2 := strconv.ParseUint(hi, 16, 64)
			in = err1 == nil && err2 == nil && s <= addr && addr < e
			continue
		}
		if in && strings.HasPrefix(l, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(l, "VmFlags:")), true
		}
	}
	return "", false
}

// TestReserveAddressLimited runs a child of this test under a 3 GiB
// limit of its address space (ulimit -v) and has it reserve for 8 GiB:
// the reservation must step aside (addressLimited), where the runtime,
// unable to map it, would stop the process.
func TestReserveAddressLimited(t *testing.T) {
	if os.Getenv("HUGEHEAP_CHILD") == "1" {
		Reserve(8 << 30)
		b := make([]byte, 64<<20)
		b[len(b)-1] = 1
		return
	}
	if Mode() != "madvise" {
		t.Skipf("transparent huge pages are %q here, not madvise: Reserve does nothing", Mode())
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	cmd := exec.Command(sh, "-c", `ulimit -v 3145728 && exec "$0" -test.run='^TestReserveAddressLimited$' -test.count=1`, os.Args[0])
	cmd.Env = append(os.Environ(), "HUGEHEAP_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child under ulimit -v: %v\n%s", err, out)
	}
}
