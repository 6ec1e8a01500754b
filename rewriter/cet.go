package rewriter

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Control-flow enforcement (CET) [Intel SDM Vol.1 ch.18; x86-64 psABI
// 2.1.7 "Program Property"], decision 95. A program linked with the IBT
// and SHSTK bits in its GNU property note runs, where the CPU and the
// kernel enforce them, with indirect branch tracking (every indirect jmp
// or call must land on endbr64, unless it is notrack) and a shadow stack
// (every ret must return to the address its call pushed). The rewritten
// program keeps both bits, and so both protections, because:
//
//   - IBT: the original entry of an instrumented function that starts with
//     endbr64 keeps it, and the entry jump goes after it (entryJumpAt), so
//     function pointers still land on endbr64; a function without room for
//     endbr64 and the 5-byte jump is left alone (cetBlocker), as are the
//     entries of left-out ones (darkPlan). In the new code, endbr64 starts
//     every place an indirect branch may reach: the relocated entry (and
//     other entries) of a function whose original entry has one, every
//     target of a jump table copy, block or trampoline (jmp *reg of
//     biasedJump is not notrack), every landing pad (the unwinder enters it
//     by jmp *%rcx), and the return site of a call the compiler followed
//     by endbr64 (setjmp, vfork and other returns-twice functions: longjmp
//     comes back by an indirect jump). The runtime is compiled with
//     -fcf-protection, so its functions whose addresses are taken (signal
//     handlers, the DT_INIT/DT_FINI/fini_array hooks) start with endbr64,
//     and blpp_start, the new e_entry, has one.
//   - SHSTK: every call the instrumentation emits is to a runtime stub or an
//     instrumented copy, and each returns by ret to the address its call
//     pushed; no emitted sequence pops a return address, pushes one to
//     return through, or calls the next instruction; the runtime's stubs
//     are call/ret pairs too, leave to the program only by
//     jmp *blpp_entry_target (not a return), and the runtime neither
//     longjmps nor switches stacks by hand. Copies of original code keep
//     each call a call and each ret a ret.
//
// Where the input has neither bit, nothing changes: no endbr64 is added
// and entry jumps go at the entry, as before (decision 19).

// GNU property note constants [x86-64 psABI 2.1.7 "Program Property";
// linux/elf.h].
const (
	ntGNUPropertyType0     = 5
	gnuPropertyX86Feature1 = 0xc0000002 // GNU_PROPERTY_X86_FEATURE_1_AND
	x86FeatureIBT          = 1 << 0
	x86FeatureSHSTK        = 1 << 1
)

// cetMode is what the rewritten code keeps of CET.
type cetMode struct {
	// ibt: the input's note says IBT (or a test forced it: Options.forceIBT),
	// so the new code places endbr64 at every indirect-branch target.
	ibt bool
	// feat are the input's x86 feature bits (GNU_PROPERTY_X86_FEATURE_1_AND).
	feat uint32
}

// cetOf reads the CET bits of the ELF file in.
func cetOf(in []byte, opts Options) cetMode {
	var feat uint32
	visitX86Features(in, func(p []byte) {
		feat |= binary.LittleEndian.Uint32(p)
	})
	return cetMode{ibt: feat&x86FeatureIBT != 0 || opts.forceIBT, feat: feat}
}

// keepCET returns the summary's warnings about the CET note of the output
// out: none where the input claims neither bit or the output keeps what
// it claims. The one thing that can break IBT is a runtime image built
// without -fcf-protection (its hooks reached by indirect calls would not
// start with endbr64): IBT is then cleared, with a warning. SHSTK holds
// whatever the image (cet.go's doc).
func keepCET(out *elfw.Pieces, img *runtime.Image, cm cetMode) (*elfw.Pieces, []string) {
	if cm.feat&x86FeatureIBT == 0 {
		return out, nil
	}
	for _, sym := range []string{runtime.SymStart, runtime.SymFini, runtime.SymModInit} {
		off, ok := img.Symbols[sym]
		if ok && off < uint64(len(img.Text)) && enc.IsEndbr64(img.Text[off:]) {
			continue
		}
		// The note is read and changed in the assembled file.
		file := out.Bytes()
		if clearCET(file, x86FeatureIBT) {
			return elfw.Whole(file), []string{fmt.Sprintf("the program was built for CET IBT; the rewritten one is marked without it: "+
				"the runtime's %s, which the program reaches by an indirect branch, does not start with endbr64 "+
				"(the runtime image was not built with -fcf-protection; decision 95)", sym)}
		}
		return out, nil
	}
	return out, nil
}

// skipCET is the reason given to a function left alone because its
// entry jump does not fit after its endbr64.
const skipCET = "no room for the entry jump after endbr64"

// cetBlocker returns why the entry jumps of f cannot go after the endbr64
// its entries start with, where IBT is kept, or "" when they can: each
// jump takes the 5 bytes after the endbr64 (entryJumpAt), which must lie
// in f (the entry's range and its padding, decision 8, for the main
// entry; blocks of f for the others), and no code outside f may branch
// into the 9 bytes after the entry's first (patchedInto's rule for the
// first 5, extended). A branch of f's own into them is harmless unless
// code outside f enters its body elsewhere (the original body then
// never runs; see patchedInto).
func cetBlocker(b *cfg.Binary, f *analysis.Func, into *cfg.Branches) string {
	fn := f.Func
	self := false
	for i, e := range append([]uint64{fn.Addr}, fn.Entries...) {
		if !enc.IsEndbr64(b.Code(e)) {
			continue
		}
		at := e + 4
		if i == 0 && at+5 > fn.Addr+fn.Size+fn.Pad {
			return fmt.Sprintf("%d bytes and %d bytes of padding, shorter than endbr64 and the 5-byte entry jump", fn.Size, fn.Pad)
		}
		if i > 0 && !covers(f.Graph, at, at+5) {
			return fmt.Sprintf("the entry at %#x has no room for the entry jump after its endbr64", e)
		}
		for a := e + 1; a < at+5; a++ {
			for _, src := range into.Sources(a) {
				if !fn.Contains(src) {
					return fmt.Sprintf("the code at %#x branches into the bytes the entry jump after endbr64 at %#x overwrites", src, e)
				}
				self = true
			}
		}
	}
	if self && enteredInside(fn, into) {
		return "its own branches lead into the bytes the entry jump after endbr64 overwrites, and other code enters its body"
	}
	return ""
}

// entryJumpAt is where the jump that redirects the entry at a goes: a
// itself, or, where IBT is kept and a starts with endbr64, the
// instruction after it.
func (g *gen) entryJumpAt(a uint64) uint64 {
	if g.cet.ibt && enc.IsEndbr64(g.b.Code(a)) {
		return a + 4
	}
	return a
}

// endbr emits endbr64 where IBT is kept: at a new indirect-branch target.
func (g *gen) endbr() {
	if g.cet.ibt {
		g.buf.Endbr64()
	}
}

// endbrAt emits endbr64 where IBT is kept and the original code at a
// starts with one: a relocated entry, or the return site of a call the
// compiler followed by endbr64 (a returns-twice callee).
func (g *gen) endbrAt(a uint64) {
	if g.cet.ibt && enc.IsEndbr64(g.b.Code(a)) {
		g.buf.Endbr64()
	}
}

// clearCET clears the bits of GNU_PROPERTY_X86_FEATURE_1_AND in every
// .note.gnu.property note and PT_GNU_PROPERTY/PT_NOTE segment of the ELF
// file in place, and reports whether any was set. The note must not
// claim what the rewritten program no longer is. The kernel and ld.so
// read the segments; tools read the section; both are the same bytes.
func clearCET(file []byte, bits uint32) bool {
	changed := false
	visitX86Features(file, func(p []byte) {
		if v := binary.LittleEndian.Uint32(p); v&bits != 0 {
			binary.LittleEndian.PutUint32(p, v&^bits)
			changed = true
		}
	})
	return changed
}

// visitX86Features calls fn with the 4 bytes of every
// GNU_PROPERTY_X86_FEATURE_1_AND word in the notes of the ELF file, in
// place (a note seen through both its section and its segment twice).
func visitX86Features(file []byte, fn func(p []byte)) {
	f, err := elf.NewFile(bytes.NewReader(file))
	if err != nil {
		return
	}
	defer f.Close()
	type span struct{ off, size, align uint64 }
	var spans []span
	for _, s := range f.Sections {
		if s.Type == elf.SHT_NOTE && s.Name == ".note.gnu.property" {
			spans = append(spans, span{s.Offset, s.FileSize, s.Addralign})
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_NOTE || p.Type == elf.PT_GNU_PROPERTY {
			spans = append(spans, span{p.Off, p.Filesz, p.Align})
		}
	}
	for _, sp := range spans {
		if sp.off > uint64(len(file)) || sp.size > uint64(len(file))-sp.off {
			continue
		}
		visitNotes(file[sp.off:sp.off+sp.size], sp.align, fn)
	}
}

// visitNotes walks the notes in d, whose descriptors are padded to align
// (4, or 8 for ELFCLASS64 NT_GNU_PROPERTY_TYPE_0 notes), and calls fn
// with each x86 feature word.
func visitNotes(d []byte, align uint64, fn func(p []byte)) {
	le := binary.LittleEndian
	pad := uint64(3)
	if align == 8 {
		pad = 7
	}
	for len(d) >= 12 {
		namesz, descsz, typ := uint64(le.Uint32(d)), uint64(le.Uint32(d[4:])), le.Uint32(d[8:])
		nameEnd := 12 + (namesz+3)&^3
		descEnd := nameEnd + (descsz+pad)&^pad
		if nameEnd > uint64(len(d)) || nameEnd+descsz > uint64(len(d)) {
			return
		}
		if typ == ntGNUPropertyType0 && namesz == 4 && string(d[12:16]) == "GNU\x00" {
			for p := d[nameEnd : nameEnd+descsz]; len(p) >= 8; {
				ptyp, psz := le.Uint32(p), uint64(le.Uint32(p[4:]))
				if 8+psz > uint64(len(p)) {
					break
				}
				if ptyp == gnuPropertyX86Feature1 && psz >= 4 {
					fn(p[8:12])
				}
				next := 8 + (psz+7)&^7
				if next > uint64(len(p)) {
					break
				}
				p = p[next:]
			}
		}
		if descEnd > uint64(len(d)) {
			return
		}
		d = d[descEnd:]
	}
}

// tableBlocks reports, where IBT is kept, which blocks of fg a jump
// table's copy leads to directly (an edge without code: via gives the
// block's own label); the others lead to trampolines, which start with
// endbr64 themselves (jumpTable marks them).
func (fg *funcGen) tableBlocks() []bool {
	if !fg.g.cet.ibt || len(fg.f.Graph.Tables) == 0 {
		return nil
	}
	gr := fg.f.Graph
	out := make([]bool, len(gr.Blocks))
	for i, ed := range gr.Edges {
		if ed.Kind == cfg.EdgeJumpTable && ed.To >= 0 && !fg.needsCode(cfg.EdgeID(i)) {
			out[ed.To] = true
		}
	}
	return out
}

// leadingEndbr reports whether the copy of the endbr64 that starts fg's
// function is emitted at the relocated entry, before the entry
// instrumentation, instead of in block 0: where IBT is kept, nothing but
// the entry reaches block 0 (no edge leads back to it, no internal entry
// of a closed function skips the relocated entry, decision 61), and
// block 0 holds more than the endbr64. The copy then runs once per
// activation, as block 0 does, and no second endbr64 is needed there:
// calls from instrumented code run one endbr64, as the original did.
func (fg *funcGen) leadingEndbr() bool {
	gr := fg.f.Graph
	return fg.g.cet.ibt && fg.prefixEnd == 0 && !fg.closed && len(gr.Preds(0)) == 0 && gr.Blocks[0].Insts > 1 &&
		gr.Blocks[0].Addr == fg.f.Func.Addr && enc.IsEndbr64(fg.g.b.Code(fg.f.Func.Addr))
}
