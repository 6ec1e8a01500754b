package rewriter_test

import (
	"fmt"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// funcAddrs returns the addresses of the named functions of the build at
// path, failing t when one has no symbol.
func funcAddrs(t *testing.T, path string, names ...string) map[string]uint64 {
	t.Helper()
	all := fixture.FuncAddrs(t, path)
	out := map[string]uint64{}
	for _, n := range names {
		a, ok := all[n]
		if !ok {
			t.Fatalf("%s: no function symbol %s", path, n)
		}
		out[n] = a
	}
	return out
}

// symbolNames maps the entry of every function symbol of the build at
// path ("0x..." as the summary and the report write it) to its name.
func symbolNames(t *testing.T, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for n, a := range fixture.FuncAddrs(t, path) {
		out[fmt.Sprintf("%#x", a)] = n
	}
	return out
}
