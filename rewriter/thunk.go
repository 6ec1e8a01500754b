package rewriter

// Thunks for C library functions the runtime must see called
// (decisions 94, 101 and 122).
//
// Some functions of the C library change what the runtime keeps for the
// process, and the runtime has to take part: the ones that set signal
// actions (sigaction.go), the clone wrappers that make a process in
// this memory (spawn.go) and the user-context functions (context.go). Where such a function is not instrumented (a
// PLT stub in an executable-only rewrite; glibc's __clone and __clone3,
// whose unwind tables the rewriter cannot follow), the ways to it go to
// a thunk that loads the function's address into %r11 and jumps to the
// runtime's replacement, which calls it (or jumps to it) with the
// caller's arguments:
//
//	thunk: lea f(%rip),%r11; jmp blpp_libc_sigaction   (f a function)
//	thunk: mov slot(%rip),%r11; jmp blpp_libc_sigaction (f reached through the GOT)
//
// The ways to it are
//
//   - a direct call or jump from instrumented code (gen.target);
//   - a PLT stub's own jump through its GOT slot, which becomes a jump to
//     the thunk: a function pointer that holds the stub's address (a
//     non-PIE executable's &sigaction is its PLT stub) and uninstrumented
//     code calling the stub reach it too;
//   - in instrumented code, a call or jump through a GOT slot the loader
//     fills with the function's address (-fno-plt: call
//     *sigaction@GOTPCREL(%rip)), which becomes a direct call or jump to
//     the thunk, and a load of that slot's pointer (&sigaction in PIE or
//     -fno-plt code), which becomes the thunk's address: the pointer, once
//     called, reaches the thunk (copyThunkUse).
//
// Not seen: a pointer stored in data by the linker (static p = sigaction:
// an R_X86_64_64 relocation of a writable word, which the program may
// overwrite), and a slot read by uninstrumented code or compared rather
// than loaded; the function then runs without the runtime, as before.
// %r11 is free at a call: a PLT stub may clobber it anyway [SysV x86-64
// ABI 3.2.3]. A slot of a lazily bound PLT first holds the stub's push of
// its relocation; called through, the loader's resolver binds it and goes
// on to the function, which returns to the runtime.

import (
	"fmt"
	"sort"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/rewriter/enc"

	"golang.org/x/arch/x86/x86asm"
)

// thunkKind says which replacement a C library function gets.
type thunkKind uint8

const (
	thunkNone        thunkKind = iota
	thunkSigaction             // sigaction(sig, act, oact): blpp_libc_sigaction
	thunkSignal                // signal(sig, handler) returning the old one: blpp_libc_signal
	thunkClone                 // clone(fn, stack, flags, arg, ...): blpp_libc_clone
	thunkClone3                // glibc's __clone3(args, size, fn, arg): blpp_libc_clone3
	thunkSwapcontext           // swapcontext(oucp, ucp): blpp_libc_swapcontext
	thunkSetcontext            // setcontext(ucp): blpp_libc_setcontext
	thunkGetcontext            // getcontext(ucp): blpp_libc_getcontext
	thunkMakecontext           // makecontext(ucp, fn, argc, ...): blpp_libc_makecontext
)

// thunkStub is the runtime's replacement of a function of kind k, 0 when
// the runtime has none.
func (g *gen) thunkStub(k thunkKind) uint64 {
	stubs := [...]uint64{
		thunkSigaction: g.stubs.LibcSigaction, thunkSignal: g.stubs.LibcSignal,
		thunkClone: g.stubs.LibcClone, thunkClone3: g.stubs.LibcClone3,
		thunkSwapcontext: g.stubs.LibcSwapcontext, thunkSetcontext: g.stubs.LibcSetcontext,
		thunkGetcontext: g.stubs.LibcGetcontext, thunkMakecontext: g.stubs.LibcMakecontext,
	}
	if int(k) < len(stubs) {
		return stubs[k]
	}
	return 0
}

// callThunk is the thunk of one uninstrumented function, or of one GOT
// slot that holds such a function's address.
type callThunk struct {
	addr uint64 // the function's entry; 0 for a slot's thunk
	slot uint64 // the GOT slot the function is loaded from; 0: addr itself
	kind thunkKind
	// plt is the address of the PLT stub's jump through slot, which
	// becomes a jump to the thunk; 0: none.
	plt   uint64
	label enc.Label
}

// planThunks gives a thunk to every function of p the runtime must see
// called (thunkKindOf) that is not instrumented, and to every GOT slot
// the loader fills with such a function's address (in a dynamic
// executable or library). It runs after the instrumented functions'
// entries are known (g.entries), before any code is emitted.
func (g *gen) planThunks(p *cfg.Program) {
	g.thunks = map[uint64]*callThunk{}
	g.slotThunks = map[uint64]*callThunk{}
	if !g.b.Static {
		for slot, name := range g.b.GOTSlots() {
			if k := thunkKindOfName(name); k != thunkNone && g.thunkStub(k) != 0 {
				g.slotThunks[slot] = &callThunk{slot: slot, kind: k, label: g.buf.NewLabel()}
			}
		}
	}
	for _, f := range p.Funcs {
		if _, inst := g.entries[f.Addr]; inst {
			continue // its own system calls go to the runtime
		}
		k := g.thunkKindOf(f)
		if k == thunkNone || g.thunkStub(k) == 0 {
			continue
		}
		if _, dup := g.thunks[f.Addr]; dup {
			continue
		}
		t := &callThunk{addr: f.Addr, kind: k, label: g.buf.NewLabel()}
		if f.PLT {
			if at, slot, ok := pltJump(g.b, f.Addr); ok {
				if st := g.slotThunks[slot]; st != nil && st.plt == 0 {
					t = st // one thunk for the stub and its slot
					t.addr = f.Addr
				} else {
					t.slot = slot
				}
				t.plt = at
			}
		}
		g.thunks[f.Addr] = t
	}
}

// thunkKindOfName is the kind of thunk a function of this name gets.
func thunkKindOfName(name string) thunkKind {
	if k := sigSetter(name); k != thunkNone {
		return k
	}
	if k := contextName(name); k != thunkNone {
		return k
	}
	return cloneName(name)
}

// thunkKindOf is the kind of thunk uninstrumented function f gets, by its
// names or, for glibc's __clone3 in a stripped library, by its code
// (isClone3Code).
func (g *gen) thunkKindOf(f *cfg.Function) thunkKind {
	for _, n := range append([]string{f.Name}, f.Aliases...) {
		if k := thunkKindOfName(n); k != thunkNone {
			return k
		}
	}
	if isClone3Code(g.b.Code(f.Addr)) {
		return thunkClone3
	}
	return thunkNone
}

// pltJump decodes the PLT stub at addr: its jump through a GOT slot (jmp
// *slot(%rip), after an endbr64 and with a bnd prefix where IBT made the
// PLT), at, where a 5-byte jump to the thunk fits in its place.
func pltJump(b *cfg.Binary, addr uint64) (at, slot uint64, ok bool) {
	code := b.Code(addr)
	a := addr
	for i := 0; i < 2 && len(code) > 0; i++ {
		in, err := x86.Decode(code, a)
		if err != nil {
			return 0, 0, false
		}
		if in.Endbr && i == 0 {
			code, a = code[in.Len:], a+uint64(in.Len)
			continue
		}
		m, isMem := in.Raw.Args[0].(x86asm.Mem)
		if in.Kind != x86.JmpIndirect || !in.RIPRel || !isMem || m.Segment != 0 || m.Index != 0 || in.Len < 5 {
			return 0, 0, false
		}
		return a, in.RIPTarget, true
	}
	return 0, 0, false
}

// thunkTarget is gen.target's look-up of a thunk.
func (g *gen) thunkTarget(a uint64) (enc.Target, bool) {
	if t, ok := g.thunks[a]; ok {
		return enc.LabelTarget(t.label), true
	}
	return enc.Target{}, false
}

// copyThunkUse emits, in place of instruction in of instrumented code, its
// use of a GOT slot that holds a function with a thunk: call *slot(%rip)
// becomes call thunk, jmp *slot(%rip) jmp thunk, and mov slot(%rip),%reg
// (the function's address) lea thunk(%rip),%reg. False when in is none of
// these. It reads in's Info alone: code generation decodes through
// DecodeInfo, whose Inst has no Raw (an x86asm operand read there is
// nil, and the use was copied unchanged: sigaction reached through the
// GOT missed its thunk).
func (fg *funcGen) copyThunkUse(in *x86.Info) bool {
	if !in.RIPRel || len(fg.g.slotThunks) == 0 {
		return false
	}
	t := fg.g.slotThunks[in.RIPTarget]
	if t == nil {
		return false
	}
	ripMem := func(a *x86.Arg) bool { return a.Kind == x86.ArgMem && a.Base == x86asm.RIP && a.Segment == 0 }
	dst, src := &in.Args[0], &in.Args[1]
	b := fg.g.buf
	switch {
	case in.Kind == x86.CallIndirect && ripMem(dst):
		b.CallRel32(enc.LabelTarget(t.label))
	case in.Kind == x86.JmpIndirect && ripMem(dst):
		b.JmpRel32(enc.LabelTarget(t.label))
	case in.Op == x86asm.MOV && ripMem(src) && dst.Kind == x86.ArgReg && isGPR64(dst.Reg):
		// A 64-bit register: the load is of the slot's 8 bytes.
		b.LeaRegRIP(enc.Reg(dst.Reg-x86asm.RAX), enc.LabelTarget(t.label))
	default:
		return false
	}
	return true
}

// isGPR64 reports a 64-bit general register.
func isGPR64(r x86asm.Reg) bool { return r >= x86asm.RAX && r <= x86asm.R15 }

// emitThunks emits the thunks, in address order. The function a thunk
// passes on is what a call to it reaches otherwise: the GOT slot's
// function, its counting stub when it has one (decision 70), or its
// entry.
func (g *gen) emitThunks() error {
	b := g.buf
	seen := map[*callThunk]bool{}
	var ts []*callThunk
	for _, m := range []map[uint64]*callThunk{g.thunks, g.slotThunks} {
		for _, t := range m {
			if !seen[t] {
				seen[t] = true
				ts = append(ts, t)
			}
		}
	}
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].addr != ts[j].addr {
			return ts[i].addr < ts[j].addr
		}
		return ts[i].slot < ts[j].slot
	})
	for _, t := range ts {
		alignTo(b, 16, 15)
		b.SetSP(0)
		b.Bind(t.label)
		if t.slot != 0 {
			b.MovRegFromRIP(enc.R11, enc.AbsTarget(t.slot))
		} else {
			real := enc.AbsTarget(t.addr)
			if d, ok := g.darkTarget(t.addr); ok {
				real = d
			}
			b.LeaRegRIP(enc.R11, real)
		}
		b.JmpRel32(enc.AbsTarget(g.thunkStub(t.kind)))
	}
	return b.Err()
}

// thunkPatches are the jumps to the thunks that take the place of PLT
// stubs' jumps through their slots.
func (g *gen) thunkPatches(addrOf func(enc.Label) uint64) ([]elfw.Patch, error) {
	var out []elfw.Patch
	for _, t := range g.thunks {
		if t.plt == 0 {
			continue
		}
		jmp, err := enc.JmpRel32At(t.plt, addrOf(t.label))
		if err != nil {
			return nil, fmt.Errorf("PLT stub at %#x: %w", t.addr, err)
		}
		out = append(out, elfw.Patch{Addr: t.plt, Bytes: jmp})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, nil
}
