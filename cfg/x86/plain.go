package x86

// Plain returns the length of the instruction at the start of code when
// it can move to another address byte for byte: it falls through (Kind
// Other) and has no rip-relative operand and no branch displacement.
// Otherwise, or when the length decoder refuses the bytes, it returns 0.
//
// It reads the encoding alone (the length decoder and kindOf, which is
// where DecodeInfo's Kind and RIPRel come from), so it costs a fraction
// of a decoding: code generation copies most of a procedure's
// instructions this way, having decoded them once while building the
// graph. For bytes DecodeInfo decodes, Plain(code) > 0 exactly when
// DecodeInfo gives Kind Other, RIPRel false and BranchSize 0, and it is
// then that Info's Len (FuzzDecode and TestMemoAgrees check this).
func Plain(code []byte) int {
	if len(code) > maxLen {
		code = code[:maxLen]
	}
	var l layout
	if err := scanTo(code, &l); err != nil || l.ripRel || l.relSize > 0 || kindOf(&l, code[:l.n]) != Other {
		return 0
	}
	return l.n
}
