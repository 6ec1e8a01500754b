package rewriter_test

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/blpp/blpp/rewriter"
)

// TestReleaseSameOutput: a layout that drops each function's analysis
// once its code is appended, as for the largest libraries, writes the
// same file and summary as one that keeps it. In the first case the
// code generator refuses one of libc's functions (FailEmit), so the
// first layout fails and the next one starts from a new analysis
// (Rewrite's rounds).
func TestReleaseSameOutput(t *testing.T) {
	for _, tc := range []struct {
		path string
		opts rewriter.Options
	}{
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", rewriter.FailEmit(rewriter.Options{}, "qsort_r")},
		{"/usr/lib/x86_64-linux-gnu/libc.so.6", rewriter.Options{NoContext: true}},
		{"/bin/bash", rewriter.Options{}},
	} {
		data, err := os.ReadFile(tc.path)
		if err != nil {
			t.Logf("%s: %v", tc.path, err)
			continue
		}
		keep, ksum, err := rewriter.Rewrite(data, tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		drop, dsum, err := rewriter.Rewrite(data, rewriter.ForceRelease(tc.opts))
		if err != nil {
			t.Fatalf("%s, dropping the analysis: %v", tc.path, err)
		}
		if !bytes.Equal(keep, drop) {
			t.Errorf("%s (context %v): dropping the analysis changes the output", tc.path, !tc.opts.NoContext)
		}
		if !reflect.DeepEqual(ksum, dsum) {
			t.Errorf("%s: dropping the analysis changes the summary:\n%+v\n%+v", tc.path, dsum, ksum)
		}
		if testing.Short() {
			break
		}
	}
}
