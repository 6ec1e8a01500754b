package cfg

import (
	"encoding/hex"
	"strings"
	"testing"

	"blpp/cfg/x86"
)

func regs(names ...string) RegSet {
	all := []string{"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"}
	var s RegSet
	for _, n := range names {
		for i, a := range all {
			if a == n {
				s |= 1 << i
			}
		}
	}
	return s
}

// TestInstRegs checks the register reads and full writes of instructions
// the liveness model knows, and that everything else reads every register.
func TestInstRegs(t *testing.T) {
	cases := []struct {
		hex, asm string
		use, def RegSet
	}{
		{"4889c3", "mov %rax,%rbx", regs("rax"), regs("rbx")},
		{"89c3", "mov %eax,%ebx (zero-extends: a full write)", regs("rax"), regs("rbx")},
		{"88c3", "mov %al,%bl (merges)", regs("rax", "rbx"), regs("rbx")},
		{"31c0", "xor %eax,%eax (zeroing idiom)", 0, regs("rax")},
		{"31d8", "xor %ebx,%eax", regs("rax", "rbx"), regs("rax")},
		{"4801d8", "add %rbx,%rax", regs("rax", "rbx"), regs("rax")},
		{"488d048b", "lea (%rbx,%rcx,4),%rax", regs("rbx", "rcx"), regs("rax")},
		{"0fafc3", "imul %ebx,%eax", regs("rax", "rbx"), regs("rax")},
		{"6bc307", "imul $7,%ebx,%eax", regs("rbx"), regs("rax")},
		{"4839c8", "cmp %rcx,%rax", regs("rax", "rcx"), 0},
		{"0f94c0", "sete %al", regs("rax"), regs("rax")},
		{"53", "push %rbx", regs("rbx", "rsp"), 0},
		{"5b", "pop %rbx", regs("rsp"), regs("rbx")},
		{"f20f1044c608", "movsd 8(%rsi,%rax,8),%xmm0", regs("rsi", "rax"), 0},
		{"48d3e0", "shl %cl,%rax", regs("rax", "rcx"), regs("rax")},
		{"e2fe", "loop", regs("rcx"), 0},
		{"7400", "je", 0, 0},
		{"eb00", "jmp", 0, 0},
		{"e800000000", "call", AllRegs, 0},
		{"ffd0", "call *%rax", AllRegs, 0},
		{"c3", "ret", AllRegs, 0},
		{"0f05", "syscall", AllRegs, 0},
		{"f348a5", "rep movsq", AllRegs, 0},
		{"48f7e1", "mul %rcx (implicit rax, rdx)", AllRegs, 0},
		{"4899", "cqo", AllRegs, 0},
		{"0fa2", "cpuid", AllRegs, 0},
		{"f00fb10f", "lock cmpxchg", AllRegs, 0},
	}
	for _, c := range cases {
		if c.asm == "" {
			continue
		}
		code, err := hex.DecodeString(c.hex)
		if err != nil {
			t.Fatal(err)
		}
		in, err := x86.Decode(code, 0x1000)
		if err != nil {
			t.Fatalf("%s: %v", c.asm, err)
		}
		use, def := instRegs(&in)
		if use != c.use || def != c.def {
			t.Errorf("%s (%s): use %016b def %016b, want %016b %016b", c.asm, strings.TrimSpace(c.hex), use, def, c.use, c.def)
		}
	}
}
