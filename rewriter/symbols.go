package rewriter

import (
	"slices"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/rewriter/enc"
)

// relocatedSymbols names the instrumented copies, so that debuggers and
// backtrace_symbols(3) show function names for frames in relocated code
// (which has no DWARF: gdb then falls back to the closest symbol, and
// glibc's dladdr knows only .dynsym). Every function symbol of .symtab or
// .dynsym whose value is an instrumented function's original entry,
// aliases included, gets a symbol of the same name over the copy's whole
// extent [fg.start, fg.end) of the new code: body, trampolines and slow
// paths alike, so a return address anywhere in it is named. A name found
// in .dynsym is added there too (elfw.Symbol.Dynamic) when dynamic is
// set: not in a shared object, where a second definition of an exported
// name could change what the dynamic linker and dlsym resolve it to, and
// the versions other objects bound to.
//
// GNU IFUNC symbols are left out: their value is the resolver, and a
// second, ordinary function symbol of that name would tell a debugger the
// resolver is the function.
//
// Instrumented code enters a copy elsewhere than at its start: a direct
// call at the direct entry, past the checks the start makes (decision
// 100), a closed function's call at a closed callee's second entry
// (decision 61), a tail jump at the tail entry, a joined procedure's
// other entry at its own. Each such place gets a .symtab symbol of the entry's names
// too, from there to the copy's end, so that a debugger's breakpoint on
// the function's name (gdb sets one at every symbol of the name) stops
// at every entry, whichever way the function was called; a return
// address is named the same either way. addrOf gives a label's address.
func relocatedSymbols(b *cfg.Binary, g *gen, codeAddr uint64, dynamic bool, addrOf func(enc.Label) uint64) []elfw.Symbol {
	byAddr := map[uint64][]cfg.Symbol{}
	for _, s := range b.Symbols() {
		if !s.IFunc && s.Name != "" {
			byAddr[s.Addr] = append(byAddr[s.Addr], s)
		}
	}
	var out []elfw.Symbol
	for _, fg := range g.funcs {
		addr, size := codeAddr+uint64(fg.start), uint64(fg.end-fg.start)
		at := map[string]int{} // name → index in out
		first := len(out)
		for _, s := range byAddr[fg.f.Func.Addr] {
			dyn := s.Dynamic && dynamic
			if i, ok := at[s.Name]; ok {
				out[i].Dynamic = out[i].Dynamic || dyn
				continue
			}
			at[s.Name] = len(out)
			out = append(out, elfw.Symbol{Name: s.Name, Addr: addr, Size: size, Dynamic: dyn})
		}
		// The other entries, each once, inside the copy and not at its
		// start: the function's names as just made, an other entry's own.
		end := addr + size
		placed := []uint64{addr}
		name := func(e enc.Label, names []string) {
			a := addrOf(e)
			if a < addr || a >= end || slices.Contains(placed, a) {
				return
			}
			placed = append(placed, a)
			for _, n := range names {
				out = append(out, elfw.Symbol{Name: n, Addr: a, Size: end - a})
			}
		}
		var own []string
		for _, o := range out[first:] {
			own = append(own, o.Name)
		}
		name(fg.entry, own)
		if fg.closed {
			name(fg.internal, own)
		}
		for i, ok := range fg.hasDirect {
			if ok {
				name(fg.direct[i], own)
			}
		}
		if l, ok := g.tailEntries[fg.f.Func.Addr]; ok {
			name(l, own)
		}
		for _, x := range fg.others {
			var names []string
			for _, s := range byAddr[x.addr] {
				if !slices.Contains(names, s.Name) {
					names = append(names, s.Name)
				}
			}
			name(x.label, names)
		}
	}
	return out
}
