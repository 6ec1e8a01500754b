package rewriter

// Thunks for C library functions the runtime must see called
// (decisions 94 and 101).
//
// Some functions of the C library change what the runtime keeps for the
// process, and the runtime has to take part: the ones that set signal
// actions (sigaction.go) and the clone wrappers that make a process in
// this memory (spawn.go). Where such a function is not instrumented (a
// PLT stub in an executable-only rewrite; glibc's __clone and __clone3,
// whose unwind tables the rewriter cannot follow), every direct call or
// jump to it from instrumented code goes to a thunk that loads the
// function's address into %r11 and jumps to the runtime's replacement,
// which calls it (or jumps to it) with the caller's arguments:
//
//	thunk: lea sigaction@plt(%rip),%r11; jmp blpp_libc_sigaction
//
// %r11 is free at a call: a PLT stub may clobber it anyway [SysV x86-64
// ABI 3.2.3].

import (
	"sort"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/rewriter/enc"
)

// thunkKind says which replacement a C library function gets.
type thunkKind uint8

const (
	thunkNone      thunkKind = iota
	thunkSigaction           // sigaction(sig, act, oact): blpp_libc_sigaction
	thunkSignal              // signal(sig, handler) returning the old one: blpp_libc_signal
	thunkClone               // clone(fn, stack, flags, arg, ...): blpp_libc_clone
	thunkClone3              // glibc's __clone3(args, size, fn, arg): blpp_libc_clone3
)

// stub is the runtime's replacement of a function of kind k, 0 when the
// runtime has none.
func (g *gen) thunkStub(k thunkKind) uint64 {
	switch k {
	case thunkSigaction:
		return g.stubs.LibcSigaction
	case thunkSignal:
		return g.stubs.LibcSignal
	case thunkClone:
		return g.stubs.LibcClone
	case thunkClone3:
		return g.stubs.LibcClone3
	}
	return 0
}

// callThunk is the thunk of one uninstrumented function.
type callThunk struct {
	addr  uint64 // the function's entry
	kind  thunkKind
	label enc.Label
}

// planThunks gives a thunk to every function of p the runtime must see
// called (thunkKindOf) that is not instrumented, so that gen.target sends
// calls and jumps to it there. It runs after the instrumented functions'
// entries are known (g.entries).
func (g *gen) planThunks(p *cfg.Program) {
	g.thunks = map[uint64]*callThunk{}
	for _, f := range p.Funcs {
		if _, inst := g.entries[f.Addr]; inst {
			continue // its own system calls go to the runtime
		}
		k := g.thunkKindOf(f)
		if k == thunkNone || g.thunkStub(k) == 0 {
			continue
		}
		if _, dup := g.thunks[f.Addr]; !dup {
			g.thunks[f.Addr] = &callThunk{addr: f.Addr, kind: k, label: g.buf.NewLabel()}
		}
	}
}

// thunkKindOf is the kind of thunk uninstrumented function f gets, by its
// names (sigSetter, cloneName) or, for glibc's __clone3 in a stripped
// library, by its code (isClone3Code).
func (g *gen) thunkKindOf(f *cfg.Function) thunkKind {
	for _, n := range append([]string{f.Name}, f.Aliases...) {
		if k := sigSetter(n); k != thunkNone {
			return k
		}
		if k := cloneName(n); k != thunkNone {
			return k
		}
	}
	if isClone3Code(g.b.Code(f.Addr)) {
		return thunkClone3
	}
	return thunkNone
}

// thunkTarget is gen.target's look-up of a thunk.
func (g *gen) thunkTarget(a uint64) (enc.Target, bool) {
	if t, ok := g.thunks[a]; ok {
		return enc.LabelTarget(t.label), true
	}
	return enc.Target{}, false
}

// emitThunks emits the thunks, in address order. The function a thunk
// passes on is what a call to it reaches otherwise: its counting stub
// when it has one (decision 70), or its entry.
func (g *gen) emitThunks() error {
	b := g.buf
	ts := make([]*callThunk, 0, len(g.thunks))
	for _, t := range g.thunks {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].addr < ts[j].addr })
	for _, t := range ts {
		alignTo(b, 16, 15)
		b.SetSP(0)
		b.Bind(t.label)
		real := enc.AbsTarget(t.addr)
		if d, ok := g.darkTarget(t.addr); ok {
			real = d
		}
		b.LeaRegRIP(enc.R11, real)
		b.JmpRel32(enc.AbsTarget(g.thunkStub(t.kind)))
	}
	return b.Err()
}
