package rewriter_test

import (
	"debug/elf"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// TestColdPartsUnwind: every function's cold part lies after all hot
// parts, under a symbol of its own, and is described by an FDE of its
// own, from its first byte to its last, wherever the hot part has one
// (decision 150): signals, exceptions and the runtime's unwinding of
// abnormal ends find the cold code's frames through it. With the cold
// code left after each function's trampolines (ColdInline) there is no
// cold part, and the test fails.
func TestColdPartsUnwind(t *testing.T) {
	for _, c := range []struct {
		src  string
		cfg  fixture.Config
		opts rewriter.Options
	}{
		{"cycles.c", fixture.Config{CC: "gcc", Opt: "-O2"}, rewriter.Options{}},
		{"cycles.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true}, rewriter.Options{NoContext: true}},
		{"names.c", fixture.Config{CC: "clang", Opt: "-O2", PIE: true}, rewriter.Options{}},
	} {
		what := c.src + " " + c.cfg.String()
		orig := fixture.Build(t, c.src, c.cfg)
		inst := rewriteWith(t, orig, filepath.Join(t.TempDir(), "prog.blpp"), c.opts)
		f, err := elf.Open(inst)
		if err != nil {
			t.Fatal(err)
		}
		syms, err := f.Symbols()
		if err != nil {
			t.Fatal(err)
		}
		text, eh := f.Section(".blpp.text"), f.Section(".eh_frame")
		if text == nil || eh == nil {
			t.Fatalf("%s: no .blpp.text or .eh_frame", what)
		}
		data, err := eh.Data()
		if err != nil {
			t.Fatal(err)
		}
		var opts ehframe.Options
		if got := f.Section(".got"); got != nil {
			opts.DataBase = got.Addr
		}
		frame, err := ehframe.ParseFrame(data, eh.Addr, opts)
		f.Close()
		if err != nil {
			t.Fatalf("%s: the output's .eh_frame: %v", what, err)
		}
		hot := map[string]elf.Symbol{}
		for _, s := range syms {
			if s.Value >= text.Addr && s.Value < text.Addr+text.Size && !strings.HasSuffix(s.Name, ".blpp.cold") {
				hot[s.Name] = s
			}
		}
		parts, described := 0, 0
		var hotEnd uint64
		for _, s := range hot {
			hotEnd = max(hotEnd, s.Value+s.Size)
		}
		for _, s := range syms {
			name, ok := strings.CutSuffix(s.Name, ".blpp.cold")
			if !ok {
				continue
			}
			parts++
			h, ok := hot[name]
			if !ok {
				t.Errorf("%s: cold part %s without a hot part", what, s.Name)
				continue
			}
			if s.Value < hotEnd || s.Size == 0 {
				t.Errorf("%s: cold part %s at %#x+%d, among the hot parts (which end at %#x)", what, s.Name, s.Value, s.Size, hotEnd)
			}
			if frame.Find(h.Value) == nil {
				continue // no unwind information for the function
			}
			described++
			e := frame.Find(s.Value)
			if e == nil || e.Begin != s.Value || e.End != s.Value+s.Size {
				t.Errorf("%s: cold part %s [%#x, %#x): FDE %+v, want one of its own", what, s.Name, s.Value, s.Value+s.Size, e)
				continue
			}
			if _, err := e.AppendRows(nil); err != nil {
				t.Errorf("%s: cold part %s: rows: %v", what, s.Name, err)
			}
		}
		if parts == 0 || described == 0 {
			t.Errorf("%s: %d cold parts, %d of them with unwind information", what, parts, described)
		}
	}
}
