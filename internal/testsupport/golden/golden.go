// Package golden is the one golden-file helper of blpp's tests, in the
// manner of pprof's: a golden file lives under the test package's
// testdata/, its name encodes the options that produced it (Name), `go
// test -update` rewrites it, and a mismatch is shown as a line diff.
//
// It trusts nothing but the file system: a missing golden file fails the
// test with a hint to run -update.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Updating reports whether the test run was asked to rewrite golden files
// (-update).
func Updating() bool { return *update }

// Name builds a golden file name from the parts that produced the output:
// the parts joined by '-', each '/' made '_', ending in ".golden"
// (Name("view", "paths", "--context", "a/b") is
// "view-paths---context-a_b.golden").
func Name(parts ...string) string {
	return strings.ReplaceAll(strings.Join(parts, "-"), "/", "_") + ".golden"
}

// Check compares got with testdata/name; with -update it writes got
// there instead.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n%s", path, Diff(want, got))
	}
}

// CheckString is Check for text.
func CheckString(t testing.TB, name, got string) {
	t.Helper()
	Check(t, name, []byte(got))
}

// maxDiffLines bounds the quadratic line diff; longer inputs are shown
// from their first differing line.
const maxDiffLines = 3000

// Diff is a line diff of want and got: lines only in want start with
// "-", lines only in got with "+", common lines with " "; runs of more
// than three common lines are elided.
func Diff(want, got []byte) string {
	a, b := splitLines(want), splitLines(got)
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		return fmt.Sprintf("first difference at line %d:\n-%s\n+%s\n", i+1, at(a, i), at(b, i))
	}
	// lcs[i][j]: length of the longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ls []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ls = append(ls, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ls = append(ls, line{'-', a[i]})
			i++
		default:
			ls = append(ls, line{'+', b[j]})
			j++
		}
	}
	var out strings.Builder
	out.WriteString("--- want\n+++ got\n")
	for k := 0; k < len(ls); k++ {
		if ls[k].op == ' ' {
			e := k
			for e < len(ls) && ls[e].op == ' ' {
				e++
			}
			if e-k > 3 {
				lo, hi := k, e // the elided run is ls[lo:hi]
				if k > 0 {
					fmt.Fprintf(&out, " %s\n", ls[k].text)
					lo++
				}
				if e < len(ls) {
					hi--
				}
				fmt.Fprintf(&out, "@@ %d common lines @@\n", hi-lo)
				if e < len(ls) {
					fmt.Fprintf(&out, " %s\n", ls[e-1].text)
				}
				k = e - 1
				continue
			}
		}
		fmt.Fprintf(&out, "%c%s\n", ls[k].op, ls[k].text)
	}
	return out.String()
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func at(ls []string, i int) string {
	if i < len(ls) {
		return ls[i]
	}
	return "(end of file)"
}
