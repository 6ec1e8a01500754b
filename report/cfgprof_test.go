package report

// Golden test of the profiled CFG in dot on the synthetic model of
// export_test.go (testdata/cfgprof-*.golden).

import (
	"bytes"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/golden"
)

func TestCFGProfileDotGolden(t *testing.T) {
	m := exModel(t, false)
	m.Debug = nil // the golden files show CFGs without line information
	m.Modules[0].Debug = m.Debug
	for _, tc := range []struct {
		name  string
		funcs string
		share float64
	}{{"cfgprof-work.golden", "work", 0}, {"cfgprof-all-share-0.5.golden", "", 0.5}} {
		funcs := m.MatchFuncs(func(n string) bool { return strings.Contains(n, tc.funcs) })
		var buf bytes.Buffer
		if err := CFGProfileDot(&buf, m, funcs, CFGProfileOptions{Share: tc.share}); err != nil {
			t.Fatal(err)
		}
		golden.CheckString(t, tc.name, buf.String())
		if !strings.Contains(buf.String(), "color=red") {
			t.Errorf("%s: no hot edge", tc.name)
		}
	}
	if err := CFGProfileDot(&bytes.Buffer{}, m, []FuncID{{Func: 2}}, CFGProfileOptions{}); err == nil {
		t.Error("an uninstrumented function was drawn")
	}
}
