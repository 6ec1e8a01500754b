package rewriter

import (
	"fmt"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/rewriter/enc"

	"golang.org/x/arch/x86/x86asm"
)

// Absolute jump tables in a PIE [decision 72]. Their entries are code
// addresses that the loader relocates (R_X86_64_RELATIVE), and a copy
// of such a table, whose entries lead to new code, would need relocations
// of its own. Instead the copy holds each new target minus the address
// the load's base register holds (link-time values: the difference is
// the same at run time, whatever the load bias), and right after the load
// one flag-free instruction adds the base back:
//
//	mov disp(%base,%index,8), %dst    → mov disp'(%base,%index,8), %dst
//	                                     lea (%base,%dst,1), %dst
//
// GCC's computed-goto dispatch has this form (lua5.4's luaV_execute:
// lea T(%rip),%r14 once, mov (%r14,%rax,8),%rax; ...; jmp *%rax in
// every handler). A load that overwrites its base register (the base
// reloaded from a frame slot for the load alone: mov 0x8(%rsp),%rdx;
// mov (%rdx,%rcx,8),%rdx) adds the entry to the base instead, where the
// arithmetic flags it writes are dead:
//
//	mov disp(%base,%index,8), %base   → add disp'(%base,%index,8), %base
//
// A jump through a register that holds the entry's own address (clang,
// its table's address reloaded from a frame slot: lea (%rax,%rcx,8),
// %rax; jmp *(%rax)) has no base to count from: its copy's entries count
// from their own addresses instead, and the jump becomes
//
//	jmp *disp(%reg)   → mov disp'(%reg),%s; lea disp'(%reg,%s,1),%s; jmp *%s
//
// with %s a register free after the jump, or borrowed as below.
//
// A load that is the jump itself (jmp *disp(%base,%index,8)) has nowhere
// to add the base; a jump that reads the table itself (jmp *disp(%base,%index,8),
// clang's and gcc's form where the entry goes straight to the jump) is
// rewritten into a load into a register dead after the jump, the add and
// jmp *%reg. Register liveness is conservative (every call, return and
// indirect jump reads every register), so in a dispatch loop no register
// is free; then a function that makes calls, and so has no use for the
// red zone [SysV x86-64 ABI 3.2.2: only leaf functions keep data below
// %rsp; gcc and clang use it in leaf functions only], and never
// addresses memory below %rsp, computes the target in a borrowed register
// saved in the red zone, leaves it in a red-zone slot and jumps through
// that: signal delivery skips the red zone, so the slot survives until
// the jump reads it. Where neither holds, or a load overwrites its base,
// the function stays uninstrumented, as it does when a load that
// overwrites its base has the flags live after it.

// biasedLoad is how one load of an absolute PIE table is rewritten.
type biasedLoad struct {
	base, dst enc.Reg
	// jump: the load is the indirect jump itself; index is its index
	// register, and dst is chosen by the code generator among the
	// registers dead after the jump.
	jump  bool
	index enc.Reg
	// add: the load overwrites its base (dst == base) and becomes an
	// add of the entry to it; index is its index register.
	add bool
	// selfRel: the load is the jump itself, through a register that
	// holds the entry's address (clang folds the index into it: lea
	// (%rax,%rcx,8),%rax; jmp *(%rax)), disp its displacement. The
	// copy's entries count from their own addresses (newTable.selfRel).
	selfRel bool
	disp    int32
	// baseAddr is the link-time address the base register holds: the
	// table's address minus the load's displacement.
	baseAddr uint64
}

// biasLoads checks every load of jt and returns how each is rewritten,
// keyed by the load's address, and the base address the copy's entries
// are counted from, which all loads must share.
func biasLoads(b *cfg.Binary, jt *cfg.JumpTable) (map[uint64]biasedLoad, uint64, error) {
	out := map[uint64]biasedLoad{}
	var base uint64
	for i, at := range jt.Loads {
		code := b.Code(at)
		if code == nil {
			return nil, 0, fmt.Errorf("%#x: load not in the code", at)
		}
		in, err := x86.Decode(code, at)
		if err != nil {
			return nil, 0, fmt.Errorf("%#x: %w", at, err)
		}
		if at == jt.Jump {
			m, ok := in.Raw.Args[0].(x86asm.Mem)
			if in.Raw.Op == x86asm.JMP && ok && gpr(m.Base) && m.Base != x86asm.RSP && m.Index == 0 && m.Segment == 0 {
				// The entry's address in the base register: no base
				// to count from, so the copy's entries count from
				// themselves. The only load of its table.
				if len(jt.Loads) != 1 {
					return nil, 0, fmt.Errorf("%#x: the indirect jump reads the table through an entry's address, and other loads read it too", at)
				}
				out[at] = biasedLoad{jump: true, selfRel: true, base: enc.Reg(m.Base - x86asm.RAX), disp: int32(m.Disp)}
				return out, 0, nil
			}
			if in.Raw.Op != x86asm.JMP || !ok || !gpr(m.Base) || !gpr(m.Index) || m.Index == x86asm.RSP || m.Scale != 8 || m.Segment != 0 {
				return nil, 0, fmt.Errorf("%#x: the indirect jump's operand is not base + index*8", at)
			}
			bl := biasedLoad{jump: true, base: enc.Reg(m.Base - x86asm.RAX), index: enc.Reg(m.Index - x86asm.RAX), baseAddr: jt.Table - uint64(m.Disp)}
			if i > 0 && bl.baseAddr != base {
				return nil, 0, fmt.Errorf("%#x: loads of one table through bases %#x and %#x", at, base, bl.baseAddr)
			}
			base = bl.baseAddr
			out[at] = bl
			continue
		}
		dst, okDst := in.Raw.Args[0].(x86asm.Reg)
		m, okMem := in.Raw.Args[1].(x86asm.Mem)
		switch {
		case in.Raw.Op != x86asm.MOV || !okDst || !okMem:
			return nil, 0, fmt.Errorf("%#x: the load is not a mov from memory to a register", at)
		case dst < x86asm.RAX || dst > x86asm.R15:
			return nil, 0, fmt.Errorf("%#x: the load's destination is not a 64-bit register", at)
		case m.Segment != 0 || m.Base < x86asm.RAX || m.Base > x86asm.R15 || m.Index < x86asm.RAX || m.Index > x86asm.R15 || m.Index == x86asm.RSP:
			return nil, 0, fmt.Errorf("%#x: the load's address is not base + index", at)
		case m.Base == dst && m.Scale != 8:
			return nil, 0, fmt.Errorf("%#x: the load overwrites its base register and does not scale its index by 8", at)
		}
		bl := biasedLoad{base: enc.Reg(m.Base - x86asm.RAX), dst: enc.Reg(dst - x86asm.RAX), baseAddr: jt.Table - uint64(m.Disp),
			add: m.Base == dst, index: enc.Reg(m.Index - x86asm.RAX)}
		if i > 0 && bl.baseAddr != base {
			return nil, 0, fmt.Errorf("%#x: loads of one table through bases %#x and %#x", at, base, bl.baseAddr)
		}
		base = bl.baseAddr
		out[at] = bl
	}
	if len(out) == 0 {
		return nil, 0, fmt.Errorf("%#x: no load of the table found", jt.Jump)
	}
	return out, base, nil
}

func gpr(r x86asm.Reg) bool { return r >= x86asm.RAX && r <= x86asm.R15 }

// pieTableBlocker says why an absolute jump table of g cannot be copied
// in a PIE or shared object ("" when every one can, and in
// position-dependent executables, which need no load bias).
func pieTableBlocker(b *cfg.Binary, g *cfg.Graph) string {
	if b.Kind == cfg.KindExec {
		return ""
	}
	var liveIn []cfg.RegSet
	var flagsIn []x86.Flags
	for i := range g.Tables {
		jt := &g.Tables[i]
		if jt.Relative || jt.Const {
			continue
		}
		loads, _, err := biasLoads(b, jt)
		if err != nil {
			return err.Error()
		}
		for at, bl := range loads {
			if bl.add && !arithFlagsDeadAfter(b, g, &flagsIn, at) {
				return fmt.Sprintf("%#x: the load overwrites its base register and the flags are live after it", at)
			}
		}
		if bl, ok := loads[jt.Jump]; ok {
			if liveIn == nil {
				liveIn = g.RegsLiveIn()
			}
			if deadAfter(g, liveIn, jt.Jump)&^(1<<bl.base|1<<enc.RSP) == 0 && !redZoneFree(b, g) {
				return fmt.Sprintf("%#x: no register is free after the indirect jump that reads the table, and the function is a leaf or uses the red zone", jt.Jump)
			}
		}
	}
	return ""
}

// deadAfter is the set of general registers (cfg.RegSet bits) that no
// successor of the block ending at the instruction last reads before
// writing: free for the rewriter's use at that instruction.
func deadAfter(g *cfg.Graph, liveIn []cfg.RegSet, last uint64) cfg.RegSet {
	for id, blk := range g.Blocks {
		if blk.Last != last {
			continue
		}
		var out cfg.RegSet
		for _, e := range g.Succs(cfg.BlockID(id)) {
			if to := g.Edges[e].To; to < 0 {
				out = cfg.AllRegs
			} else {
				out |= liveIn[to]
			}
		}
		return ^out
	}
	return 0
}

// redZoneFree reports whether the red zone below %rsp is free for the
// rewriter at any point of g: the function makes calls (compilers keep
// data in the red zone only in leaf functions) and no instruction of it
// addresses memory below %rsp.
func redZoneFree(b *cfg.Binary, g *cfg.Graph) bool {
	calls := false
	for i := range g.Blocks {
		blk := &g.Blocks[i]
		end := blk.Addr // where the decoded instructions end
		for in := range b.Insts(blk) {
			if in.Kind == x86.Call || in.Kind == x86.CallIndirect {
				calls = true
			}
			for _, arg := range in.Raw.Args {
				if m, ok := arg.(x86asm.Mem); ok && (m.Base == x86asm.RSP || m.Base == x86asm.ESP) && m.Disp < 0 {
					return false
				}
			}
			end = in.Addr + uint64(in.Len)
		}
		if end < blk.End {
			return false // code not in the file, or not decodable: assume the worst
		}
	}
	return calls
}

// arithFlagsDeadAfter reports whether no status flag the instruction at
// addr could leave is read before being written again: along the rest of
// its block, then on every edge out of the block (flags liveness,
// decision 5). live holds the blocks' live-in flags, computed on first
// use.
func arithFlagsDeadAfter(b *cfg.Binary, g *cfg.Graph, live *[]x86.Flags, addr uint64) bool {
	id, ok := g.BlockAt(addr)
	if !ok {
		return false
	}
	var written x86.Flags
	after := false
	for in := range b.Insts(&g.Blocks[id]) {
		if !after {
			after = in.Addr == addr
			continue
		}
		if in.Reads&x86.Status&^written != 0 {
			return false
		}
		written |= in.Writes & x86.Status
		if written == x86.Status {
			return true
		}
	}
	if !after {
		return false
	}
	if *live == nil {
		*live = g.FlagsLiveIn()
	}
	for _, e := range g.Succs(id) {
		if g.FlagsLiveOn(*live, e)&x86.Status&^written != 0 {
			return false
		}
	}
	return true
}
