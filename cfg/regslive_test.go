package cfg

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/blpp/blpp/cfg/x86"
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
		in := decodeHex(t, c.hex, c.asm)
		use, def := instRegs(&in.Info)
		if use != c.use || def != c.def {
			t.Errorf("%s (%s): use %016b def %016b, want %016b %016b", c.asm, strings.TrimSpace(c.hex), use, def, c.use, c.def)
		}
	}
}

// decodeHex decodes one instruction given as hex bytes (asm names it in
// failures).
func decodeHex(t *testing.T, h, asm string) x86.Inst {
	t.Helper()
	code, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	in, err := x86.Decode(code, 0x1000)
	if err != nil {
		t.Fatalf("%s: %v", asm, err)
	}
	return in
}

// TestNamedRegs checks which registers an instruction touches by itself:
// its operands' and the implicit ones (always counted: implicitRegs),
// with every register for what hides others (string instructions with
// %rsi and %rdi, system calls with %rcx and %r11, undecoded code).
func TestNamedRegs(t *testing.T) {
	imp := implicitRegs
	cases := []struct {
		hex, asm string
		want     RegSet
	}{
		{"4d89c1", "mov %r8,%r9", imp | regs("r8", "r9")},
		{"4a8d0c9f", "lea (%rdi,%r11,4),%rcx", imp | regs("rdi", "r11")},
		{"f2410f1044f808", "movsd 8(%r8,%rdi,8),%xmm0", imp | regs("r8", "rdi")},
		{"e800000000", "call (callees read what the ABI says)", imp},
		{"41ffd2", "call *%r10", imp | regs("r10")},
		{"c3", "ret", imp},
		{"eb00", "jmp", imp},
		{"48f7e1", "mul %rcx", imp},
		{"f3c3", "rep ret", imp},
		{"f30f58c1", "addss %xmm1,%xmm0 (f3 selects the instruction)", imp},
		{"f348a5", "rep movsq (%rsi, %rdi)", AllRegs},
		{"a4", "movsb", AllRegs},
		{"aa", "stos", AllRegs},
		{"0f05", "syscall (%rcx, %r11)", AllRegs},
		{"cd80", "int $0x80 (clears %r8-%r11)", AllRegs},
		{"660ff7c1", "maskmovdqu (%rdi)", AllRegs},
		{"c5fc77", "vzeroall", imp},
		{"c4c17c2802", "vmovaps (%r10),%ymm0", imp | regs("r10")},
		{"62d17c482802", "vmovaps (%r10),%zmm0 (EVEX)", imp | regs("r10")},
	}
	for _, c := range cases {
		in := decodeHex(t, c.hex, c.asm)
		if got := namedRegs(&in.Info); got != c.want {
			t.Errorf("%s (%s): %016b, want %016b", c.asm, c.hex, got, c.want)
		}
	}
	// An instruction only the length decoder knows (x86asm has no
	// operands for it) may touch anything.
	if got := namedRegs(&x86.Info{Op: x86.UNKNOWN, Kind: x86.Other}); got != AllRegs {
		t.Errorf("unknown instruction: %016b, want all", got)
	}
}
