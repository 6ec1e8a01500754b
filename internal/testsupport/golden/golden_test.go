package golden

import "testing"

func TestName(t *testing.T) {
	if got := Name("view", "paths", "context", "a/b"); got != "view-paths-context-a_b.golden" {
		t.Errorf("Name = %q", got)
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct{ want, got, diff string }{
		{"a\nb\nc\n", "a\nx\nc\n", "--- want\n+++ got\n a\n-b\n+x\n c\n"},
		{"1\n2\n3\n4\n5\n6\n", "1\n2\n3\n4\n5\n7\n", "--- want\n+++ got\n@@ 4 common lines @@\n 5\n-6\n+7\n"},
		{"0\n1\n2\n3\n4\n5\n", "x\n1\n2\n3\n4\n5\n", "--- want\n+++ got\n-0\n+x\n 1\n@@ 4 common lines @@\n"},
		{"a\n", "a\nb\n", "--- want\n+++ got\n a\n+b\n"},
	} {
		if got := Diff([]byte(tc.want), []byte(tc.got)); got != tc.diff {
			t.Errorf("Diff(%q, %q) =\n%s\nwant\n%s", tc.want, tc.got, got, tc.diff)
		}
	}
}
