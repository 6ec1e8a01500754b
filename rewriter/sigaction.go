package rewriter

// Signal actions the program sets go to the runtime (decision 94).
//
// The runtime keeps the actions of the fatal signals and of the dump
// signal: the kernel holds its entry, which passes each signal on to the
// program's handler or writes the profile, and the runtime holds what the
// program set, so that the program reads back exactly what it would have
// without blpp. The program's ways of setting an action therefore go to
// the runtime:
//
//   - a syscall instruction whose number is known to be rt_sigaction (13,
//     cfg.Graph.SigActions: the C library's own __libc_sigaction when it
//     is instrumented, as in whole-process runs and static binaries) is
//     replaced by a call of blpp_sys_sigaction, which keeps every register
//     but %rax, the result, and the flags:
//
//	lea -128(%rsp),%rsp; call blpp_sys_sigaction; lea 128(%rsp),%rsp
//
//   - a direct call or jump to an uninstrumented function named sigaction,
//     signal or one of their kin (a PLT stub, or a function left out) goes
//     to a thunk that loads the function's address into %r11 and jumps to
//     the runtime's replacement, which calls it and then keeps the action:
//
//	thunk: lea sigaction@plt(%rip),%r11; jmp blpp_libc_sigaction
//
// A function reached through a pointer, or a system call whose number is
// only known at run time (syscall(2)), is not seen: the program then sees
// the runtime's entry in place of SIG_DFL.

import (
	"sort"
	"strings"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
)

// sigSetterKind says which replacement a C library function that sets a
// signal's action gets.
type sigSetterKind uint8

const (
	sigSetterNone   sigSetterKind = iota
	sigSetterAction               // sigaction(sig, act, oact): blpp_libc_sigaction
	sigSetterSignal               // signal(sig, handler) returning the old one: blpp_libc_signal
)

// sigSetter returns the kind of the function of this name (PLT suffix and
// symbol version ignored), sigSetterNone if it sets no action.
func sigSetter(name string) sigSetterKind {
	name = strings.TrimSuffix(name, "@plt")
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	switch name {
	case "sigaction", "__sigaction":
		return sigSetterAction
	case "signal", "bsd_signal", "ssignal", "sysv_signal", "__sysv_signal", "sigset":
		return sigSetterSignal
	}
	return sigSetterNone
}

// sigThunk is the thunk of one uninstrumented function that sets signal
// actions.
type sigThunk struct {
	addr  uint64 // the function's entry
	kind  sigSetterKind
	label enc.Label
}

// planSigThunks gives a thunk to every function of p that sets signal
// actions and is not instrumented, so that gen.target sends calls and
// jumps to it there. It runs after the instrumented functions' entries
// are known (g.entries).
func (g *gen) planSigThunks(p *cfg.Program) {
	g.sigThunks = map[uint64]*sigThunk{}
	if g.stubs.LibcSigaction == 0 || g.stubs.LibcSignal == 0 {
		return
	}
	for _, f := range p.Funcs {
		k := sigSetter(f.Name)
		if k == sigSetterNone {
			continue
		}
		if _, inst := g.entries[f.Addr]; inst {
			continue // its own system call goes to the runtime
		}
		if _, dup := g.sigThunks[f.Addr]; !dup {
			g.sigThunks[f.Addr] = &sigThunk{addr: f.Addr, kind: k, label: g.buf.NewLabel()}
		}
	}
}

// sigThunkTarget is gen.target's look-up of a thunk.
func (g *gen) sigThunkTarget(a uint64) (enc.Target, bool) {
	if t, ok := g.sigThunks[a]; ok {
		return enc.LabelTarget(t.label), true
	}
	return enc.Target{}, false
}

// emitSigThunks emits the thunks, in address order. The function a thunk
// passes on is what a call to it reaches otherwise: its counting stub
// when it has one (decision 70), or its entry.
func (g *gen) emitSigThunks() error {
	b := g.buf
	ts := make([]*sigThunk, 0, len(g.sigThunks))
	for _, t := range g.sigThunks {
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
		stub := g.stubs.LibcSigaction
		if t.kind == sigSetterSignal {
			stub = g.stubs.LibcSignal
		}
		b.JmpRel32(enc.AbsTarget(stub))
	}
	return b.Err()
}

// copyOrSigaction copies instruction in, or, when it is a system call
// that makes rt_sigaction, calls the runtime in its place.
func (fg *funcGen) copyOrSigaction(in *x86.Inst, code []byte) error {
	if in.Kind != x86.Syscall || !fg.f.Graph.SigActions[in.Addr] || fg.g.stubs.SysSigaction == 0 {
		return fg.copyInst(in, code)
	}
	b := fg.g.buf
	fg.copied(in.Addr)
	b.LeaRSP(-redZone)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.SysSigaction))
	b.LeaRSP(redZone)
	return nil
}
