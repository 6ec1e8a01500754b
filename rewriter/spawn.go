package rewriter

// Processes made in this memory (decisions 94 and 101).
//
// A vfork child, and the child of a clone with CLONE_VM and without
// CLONE_SETTLS (posix_spawn's), runs in its parent's memory on its
// parent's thread pointer until it execs or exits, so the instrumented
// code it runs would count in its parent's thread block: in its records,
// on its shadow stack. Each is moved to the runtime's scratch block, where
// nothing is counted, before it runs any:
//
//   - after a call to vfork, the child (%eax 0) calls blpp_vfork_child
//     (vforkChild);
//   - calls to the C library's clone wrappers go to a thunk (thunk.go),
//     and the runtime's replacement (blpp_libc_clone, blpp_libc_clone3)
//     starts such a child in the runtime, which moves it, then calls the
//     function clone was given. The wrappers themselves cannot be
//     instrumented (glibc ends their unwind tables before the system
//     call, so that the child's unwinding stops there), and the child's
//     first instrumented code is that function's entry, where nothing
//     tells it from its parent but its thread id.

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"
)

// vforkChild emits, after a call to vfork at call site site: when it
// returned 0 (the child), call the runtime (blpp_rt_vfork_child), which
// points the child's %gs away from its parent's thread block before the
// child runs any more instrumented code (decision 94). The child borrows
// its parent's memory until it execs or exits, and what it ran there
// would count in the parent's records and move the parent's shadow
// stack; where vfork is a fork (under valgrind) the child records its
// fork prefixes instead, as after fork. The flags after a call are
// undefined [SysV x86-64 ABI 3.2.1]; the caller checks that the code
// after it does not read them.
func (fg *funcGen) vforkChild(site int32) {
	fg.childCall(site, fg.g.stubs.VforkChild)
}

// forkSys emits, right after the system call at addr that makes a
// process or thread (cfg.Graph.Forks), a call of the runtime, which does
// nothing in the parent (%rax not 0) and in a child what its kind needs
// (blpp_rt_fork_sys): a fork child records where each live activation
// stood, this one at the system call's site, so that the blocks before
// it, the parent's, are not counted again when the child finishes their
// paths; a child that shares the memory and the thread pointer leaves
// its parent's thread block. The path register is spilled for it; every
// register and the flags are kept (the kernel keeps the flags across the
// call, and code may read them).
//
//	lea -128(%rsp),%rsp; push $nr; push $site; push $fid;
//	call blpp_fork_sys; lea 152(%rsp),%rsp
func (fg *funcGen) forkSys(addr uint64) {
	if fg.g.stubs.ForkSys == 0 {
		return
	}
	b := fg.g.buf
	fg.spill()
	b.LeaRSP(-redZone)
	pushImm32(b, int32(fg.f.Graph.Forks[addr].Nr))
	pushImm32(b, fg.forkSite[addr])
	pushImm32(b, fg.gid)
	b.CallRel32(enc.AbsTarget(fg.g.stubs.ForkSys))
	b.LeaRSP(redZone + 24)
}

// cloneName returns the thunk of a clone wrapper of this name (PLT
// suffix and symbol version ignored): clone and glibc's __clone take
// (fn, stack, flags, arg, ptid, tls, ctid); glibc's __clone3 (2.34 and
// later, internal) takes (args, size, fn, arg).
func cloneName(name string) thunkKind {
	switch cfg.BaseName(name) {
	case "clone", "__clone":
		return thunkClone
	case "__clone3":
		return thunkClone3
	}
	return thunkNone
}

// clone3Shape is glibc's __clone3 (sysdeps/unix/sysv/linux/x86_64/
// clone3.S), which a stripped libc.so names nowhere: the instructions
// that make it one, in order. The argument goes to %r8 before the system
// call and to %rdi after it, in the child, which then calls the function
// through %rdx: the register use blpp_libc_clone3 relies on.
var clone3Shape = [][]byte{
	{0x49, 0x89, 0xc8},             // mov %rcx,%r8
	{0xb8, 0xb3, 0x01, 0x00, 0x00}, // mov $435 (clone3),%eax
	{0x0f, 0x05},                   // syscall
	{0x4c, 0x89, 0xc7},             // mov %r8,%rdi
	{0xff, 0xd2},                   // call *%rdx
}

// clone3Call is the system call's number and the system call, adjacent
// in __clone3: what isClone3Code looks for before it decodes.
var clone3Call = slices.Concat(clone3Shape[1], clone3Shape[2])

// isClone3Code reports whether code, a function's bytes from its entry,
// is glibc's __clone3: its first instructions, decoded in a straight
// line, hold clone3Shape in order, the system call right after the
// number.
func isClone3Code(code []byte) bool {
	const maxInsts = 24
	// Every function of a large library comes here: look for the
	// number and the system call first.
	if !bytes.Contains(code[:min(len(code), maxInsts*15)], clone3Call) {
		return false
	}
	next := 0
	var a uint64
	for i := 0; i < maxInsts && next < len(clone3Shape) && a < uint64(len(code)); i++ {
		in, err := x86.Decode(code[a:], a)
		if err != nil {
			return false
		}
		raw := code[a : a+uint64(in.Len)]
		switch {
		case bytes.Equal(raw, clone3Shape[next]):
			next++
		case next == 2:
			return false // the number not right before the system call
		}
		a += uint64(in.Len)
	}
	return next == len(clone3Shape)
}

// skipCloneChild is the Skipped reason of a function that holds what a
// clone wrapper's child runs before the function it was given.
const skipCloneChild = "runs in a clone child before the runtime"

// cloneChildSides returns the entries of the functions that hold code a
// clone wrapper's child runs before the function it was given, each with
// why: glibc's clone3.S ends the wrapper's unwind table before the system
// call and gives the child's side (and the error path) tables of their
// own, so a stripped libc.so shows them as functions of their own
// (sub_1098e1, after sub_1098c0, __clone3). Instrumented, the child would
// run its entry code on its parent's thread block, before
// blpp_clone_start moves it off; so would a counting stub (decision 70).
// They are the functions entered by the branches that follow the
// wrapper's system call, up to its return, and what follows the return.
func cloneChildSides(b *cfg.Binary, p *cfg.Program) map[uint64]string {
	out := map[uint64]string{}
	for _, f := range p.Funcs {
		code := b.Code(f.Addr)
		clone := isClone3Code(code) || f.HasName(func(n string) bool { return cloneName(n) != thunkNone })
		if !clone {
			continue
		}
		const maxInsts = 32
		var a uint64
		after := false
		for i := 0; i < maxInsts && a < uint64(len(code)); i++ {
			in, err := x86.Decode(code[a:], f.Addr+a)
			if err != nil {
				break
			}
			a += uint64(in.Len)
			switch {
			case in.Kind == x86.Syscall:
				after = true
			case !after:
			case in.Kind == x86.Jcc || in.Kind == x86.Jmp:
				if g := p.FuncAt(in.Target); g != nil && g != f {
					out[g.Addr] = fmt.Sprintf("code after the clone system call of %s, which a child may run", f.Name)
				}
			case in.Kind == x86.Ret:
				if g := p.FuncAt(f.Addr + a); g != nil && g != f {
					out[g.Addr] = fmt.Sprintf("code after the clone system call of %s, which a child may run", f.Name)
				}
				i = maxInsts
			}
		}
	}
	return out
}
