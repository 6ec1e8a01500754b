// Package asfork runs a program natively under ptrace, with address-space
// randomisation off, and can turn the processes it makes in its own memory
// into forks, as valgrind does (decision 101).
//
// A vfork child, and the child of a clone with CLONE_VM (posix_spawn's),
// runs in its parent's memory until it execs or exits. Valgrind cannot
// run two processes in one memory and makes each such call a fork, so
// callgrind, the exactness oracle, never sees what sharing the memory
// does to an instrumented parent. Run with Options.Fork makes the same
// change natively: a vfork becomes a fork, a clone or clone3 with CLONE_VM
// (and without CLONE_THREAD or CLONE_SIGHAND, which need it) loses
// CLONE_VM, the parent still waiting for the child's exec where
// CLONE_VFORK asked it to. The parent then runs exactly as it does
// under valgrind, natively: its profile must equal, count for count, the
// profile of a run without Fork (the same run on the same machine, both
// with randomisation off), when the runtime keeps the sharing child out
// of its parent's counts.
//
// Only the process started is traced; its children are not. What it
// trusts: the kernel's ptrace (PTRACE_O_TRACESYSGOOD, syscall stops on
// x86-64, where changing orig_rax at the entry stop changes the call).
package asfork

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Options configures Run.
type Options struct {
	Args []string // program arguments, without argv[0]
	Env  []string // added to the current environment ("KEY=value")
	// Fork turns the calls that make a process in the caller's memory
	// into forks.
	Fork bool
	// Timeout kills the program (0: one minute).
	Timeout time.Duration
}

// Result is how the program ended.
type Result struct {
	Stdout, Stderr []byte
	Code           int            // exit status, -1 when a signal killed it
	Signal         syscall.Signal // the signal that killed it, or 0
	PID            int
	// Forked counts the calls Fork changed.
	Forked int
}

// System call numbers and clone flags [Linux x86-64 syscall table,
// include/uapi/linux/sched.h].
const (
	sysClone  = 56
	sysFork   = 57
	sysVfork  = 58
	sysClone3 = 435

	cloneVM      = 0x100
	cloneSighand = 0x800
	cloneThread  = 0x10000

	addrNoRandomize = 0x0040000
	traceSysGood    = 0x80 // the stop signal's bit at a syscall stop
)

// ErrTimeout is returned when the program outlives Options.Timeout.
var ErrTimeout = errors.New("asfork: timed out")

// Run runs prog (a path) with opts and returns how it ended. A non-zero
// exit is not an error.
func Run(prog string, opts Options) (Result, error) {
	type out struct {
		r   Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		// ptrace requests must come from the tracing thread, and the
		// personality set below is this thread's: it ends with the
		// goroutine, never unlocked.
		runtime.LockOSThread()
		r, err := run(prog, opts)
		ch <- out{r, err}
	}()
	o := <-ch
	return o.r, o.err
}

func run(prog string, opts Options) (Result, error) {
	var res Result
	// Randomisation off in the child (personality is inherited).
	old, _, e := syscall.RawSyscall(syscall.SYS_PERSONALITY, 0xffffffff, 0, 0)
	if e != 0 {
		return res, fmt.Errorf("asfork: personality: %w", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PERSONALITY, old|addrNoRandomize, 0, 0); e != 0 {
		return res, fmt.Errorf("asfork: personality: %w", e)
	}
	stdout, err := os.CreateTemp("", "asfork-out-")
	if err != nil {
		return res, err
	}
	defer os.Remove(stdout.Name())
	defer stdout.Close()
	stderr, err := os.CreateTemp("", "asfork-err-")
	if err != nil {
		return res, err
	}
	defer os.Remove(stderr.Name())
	defer stderr.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return res, err
	}
	defer null.Close()
	argv := append([]string{prog}, opts.Args...)
	pid, err := syscall.ForkExec(prog, argv, &syscall.ProcAttr{
		Env:   append(os.Environ(), opts.Env...),
		Files: []uintptr{null.Fd(), stdout.Fd(), stderr.Fd()},
		Sys:   &syscall.SysProcAttr{Ptrace: true},
	})
	if err != nil {
		return res, fmt.Errorf("asfork: start %s: %w", prog, err)
	}
	res.PID = pid
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	var timedOut atomic.Bool
	timer := time.AfterFunc(timeout, func() {
		timedOut.Store(true)
		syscall.Kill(pid, syscall.SIGKILL)
	})
	defer timer.Stop()
	code, sig, err := trace(pid, opts.Fork, &res.Forked)
	if timedOut.Load() {
		return res, fmt.Errorf("%w after %v: %s", ErrTimeout, timeout, prog)
	}
	if err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		return res, err
	}
	res.Code, res.Signal = code, sig
	if res.Stdout, err = os.ReadFile(stdout.Name()); err != nil {
		return res, err
	}
	if res.Stderr, err = os.ReadFile(stderr.Name()); err != nil {
		return res, err
	}
	return res, nil
}

// trace runs the stopped tracee pid to its end, stopping at each system
// call; with fork it changes the calls that share the memory.
func trace(pid int, fork bool, forked *int) (code int, sig syscall.Signal, err error) {
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
		return 0, 0, fmt.Errorf("asfork: wait: %w", err)
	}
	if !ws.Stopped() {
		return 0, 0, fmt.Errorf("asfork: the program did not stop at its exec (%v)", ws)
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACESYSGOOD|0x100000 /* PTRACE_O_EXITKILL */); err != nil {
		return 0, 0, fmt.Errorf("asfork: set options: %w", err)
	}
	entering := true
	var restore func() error // undoes a change to the tracee's memory at the call's exit
	deliver := 0
	for {
		if err := syscall.PtraceSyscall(pid, deliver); err != nil {
			return 0, 0, fmt.Errorf("asfork: resume: %w", err)
		}
		deliver = 0
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			return 0, 0, fmt.Errorf("asfork: wait: %w", err)
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus(), 0, nil
		case ws.Signaled():
			return -1, ws.Signal(), nil
		case !ws.Stopped():
			continue
		}
		s := ws.StopSignal()
		if s != syscall.SIGTRAP|traceSysGood {
			if s != syscall.SIGTRAP { // a plain SIGTRAP follows the tracee's own exec
				deliver = int(s)
			}
			continue
		}
		if !entering {
			entering = true
			if restore != nil {
				if err := restore(); err != nil {
					return 0, 0, err
				}
				restore = nil
			}
			continue
		}
		entering = false
		if !fork {
			continue
		}
		changed, undo, err := makeFork(pid)
		if err != nil {
			return 0, 0, err
		}
		if changed {
			*forked++
		}
		restore = undo
	}
}

// makeFork changes the system call the tracee is entering into a fork
// where it would share the memory, and returns whether it did and what
// undoes a change to the tracee's memory once the call is made.
func makeFork(pid int) (bool, func() error, error) {
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		return false, nil, fmt.Errorf("asfork: registers: %w", err)
	}
	shares := func(flags uint64) bool {
		return flags&cloneVM != 0 && flags&(cloneThread|cloneSighand) == 0
	}
	switch regs.Orig_rax {
	case sysVfork:
		// fork, not clone(CLONE_VFORK): glibc's vfork keeps its return
		// address in %rdi across the call, in both processes, and
		// fork takes no argument. The parent goes on at once, as
		// valgrind's does.
		regs.Orig_rax = sysFork
	case sysClone:
		if !shares(regs.Rdi) {
			return false, nil, nil
		}
		regs.Rdi &^= cloneVM
	case sysClone3:
		// struct clone_args starts with its flags [linux/sched.h].
		var w [8]byte
		if regs.Rsi < 8 {
			return false, nil, nil
		}
		if _, err := syscall.PtracePeekData(pid, uintptr(regs.Rdi), w[:]); err != nil {
			return false, nil, fmt.Errorf("asfork: read clone_args: %w", err)
		}
		flags := *(*uint64)(unsafe.Pointer(&w[0]))
		if !shares(flags) {
			return false, nil, nil
		}
		orig := w
		*(*uint64)(unsafe.Pointer(&w[0])) = flags &^ cloneVM
		if _, err := syscall.PtracePokeData(pid, uintptr(regs.Rdi), w[:]); err != nil {
			return false, nil, fmt.Errorf("asfork: write clone_args: %w", err)
		}
		at := uintptr(regs.Rdi)
		return true, func() error {
			if _, err := syscall.PtracePokeData(pid, at, orig[:]); err != nil {
				return fmt.Errorf("asfork: restore clone_args: %w", err)
			}
			return nil
		}, nil
	default:
		return false, nil, nil
	}
	if err := syscall.PtraceSetRegs(pid, &regs); err != nil {
		return false, nil, fmt.Errorf("asfork: set registers: %w", err)
	}
	return true, nil, nil
}
