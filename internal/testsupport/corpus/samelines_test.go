package corpus_test

import "testing"

// TestSameLines: the sweep retries the original longer only for output
// that is the original's lines in another order, status and all.
func TestSameLines(t *testing.T) {
	o := func(out string, code int) outcome { return outcome{Stdout: []byte(out), Code: code} }
	for _, c := range []struct {
		want, got outcome
		same      bool
	}{
		{o("a\nb\nc\n", 0), o("b\na\nc\n", 0), true},
		{o("a\nb\n", 0), o("a\nb\n", 0), true},
		{o("a\nb\n", 0), o("a\nc\n", 0), false},
		{o("a\nb\n", 0), o("a\nb\nb\n", 0), false},
		{o("a\nb\n", 0), o("b\na\n", 1), false},
	} {
		if got := sameLines(c.want, c.got); got != c.same {
			t.Errorf("sameLines(%q, %q) = %v, want %v", c.want.Stdout, c.got.Stdout, got, c.same)
		}
	}
}
