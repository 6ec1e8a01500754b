package rewriter

import (
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
		for _, s := range byAddr[fg.f.Func.Addr] {
			dyn := s.Dynamic && dynamic
			if i, ok := at[s.Name]; ok {
				out[i].Dynamic = out[i].Dynamic || dyn
				continue
			}
			at[s.Name] = len(out)
			out = append(out, elfw.Symbol{Name: s.Name, Addr: addr, Size: size, Dynamic: dyn})
		}
		end := addr + size
		done := map[uint64]bool{addr: true}
		name := func(e enc.Label, orig uint64) {
			a := addrOf(e)
			if done[a] || a < addr || a >= end {
				return
			}
			done[a] = true
			seen := map[string]bool{}
			for _, s := range byAddr[orig] {
				if !seen[s.Name] {
					seen[s.Name] = true
					out = append(out, elfw.Symbol{Name: s.Name, Addr: a, Size: end - a})
				}
			}
		}
		fa := fg.f.Func.Addr
		name(fg.entry, fa)
		if fg.closed {
			name(fg.internal, fa)
		}
		for i, ok := range fg.hasDirect {
			if ok {
				name(fg.direct[i], fa)
			}
		}
		if l, ok := g.tailEntries[fa]; ok {
			name(l, fa)
		}
		for _, x := range fg.others {
			name(x.label, x.addr)
		}
	}
	return out
}
