package cct

import (
	"errors"
	"strings"
	"testing"
)

// smallFuncs is a function table that smallProfile fits.
func smallFuncs() []FuncInfo {
	return []FuncInfo{
		{NumPaths: 3, NumBlocks: 3, NumCallSites: 2},
		{NumPaths: 1, NumBlocks: 1},
		{NumPaths: 1, NumBlocks: 1},
		{NumPaths: 2, NumBlocks: 1},
	}
}

func TestCheckAgainst(t *testing.T) {
	if err := smallProfile().CheckAgainst(smallFuncs()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		profile func(p *Profile)
		funcs   func(f []FuncInfo) []FuncInfo
		msg     string
		where   [4]int // thread, record, path, partial
	}{
		{"no table", nil, func(f []FuncInfo) []FuncInfo { return nil },
			"function 0, but the binary has 0 functions", [4]int{0, 0, -1, -1}},
		{"function index", nil, func(f []FuncInfo) []FuncInfo { return f[:3] },
			"function 3, but the binary has 3 functions", [4]int{0, 1, -1, -1}},
		{"path id", nil, func(f []FuncInfo) []FuncInfo { f[0].NumPaths = 2; return f },
			"path id 2, but function 0 has 2 paths", [4]int{0, 0, 1, -1}},
		{"uninstrumented", nil, func(f []FuncInfo) []FuncInfo { f[3].NumPaths = 0; return f },
			"path id 1, but function 3 has 0 paths", [4]int{0, 1, 0, -1}},
		{"call site", nil, func(f []FuncInfo) []FuncInfo { f[0].NumCallSites = 0; return f },
			"call site 1, but function 0 has 0 call sites", [4]int{0, 1, -1, -1}},
		{"block", nil, func(f []FuncInfo) []FuncInfo { f[0].NumBlocks = 2; return f },
			"block 2, but function 0 has 2 blocks", [4]int{0, -1, -1, 0}},
		{"partial function", func(p *Profile) {
			p.Threads[0].Partials = append(p.Threads[0].Partials, Partial{Record: -1, Func: 4, Count: 1})
		}, nil, "function 4, but the binary has 4 functions", [4]int{0, -1, -1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, f := smallProfile(), smallFuncs()
			if c.profile != nil {
				c.profile(p)
			}
			if c.funcs != nil {
				f = c.funcs(f)
			}
			err := p.CheckAgainst(f)
			var me *ModelError
			if !errors.As(err, &me) || !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("CheckAgainst: %v, want ErrMismatch with %q", err, c.msg)
			}
			if got := [4]int{me.Thread, me.Record, me.Path, me.Partial}; got != c.where {
				t.Fatalf("%v: located at %v, want %v", err, got, c.where)
			}
		})
	}
}

// TestCheckAgainstInvalid: an invalid profile does not make CheckAgainst
// panic.
func TestCheckAgainstInvalid(t *testing.T) {
	for _, c := range modelCases {
		p := smallProfile()
		c.break_(p)
		p.CheckAgainst(smallFuncs())
	}
}

// TestCheckAgainstBlockUnknown: a partial path of unknown location is
// valid whatever the function's block count.
func TestCheckAgainstBlockUnknown(t *testing.T) {
	p := &Profile{Version: Version, Metrics: []Metric{{Name: FreqMetric}},
		Threads: []Thread{{TID: 1, Partials: []Partial{{Record: -1, Func: 0, Block: BlockUnknown, Reg: 3, Count: 1}}}}}
	if err := p.CheckAgainst([]FuncInfo{{NumPaths: 10, NumBlocks: 2}}); err != nil {
		t.Fatalf("BlockUnknown refused: %v", err)
	}
	p.Threads[0].Partials[0].Block = 2
	if err := p.CheckAgainst([]FuncInfo{{NumPaths: 10, NumBlocks: 2}}); err == nil {
		t.Fatal("block 2 of a 2-block function accepted")
	}
}

// TestCheckModules: each module's result is its own first misfit, as if
// checked alone, whatever the other modules' results; a call site
// belongs to the caller's module.
func TestCheckModules(t *testing.T) {
	p := smallProfile()
	// Record 1 (function 3, called from record 0's call site 1) moves to
	// module 5 as its function 1; record 0 stays in module 0.
	p.Threads[0].Records[1].Func = Fid(5, 1)
	p.Threads[0].Partials = append(p.Threads[0].Partials, Partial{Record: 1, Func: Fid(5, 1), Block: 0, Count: 1})
	good0 := func() []FuncInfo { return []FuncInfo{{NumPaths: 3, NumBlocks: 3, NumCallSites: 1}} }
	good5 := func() []FuncInfo { return []FuncInfo{{}, {NumPaths: 2, NumBlocks: 1}} }
	noSite := []FuncInfo{{NumPaths: 3, NumBlocks: 3}}
	fewPaths := []FuncInfo{{}, {NumPaths: 1, NumBlocks: 1}}
	noBlocks := []FuncInfo{{}, {NumPaths: 2}}
	cases := []struct {
		name string
		mods []ModuleFuncs
		msgs []string // "" where the module fits
	}{
		{"all fit", []ModuleFuncs{{0, good0()}, {5, good5()}}, []string{"", ""}},
		{"caller's call site", []ModuleFuncs{{0, noSite}, {5, good5()}}, []string{"call site 1, but function 0 has 0 call sites", ""}},
		{"both", []ModuleFuncs{{5, fewPaths}, {0, noSite}}, []string{"path id 1, but function 5242881 has 1 paths", "call site 1"}},
		{"partial", []ModuleFuncs{{0, good0()}, {5, noBlocks}}, []string{"", "block 0, but function 5242881 has 0 blocks"}},
		{"one tag twice", []ModuleFuncs{{5, good5()}, {5, fewPaths}, {5, noBlocks}}, []string{"", "path id 1", "block 0"}},
		{"no such tag", []ModuleFuncs{{7, nil}, {MaxTag + 1, nil}}, []string{"", ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := p.CheckModules(c.mods)
			if len(errs) != len(c.mods) {
				t.Fatalf("%d results for %d modules", len(errs), len(c.mods))
			}
			for i, err := range errs {
				if c.msgs[i] == "" {
					if err != nil {
						t.Errorf("module %d: %v, want none", i, err)
					}
					continue
				}
				if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), c.msgs[i]) {
					t.Errorf("module %d: %v, want ErrMismatch with %q", i, err, c.msgs[i])
				}
				// The same misfit as the module checked alone.
				if alone := p.CheckModule(c.mods[i].Tag, c.mods[i].Funcs); alone == nil || alone.Error() != err.Error() {
					t.Errorf("module %d: %v, alone %v", i, err, alone)
				}
			}
		})
	}
}
