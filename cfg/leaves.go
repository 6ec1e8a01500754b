package cfg

import (
	"github.com/blpp/blpp/cfg/x86"

	"golang.org/x/arch/x86/x86asm"
)

// Ways out of a process image that skip its exit handlers. exit()
// runs the finalisers, where the runtime writes its profile [DESIGN
// 10]; _exit, a bare exit_group system call and a successful exec do
// not, so the instrumentation asks the runtime to write the profile
// just before them [decision 59].

// LeaveKind says how an instruction may end the process image.
type LeaveKind uint8

const (
	// LeaveExit: the process ends at once (_exit, _Exit, exit_group).
	LeaveExit LeaveKind = 1 + iota
	// LeaveExec: the image is replaced if the call succeeds (execve and
	// its kin); it returns when it fails.
	LeaveExec
	// LeaveDaemon: the process may end inside the call (daemon(): its
	// parent leaves through _exit, its child returns, as from fork);
	// it returns when it fails (decision 94).
	LeaveDaemon
	// LeaveExecve: an execve system call, or a call of execve, its path,
	// argv and envp in rdi, rsi and rdx: an exec the runtime can send
	// through blpp run, which instruments the new program too (decision
	// 167).
	LeaveExecve
)

// Leave is an instruction that may end the process image without its
// exit handlers: a direct call or tail jump to a procedure of a known
// name (which the rewriter hooks only when it cannot instrument the
// callee), or a system call whose number is known at the instruction.
type Leave struct {
	Kind    LeaveKind
	Block   BlockID // the block holding the instruction
	Syscall bool
}

// System call numbers [Linux arch/x86/entry/syscalls/syscall_64.tbl].
const (
	sysExecve    = 59
	sysExitGroup = 231
	sysExecveat  = 322
	// rt_sigaction is not a way out: the rewriter sends it to the
	// runtime, which keeps the signal actions the program sets
	// (decision 94).
	sysRtSigaction = 13
	// The calls that make a process or a thread (decision 101).
	SysClone  = 56
	SysFork   = 57
	SysVfork  = 58
	SysClone3 = 435
)

// ForkSyscall is a system call instruction that makes a process or a
// thread: clone, fork, vfork or clone3 (Nr), in block Block.
type ForkSyscall struct {
	Nr    int64
	Block BlockID
}

// LeaveName returns how a call to a procedure of this name (PLT suffix
// and symbol version ignored) leaves the process image, 0 if it does not.
// quick_exit is not one: it runs the at_quick_exit handlers first, which
// may be instrumented code, and its own _Exit call is inside the C
// library.
func LeaveName(name string) LeaveKind {
	name = BaseName(name)
	switch name {
	case "_exit", "_Exit":
		return LeaveExit
	case "execve":
		// Its arguments are the system call's, in the same registers
		// at the call: an exec blpp run can follow (decision 167).
		return LeaveExecve
	case "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve", "execveat":
		return LeaveExec
	case "daemon":
		return LeaveDaemon
	}
	return 0
}

// syscallLeave returns how a system call of number nr leaves the image.
// exit (60) ends only the calling thread.
func syscallLeave(nr int64) LeaveKind {
	switch nr {
	case sysExitGroup:
		return LeaveExit
	case sysExecve:
		return LeaveExecve
	case sysExecveat:
		return LeaveExec
	}
	return 0
}

// regConsts is what a constant propagation knows of the 16 general
// registers at a point: known[r] says register family r holds val[r]
// (as a 64-bit value).
type regConsts struct {
	known uint16
	val   [16]int64
}

func (s *regConsts) set(r int, v int64) { s.known |= 1 << r; s.val[r] = v }
func (s *regConsts) kill(r int)         { s.known &^= 1 << r }
func (s *regConsts) get(r int) (int64, bool) {
	return s.val[r], s.known&(1<<r) != 0
}

// meet keeps the registers both states know with the same value.
func (s *regConsts) meet(o *regConsts) bool {
	k := s.known & o.known
	for r := 0; r < 16; r++ {
		if k&(1<<r) != 0 && s.val[r] != o.val[r] {
			k &^= 1 << r
		}
	}
	changed := k != s.known
	s.known = k
	return changed
}

// step applies instruction in to the state. Only the forms that matter
// for system call numbers are tracked (mov of an immediate or of another
// register to a 32- or 64-bit register, and the xor zeroing idiom);
// every other instruction forgets each register it may write, which for
// anything not modelled by instRegs is all of them.
func (s *regConsts) step(in *x86.Info) {
	raw := in
	switch in.Kind {
	case x86.Syscall:
		// The result, and what syscall (rcx, r11) and int $0x80
		// (r8-r11) clobber.
		for _, r := range []int{0, 1, 8, 9, 10, 11} {
			s.kill(r)
		}
		return
	case x86.Jmp, x86.JmpIndirect, x86.Jcc:
		switch raw.Op {
		case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
			s.kill(1) // they count in rcx
		}
		return
	case x86.Other:
	default:
		s.known = 0 // calls and anything else may write any register
		return
	}
	if dst, ok := raw.Args[0].AsReg(); ok {
		d := regFamily(dst)
		wide := dst >= x86asm.EAX && dst <= x86asm.R15
		if d >= 0 && wide {
			switch {
			case raw.Op == x86asm.MOV && raw.Args[1].Kind != x86.ArgNone:
				switch src := &raw.Args[1]; src.Kind {
				case x86.ArgImm:
					v := src.Val
					if dst <= x86asm.R15L { // a 32-bit write zeroes the upper half
						v = int64(uint32(v))
					}
					s.set(d, v)
					return
				case x86.ArgReg:
					if sf := regFamily(src.Reg); sf >= 0 && (src.Reg >= x86asm.EAX && src.Reg <= x86asm.R15) {
						v, ok := s.get(sf)
						if ok && dst <= x86asm.R15L {
							v = int64(uint32(v))
						}
						if ok {
							s.set(d, v)
						} else {
							s.kill(d)
						}
						return
					}
				}
			case (raw.Op == x86asm.XOR || raw.Op == x86asm.SUB) && raw.Args[1] == raw.Args[0]:
				s.set(d, 0)
				return
			}
		}
	}
	use, def := instRegs(in)
	if use == AllRegs && def == 0 && raw.Op != x86asm.NOP {
		s.known = 0 // not modelled: it may write anything
		return
	}
	for r := 0; r < 16; r++ {
		if def.Has(r) || writesReg(raw, r) {
			s.kill(r)
		}
	}
}

// findSyscallLeaves records in g.Leaves the system calls of the
// procedure whose number (%rax) is known and leaves the image, in
// g.SigActions those that are rt_sigaction and in g.Forks those that
// make a process or thread, by a
// forward constant propagation over its blocks. insts are the decoded
// instructions, in any order, and instAt finds one by address.
func (g *Graph) findSyscallLeaves(insts []x86.Info, instAt func(uint64) int) {
	any := false
	for i := range insts {
		if insts[i].Kind == x86.Syscall {
			any = true
			break
		}
	}
	if !any || len(g.Blocks) == 0 {
		return
	}
	n := len(g.Blocks)
	in := make([]regConsts, n)
	seen := make([]bool, n)
	seen[0] = true // the entry knows nothing (in[0] is all unknown)
	work := []BlockID{0}
	queued := make([]bool, n)
	queued[0] = true
	walk := func(b BlockID, visit func(in *x86.Info, s *regConsts)) regConsts {
		s := in[b]
		blk := &g.Blocks[b]
		for a := blk.Addr; a < blk.End; {
			i := instAt(a)
			if i < 0 {
				s.known = 0
				break
			}
			if visit != nil {
				visit(&insts[i], &s)
			}
			s.step(&insts[i])
			a += uint64(insts[i].Len)
		}
		return s
	}
	for len(work) > 0 {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		queued[b] = false
		out := walk(b, nil)
		for _, e := range g.Succs(b) {
			ed := &g.Edges[e]
			to := ed.To
			if to < 0 {
				continue
			}
			st := out
			if ed.Kind == EdgeCallReturn || ed.Kind == EdgeLanding || ed.Kind == EdgeEntry || ed.Kind == EdgeResume || ed.Kind == EdgeReceiver {
				st.known = 0
			}
			changed := false
			if !seen[to] {
				seen[to], in[to], changed = true, st, true
			} else {
				changed = in[to].meet(&st)
			}
			if changed && !queued[to] {
				queued[to] = true
				work = append(work, to)
			}
		}
	}
	// Landing pads and other blocks reached only from outside know
	// nothing; blocks never seen keep in[] zero, which is the same.
	for b := range g.Blocks {
		walk(BlockID(b), func(inst *x86.Info, s *regConsts) {
			if inst.Kind != x86.Syscall || inst.Op != x86asm.SYSCALL {
				return
			}
			nr, ok := s.get(0)
			if !ok {
				return
			}
			if nr == SysClone || nr == SysFork || nr == SysVfork || nr == SysClone3 {
				if g.Forks == nil {
					g.Forks = map[uint64]ForkSyscall{}
				}
				g.Forks[inst.Addr] = ForkSyscall{Nr: nr, Block: BlockID(b)}
				return
			}
			if nr == sysRtSigaction {
				if g.SigActions == nil {
					g.SigActions = map[uint64]bool{}
				}
				g.SigActions[inst.Addr] = true
				return
			}
			if k := syscallLeave(nr); k != 0 {
				if g.Leaves == nil {
					g.Leaves = map[uint64]Leave{}
				}
				g.Leaves[inst.Addr] = Leave{Kind: k, Block: BlockID(b), Syscall: true}
			}
		})
	}
}

// addLeave records a direct call or jump at addr in block b to a callee
// named name, when that name leaves the image.
func (g *Graph) addLeave(addr uint64, b BlockID, name string) {
	if k := LeaveName(name); k != 0 {
		if g.Leaves == nil {
			g.Leaves = map[uint64]Leave{}
		}
		g.Leaves[addr] = Leave{Kind: k, Block: b}
	}
}
