package x86

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

const testAddr = 0x1000

// pad follows every test instruction so that a decoder that reads past
// the end (as x86asm does for vzeroupper) is caught.
var pad = []byte{0x90, 0x05, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func TestDecode(t *testing.T) {
	type want struct {
		len     int
		kind    Kind
		op      x86asm.Op // 0: don't check
		target  uint64    // for Call/Jmp/Jcc
		brOff   int
		brSize  int
		ripOff  int // 0: not rip-relative
		ripTgt  uint64
		enc     Encoding
		endbr   bool
		notrack bool
		bnd     bool
	}
	tests := []struct {
		name string
		hex  string
		want want
	}{
		// CET: x86asm says "rep", Op 0, length 1.
		{"endbr64", "f3 0f 1e fa", want{len: 4, op: ENDBR64, endbr: true}},
		{"endbr32", "f3 0f 1e fb", want{len: 4, op: ENDBR32, endbr: true}},
		{"rdsspq", "f3 48 0f 1e c8", want{len: 5, op: RDSSPQ}},
		{"incsspq (x86asm: lfence)", "f3 48 0f ae e8", want{len: 5, op: INCSSPQ}},
		{"wrssq rip", "48 0f 38 f6 05 10 00 00 00", want{len: 9, op: WRSSQ, ripOff: 5, ripTgt: 0x1019}},

		// Direct branches.
		{"jmp rel8", "eb 05", want{len: 2, kind: Jmp, op: x86asm.JMP, target: 0x1007, brOff: 1, brSize: 1}},
		{"jmp rel8 self", "eb fe", want{len: 2, kind: Jmp, target: 0x1000, brOff: 1, brSize: 1}},
		{"jmp rel32", "e9 00 01 00 00", want{len: 5, kind: Jmp, target: 0x1105, brOff: 1, brSize: 4}},
		{"call rel32 back", "e8 fb ff ff ff", want{len: 5, kind: Call, op: x86asm.CALL, target: 0x1000, brOff: 1, brSize: 4}},
		{"bnd call", "f2 e8 00 00 00 00", want{len: 6, kind: Call, target: 0x1006, brOff: 2, brSize: 4, bnd: true}},
		{"je rel8", "74 10", want{len: 2, kind: Jcc, op: x86asm.JE, target: 0x1012, brOff: 1, brSize: 1}},
		{"jne rel32", "0f 85 10 00 00 00", want{len: 6, kind: Jcc, op: x86asm.JNE, target: 0x1016, brOff: 2, brSize: 4}},
		{"bnd jne rel32", "f2 0f 85 10 00 00 00", want{len: 7, kind: Jcc, target: 0x1017, brOff: 3, brSize: 4, bnd: true}},
		{"jne with hint prefix", "3e 75 02", want{len: 3, kind: Jcc, target: 0x1005, brOff: 2, brSize: 1}},
		{"loop", "e2 fe", want{len: 2, kind: Jcc, op: x86asm.LOOP, target: 0x1000, brOff: 1, brSize: 1}},
		{"loopne", "e0 fe", want{len: 2, kind: Jcc, op: x86asm.LOOPNE, target: 0x1000, brOff: 1, brSize: 1}},
		{"jrcxz", "e3 fe", want{len: 2, kind: Jcc, op: x86asm.JRCXZ, target: 0x1000, brOff: 1, brSize: 1}},
		{"jecxz", "67 e3 fd", want{len: 3, kind: Jcc, op: x86asm.JECXZ, target: 0x1000, brOff: 2, brSize: 1}},
		{"xbegin", "c7 f8 10 00 00 00", want{len: 6, kind: Jcc, op: x86asm.XBEGIN, target: 0x1016, brOff: 2, brSize: 4}},

		// Indirect transfers and returns.
		{"jmp *%rax", "ff e0", want{len: 2, kind: JmpIndirect, op: x86asm.JMP}},
		{"notrack jmp *%rax", "3e ff e0", want{len: 3, kind: JmpIndirect, op: x86asm.JMP, notrack: true}},
		{"notrack jmp *(%rax,%rdx,8)", "3e ff 24 d0", want{len: 4, kind: JmpIndirect, notrack: true}},
		{"notrack call *%rax", "3e ff d0", want{len: 3, kind: CallIndirect, op: x86asm.CALL, notrack: true}},
		{"bnd jmp *%rax", "f2 ff e0", want{len: 3, kind: JmpIndirect, bnd: true}},
		{"jmp *rip", "ff 25 10 00 00 00", want{len: 6, kind: JmpIndirect, ripOff: 2, ripTgt: 0x1016}},
		{"call *abs(,%rax,8)", "ff 14 c5 00 10 00 00", want{len: 7, kind: CallIndirect}},
		{"ljmp *(%rax)", "ff 28", want{len: 2, kind: JmpIndirect, op: x86asm.LJMP}},
		{"ret", "c3", want{len: 1, kind: Ret, op: x86asm.RET}},
		{"ret imm16", "c2 08 00", want{len: 3, kind: Ret}},
		{"rep ret", "f3 c3", want{len: 2, kind: Ret, op: x86asm.RET}},
		{"bnd ret", "f2 c3", want{len: 2, kind: Ret, bnd: true}},
		{"lretq", "48 cb", want{len: 2, kind: Ret}},
		{"iretq", "48 cf", want{len: 2, kind: Ret}},

		// Never fall through; system calls.
		{"hlt", "f4", want{len: 1, kind: Halt}},
		{"ud2", "0f 0b", want{len: 2, kind: Halt}},
		{"ud1", "0f b9 c0", want{len: 3, kind: Halt}},
		{"ud0", "0f ff 00", want{len: 3, kind: Halt}},
		{"int3", "cc", want{len: 1, kind: Halt}},
		{"int $3", "cd 03", want{len: 2, kind: Halt}},
		{"int1", "f1", want{len: 1, kind: Halt}},
		{"int $0x80", "cd 80", want{len: 2, kind: Syscall}},
		{"syscall", "0f 05", want{len: 2, kind: Syscall, op: x86asm.SYSCALL}},

		// Legacy rip-relative forms, immediates after the displacement.
		{"mov rip", "48 8b 05 10 00 00 00", want{len: 7, ripOff: 3, ripTgt: 0x1017}},
		{"lea rip back", "48 8d 0d f9 ff ff ff", want{len: 7, ripOff: 3, ripTgt: 0x1000}},
		{"cmpl imm32 rip", "81 3d 10 00 00 00 78 56 34 12", want{len: 10, ripOff: 2, ripTgt: 0x101a}},
		{"movw imm16 rip", "66 c7 05 10 00 00 00 34 12", want{len: 9, ripOff: 3, ripTgt: 0x1019}},
		{"testb imm8 rip", "f6 05 10 00 00 00 01", want{len: 7, ripOff: 2, ripTgt: 0x1017}},
		{"testl imm32 rip", "f7 05 10 00 00 00 00 00 01 00", want{len: 10, ripOff: 2, ripTgt: 0x101a}},
		{"notl rip (f7 /2: no imm)", "f7 15 10 00 00 00", want{len: 6, ripOff: 2, ripTgt: 0x1016}},
		{"mov %fs:rip", "64 48 8b 05 10 00 00 00", want{len: 8, ripOff: 4, ripTgt: 0x1018}},
		{"mov %fs:0x28 (sib, no base)", "64 48 8b 04 25 28 00 00 00", want{len: 9}},
		{"pshufd imm8 rip", "66 0f 70 0d 10 00 00 00 1b", want{len: 9, ripOff: 4, ripTgt: 0x1019}},
		{"3dnow pfadd rip", "0f 0f 05 10 00 00 00 9e", want{len: 8, op: UNKNOWN, ripOff: 3, ripTgt: 0x1018}},
		{"extrq imm imm", "66 0f 78 c1 04 08", want{len: 6, op: EXTRQ}},

		// Immediates and odd lengths.
		{"nopl 5", "0f 1f 44 00 00", want{len: 5, op: x86asm.NOP}},
		{"nopw 10", "66 2e 0f 1f 84 00 00 00 00 00", want{len: 10, op: x86asm.NOP}},
		{"movabs imm64", "48 b8 88 77 66 55 44 33 22 11", want{len: 10}},
		{"mov imm16", "66 b8 34 12", want{len: 4}},
		{"movabs moffs", "a0 88 77 66 55 44 33 22 11", want{len: 9}},
		{"movabs moffs addr32", "67 a0 44 33 22 11", want{len: 6}},
		{"enter", "c8 10 00 01", want{len: 4}},
		{"push imm16", "66 68 34 12", want{len: 4}},
		{"mov rex.w imm32", "48 c7 c0 ff ff ff ff", want{len: 7}},
		{"mov %cr0 (register form)", "0f 20 c0", want{len: 3}},

		// Legacy instructions x86asm v0.32 lacks, named by this package.
		{"clwb rip", "66 0f ae 35 10 00 00 00", want{len: 8, op: CLWB, ripOff: 4, ripTgt: 0x1018}},
		{"clflushopt", "66 0f ae 38", want{len: 4, op: CLFLUSHOPT}},
		{"rdpid", "f3 0f c7 f8", want{len: 4, op: RDPID}},
		{"rdseed", "48 0f c7 f8", want{len: 4, op: RDSEED}},
		{"rdpkru", "0f 01 ee", want{len: 3, op: RDPKRU}},
		{"serialize", "0f 01 e8", want{len: 3, op: SERIALIZE}},
		{"adox rip", "f3 48 0f 38 f6 05 10 00 00 00", want{len: 10, op: ADOX, ripOff: 6, ripTgt: 0x101a}},
		{"movdir64b", "66 0f 38 f8 06", want{len: 5, op: MOVDIR64B}},
		{"hint nop 0f 1a (MPX)", "0f 1a 05 10 00 00 00", want{len: 7, op: UNKNOWN, ripOff: 3, ripTgt: 0x1017}},

		// VEX: rip-relative with x86asm's PCRel 0, imm8 after disp32.
		{"vmovdqu ymm rip", "c5 fe 6f 05 10 00 00 00", want{len: 8, op: x86asm.VMOVDQU, ripOff: 4, ripTgt: 0x1018, enc: VEX}},
		{"vmovdqa xmm15 rip (c4)", "c4 61 79 6f 3d 10 00 00 00", want{len: 9, ripOff: 5, ripTgt: 0x1019, enc: VEX}},
		{"vinsertf128 imm8 rip", "c4 e3 7d 18 05 10 00 00 00 01", want{len: 10, op: x86asm.VINSERTF128, ripOff: 5, ripTgt: 0x101a, enc: VEX}},
		{"vpshufd imm8 rip", "c5 f9 70 0d 10 00 00 00 1b", want{len: 9, ripOff: 4, ripTgt: 0x1019, enc: VEX}},
		{"vzeroupper (no ModRM)", "c5 f8 77", want{len: 3, op: x86asm.VZEROUPPER, enc: VEX}},
		{"vzeroall", "c5 fc 77", want{len: 3, enc: VEX}},
		{"fs vmovdqu rip (x86asm: VEX only at 0)", "64 c5 fe 6f 05 10 00 00 00", want{len: 9, op: x86asm.VMOVDQU, ripOff: 5, ripTgt: 0x1019, enc: VEX}},
		{"andn rip", "c4 e2 78 f2 1d 10 00 00 00", want{len: 9, op: x86asm.ANDN, ripOff: 5, ripTgt: 0x1019, enc: VEX}},
		{"tilezero (x86asm: unknown)", "c4 e2 7b 49 c8", want{len: 5, op: UNKNOWN, enc: VEX}},

		// EVEX.
		{"vmovdqu64 zmm16 rip", "62 e1 fe 48 6f 05 40 00 00 00", want{len: 10, op: x86asm.VMOVDQU64, ripOff: 6, ripTgt: 0x104a, enc: EVEX}},
		{"vmovdqa64 disp8*64", "62 f1 fd 48 6f 40 01", want{len: 7, op: x86asm.VMOVDQA64, enc: EVEX}},
		{"vpternlogd imm8 rip", "62 f3 75 48 25 15 10 00 00 00 ff", want{len: 11, op: x86asm.VPTERNLOGD, ripOff: 6, ripTgt: 0x101b, enc: EVEX}},
		{"vpshufd evex imm8 rip", "62 e1 7d c9 70 0d 10 00 00 00 1b", want{len: 11, ripOff: 6, ripTgt: 0x101b, enc: EVEX}},
		{"vaddph map5 rip", "62 f5 74 48 58 15 10 00 00 00", want{len: 10, ripOff: 6, ripTgt: 0x101a, enc: EVEX}},

		// XOP.
		{"vprotd imm8 rip (map 8)", "8f e8 78 c2 0d 10 00 00 00 03", want{len: 10, op: UNKNOWN, ripOff: 5, ripTgt: 0x101a, enc: XOP}},
		{"vfrczps rip (map 9)", "8f e9 78 80 0d 10 00 00 00", want{len: 9, op: UNKNOWN, ripOff: 5, ripTgt: 0x1019, enc: XOP}},
		{"bextr imm32 rip (map A)", "8f ea 78 10 05 10 00 00 00 34 12 00 00", want{len: 13, op: UNKNOWN, ripOff: 5, ripTgt: 0x101d, enc: XOP}},
		{"pop (8f /0, not XOP)", "8f 00", want{len: 2, op: x86asm.POP}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code := append(mustHex(t, tc.hex), pad...)
			inst, err := Decode(code, testAddr)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			w := tc.want
			got := want{
				len: inst.Len, kind: inst.Kind, target: inst.Target,
				brOff: inst.BranchOff, brSize: inst.BranchSize, enc: inst.Encoding,
				endbr: inst.Endbr, notrack: inst.Notrack, bnd: inst.Bnd,
			}
			if w.op != 0 {
				got.op = inst.Op
			}
			if inst.RIPRel {
				got.ripOff, got.ripTgt = inst.RIPDispOff, inst.RIPTarget
			}
			if got != w {
				t.Errorf("Decode(%s) = %+v\nwant %+v\n(%s)", tc.hex, got, w, inst.String())
			}
			if inst.Addr != testAddr {
				t.Errorf("Addr = %#x", inst.Addr)
			}
			if inst.Raw.Len != inst.Len {
				t.Errorf("Raw.Len = %d, Len = %d", inst.Raw.Len, inst.Len)
			}
			if inst.RIPRel && (inst.Raw.PCRel != 4 || inst.Raw.PCRelOff != inst.RIPDispOff) {
				t.Errorf("Raw.PCRel/PCRelOff = %d/%d, want 4/%d", inst.Raw.PCRel, inst.Raw.PCRelOff, inst.RIPDispOff)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		want error
	}{
		{"empty", "", ErrTruncated},
		{"call cut", "e8 00 00", ErrTruncated},
		{"modrm cut", "48 8b", ErrTruncated},
		{"disp cut", "48 8b 05 10 00", ErrTruncated},
		{"imm cut after disp", "81 3d 10 00 00 00 78 56", ErrTruncated},
		{"vex cut", "c4", ErrTruncated},
		{"evex cut", "62 f1 fd 48", ErrTruncated},
		{"prefix only", "66", ErrTruncated},
		{"15 prefixes", "66 66 66 66 66 66 66 66 66 66 66 66 66 66 66 90", ErrTooLong},
		{"16 bytes", "66 66 66 66 66 66 66 66 66 66 66 2e 0f 1f 84 00 00 00 00 00", ErrTooLong},
		{"push es (invalid in 64-bit)", "06", ErrInvalid},
		{"aaa", "37", ErrInvalid},
		{"0f 04", "0f 04", ErrInvalid},
		{"66 before vex", "66 c5 fe 6f 05 10 00 00 00", ErrInvalid},
		{"rex before evex", "48 62 f1 fd 48 6f 40 01", ErrInvalid},
		{"callw (66 e8)", "66 e8 00 00 00 00", ErrUnsupported},
		{"66 jne rel32", "66 0f 85 00 00 00 00", ErrUnsupported},
		{"eip-relative", "67 48 8b 05 10 00 00 00", ErrUnsupported},
		{"evex map 4 (APX)", "62 f4 7c 08 01 c0", ErrUnknown},
		{"vex map 7", "c4 e7 7b f8 c0 00 00 00 00", ErrUnknown},
		{"ff /7", "ff f8", ErrUnknown},
		{"REX before a prefix", "48 66 90", ErrUnsupported},
		{"two REX", "48 41 90", ErrUnsupported},
		{"mov to %cr with mod=10 (x86asm reads a disp32)", "0f 22 80 00 00 00 00", ErrUnknown},
		{"pextrw with a memory operand", "0f c5 00 01", ErrUnknown},
		{"cmpxchg8b with a register", "0f c7 c8", ErrUnknown},
		{"gather without SIB", "c4 c2 ed 91 a6 e2 21 57 10", ErrInvalid},
		{"ff /3 with a register", "ff d8", ErrUnknown},
		{"xop map b", "8f eb 78 10 c0", ErrUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code := mustHex(t, tc.hex)
			inst, err := Decode(code, testAddr)
			if err == nil {
				t.Fatalf("Decode(%s) = %s, want error %v", tc.hex, inst.String(), tc.want)
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("Decode(%s) error %v, want %v", tc.hex, err, tc.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) || de.Addr != testAddr {
				t.Errorf("error %v is not a *DecodeError at %#x", err, testAddr)
			}
		})
	}
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		r, w Flags
	}{
		{"add", "01 c3", 0, Status},
		{"sub imm", "48 83 e8 08", 0, Status},
		{"cmp", "39 c3", 0, Status},
		{"test", "85 c0", 0, Status},
		{"xor", "31 c0", 0, Status},
		{"adc", "11 c3", CF, Status},
		{"sbb", "19 c3", CF, Status},
		{"inc", "ff c0", 0, Status &^ CF},
		{"dec", "48 ff c8", 0, Status &^ CF},
		{"imul", "0f af c3", 0, Status},
		{"shl $1 (d1)", "d1 e0", 0, Status},
		{"shl $3", "c1 e0 03", 0, Status},
		{"shl $0", "c1 e0 00", 0, 0},
		{"shl $32 32-bit (masked to 0)", "c1 e0 20", 0, 0},
		{"shl $32 64-bit", "48 c1 e0 20", 0, Status},
		{"shl %cl", "d3 e0", 0, 0},
		{"sar $1", "d1 f8", 0, Status},
		{"rol $3", "c1 c0 03", 0, CF | OF},
		{"rcl $1", "d1 d0", CF, CF | OF},
		{"rcr %cl", "d3 d8", CF, 0},
		{"shld imm", "0f a4 c3 03", 0, Status},
		{"shrd %cl", "0f ad c3", 0, 0},
		{"bt", "0f a3 c3", 0, Status &^ ZF},
		{"bsf", "0f bc c3", 0, Status},
		{"popcnt", "f3 0f b8 c3", 0, Status},
		{"cmpxchg16b", "48 0f c7 0e", 0, ZF},
		{"je", "74 00", ZF, 0},
		{"jb", "72 00", CF, 0},
		{"ja", "77 00", CF | ZF, 0},
		{"jl", "7c 00", SF | OF, 0},
		{"jg", "7f 00", ZF | SF | OF, 0},
		{"jp", "7a 00", PF, 0},
		{"jo", "0f 80 00 00 00 00", OF, 0},
		{"sete", "0f 94 c0", ZF, 0},
		{"setbe", "0f 96 c0", CF | ZF, 0},
		{"cmovs", "0f 48 c3", SF, 0},
		{"cmovge", "0f 4d c3", SF | OF, 0},
		{"fcmovu", "da d9", PF, 0},
		{"loop", "e2 00", 0, 0},
		{"loope", "e1 00", ZF, 0},
		{"jrcxz", "e3 00", 0, 0},
		{"jmp", "eb 00", 0, 0},
		{"jmp *%rax", "ff e0", 0, 0},
		{"call", "e8 00 00 00 00", 0, Status},
		{"call *%rax", "ff d0", 0, Status},
		{"ret", "c3", 0, 0},
		{"syscall", "0f 05", 0, 0},
		{"ud2", "0f 0b", AllFlags, 0},
		{"pushfq", "9c", AllFlags, 0},
		{"popfq", "9d", 0, AllFlags},
		{"lahf", "9f", SF | ZF | AF | PF | CF, 0},
		{"sahf", "9e", 0, SF | ZF | AF | PF | CF},
		{"stc", "f9", 0, CF},
		{"clc", "f8", 0, CF},
		{"cmc", "f5", CF, CF},
		{"std", "fd", 0, DF},
		{"cld", "fc", 0, DF},
		{"rep stosb", "f3 aa", DF, 0},
		{"movsq", "48 a5", DF, 0},
		{"cmpsb", "a6", DF, Status},
		{"repe cmpsb (count may be 0)", "f3 a6", DF, 0},
		{"repne scasb", "f2 ae", DF, 0},
		{"mov", "89 c3", 0, 0},
		{"lea", "48 8d 04 08", 0, 0},
		{"push", "50", 0, 0},
		{"nop", "0f 1f 44 00 00", 0, 0},
		{"movaps", "0f 28 c1", 0, 0},
		{"ucomisd", "66 0f 2e c1", 0, Status},
		{"ptest", "66 0f 38 17 c1", 0, Status},
		{"vzeroupper", "c5 f8 77", 0, 0},
		{"vmovdqu", "c5 fe 6f 05 10 00 00 00", 0, 0},
		{"vptest", "c4 e2 7d 17 c1", 0, Status},
		{"vucomiss", "c5 f8 2e c1", 0, Status},
		{"kortestw", "c5 f8 98 ca", 0, Status},
		{"shlx (flagless)", "c4 e2 f9 f7 c3", 0, 0},
		{"andn", "c4 e2 78 f2 c3", 0, Status},
		{"endbr64", "f3 0f 1e fa", 0, 0},
		{"rdseed", "48 0f c7 f8", 0, Status},
		{"rdpkru", "0f 01 ee", 0, 0},
		{"adcx", "66 0f 38 f6 c3", CF, CF},
		{"adox", "f3 0f 38 f6 c3", OF, OF},
		{"unknown (3DNow! pfadd): conservative", "0f 0f c1 9e", AllFlags, 0},
		{"unknown (tilezero): conservative", "c4 e2 7b 49 c8", AllFlags, 0},
		{"xbegin", "c7 f8 00 00 00 00", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inst, err := Decode(append(mustHex(t, tc.hex), pad...), testAddr)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if inst.Reads != tc.r || inst.Writes != tc.w {
				t.Errorf("%s (%s): reads %v writes %v, want reads %v writes %v",
					tc.hex, inst.String(), inst.Reads, inst.Writes, tc.r, tc.w)
			}
		})
	}
}

// TestOpRanges guards the assumptions about x86asm's Op numbering: the
// AVX block is (XTEST, VZEROUPPER] and this package's Ops lie beyond
// anything x86asm names. An x86asm upgrade that moves either fails here.
func TestOpRanges(t *testing.T) {
	if got := x86asm.Op(x86asm.XTEST + 1); got != x86asm.ANDN {
		t.Errorf("first AVX op = %v, want ANDN", got)
	}
	if got := maxKnownOp.String(); got != "VZEROUPPER" {
		t.Errorf("maxKnownOp = %s", got)
	}
	for op := ENDBR64; op <= UNKNOWN+8; op++ {
		if s := op.String(); !strings.HasPrefix(s, "Op(") {
			t.Errorf("x86asm names Op %d %q: our Ops collide with x86asm's", op, s)
		}
	}
	for op := ENDBR64; op <= UNKNOWN; op++ {
		if s := OpString(op); s == "" || strings.HasPrefix(s, "Op(") {
			t.Errorf("OpString(%d) = %q", op, s)
		}
	}
	if OpString(x86asm.ADD) != "ADD" {
		t.Errorf("OpString(ADD) = %q", OpString(x86asm.ADD))
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Other.String(), "other"},
		{JmpIndirect.String(), "jmp-indirect"},
		{Kind(200).String(), "Kind(200)"},
		{Flags(0).String(), "none"},
		{(CF | ZF).String(), "CF|ZF"},
		{AllFlags.String(), "CF|PF|AF|ZF|SF|OF|DF"},
		{Flags(0x80).String(), "0x80"},
		{EVEX.String(), "evex"},
		{Encoding(9).String(), "Encoding(9)"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, tc := range []struct{ hex, want string }{
		{"f3 0f 1e fa", "endbr64 [4 bytes]"},
		{"48 8b 05 10 00 00 00", "mov 0x10(%rip),%rax"},
		{"64 c5 fe 6f 05 10 00 00 00", "vmovdqu %fs:0x10(%rip),%ymm0"},
		{"62 e1 fe 48 6f 05 40 00 00 00", "vmovdqu64 0x40(%rip),%zmm16"},
		{"c4 e2 78 49 05 10 00 00 00", "(unknown vex) # 0x1019 [9 bytes]"},
	} {
		inst, err := Decode(mustHex(t, tc.hex), testAddr)
		if err != nil {
			t.Fatal(err)
		}
		if got := inst.String(); got != tc.want {
			t.Errorf("%s: String() = %q, want %q", tc.hex, got, tc.want)
		}
	}
	de := &DecodeError{Addr: 0x401000, Bytes: []byte{0x06}, Err: ErrInvalid}
	if got, want := de.Error(), "decode at 0x401000: invalid opcode (bytes 06)"; got != want {
		t.Errorf("DecodeError = %q, want %q", got, want)
	}
}

func TestKindPredicates(t *testing.T) {
	falls := map[Kind]bool{Other: true, Call: true, CallIndirect: true, Jcc: true, Syscall: true}
	targets := map[Kind]bool{Call: true, Jmp: true, Jcc: true}
	for k := Other; k <= Syscall; k++ {
		if k.FallsThrough() != falls[k] {
			t.Errorf("%v.FallsThrough() = %v", k, k.FallsThrough())
		}
		if k.HasTarget() != targets[k] {
			t.Errorf("%v.HasTarget() = %v", k, k.HasTarget())
		}
	}
}
