package x86

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/arch/x86/x86asm"
)

// Sentinel errors; a DecodeError wraps one of them.
var (
	// ErrTruncated: the bytes end inside the instruction.
	ErrTruncated = errors.New("truncated instruction")
	// ErrTooLong: no instruction ends within 15 bytes [Intel SDM Vol.2
	// §2.3.11].
	ErrTooLong = errors.New("instruction longer than 15 bytes")
	// ErrInvalid: the opcode is undefined in 64-bit mode, or a prefix
	// combination makes it #UD.
	ErrInvalid = errors.New("invalid opcode")
	// ErrUnknown: the length cannot be determined with confidence (an
	// opcode map or prefix scheme this package does not decode, such as
	// APX), or the opcode is one x86asm does not know in a place where
	// guessing would be unsafe (the one-byte map, control transfers).
	ErrUnknown = errors.New("unknown instruction")
	// ErrMismatch: x86asm and blpp's length decoder disagree on the
	// instruction's length or class. One of them has a table gap; the
	// instruction is refused rather than guessed.
	ErrMismatch = errors.New("decoders disagree")
	// ErrUnsupported: a valid encoding whose processing blpp does not
	// implement: a 66-prefixed near branch (rel16 on AMD, rel32 on
	// Intel) or eip-relative addressing (67 with a rip-relative operand).
	ErrUnsupported = errors.New("unsupported encoding")
)

// DecodeError locates a decoding failure.
type DecodeError struct {
	Addr  uint64 // address of the first byte of the instruction
	Bytes []byte // up to 15 bytes from Addr, for the message
	Err   error  // one of the sentinels above
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "decode at %#x: %v", e.Addr, e.Err)
	if len(e.Bytes) > 0 {
		b.WriteString(" (bytes")
		for _, c := range e.Bytes {
			fmt.Fprintf(&b, " %02x", c)
		}
		b.WriteString(")")
	}
	return b.String()
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Ops that x86asm v0.32 lacks, numbered after its last Op so that they
// cannot collide with its own (TestOpRanges guards this on upgrades).
// Their names are given by OpString.
const (
	ENDBR64     = maxKnownOp + 1 + iota // f3 0f 1e fa [Intel SDM Vol.2 ENDBR64]
	ENDBR32                             // f3 0f 1e fb
	RDSSPD                              // f3 0f 1e /1 (mod=11) [Intel SDM Vol.2 RDSSPD/RDSSPQ]
	RDSSPQ                              // f3 REX.W 0f 1e /1 (mod=11)
	INCSSPD                             // f3 0f ae /5 (mod=11); x86asm says lfence [Intel SDM Vol.2 INCSSPD/INCSSPQ]
	INCSSPQ                             // f3 REX.W 0f ae /5 (mod=11)
	SAVEPREVSSP                         // f3 0f 01 ea
	RSTORSSP                            // f3 0f 01 /5 (memory)
	SETSSBSY                            // f3 0f 01 e8
	CLRSSBSY                            // f3 0f ae /6 (memory)
	WRSSD                               // 0f 38 f6 (memory, no 66/f2/f3)
	WRSSQ                               // REX.W 0f 38 f6
	WRUSSD                              // 66 0f 38 f5 (memory)
	WRUSSQ                              // 66 REX.W 0f 38 f5
	RDPKRU                              // 0f 01 ee [Intel SDM Vol.2 RDPKRU]
	WRPKRU                              // 0f 01 ef
	SERIALIZE                           // 0f 01 e8
	MONITORX                            // 0f 01 fa [AMD APM Vol.3]
	MWAITX                              // 0f 01 fb
	CLZERO                              // 0f 01 fc
	RDPRU                               // 0f 01 fd
	RDSEED                              // 0f c7 /7 (mod=11)
	RDPID                               // f3 0f c7 /7 (mod=11)
	CLFLUSHOPT                          // 66 0f ae /7 (memory)
	CLWB                                // 66 0f ae /6 (memory)
	UMONITOR                            // f3 0f ae /6 (mod=11)
	UMWAIT                              // f2 0f ae /6 (mod=11)
	TPAUSE                              // 66 0f ae /6 (mod=11)
	PTWRITE                             // f3 0f ae /4
	CLDEMOTE                            // 0f 1c /0 (memory)
	EXTRQ                               // 66 0f 78 /0 ib ib, 66 0f 79 /r [AMD APM Vol.4]
	INSERTQ                             // f2 0f 78 /r ib ib, f2 0f 79 /r
	ADCX                                // 66 0f 38 f6 /r
	ADOX                                // f3 0f 38 f6 /r
	MOVDIRI                             // 0f 38 f9 /r (memory)
	MOVDIR64B                           // 66 0f 38 f8 /r (memory)
	SENDUIPI                            // f3 0f c7 /6 (mod=11)
	// UNKNOWN is an instruction whose length and operand layout blpp
	// decoded but whose mnemonic neither x86asm nor this package knows: a
	// VEX, EVEX or XOP instruction missing from x86asm's tables, a
	// 3DNow! instruction, or a hint NOP (0f 18–0f 1f). It falls through,
	// and its flag effects are taken conservatively.
	UNKNOWN
)

var ownOpNames = [...]string{
	ENDBR64 - ENDBR64:     "ENDBR64",
	ENDBR32 - ENDBR64:     "ENDBR32",
	RDSSPD - ENDBR64:      "RDSSPD",
	RDSSPQ - ENDBR64:      "RDSSPQ",
	INCSSPD - ENDBR64:     "INCSSPD",
	INCSSPQ - ENDBR64:     "INCSSPQ",
	SAVEPREVSSP - ENDBR64: "SAVEPREVSSP",
	RSTORSSP - ENDBR64:    "RSTORSSP",
	SETSSBSY - ENDBR64:    "SETSSBSY",
	CLRSSBSY - ENDBR64:    "CLRSSBSY",
	WRSSD - ENDBR64:       "WRSSD",
	WRSSQ - ENDBR64:       "WRSSQ",
	WRUSSD - ENDBR64:      "WRUSSD",
	WRUSSQ - ENDBR64:      "WRUSSQ",
	RDPKRU - ENDBR64:      "RDPKRU",
	WRPKRU - ENDBR64:      "WRPKRU",
	SERIALIZE - ENDBR64:   "SERIALIZE",
	MONITORX - ENDBR64:    "MONITORX",
	MWAITX - ENDBR64:      "MWAITX",
	CLZERO - ENDBR64:      "CLZERO",
	RDPRU - ENDBR64:       "RDPRU",
	RDSEED - ENDBR64:      "RDSEED",
	RDPID - ENDBR64:       "RDPID",
	CLFLUSHOPT - ENDBR64:  "CLFLUSHOPT",
	CLWB - ENDBR64:        "CLWB",
	UMONITOR - ENDBR64:    "UMONITOR",
	UMWAIT - ENDBR64:      "UMWAIT",
	TPAUSE - ENDBR64:      "TPAUSE",
	PTWRITE - ENDBR64:     "PTWRITE",
	CLDEMOTE - ENDBR64:    "CLDEMOTE",
	EXTRQ - ENDBR64:       "EXTRQ",
	INSERTQ - ENDBR64:     "INSERTQ",
	ADCX - ENDBR64:        "ADCX",
	ADOX - ENDBR64:        "ADOX",
	MOVDIRI - ENDBR64:     "MOVDIRI",
	MOVDIR64B - ENDBR64:   "MOVDIR64B",
	SENDUIPI - ENDBR64:    "SENDUIPI",
	UNKNOWN - ENDBR64:     "UNKNOWN",
}

// OpString names op, including the Ops this package adds to x86asm's.
func OpString(op x86asm.Op) string {
	if op >= ENDBR64 && op <= UNKNOWN {
		return ownOpNames[op-ENDBR64]
	}
	return op.String()
}

// Info is one decoded instruction: everything Decode finds but
// x86asm's own decoding (Inst.Raw), with x86asm's operands in Args. It
// holds no pointers, so arrays of Infos cost the garbage collector
// nothing, and DecodeInfo answers most instructions from a table of
// fixed-size entries without running x86asm (memo.go). The analyses
// and the relocator read Infos; the pattern matching of jump tables
// and constants reads Raw.
type Info struct {
	Addr uint64 // address of the first byte
	Len  int    // length in bytes, 1..15
	// Op is x86asm's mnemonic, or one of this package's (ENDBR64 …
	// SENDUIPI, UNKNOWN) where x86asm has none or a wrong one. Use
	// OpString to print it.
	Op       x86asm.Op
	Kind     Kind
	Encoding Encoding

	// Target is the absolute destination of a direct Call, Jmp or Jcc
	// (for xbegin, the abort handler). BranchOff and BranchSize (1 or 4)
	// locate the rel8/rel32 field inside the instruction; both are 0
	// for other kinds.
	Target     uint64
	BranchOff  int
	BranchSize int

	// RIPRel is set when a memory operand is [rip + disp32] (ModRM
	// mod=00 rm=101), for every encoding. RIPDispOff is the byte offset
	// of the disp32 and RIPTarget = Addr + Len + disp: the displacement
	// is relative to the end of the whole instruction, immediates
	// included. A segment override (fs, gs) still applies on top.
	RIPRel     bool
	RIPDispOff int
	RIPTarget  uint64

	Endbr   bool // endbr64 or endbr32: a valid indirect-branch target under CET
	Notrack bool // 3e prefix on an indirect call/jmp: no endbr needed at the target [Intel SDM Vol.1, CET chapter, NOTRACK]
	Bnd     bool // f2 prefix on a branch or ret (MPX "bnd"); no effect on its own
	Rep     bool // f3 prefix (rep/repe; "rep ret" is an AMD branch-predictor idiom)
	Repne   bool // f2 prefix
	Lock    bool // f0 prefix

	// OpcodeOff is the offset of the (last) opcode byte; ModRMOff the
	// offset of ModRM, -1 when there is none.
	OpcodeOff int
	ModRMOff  int

	// Reads and Writes are the flags the instruction reads and writes
	// (fully: set, cleared, computed or left undefined). Instructions
	// this package has no entry for read every flag and write none.
	Reads, Writes Flags

	// Args are Raw.Args as Arg values (ArgNone where x86asm has nil).
	Args Args
}

// FromX86asm reports whether x86asm decoded the instruction: then
// Raw.Op is Op and Args are its operands. This package's own Ops
// (ENDBR64 … UNKNOWN) have Raw.Op 0 and no operands.
func (i *Info) FromX86asm() bool { return i.Op != 0 && i.Op <= maxKnownOp }

// Inst is one decoded instruction with x86asm's decoding. Code that
// reads Info alone (the relocator, code generation) takes an *Info: an
// Inst made from a DecodeInfo result would have a zero Raw whose
// operands read as nil, which a pattern match takes for "no match"
// (sigaction loaded through the GOT once missed its thunk that way).
type Inst struct {
	Info
	// Raw is x86asm's full decoding, for operand pattern matching, with
	// two corrections: Raw.Len covers prefixes x86asm skipped, and a
	// rip-relative operand of a VEX/EVEX instruction has Base RIP and
	// PCRel/PCRelOff set, as x86asm does for legacy encodings. Where
	// x86asm could not decode the instruction (Op is one of this
	// package's), Raw has Op 0, Mode 64, Len and PCRel/PCRelOff only.
	Raw x86asm.Inst
}

// Decode decodes the instruction at the start of code, which is loaded
// at addr. It never reads more than 15 bytes and never panics.
//
// Two decoders must agree: blpp's length decoder (prefixes, maps,
// ModRM/SIB/displacement, immediates) and x86asm run on exactly that many
// bytes, which also stops x86asm from consuming bytes of the next
// instruction. Instructions x86asm lacks or misnames are recognised
// before it runs (ownOp). Where x86asm fails on a VEX, EVEX or XOP
// encoding, a 3DNow! instruction or a hint NOP, whose lengths the length
// decoder knows, the instruction is returned with Op UNKNOWN and Kind
// Other. Everything else that does not decode cleanly is a *DecodeError.
func Decode(code []byte, addr uint64) (Inst, error) {
	if len(code) > maxLen {
		code = code[:maxLen]
	}
	l, err := scan(code)
	if err != nil {
		return Inst{}, &DecodeError{Addr: addr, Bytes: append([]byte(nil), code...), Err: err}
	}
	return decode(code[:l.n], addr, &l)
}

// DecodeInfo is Decode without Raw: the same Info, or the same error,
// as Decode's. It answers from a table of the instructions decoded
// before (memo.go), running x86asm only for instructions new to it.
func DecodeInfo(code []byte, addr uint64) (in Info, err error) {
	err = DecodeInfoTo(&in, code, addr)
	return in, err
}

// DecodeInfoTo is DecodeInfo into *in, which it overwrites (zero on an
// error): hot loops decode into their own arrays without copying.
func DecodeInfoTo(in *Info, code []byte, addr uint64) error {
	return decodeInfoTo(nil, in, code, addr)
}

// decodeInfoTo is DecodeInfoTo through d's table (d may be nil).
func decodeInfoTo(d *Decoder, in *Info, code []byte, addr uint64) error {
	*in = Info{}
	rest := code
	if len(code) > maxLen {
		code = code[:maxLen]
	}
	if d == nil {
		var l layout
		if err := scanTo(code, &l); err != nil {
			return &DecodeError{Addr: addr, Bytes: append([]byte(nil), code...), Err: err}
		}
		k0, k1, rel, disp := memoKey(code[:l.n], &l)
		if err := memoDecode(d, in, code[:l.n], addr, &l, k0, k1, rel, disp); err != nil {
			*in = Info{}
			return err
		}
		return nil
	}
	// A Decoder scans the instruction that follows before looking this
	// one up, and starts the loads of its slots: the caller nearly always
	// decodes it next, and its slots then come from the cache.
	a := &d.ahead
	if !a.matches(code) {
		a.ok = false
		if err := scanTo(code, &a.l); err != nil {
			return &DecodeError{Addr: addr, Bytes: append([]byte(nil), code...), Err: err}
		}
		a.k0, a.k1, a.rel, a.disp = memoKey(code[:a.l.n], &a.l)
	}
	l := a.l
	k0, k1, rel, disp := a.k0, a.k1, a.rel, a.disp
	d.scanAhead(rest[l.n:])
	if err := memoDecode(d, in, code[:l.n], addr, &l, k0, k1, rel, disp); err != nil {
		*in = Info{}
		return err
	}
	return nil
}

// decode decodes the instruction code (exactly its bytes), whose layout
// scan found, loaded at addr.
func decode(code []byte, addr uint64, lp *layout) (Inst, error) {
	fail := func(err error) (Inst, error) {
		return Inst{}, &DecodeError{Addr: addr, Bytes: append([]byte(nil), code...), Err: err}
	}
	l := *lp
	n := l.n
	inst := Inst{Info: Info{
		Addr:      addr,
		Len:       n,
		Encoding:  l.enc,
		OpcodeOff: l.opOff,
		ModRMOff:  l.modrmOff,
		Rep:       l.pfx&pfxRep != 0,
		Repne:     l.pfx&pfxRepne != 0,
		Lock:      l.pfx&pfxLock != 0,
	}}
	inst.Kind = kindOf(&l, code)

	if op := ownOp(&l); op != 0 {
		inst.Op = op
		inst.Endbr = op == ENDBR64 || op == ENDBR32
		inst.Raw = x86asm.Inst{Mode: 64, Len: n}
	} else {
		raw, xerr := decodeX86asm(code)
		switch {
		case xerr == nil && raw.Op != 0 && raw.Len == n:
			if !kindAgrees(inst.Kind, raw.Op) {
				return fail(ErrMismatch)
			}
			if isVSIB(raw.Op) && !l.hasSIB {
				// Gathers and scatters address memory through a vector
				// index in SIB; without SIB they are #UD [Intel SDM
				// Vol.2 §2.3.12]. x86asm accepts them.
				return fail(ErrInvalid)
			}
			inst.Op = raw.Op
			inst.Raw = raw
		case xerr == nil && raw.Op != 0:
			return fail(ErrMismatch)
		default:
			// x86asm failed, or returned Op 0 (its answer for an
			// unknown instruction after a prefix, as with endbr64).
			if inst.Kind != Other {
				return fail(ErrUnknown)
			}
			op, raw := fallback(&l, code)
			if op == 0 {
				return fail(ErrUnknown)
			}
			inst.Op = op
			inst.Raw = raw
		}
	}

	if l.relSize > 0 {
		if !inst.Kind.HasTarget() {
			return fail(ErrMismatch)
		}
		inst.BranchOff = l.immOff
		inst.BranchSize = l.relSize
		var rel int64
		if l.relSize == 1 {
			rel = int64(int8(code[l.immOff]))
		} else {
			rel = int64(int32(binary.LittleEndian.Uint32(code[l.immOff:])))
		}
		inst.Target = addr + uint64(n) + uint64(rel)
	} else if inst.Kind.HasTarget() {
		return fail(ErrMismatch)
	}
	if l.ripRel {
		if l.pfx&pfxAddr != 0 {
			// [eip + disp32]: the address wraps at 4 GiB, which the
			// relocator cannot reproduce at a new address.
			return fail(ErrUnsupported)
		}
		inst.RIPRel = true
		inst.RIPDispOff = l.dispOff
		disp := int64(int32(binary.LittleEndian.Uint32(code[l.dispOff:])))
		inst.RIPTarget = addr + uint64(n) + uint64(disp)
		// Where x86asm reports the field (legacy encodings), it must be
		// the same one. Where it does not (VEX, EVEX, and the
		// instructions it cannot decode), Raw is completed so that
		// PCRel/PCRelOff and a RIP base describe the operand for every
		// encoding.
		switch {
		case inst.Raw.PCRel == 0:
			inst.Raw.PCRel, inst.Raw.PCRelOff = 4, l.dispOff
			for i, a := range inst.Raw.Args {
				if m, ok := a.(x86asm.Mem); ok && m.Base == 0 && m.Index == 0 {
					m.Base = x86asm.RIP
					inst.Raw.Args[i] = m
				}
			}
		case inst.Raw.PCRel != 4 || inst.Raw.PCRelOff != l.dispOff:
			return fail(ErrMismatch)
		}
	}
	if inst.Kind == JmpIndirect || inst.Kind == CallIndirect {
		inst.Notrack = l.pfx&pfxDS != 0
	}
	if inst.Kind != Other && inst.Kind != Halt && inst.Kind != Syscall {
		inst.Bnd = l.lastRep == 0xf2
	}
	inst.Reads, inst.Writes = flagsOf(&inst, &l)
	inst.Args = argsOf(&inst.Raw.Args)
	return inst, nil
}

// fallback names an instruction x86asm v0.32 cannot decode, or returns
// Op 0 when it should be refused.
//
// VEX/EVEX after a segment override: x86asm only looks for VEX at offset
// 0, so it is run again without the prefixes and the segment is put back
// into the memory operand. Other VEX, EVEX and XOP instructions are
// accepted as UNKNOWN: their length rules are uniform and x86asm's tables
// lag the ISA (AMX, AVX512-FP16, XOP). Legacy encodings are accepted only
// from a list of known instructions (legacyExtra), so that an invalid
// encoding, a likely sign of data, is not mistaken for an instruction.
func fallback(l *layout, code []byte) (x86asm.Op, x86asm.Inst) {
	n := len(code)
	bare := x86asm.Inst{Mode: 64, Len: n}
	if l.enc == Legacy {
		return legacyExtra(l), bare
	}
	if l.pfxLen > 0 && l.pfx&pfxAddr == 0 {
		raw, err := decodeX86asm(code[l.pfxLen:])
		if err == nil && raw.Op != 0 && raw.Len == n-l.pfxLen {
			var seg x86asm.Reg
			switch {
			case l.pfx&pfxFS != 0:
				seg = x86asm.FS
			case l.pfx&pfxGS != 0:
				seg = x86asm.GS
			}
			for i, a := range raw.Args {
				if m, ok := a.(x86asm.Mem); ok && seg != 0 {
					m.Segment = seg
					raw.Args[i] = m
				}
			}
			raw.Len = n
			return raw.Op, raw
		}
	}
	return UNKNOWN, bare
}

// ownOp recognises, before x86asm sees them, the legacy instructions that
// x86asm v0.32 decodes as a bare prefix (Op 0: endbr64, rdssp, rdpid,
// adcx, …), does not know at all (serialize, rdpkru, rdseed, …), or
// decodes as a different instruction of the same length because it
// ignores a mandatory prefix (incssp as lfence, clwb as xsaveopt,
// clflushopt as clflush, tpause/umwait/umonitor as mfence, ptwrite as
// xsave, senduipi as rdrand) [Intel SDM Vol.2; AMD APM Vol.3 and Vol.4
// for monitorx, mwaitx, clzero, rdpru, extrq and insertq].
func ownOp(l *layout) x86asm.Op {
	if l.enc != Legacy || l.modrmOff < 0 {
		return 0
	}
	mem := l.mod() != 3
	reg := l.mod() == 3
	noPfx := l.lastRep == 0 && l.pfx&pfxOpsize == 0
	o66 := l.lastRep == 0 && l.pfx&pfxOpsize != 0
	f3 := l.lastRep == 0xf3
	f2 := l.lastRep == 0xf2
	switch l.opMap {
	case map0F:
		switch l.op {
		case 0x1e:
			switch {
			case f3 && l.modrm == 0xfa:
				return ENDBR64
			case f3 && l.modrm == 0xfb:
				return ENDBR32
			case f3 && reg && l.reg() == 1:
				return pick(l.w, RDSSPQ, RDSSPD)
			}
		case 0x01:
			switch {
			case f3 && l.modrm == 0xea:
				return SAVEPREVSSP
			case f3 && l.modrm == 0xe8:
				return SETSSBSY
			case f3 && mem && l.reg() == 5:
				return RSTORSSP
			case noPfx && l.modrm == 0xee:
				return RDPKRU
			case noPfx && l.modrm == 0xef:
				return WRPKRU
			case noPfx && l.modrm == 0xe8:
				return SERIALIZE
			case noPfx && l.modrm == 0xfa:
				return MONITORX
			case noPfx && l.modrm == 0xfb:
				return MWAITX
			case noPfx && l.modrm == 0xfc:
				return CLZERO
			case noPfx && l.modrm == 0xfd:
				return RDPRU
			}
		case 0xae:
			switch {
			case f3 && reg && l.reg() == 5:
				return pick(l.w, INCSSPQ, INCSSPD)
			case f3 && mem && l.reg() == 6:
				return CLRSSBSY
			case f3 && l.reg() == 4:
				return PTWRITE
			case o66 && mem && l.reg() == 7:
				return CLFLUSHOPT
			case o66 && mem && l.reg() == 6:
				return CLWB
			case f3 && reg && l.reg() == 6:
				return UMONITOR
			case f2 && reg && l.reg() == 6:
				return UMWAIT
			case o66 && reg && l.reg() == 6:
				return TPAUSE
			}
		case 0xc7:
			switch {
			case f3 && reg && l.reg() == 7:
				return RDPID
			case f3 && reg && l.reg() == 6:
				return SENDUIPI
			case l.lastRep == 0 && reg && l.reg() == 7:
				return RDSEED
			}
		case 0x1c:
			if noPfx && mem && l.reg() == 0 {
				return CLDEMOTE
			}
		case 0x78, 0x79:
			switch {
			case o66 && reg && (l.op == 0x79 || l.reg() == 0):
				return EXTRQ
			case f2 && reg:
				return INSERTQ
			}
		}
	case map0F38:
		switch {
		case l.op == 0xf6 && o66:
			return ADCX
		case l.op == 0xf6 && f3:
			return ADOX
		case l.op == 0xf6 && noPfx && mem:
			return pick(l.w, WRSSQ, WRSSD)
		case l.op == 0xf5 && o66 && mem:
			return pick(l.w, WRUSSQ, WRUSSD)
		case l.op == 0xf9 && noPfx && mem:
			return MOVDIRI
		case l.op == 0xf8 && o66 && mem:
			return MOVDIR64B
		}
	}
	return 0
}

// legacyExtra accepts the legacy encodings x86asm fails on whose length
// rules are uniform and whose every form is defined, as UNKNOWN.
func legacyExtra(l *layout) x86asm.Op {
	switch {
	case l.opMap == map3DNow:
		return UNKNOWN // 0f 0f /r ib: every suffix is ModRM + imm8
	case l.opMap == map0F && l.op >= 0x18 && l.op <= 0x1f:
		// Hint NOPs (prefetch hints, MPX, CET on older processors): every
		// ModRM form is defined and does nothing visible [Intel SDM
		// Vol.2 NOP, App. A.3 note].
		return UNKNOWN
	}
	return 0
}

// decodeX86asm runs x86asm.Decode and turns a panic inside it (x86asm
// was not written for hostile input) into an error.
func decodeX86asm(code []byte) (raw x86asm.Inst, err error) {
	defer func() {
		if r := recover(); r != nil {
			raw, err = x86asm.Inst{}, fmt.Errorf("x86asm panic: %v", r)
		}
	}()
	return x86asm.Decode(code, 64)
}

func isVSIB(op x86asm.Op) bool {
	if op <= x86asm.XTEST || op > maxKnownOp {
		return false
	}
	s := op.String()
	return strings.HasPrefix(s, "VGATHER") || strings.HasPrefix(s, "VPGATHER") ||
		strings.HasPrefix(s, "VSCATTER") || strings.HasPrefix(s, "VPSCATTER")
}

func pick(c bool, a, b x86asm.Op) x86asm.Op {
	if c {
		return a
	}
	return b
}

// String formats the instruction in AT&T syntax, as objdump does, for
// debugging. Instructions x86asm cannot decode print their mnemonic (or
// "(unknown)") and length.
func (i *Inst) String() string {
	if i.Raw.Op != 0 {
		return x86asm.GNUSyntax(i.Raw, i.Addr, nil)
	}
	s := strings.ToLower(OpString(i.Op))
	if i.Op == UNKNOWN {
		s = "(unknown " + i.Encoding.String() + ")"
	}
	if i.RIPRel {
		s += fmt.Sprintf(" # %#x", i.RIPTarget)
	}
	return fmt.Sprintf("%s [%d bytes]", s, i.Len)
}

// MayNameGS reports whether code may hold an instruction that uses the
// %gs segment or its base: every %gs operand carries the 65 segment
// prefix, and rdgsbase/wrgsbase are f3 (REX) 0f ae /1, /3 [Intel SDM
// Vol.2 §2.1.1, RDFSBASE/RDGSBASE]. False is certain; true only says
// that decoding must tell.
func MayNameGS(code []byte) bool {
	return bytes.IndexByte(code, 0x65) >= 0 || bytes.Contains(code, []byte{0x0f, 0xae})
}
