package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestAnnotateMarksMissedBlocks: as in gcov, a '*' after a line's count
// says that some block holding the line's code never ran; a line all of
// whose blocks ran has none, however hot.
func TestAnnotateMarksMissedBlocks(t *testing.T) {
	m := exModel(t, false)
	main := FuncID{Func: 0}
	// Line 11 is in main's blocks 1 and 3: block 3 never ran here.
	m.Profile(main).Blocks[3] = 0
	var src bytes.Buffer
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&src, "/* line %d */\n", i)
	}
	var out bytes.Buffer
	read := func(string) ([]byte, error) { return src.Bytes(), nil }
	if err := Annotate(&out, m, AnnotateOptions{Target: "main", ReadFile: read}); err != nil {
		t.Fatal(err)
	}
	marks := map[int]bool{}
	for _, l := range strings.Split(out.String(), "\n") {
		var line int
		col, rest, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d:", &line); err != nil {
			continue
		}
		marks[line] = strings.HasSuffix(col, "*")
	}
	for line, want := range map[int]bool{10: false, 11: true, 12: false, 14: false} {
		if got, ok := marks[line]; !ok || got != want {
			t.Errorf("line %d: marked %v (listed %v), want %v\n%s", line, got, ok, want, out.String())
		}
	}
}

// TestPPText: a change is never printed as +0.00 pp.
func TestPPText(t *testing.T) {
	for d, want := range map[float64]string{1.5: "+1.50", -0.25: "-0.25", 0.05: "+0.05", 0.0012: "+0.0012", -0.00004567: "-0.000046", 0: "+0.00"} {
		if got := ppText(d); got != want {
			t.Errorf("ppText(%g) = %q, want %q", d, got, want)
		}
	}
}
