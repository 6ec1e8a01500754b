package rewriter

import (
	"fmt"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/pathnum"
	"github.com/blpp/blpp/rewriter/enc"

	"golang.org/x/arch/x86/x86asm"
)

// A function whose first bytes other code branches into cannot take
// the 5-byte entry jump at its entry: glibc's __mempcpy_avx_unaligned
// computes its result and jumps 3 bytes into __memmove_avx_unaligned,
// past `mov %rdi,%rax`, to share its body. Such a function is redirected
// further in instead [decision 67]: at the first instruction boundary R
// after a short prefix of plain register moves where a jump fits that no
// branch lands inside. Its graph is built from R, so the relocated copy
// counts every activation that reaches R, whether it came through the
// original prefix (callers of the original entry, the pointers we never
// saw) or straight to R (the shared tail's jump); the prefix is no part
// of any counted block. Calls from instrumented code enter the relocated
// copy at a copy of the prefix, which runs on into the instrumented
// entry. A prefix instruction neither changes flags nor touches %rsp,
// so the entry instrumentation runs at R as it would at the entry: the
// stack as the caller left it, and the status flags dead there too
// (checked: a flag R's code reads before writing refuses).

// maxPrefix bounds the instructions left before the moved entry.
const maxPrefix = 3

// movedEntry returns f analysed from its moved entry, and that entry,
// or why f cannot be redirected that way.
func movedEntry(b *cfg.Binary, p *cfg.Program, f *analysis.Func, into *cfg.Branches) (*analysis.Func, uint64, error) {
	fn := f.Func
	if len(f.Graph.EH) > 0 {
		return nil, 0, fmt.Errorf("it has exception tables")
	}
	code := b.Code(fn.Addr)
	if uint64(len(code)) < fn.Size {
		return nil, 0, fmt.Errorf("its code is not in the file")
	}
	code = code[:fn.Size]
	a := fn.Addr
	for n := 0; n < maxPrefix; n++ {
		in, err := x86.Decode(code[a-fn.Addr:], a)
		if err != nil {
			return nil, 0, err
		}
		if !prefixInst(&in) {
			return nil, 0, fmt.Errorf("%#x: %s cannot run before the entry instrumentation", a, x86.OpString(in.Op))
		}
		a += uint64(in.Len)
		if a+5 > fn.Addr+fn.Size || !jumpFits(a, into) {
			continue
		}
		g := p.GraphAt(fn, a)
		if g == nil || !g.Instrumentable() {
			if g != nil {
				return nil, 0, fmt.Errorf("from %#x: %v: %s", a, g.Reason, g.Detail)
			}
			return nil, 0, fmt.Errorf("from %#x: not analysed", a)
		}
		if !covers(g, a, a+5) {
			continue
		}
		if g.FlagsLiveIn()[cfg.Entry]&x86.Status != 0 {
			return nil, 0, fmt.Errorf("%#x: reads flags the entry instrumentation would change", a)
		}
		num, err := analysis.Number(g, pathnum.Options{MaxPaths: MaxPaths})
		if err != nil {
			return nil, 0, fmt.Errorf("from %#x: %w", a, err)
		}
		return &analysis.Func{Func: fn, Graph: g, Numbering: num}, a, nil
	}
	return nil, 0, fmt.Errorf("no place for the entry jump within %d instructions", maxPrefix)
}

// prefixInst reports whether in may run, relocated or in place, before
// the entry instrumentation: a move or address computation between
// general registers and memory that writes no flag, does not name
// %rsp and transfers no control (or an endbr64).
func prefixInst(in *x86.Inst) bool {
	if in.Endbr {
		return true
	}
	if in.Kind != x86.Other || in.Writes != 0 || in.Lock || in.Rep || in.Repne {
		return false
	}
	switch in.Op {
	case x86asm.MOV, x86asm.MOVZX, x86asm.MOVSX, x86asm.MOVSXD, x86asm.LEA:
	default:
		return false
	}
	for _, arg := range in.Raw.Args {
		switch v := arg.(type) {
		case x86asm.Reg:
			if isSP(v) {
				return false
			}
		case x86asm.Mem:
			if isSP(v.Base) || isSP(v.Index) || v.Segment != 0 {
				return false
			}
		}
	}
	return true
}

func isSP(r x86asm.Reg) bool {
	return r == x86asm.RSP || r == x86asm.ESP || r == x86asm.SP
}

// jumpFits reports whether no branch lands inside [a+1, a+5), the
// bytes after the first of a jump placed at a.
func jumpFits(a uint64, into *cfg.Branches) bool {
	for t := a + 1; t < a+5; t++ {
		if len(into.Sources(t)) > 0 {
			return false
		}
	}
	return true
}

// covers reports whether g's blocks hold every byte of [lo, hi): the
// jump placed there overwrites only instructions the relocated copy
// replaces.
func covers(g *cfg.Graph, lo, hi uint64) bool {
	for a := lo; a < hi; a++ {
		if _, ok := g.BlockAt(a); !ok {
			return false
		}
	}
	return true
}

// prefix emits the copy of the instructions before a moved entry, which
// calls from instrumented code run before the entry instrumentation.
func (fg *funcGen) prefix() error {
	fn := fg.f.Func
	code := fg.g.b.Code(fn.Addr)
	if uint64(len(code)) < fg.prefixEnd-fn.Addr {
		return fmt.Errorf("%#x: prefix not in file", fn.Addr)
	}
	for a := fn.Addr; a < fg.prefixEnd; {
		in, err := x86.Decode(code[a-fn.Addr:fg.prefixEnd-fn.Addr], a)
		if err != nil {
			return err
		}
		fg.mark(a, true)
		if err := enc.Relocate(fg.g.buf, &in.Info, code[a-fn.Addr:], enc.Target{}); err != nil {
			return err
		}
		a += uint64(in.Len)
	}
	return nil
}
