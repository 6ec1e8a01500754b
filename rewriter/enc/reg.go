package enc

import "strconv"

// Reg is a 64-bit general-purpose register, numbered as in the ModRM,
// SIB and opcode+r fields with the REX extension bit as bit 3 [Intel SDM
// Vol.2 §2.2.1.2; §3.1.1.1 Table 3-1].
type Reg uint8

// The sixteen general-purpose registers.
const (
	RAX Reg = iota
	RCX
	RDX
	RBX
	RSP
	RBP
	RSI
	RDI
	R8
	R9
	R10
	R11
	R12
	R13
	R14
	R15
)

var regNames = [...]string{
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
}

// String returns the AT&T name without the % sigil ("rax", "r12").
func (r Reg) String() string {
	if r.valid() {
		return regNames[r]
	}
	return "Reg(" + strconv.Itoa(int(r)) + ")"
}

func (r Reg) valid() bool { return r < 16 }

// low is the three bits that go into ModRM.reg, ModRM.rm, SIB or the
// opcode; hi is the bit that goes into REX.R, REX.X or REX.B.
func (r Reg) low() byte { return byte(r) & 7 }
func (r Reg) hi() byte  { return byte(r) >> 3 & 1 }

// Cond is a condition code, the low four bits of the Jcc and SETcc
// opcodes [Intel SDM Vol.2 App. B.1.4.7, Table B-10].
type Cond uint8

// Condition codes, named after their AT&T suffixes.
const (
	CondO  Cond = iota // overflow
	CondNO             // no overflow
	CondB              // below (CF=1)
	CondAE             // above or equal (CF=0)
	CondE              // equal (ZF=1)
	CondNE             // not equal (ZF=0)
	CondBE             // below or equal (CF=1 or ZF=1)
	CondA              // above (CF=0 and ZF=0)
	CondS              // sign (SF=1)
	CondNS             // no sign (SF=0)
	CondP              // parity even (PF=1)
	CondNP             // parity odd (PF=0)
	CondL              // less (SF≠OF)
	CondGE             // greater or equal (SF=OF)
	CondLE             // less or equal (ZF=1 or SF≠OF)
	CondG              // greater (ZF=0 and SF=OF)
)

var condNames = [...]string{
	"o", "no", "b", "ae", "e", "ne", "be", "a",
	"s", "ns", "p", "np", "l", "ge", "le", "g",
}

// String returns the suffix used in AT&T mnemonics ("ne" as in jne).
func (c Cond) String() string {
	if c < 16 {
		return condNames[c]
	}
	return "Cond(" + strconv.Itoa(int(c)) + ")"
}
