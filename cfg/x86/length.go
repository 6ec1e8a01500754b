package x86

import "strconv"

// This file holds blpp's own instruction-length decoder. It knows nothing
// about mnemonics or operands: it walks prefixes, the opcode, ModRM, SIB,
// displacement and immediate of one instruction and records where each
// field lies. Decode runs it before x86asm and requires both to agree, so
// a table gap in either one shows up as an error rather than as a wrong
// instruction boundary. It is also what finds the length and the
// rip-relative displacement of VEX, EVEX and XOP instructions that x86asm
// cannot decode.
//
// The tables follow the opcode maps of [Intel SDM Vol.2 App. A.3] for
// 64-bit mode; the VEX, EVEX and XOP layouts are [Intel SDM Vol.2 §2.3,
// §2.7] and [AMD APM Vol.3 §1.8].

// Encoding names the opcode-prefix scheme of an instruction.
type Encoding uint8

const (
	Legacy Encoding = iota // legacy prefixes, optional REX, 1–3 opcode bytes
	VEX                    // c4/c5 prefix [Intel SDM Vol.2 §2.3]
	EVEX                   // 62 prefix [Intel SDM Vol.2 §2.7]
	XOP                    // 8f prefix with map ≥ 8 [AMD APM Vol.3 §1.8]
)

var encodingNames = [...]string{Legacy: "legacy", VEX: "vex", EVEX: "evex", XOP: "xop"}

func (e Encoding) String() string {
	if int(e) < len(encodingNames) {
		return encodingNames[e]
	}
	return "Encoding(" + strconv.Itoa(int(e)) + ")"
}

// Opcode maps as numbered by VEX.mmmmm / EVEX.mmm / XOP.mmmmm. Legacy
// one-byte opcodes use map 0; 3DNow! (0f 0f) uses map3DNow.
const (
	map1Byte = 0
	map0F    = 1
	map0F38  = 2
	map0F3A  = 3
	mapFP16a = 5 // EVEX map 5 (AVX512-FP16)
	mapFP16b = 6 // EVEX map 6 (AVX512-FP16)
	mapXOP8  = 8
	mapXOP9  = 9
	mapXOPA  = 10
	map3DNow = 0x0f
)

// Prefix bits seen on an instruction (legacy prefixes only).
const (
	pfxLock   uint16 = 1 << iota
	pfxRep           // f3
	pfxRepne         // f2
	pfxOpsize        // 66
	pfxAddr          // 67
	pfxES
	pfxCS
	pfxSS
	pfxDS
	pfxFS
	pfxGS
)

// layout is what the length decoder found.
type layout struct {
	n        int // total length
	pfxLen   int // bytes of legacy prefixes and REX before the opcode or VEX/EVEX/XOP prefix
	enc      Encoding
	pfx      uint16 // pfx* bits
	lastRep  byte   // the last of f2/f3 (it wins as mandatory prefix)
	rex      byte   // REX byte, 0 if none
	w        bool   // REX.W, VEX.W, EVEX.W or XOP.W
	opMap    int    // map*
	opOff    int    // offset of the (last) opcode byte
	op       byte   // opcode byte within opMap
	modrmOff int    // -1 when there is no ModRM
	modrm    byte
	hasSIB   bool
	dispOff  int // offset of the displacement, valid when dispSize > 0
	dispSize int // 0, 1 or 4
	immOff   int // offset of the first immediate byte, valid when immSize > 0
	immSize  int // total immediate bytes (enter: 3, extrq: 2)
	relSize  int // 1 or 4 when the immediate is a branch displacement
	ripRel   bool
}

func (l *layout) mod() byte { return l.modrm >> 6 }
func (l *layout) reg() byte { return l.modrm >> 3 & 7 }
func (l *layout) rm() byte  { return l.modrm & 7 }

// Operand classes of the opcode tables.
const (
	cNone   = iota // no ModRM, no immediate
	cM             // ModRM
	cMb            // ModRM + imm8
	cMz            // ModRM + imm16/32
	cB             // imm8
	cW             // imm16
	cZ             // imm16/32 (66 selects 16)
	cV             // imm16/32/64 (mov r, imm: REX.W selects 64)
	cEnter         // imm16 + imm8
	cMoffs         // 8-byte absolute address (4 with 67)
	cRel8          // rel8 branch
	cRelZ          // rel32 branch (rel16 with 66: refused)
	cF6            // ModRM, imm8 when reg is 0 or 1 (test)
	cF7            // ModRM, imm16/32 when reg is 0 or 1 (test)
	cBad           // invalid in 64-bit mode
	cPrefix        // a prefix byte (handled before the table)
	cEsc           // escape to another map or to VEX/EVEX/XOP
	c0F78          // 0f 78: vmread, or SSE4a extrq/insertq with two imm8
	c3DNow         // 0f 0f: ModRM + imm8 opcode suffix
)

// parseMap builds a 256-entry table from 16 rows of 16 one-letter codes
// (spaces ignored), so the tables below read like the SDM's opcode maps.
func parseMap(rows [16]string) (t [256]uint8) {
	code := map[byte]uint8{
		'.': cNone, 'm': cM, 'M': cMb, 'Z': cMz, 'b': cB, 'w': cW, 'z': cZ,
		'v': cV, 'e': cEnter, 'o': cMoffs, 'r': cRel8, 'R': cRelZ,
		'f': cF6, 'g': cF7, 'x': cBad, 'p': cPrefix, 'T': cEsc,
		's': c0F78, '3': c3DNow,
	}
	for i, row := range rows {
		j := 0
		for k := 0; k < len(row); k++ {
			if row[k] == ' ' {
				continue
			}
			c, ok := code[row[k]]
			if !ok || j >= 16 {
				panic("x86: bad opcode table row " + strconv.Itoa(i))
			}
			t[i*16+j] = c
			j++
		}
		if j != 16 {
			panic("x86: short opcode table row " + strconv.Itoa(i))
		}
	}
	return t
}

// oneByte is the one-byte opcode map in 64-bit mode [Intel SDM Vol.2
// Table A-2]. 8f is pop r/m unless it starts an XOP prefix (checked
// before the table); c4, c5 and 62 are always VEX/EVEX in 64-bit mode.
var oneByte = parseMap([16]string{
	/* 0x */ "m m m m b z x x  m m m m b z x T",
	/* 1x */ "m m m m b z x x  m m m m b z x x",
	/* 2x */ "m m m m b z p x  m m m m b z p x",
	/* 3x */ "m m m m b z p x  m m m m b z p x",
	/* 4x */ "p p p p p p p p  p p p p p p p p",
	/* 5x */ ". . . . . . . .  . . . . . . . .",
	/* 6x */ "x x T m p p p p  z Z b M . . . .",
	/* 7x */ "r r r r r r r r  r r r r r r r r",
	/* 8x */ "M Z x M m m m m  m m m m m m m m",
	/* 9x */ ". . . . . . . .  . . x . . . . .",
	/* Ax */ "o o o o . . . .  b z . . . . . .",
	/* Bx */ "b b b b b b b b  v v v v v v v v",
	/* Cx */ "M M w . T T M Z  e . w . . b x .",
	/* Dx */ "m m m m x x x .  m m m m m m m m",
	/* Ex */ "r r r r b b b b  R R x r . . . .",
	/* Fx */ "p . p p . . f g  . . . . . . m m",
})

// twoByte is the 0f map [Intel SDM Vol.2 Table A-3]. Opcodes with no
// defined instruction in 64-bit mode are x; 0f 38 and 0f 3a escape to the
// three-byte maps, which always have ModRM (and, for 0f 3a, an imm8).
var twoByte = parseMap([16]string{
	/* 0x */ "m m m m x . . .  . . x . x m . 3",
	/* 1x */ "m m m m m m m m  m m m m m m m m",
	/* 2x */ "m m m m x x x x  m m m m m m m m",
	/* 3x */ ". . . . . . x .  T x T x x x x x",
	/* 4x */ "m m m m m m m m  m m m m m m m m",
	/* 5x */ "m m m m m m m m  m m m m m m m m",
	/* 6x */ "m m m m m m m m  m m m m m m m m",
	/* 7x */ "M M M M m m m .  s m x x m m m m",
	/* 8x */ "R R R R R R R R  R R R R R R R R",
	/* 9x */ "m m m m m m m m  m m m m m m m m",
	/* Ax */ ". . . m M m x x  . . . m M m m m",
	/* Bx */ "m m m m m m m m  m m M m m m m m",
	/* Cx */ "m m M m M M M m  . . . . . . . .",
	/* Dx */ "m m m m m m m m  m m m m m m m m",
	/* Ex */ "m m m m m m m m  m m m m m m m m",
	/* Fx */ "m m m m m m m m  m m m m m m m m",
})

// vexImm8Map1 lists the opcodes of VEX/EVEX map 1 (0f) that take an imm8:
// the shift-by-immediate groups and pshufd (70–73), cmpps (c2), pinsrw
// (c4), pextrw (c5) and shufps (c6) [Intel SDM Vol.2 Table A-3].
func vexImm8Map1(op byte) bool {
	switch op {
	case 0x70, 0x71, 0x72, 0x73, 0xc2, 0xc4, 0xc5, 0xc6:
		return true
	}
	return false
}

// maxLen is the architectural limit on instruction length [Intel SDM
// Vol.2 §2.3.11]: longer byte sequences raise #GP.
const maxLen = 15

// scan decodes the layout of the instruction at the start of code. It
// never reads past len(code) nor past maxLen bytes.
func scan(code []byte) (l layout, err error) {
	err = scanTo(code, &l)
	return l, err
}

// scanTo is scan into *l (overwritten), for the decoders' hot paths:
// returning the layout by value copied it on every decoding, a tenth of
// the length decoder's time in a libLLVM rewrite.
func scanTo(code []byte, l *layout) error {
	*l = layout{modrmOff: -1}
	if len(code) > maxLen {
		code = code[:maxLen]
	}
	pos := 0
	// Legacy prefixes and REX. A REX must come last: one followed by
	// another prefix is ignored by the processor [Intel SDM Vol.2 §2.2.1],
	// x86asm does not decode that, and objdump prints it on a line of its
	// own. No compiler emits it, so it is refused.
	for {
		if pos >= len(code) {
			return truncOrLong(code)
		}
		b := code[pos]
		if l.rex != 0 && (b&0xf0 == 0x40 || isLegacyPrefix(b)) {
			return ErrUnsupported
		}
		if bit := legacyPrefix[b]; bit != 0 {
			l.pfx |= bit
			if b == 0xf2 || b == 0xf3 {
				l.lastRep = b
			}
		} else if b&0xf0 == 0x40 {
			l.rex = b
		} else {
			break
		}
		pos++
	}
	l.w = l.rex&0x08 != 0
	l.pfxLen = pos

	b := code[pos]
	switch {
	case b == 0xc4 || b == 0xc5 || b == 0x62:
		return scanVEX(code, pos, l)
	case b == 0x8f && pos+1 < len(code) && code[pos+1]&0x1f >= 8:
		return scanVEX(code, pos, l)
	}

	// Legacy opcode: one byte, or 0f xx, 0f 38 xx, 0f 3a xx.
	class := oneByte[b]
	l.opMap = map1Byte
	l.opOff = pos
	l.op = b
	pos++
	if b == 0x0f {
		if pos >= len(code) {
			return truncOrLong(code)
		}
		b = code[pos]
		l.opMap = map0F
		l.opOff = pos
		l.op = b
		pos++
		class = twoByte[b]
		if b == 0x38 || b == 0x3a {
			if pos >= len(code) {
				return truncOrLong(code)
			}
			l.opMap = map0F38
			class = cM
			if b == 0x3a {
				l.opMap = map0F3A
				class = cMb
			}
			l.opOff = pos
			l.op = code[pos]
			pos++
		}
	}
	if class == cBad {
		return ErrInvalid
	}
	if class == cEsc || class == cPrefix {
		// Every escape and prefix was consumed above; reaching one here
		// means the tables and the prefix loop disagree.
		return ErrInvalid
	}

	hasModRM := false
	switch class {
	case cM, cMb, cMz, cF6, cF7, c0F78, c3DNow:
		hasModRM = true
	}
	if hasModRM {
		var err error
		if l.opMap == map0F && l.op >= 0x20 && l.op <= 0x23 {
			// mov to/from control and debug registers ignore ModRM.mod
			// and always take register operands [Intel SDM Vol.2 MOV—Move
			// to/from Control Registers]: no SIB, no displacement.
			if pos >= len(code) {
				return truncOrLong(code)
			}
			l.modrmOff = pos
			l.modrm = code[pos] | 0xc0
			pos++
		} else if pos, err = scanModRM(code, pos, l); err != nil {
			return err
		}
	}

	imm := 0
	switch class {
	case cMb, cB, c3DNow:
		imm = 1
	case cW:
		imm = 2
	case cEnter:
		imm = 3
	case cMz, cZ:
		imm = l.immZ()
	case cV:
		imm = l.immZ()
		if l.w {
			imm = 8
		}
	case cMoffs:
		imm = 8
		if l.pfx&pfxAddr != 0 {
			imm = 4
		}
	case cRel8:
		imm = 1
		l.relSize = 1
	case cRelZ:
		if l.pfx&pfxOpsize != 0 && !l.w {
			// Intel ignores 66 on near branches in 64-bit mode and keeps
			// rel32; AMD truncates to rel16 [AMD APM Vol.3 "Near
			// Branches in 64-Bit Mode"]. The two disagree on the length,
			// so the instruction is refused. With REX.W the operand size
			// is 64 bits on both and 66 is ignored [Intel SDM Vol.1
			// 3.6.1, Table 3-4]: that is the TLS general-dynamic call
			// `data16 data16 rex.W call __tls_get_addr` [Drepper, ELF
			// Handling For Thread-Local Storage, 4.1.6], common in shared
			// libraries, 8 bytes long.
			return ErrUnsupported
		}
		imm = 4
		l.relSize = 4
	case cF6:
		if l.reg() <= 1 {
			imm = 1
		}
	case cF7:
		if l.reg() <= 1 {
			imm = l.immZ()
		}
	case c0F78:
		// 66 0f 78 /0 ib ib is extrq and f2 0f 78 /r ib ib is insertq
		// [AMD APM Vol.4]; without those prefixes it is vmread.
		if l.lastRep == 0xf2 || l.lastRep == 0 && l.pfx&pfxOpsize != 0 {
			imm = 2
		}
	}
	// xbegin (c7 f8 rel32) is the one ModRM instruction whose immediate is a
	// branch displacement [Intel SDM Vol.2 XBEGIN].
	if l.opMap == map1Byte && l.op == 0xc7 && l.modrm == 0xf8 {
		if l.pfx&pfxOpsize != 0 {
			return ErrUnsupported
		}
		l.relSize = 4
	}
	pos, err := l.immediate(code, pos, imm)
	if err != nil {
		return err
	}
	if class == c3DNow {
		l.opMap = map3DNow
		l.op = code[pos-1]
	}
	l.n = pos
	return nil
}

// legacyPrefix maps each legacy prefix byte to its pfx* bit, other bytes
// to 0 [Intel SDM Vol.2 §2.1.1].
var legacyPrefix = [256]uint16{
	0xf0: pfxLock, 0xf2: pfxRepne, 0xf3: pfxRep, 0x66: pfxOpsize, 0x67: pfxAddr,
	0x26: pfxES, 0x2e: pfxCS, 0x36: pfxSS, 0x3e: pfxDS, 0x64: pfxFS, 0x65: pfxGS,
}

func isLegacyPrefix(b byte) bool { return legacyPrefix[b] != 0 }

// immZ is the size of an "Iz" immediate: 2 with a 66 prefix and no REX.W,
// else 4 [Intel SDM Vol.2 App. A.2.2].
func (l *layout) immZ() int {
	if l.pfx&pfxOpsize != 0 && !l.w {
		return 2
	}
	return 4
}

// scanVEX decodes an instruction that starts with a VEX (c4, c5), EVEX
// (62) or XOP (8f) prefix at pos.
func scanVEX(code []byte, pos int, l *layout) error {
	// A VEX/EVEX/XOP prefix after 66, f2, f3, f0 or REX is #UD [Intel SDM
	// Vol.2 §2.3.2]; segment overrides and 67 are allowed.
	if l.rex != 0 || l.pfx&(pfxOpsize|pfxRep|pfxRepne|pfxLock) != 0 {
		return ErrInvalid
	}
	b := code[pos]
	var n int
	switch b {
	case 0xc5:
		n = 2
		l.enc = VEX
	case 0xc4:
		n = 3
		l.enc = VEX
	case 0x62:
		n = 4
		l.enc = EVEX
	case 0x8f:
		n = 3
		l.enc = XOP
	}
	if pos+n >= len(code) { // the prefix plus at least the opcode byte
		return truncOrLong(code)
	}
	p := code[pos : pos+n]
	switch b {
	case 0xc5:
		l.opMap = map0F
	case 0xc4, 0x8f:
		l.opMap = int(p[1] & 0x1f)
		l.w = p[2]&0x80 != 0
	case 0x62:
		// P0 bit 3 and P1 bit 2 are fixed (0 and 1) in AVX-512 EVEX;
		// other values are APX/AVX10 extensions we do not decode.
		if p[1]&0x08 != 0 || p[2]&0x04 == 0 {
			return ErrUnknown
		}
		l.opMap = int(p[1] & 0x07)
		l.w = p[2]&0x80 != 0
	}
	pos += n
	l.opOff = pos
	l.op = code[pos]
	pos++

	imm := 0
	switch l.enc {
	case VEX:
		switch l.opMap {
		case map0F:
			if l.op == 0x77 { // vzeroupper/vzeroall: no ModRM
				l.n = pos
				return nil
			}
			if vexImm8Map1(l.op) {
				imm = 1
			}
		case map0F38:
		case map0F3A:
			imm = 1
		default:
			return ErrUnknown
		}
	case EVEX:
		switch l.opMap {
		case map0F:
			if vexImm8Map1(l.op) {
				imm = 1
			}
		case map0F38, mapFP16a, mapFP16b:
		case map0F3A:
			imm = 1
		default:
			return ErrUnknown
		}
	case XOP:
		switch l.opMap {
		case mapXOP8:
			imm = 1
		case mapXOP9:
		case mapXOPA:
			imm = 4
		default:
			return ErrUnknown
		}
	}
	var err error
	if pos, err = scanModRM(code, pos, l); err != nil {
		return err
	}
	if pos, err = l.immediate(code, pos, imm); err != nil {
		return err
	}
	l.n = pos
	return nil
}

// immediate places an immediate of imm bytes (none when 0) at pos and
// returns the position after it, checking that code holds it.
func (l *layout) immediate(code []byte, pos, imm int) (int, error) {
	return placeField(code, pos, imm, &l.immOff, &l.immSize)
}

// placeField places a field of n bytes (none when 0) at pos, recording
// its offset and size in off and size, and returns the position after
// it, checking that code holds it.
func placeField(code []byte, pos, n int, off, size *int) (int, error) {
	if n > 0 {
		*off = pos
		*size = n
		pos += n
	}
	if pos > len(code) {
		return pos, truncOrLong(code)
	}
	return pos, nil
}

// scanModRM reads ModRM, SIB and displacement at pos [Intel SDM Vol.2
// §2.1.5, Tables 2-2 and 2-3; 64-bit rules in §2.2.1.6].
func scanModRM(code []byte, pos int, l *layout) (int, error) {
	if pos >= len(code) {
		return pos, truncOrLong(code)
	}
	l.modrmOff = pos
	l.modrm = code[pos]
	pos++
	mod, rm := l.mod(), l.rm()
	if mod == 3 {
		return pos, nil
	}
	disp := 0
	switch mod {
	case 1:
		disp = 1 // EVEX scales it by N, but it is still one byte
	case 2:
		disp = 4
	}
	if rm == 4 {
		if pos >= len(code) {
			return pos, truncOrLong(code)
		}
		sib := code[pos]
		l.hasSIB = true
		pos++
		if mod == 0 && sib&7 == 5 {
			disp = 4 // [index*scale + disp32], no base
		}
	} else if mod == 0 && rm == 5 {
		// In 64-bit mode mod=00 rm=101 is [rip + disp32] (with 67,
		// [eip + disp32]) [Intel SDM Vol.2 §2.2.1.6].
		disp = 4
		l.ripRel = true
	}
	return placeField(code, pos, disp, &l.dispOff, &l.dispSize)
}

// truncOrLong tells a cut-off instruction from one that exceeds 15 bytes.
func truncOrLong(code []byte) error {
	if len(code) >= maxLen {
		return ErrTooLong
	}
	return ErrTruncated
}
