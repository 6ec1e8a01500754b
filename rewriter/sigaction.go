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
//     to a thunk (thunk.go) that loads the function's address into %r11
//     and jumps to the runtime's replacement, which calls it and then
//     keeps the action:
//
//	thunk: lea sigaction@plt(%rip),%r11; jmp blpp_libc_sigaction
//
// A function reached through a pointer, or a system call whose number is
// only known at run time (syscall(2)), is not seen: the program then sees
// the runtime's entry in place of SIG_DFL.

import (
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
)

// sigSetter returns the thunk of the function of this name (PLT suffix
// and symbol version ignored) when it sets signal actions, thunkNone
// otherwise.
func sigSetter(name string) thunkKind {
	switch cfg.BaseName(name) {
	case "sigaction", "__sigaction":
		return thunkSigaction
	case "signal", "bsd_signal", "ssignal", "sysv_signal", "__sysv_signal", "sigset":
		return thunkSignal
	}
	return thunkNone
}

// copyOrSigaction copies instruction in, or, when it is a system call
// that makes rt_sigaction, calls the runtime in its place. After one that
// makes a process, the child calls the runtime (forkSys).
func (fg *funcGen) copyOrSigaction(in *x86.Info, code []byte) error {
	if in.Kind == x86.Syscall {
		if _, ok := fg.f.Graph.Forks[in.Addr]; ok {
			if err := fg.copyInst(in, code); err != nil {
				return err
			}
			fg.forkSys(in.Addr)
			return nil
		}
	}
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
