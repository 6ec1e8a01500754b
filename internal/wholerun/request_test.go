package wholerun

import "testing"

func TestParseModuleRequest(t *testing.T) {
	for _, c := range []struct {
		args []string
		want ModuleRequest
	}{
		{[]string{"--cache-dir", "/c", "--module-tag", "7", "/lib/x.so"}, ModuleRequest{CacheDir: "/c", Tag: 7, Lib: "/lib/x.so"}},
		{[]string{"--exclude-lib", "z$", "--cache-dir", "/c", "--module-tag", "3", "/a.so"}, ModuleRequest{CacheDir: "/c", ExcludeLib: "z$", Tag: 3, Lib: "/a.so"}},
		{[]string{"--module-tag", "x", "/a.so"}, ModuleRequest{Lib: "/a.so"}},
		{[]string{"/a.so", "--cache-dir"}, ModuleRequest{Lib: "--cache-dir"}},
		{nil, ModuleRequest{}},
	} {
		if got := ParseModuleRequest(c.args); got != c.want {
			t.Errorf("%q: %+v, want %+v", c.args, got, c.want)
		}
	}
}
