package asfork

import (
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestFork runs testdata/asfork.c natively and with Fork: natively its
// vfork child's store and its posix_spawn child's failure reach the
// parent through the memory they share; made forks, neither does (as
// under valgrind), and both calls were changed.
func TestFork(t *testing.T) {
	for _, c := range []fixture.Config{{CC: "gcc", Opt: "-O2", PIE: true}, {CC: "gcc", Opt: "-O2", Static: true}} {
		prog := fixture.Build(t, "asfork.c", c)
		for _, tc := range []struct {
			fork   bool
			want   string
			forked int
		}{
			{false, "vfork: seen 1, status 3\nposix_spawn: 2, status 0\n", 0},
			{true, "vfork: seen 0, status 3\nposix_spawn: 0, status 127\n", 2},
		} {
			r, err := Run(prog, Options{Fork: tc.fork})
			if err != nil {
				t.Fatal(err)
			}
			if r.Code != 0 || string(r.Stdout) != tc.want || r.Forked != tc.forked {
				t.Errorf("%s fork=%v: exit %d, %d calls changed, stdout %q; want exit 0, %d, %q (stderr %q)",
					c, tc.fork, r.Code, r.Forked, r.Stdout, tc.forked, tc.want, r.Stderr)
			}
		}
	}
}
