package rewriter

import (
	"bytes"
	"debug/elf"
	"strings"

	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/runtime"
)

// runtimeSymbols names the runtime's functions in the rewritten binary,
// placed with its text at rtText: its blpp_* entry points under their own
// names, its internal functions as "blpp_rt.NAME", so that they cannot be
// taken for the program's. Debuggers and profilers then name runtime
// frames, and callgrind can dump its counters when blpp_fini returns,
// which is when the profile has been written: the same-run exactness
// oracle (internal/testsupport/corpus) tells the program's work before the write from
// what runs after it (static libc's exit path). The symbols come from the
// embedded runtime object's own symbol table; a runtime without one gives
// none.
//
// The runtime's signal restorer (blpp_sigreturn) is named __restore_rt,
// like glibc's, whose bytes it has: gdb takes a frame for a signal
// trampoline by that name (or by its bytes, but only inside a function
// whose name says sigaction), and a backtrace from a handler the runtime
// runs, or from the runtime itself at a fatal signal, then goes on into
// the interrupted code (decision 159).
func runtimeSymbols(rtText uint64, img *runtime.Image) []elfw.Symbol {
	f, err := elf.NewFile(bytes.NewReader(runtime.ImageBytes()))
	if err != nil {
		return nil
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil
	}
	var out []elfw.Symbol
	seen := map[string]bool{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || s.Value+s.Size > uint64(len(img.Text)) {
			continue
		}
		name := s.Name
		if name == runtime.SymSigreturn {
			name = "__restore_rt"
		} else if !strings.HasPrefix(name, "blpp_") {
			name = "blpp_rt." + name
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, elfw.Symbol{Name: name, Addr: rtText + s.Value, Size: s.Size})
	}
	return out
}
