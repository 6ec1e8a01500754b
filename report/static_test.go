package report

import (
	"fmt"
	"testing"
)

// TestHexAsPrintf: hex writes what "%#x" does, which reports and their
// JSON had before it stopped calling fmt.
func TestHexAsPrintf(t *testing.T) {
	for _, a := range []uint64{0, 1, 0xf, 0x10, 0x401000, 0xdeadbeefcafe, 1<<64 - 1} {
		if got, want := hex(a), fmt.Sprintf("%#x", a); got != want {
			t.Errorf("hex(%d) = %q, want %q", a, got, want)
		}
	}
}
