package cfg

import (
	"testing"
)

// asm is a tiny assembler for the tests: pieces of machine code, with
// rel8 jumps to labels resolved at the end.
type asm struct {
	code   []byte
	labels map[string]int
	fix    map[int]string // offset of a rel8 -> its label
	marks  map[string]int
}

func newAsm() *asm {
	return &asm{labels: map[string]int{}, fix: map[int]string{}, marks: map[string]int{}}
}

func (a *asm) b(bs ...byte) *asm   { a.code = append(a.code, bs...); return a }
func (a *asm) label(l string) *asm { a.labels[l] = len(a.code); return a }

// mark names the next instruction's offset.
func (a *asm) mark(m string) *asm { a.marks[m] = len(a.code); return a }

// j emits a two-byte jump (op: 0xeb jmp, 0x74 je ...) to label l.
func (a *asm) j(op byte, l string) *asm {
	a.code = append(a.code, op, 0)
	a.fix[len(a.code)-1] = l
	return a
}

func (a *asm) done(t *testing.T) []byte {
	for at, l := range a.fix {
		to, ok := a.labels[l]
		if !ok {
			t.Fatalf("no label %s", l)
		}
		a.code[at] = byte(int8(to - (at + 1)))
	}
	return a.code
}

func movEAX(v uint32) []byte {
	return []byte{0xb8, byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}
}

var syscallInsn = []byte{0x0f, 0x05}

// TestSyscallLeaves checks which system calls the constant propagation
// finds to end the process image, on hand-assembled procedures.
func TestSyscallLeaves(t *testing.T) {
	cases := []struct {
		name string
		a    *asm
		want map[string]LeaveKind // mark -> kind; every other syscall: none
	}{
		{"glibc _exit: the number in another register, set in another block",
			newAsm().
				b(0xbe, 0xe7, 0, 0, 0). // mov $231, %esi
				b(0xba, 0x3c, 0, 0, 0). // mov $60, %edx
				j(0xeb, "L2").
				label("L1").b(0x89, 0xd0).mark("exit").b(syscallInsn...).b(0xf4). // mov %edx,%eax; syscall; hlt
				label("L2").b(0x89, 0xf0).mark("group").b(syscallInsn...).j(0xeb, "L1"),
			map[string]LeaveKind{"group": LeaveExit}},
		{"execve with a 64-bit move",
			newAsm().b(0x48, 0xc7, 0xc0, 59, 0, 0, 0).mark("s").b(syscallInsn...).b(0xc3),
			map[string]LeaveKind{"s": LeaveExecve}},
		{"execveat",
			newAsm().b(movEAX(322)...).mark("s").b(syscallInsn...).b(0xc3),
			map[string]LeaveKind{"s": LeaveExec}},
		{"unknown number",
			newAsm().b(0x89, 0xf8).mark("s").b(syscallInsn...).b(0xc3), // mov %edi, %eax
			nil},
		{"two paths agree",
			newAsm().b(0x85, 0xff).j(0x74, "A"). // test %edi,%edi; je A
								b(movEAX(231)...).j(0xeb, "B").
								label("A").b(movEAX(231)...).
								label("B").mark("s").b(syscallInsn...).b(0xc3),
			map[string]LeaveKind{"s": LeaveExit}},
		{"two paths disagree",
			newAsm().b(0x85, 0xff).j(0x74, "A").
				b(movEAX(59)...).j(0xeb, "B").
				label("A").b(movEAX(231)...).
				label("B").mark("s").b(syscallInsn...).b(0xc3),
			nil},
		{"a call in between forgets",
			newAsm().b(movEAX(231)...).b(0xe8, 0, 0, 0, 0).mark("s").b(syscallInsn...).b(0xc3),
			nil},
		{"a byte write merges into it",
			newAsm().b(movEAX(231)...).b(0xb0, 0x01).mark("s").b(syscallInsn...).b(0xc3), // mov $1, %al
			nil},
		{"an instruction not modelled forgets",
			newAsm().b(movEAX(231)...).b(0x0f, 0xa2).mark("s").b(syscallInsn...).b(0xc3), // cpuid
			nil},
		{"zeroing idiom: read(2), not a leave; then the result is unknown",
			newAsm().b(0x31, 0xc0).mark("s").b(syscallInsn...).mark("t").b(syscallInsn...).b(0xc3),
			nil},
		{"a loop keeps the constant",
			newAsm().b(0xbe, 0xe7, 0, 0, 0).
				label("top").b(0x89, 0xf0).mark("s").b(syscallInsn...).j(0xeb, "top"),
			map[string]LeaveKind{"s": LeaveExit}},
	}
	for _, c := range cases {
		code := c.a.done(t)
		// A call's rel32 0 lands on the next instruction: point it at
		// the neighbour procedure instead, so it is a call.
		for i := 0; i+5 <= len(code); i++ {
			if code[i] == 0xe8 && code[i+1] == 0 && code[i+2] == 0 && code[i+3] == 0 && code[i+4] == 0 {
				rel := len(code) - (i + 5)
				code[i+1] = byte(rel)
				break
			}
		}
		b, p, fn := codeProgram(code)
		g := buildGraph(b, p, fn)
		if g.Reason != ReasonOK {
			t.Fatalf("%s: %v: %s", c.name, g.Reason, g.Detail)
		}
		got := map[uint64]LeaveKind{}
		for a, l := range g.Leaves {
			if !l.Syscall {
				t.Errorf("%s: %#x: a call leave in code without named callees", c.name, a)
			}
			if l.Block < 0 || int(l.Block) >= len(g.Blocks) || a < g.Blocks[l.Block].Addr || a >= g.Blocks[l.Block].End {
				t.Errorf("%s: %#x: block %d does not hold it", c.name, a, l.Block)
			}
			got[a] = l.Kind
		}
		for m, k := range c.want {
			a := 0x1000 + uint64(c.a.marks[m])
			if got[a] != k {
				t.Errorf("%s: syscall %s at %#x: leave %d, want %d", c.name, m, a, got[a], k)
			}
			delete(got, a)
		}
		for a, k := range got {
			t.Errorf("%s: syscall at %#x: leave %d, want none", c.name, a, k)
		}
	}
}

func TestLeaveName(t *testing.T) {
	for name, want := range map[string]LeaveKind{
		"_exit": LeaveExit, "_exit@plt": LeaveExit, "_Exit@GLIBC_2.2.5": LeaveExit,
		"execvp@plt": LeaveExec, "execve": LeaveExecve, "execve@plt": LeaveExecve, "fexecve": LeaveExec,
		"exit": 0, "quick_exit": 0, "exit_group": 0, "execute": 0, "": 0,
	} {
		if got := LeaveName(name); got != want {
			t.Errorf("LeaveName(%q) = %d, want %d", name, got, want)
		}
	}
}

// TestForkSyscalls checks that the system calls that make a process or a
// thread are found with their number and block (decision 101), and that
// one whose number is not known, or is not one of them, is not.
func TestForkSyscalls(t *testing.T) {
	cases := []struct {
		name string
		a    *asm
		want map[string]int64 // mark -> number
	}{
		{"glibc _Fork: clone, its result tested",
			newAsm().b(0x31, 0xd2).b(movEAX(SysClone)...).mark("s").b(syscallInsn...).b(0x85, 0xc0).b(0xc3),
			map[string]int64{"s": SysClone}},
		{"fork, vfork and clone3 on two paths",
			newAsm().b(0x85, 0xff).j(0x74, "A").
				b(movEAX(SysFork)...).mark("f").b(syscallInsn...).j(0xeb, "B").
				label("A").b(movEAX(SysClone3)...).mark("c3").b(syscallInsn...).
				label("B").b(movEAX(SysVfork)...).mark("v").b(syscallInsn...).b(0xc3),
			map[string]int64{"f": SysFork, "c3": SysClone3, "v": SysVfork}},
		{"getpid is not one",
			newAsm().b(movEAX(39)...).mark("s").b(syscallInsn...).b(0xc3),
			nil},
		{"unknown number",
			newAsm().b(0x89, 0xf8).mark("s").b(syscallInsn...).b(0xc3),
			nil},
	}
	for _, c := range cases {
		code := c.a.done(t)
		b, p, fn := codeProgram(code)
		g := buildGraph(b, p, fn)
		if g.Reason != ReasonOK {
			t.Fatalf("%s: %v: %s", c.name, g.Reason, g.Detail)
		}
		if len(g.Forks) != len(c.want) {
			t.Errorf("%s: %d fork system calls found, want %d: %v", c.name, len(g.Forks), len(c.want), g.Forks)
		}
		for m, nr := range c.want {
			a := 0x1000 + uint64(c.a.marks[m])
			f, ok := g.Forks[a]
			if !ok || f.Nr != nr {
				t.Errorf("%s: syscall %s at %#x: %+v (found %v), want number %d", c.name, m, a, f, ok, nr)
				continue
			}
			if f.Block < 0 || int(f.Block) >= len(g.Blocks) || a < g.Blocks[f.Block].Addr || a >= g.Blocks[f.Block].End {
				t.Errorf("%s: %#x: block %d does not hold it", c.name, a, f.Block)
			}
		}
	}
}
