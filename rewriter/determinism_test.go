package rewriter_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/blpp/blpp/rewriter"
)

// TestDeterministic rewrites the same binary several times: the outputs
// must be byte-identical (parallel analysis and map order must not leak
// into the result). bash is a stripped PIE with .cold fragments found by
// evidence, the part that once depended on map order. The rewrites use
// 4 workers, 1 and the default: the chunks emitted in parallel, joined in
// order, and the decoders' tables filled in another order must give the
// bytes of one worker alone.
func TestDeterministic(t *testing.T) {
	data, err := os.ReadFile("/bin/bash")
	if err != nil {
		t.Skip("no /bin/bash")
	}
	var first []byte
	for i := 0; i < 3; i++ {
		out, _, err := rewriter.Rewrite(data, rewriter.Options{Workers: []int{4, 1, 0}[i]})
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = out
		} else if !bytes.Equal(out, first) {
			t.Fatalf("rewrite %d differs from the first", i)
		}
	}
}
