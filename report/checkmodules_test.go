package report

import (
	"testing"

	"github.com/blpp/blpp/meta"
)

// TestCheckModules: a profile that does not fit a module's metadata is
// refused with that module's first misfit, the first module's in the
// profile's order when several misfit, a misfit of the functions
// (checkMatch's) before one of their counts (cct.Profile.CheckModules).
func TestCheckModules(t *testing.T) {
	uninstrument := func(fs []meta.Func, fn int) {
		fs[fn].Instrumented, fs[fn].Blocks, fs[fn].Edges, fs[fn].NumPaths = false, nil, nil, 0
	}
	cases := []struct {
		name     string
		exe, lib func(fs []meta.Func) []meta.Func
		want     string
	}{
		{"fits", nil, nil, ""},
		{"library's path count", nil, func(fs []meta.Func) []meta.Func { fs[fnA].NumPaths = 1; return fs },
			"module libx.so (tag 1, libx.so): cct: thread 0 record 1 path 1: path id 1, but function 1048577 has 1 paths"},
		{"executable's uninstrumented", func(fs []meta.Func) []meta.Func { uninstrument(fs, fnB); return fs }, nil,
			"the profile names function 2 (b) of module prog (tag 0, prog), which it does not instrument and whose entries it does not count"},
		{"both", func(fs []meta.Func) []meta.Func { uninstrument(fs, fnB); return fs }, func(fs []meta.Func) []meta.Func { fs[fnA].NumPaths = 1; return fs },
			"the profile names function 2 (b) of module prog (tag 0, prog), which it does not instrument and whose entries it does not count"},
		{"functions before counts", nil, func(fs []meta.Func) []meta.Func {
			fs[fnA].NumPaths = 1
			uninstrument(fs, fnHandler)
			return fs
		}, "the profile names function 3 (handler) of module libx.so (tag 1, libx.so), which it does not instrument and whose entries it does not count"},
		{"too few functions", nil, func(fs []meta.Func) []meta.Func { return fs[:1] },
			"the profile names function 1 of module libx.so (tag 1, libx.so), which has 1 functions"},
		{"partial", func(fs []meta.Func) []meta.Func { fs[fnMain].Blocks = nil; return fs }, nil,
			"module prog (tag 0, prog): cct: thread 0 partial 0: block 0, but function 0 has 0 blocks"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, lib := twoModuleProfile(t, 50)
			exe := viewTable()
			if c.exe != nil {
				exe.Funcs = c.exe(exe.Funcs)
			}
			if c.lib != nil {
				lib.Funcs = c.lib(lib.Funcs)
			}
			_, err := NewModelWith("prog", exe, p, nil, ModelOptions{Libs: map[uint32]ModuleFile{1: {Path: "libx.so", Table: lib}}})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || err.Error() != c.want):
				t.Fatalf("error %v, want %s", err, c.want)
			}
		})
	}
}
