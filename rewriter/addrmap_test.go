package rewriter_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/rewriter/addrmap"

	"golang.org/x/arch/x86/x86asm"
)

// TestAddrMap checks the address map of every fixture in every
// configuration of the matrix and both instrumentation modes (issue 23,
// acceptance 4): every original instruction of every instrumented
// function has at least one copy, every copy decodes to the same
// operation as the original (opcode and operands, except the targets of
// relative branches and rip-relative operands, which relocation re-aims),
// and the map names no instruction the functions' blocks do not hold.
func TestAddrMap(t *testing.T) {
	configs := fixture.Matrix()
	if testing.Short() {
		configs = configs[:2]
	}
	srcs, err := filepath.Glob(filepath.Join(fixture.Root(t), "testdata", "*.c"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	for _, c := range configs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			for _, src := range srcs {
				src := filepath.Base(src)
				orig := fixture.Build(t, src, c)
				for _, m := range procModes {
					n := checkAddrMap(t, orig, m.opts)
					if n == 0 {
						t.Errorf("%s %s %s: no instruction checked", src, c, m.name)
					}
				}
			}
		})
	}
}

// checkAddrMap rewrites orig and checks its address map; it returns the
// number of copies checked.
func checkAddrMap(t *testing.T, orig string, opts rewriter.Options) int {
	t.Helper()
	data, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := rewriter.Rewrite(data, opts)
	if err != nil {
		t.Fatalf("%s: rewrite: %v", orig, err)
	}
	n, err := verifyAddrMap(data, out)
	if err != nil {
		t.Errorf("%s: %v", orig, err)
	}
	return n
}

// verifyAddrMap is the check of TestAddrMap on an original and its
// rewrite.
func verifyAddrMap(orig, inst []byte) (int, error) {
	ob, err := cfg.Load(orig)
	if err != nil {
		return 0, err
	}
	f, err := elf.NewFile(bytes.NewReader(inst))
	if err != nil {
		return 0, err
	}
	ms := f.Section(meta.SectionName)
	if ms == nil {
		return 0, fmt.Errorf("no %s", meta.SectionName)
	}
	md, err := ms.Data()
	if err != nil {
		return 0, err
	}
	tab, err := meta.Decode(md)
	if err != nil {
		return 0, err
	}
	am, err := addrmap.FromELF(f)
	if err != nil {
		return 0, err
	}
	text := f.Section(".blpp.text")
	if text == nil {
		return 0, fmt.Errorf("no .blpp.text")
	}
	code, err := text.Data()
	if err != nil {
		return 0, err
	}
	// The loads of jump table entries read each jump's copy of the table
	// through a new displacement [decision 66]: load address -> table.
	loads := map[uint64]uint64{}
	// A jump through a register that holds one address of the function
	// becomes a direct jump to new code [decision 98].
	consts := map[uint64]bool{}
	prog := cfg.Analyze(ob, cfg.Options{})
	for _, g := range prog.Graphs {
		if g == nil {
			continue
		}
		for _, jt := range g.Tables {
			for _, l := range jt.Loads {
				loads[l] = jt.Table
			}
			if jt.Const {
				consts[jt.Jump] = true
			}
		}
	}
	k, checked := 0, 0
	var problems []string
	for _, mf := range tab.Funcs {
		if !mf.Instrumented {
			continue
		}
		if k >= len(am.Funcs) || am.Funcs[k].Entry != mf.Entry {
			return checked, fmt.Errorf("%s: the map's function %d is not this one", mf.Name, k)
		}
		af := &am.Funcs[k]
		k++
		seen := 0
		for _, blk := range mf.Blocks {
			oc := ob.Code(blk.Addr)
			if uint64(len(oc)) < blk.End-blk.Addr {
				return checked, fmt.Errorf("%s: block %#x not in the original's code", mf.Name, blk.Addr)
			}
			for a := blk.Addr; a < blk.End; {
				want, err := x86.Decode(oc[a-blk.Addr:blk.End-blk.Addr], a)
				if err != nil {
					return checked, fmt.Errorf("%s: %#x: %v", mf.Name, a, err)
				}
				copies := af.Lookup(a)
				if len(copies) == 0 {
					problems = append(problems, fmt.Sprintf("%s: %#x (%s) has no copy", mf.Name, a, x86asm.GNUSyntax(want.Raw, a, nil)))
				}
				seen++
				for _, cp := range copies {
					if cp < text.Addr || cp >= text.Addr+uint64(len(code)) {
						problems = append(problems, fmt.Sprintf("%s: %#x: copy %#x outside .blpp.text", mf.Name, a, cp))
						continue
					}
					got, err := x86.Decode(code[cp-text.Addr:], cp)
					if err != nil {
						problems = append(problems, fmt.Sprintf("%s: %#x: copy %#x does not decode: %v", mf.Name, a, cp, err))
						continue
					}
					wr := want.Raw
					if m, ok := got.Raw.Args[0].(x86asm.Mem); ok && wr.Op == x86asm.JMP && got.Raw.Op == x86asm.MOV && m.Base == x86asm.RSP && m.Disp == -8 {
						// The red-zone form of a jump reading an absolute
						// PIE table [decision 72]: a register saved, then
						// the load.
						next := cp + uint64(got.Len)
						if n, err := x86.Decode(code[next-text.Addr:], next); err == nil {
							got = n
						}
					}
					if m, ok := got.Raw.Args[0].(x86asm.Reg); ok && wr.Op == x86asm.SYSCALL && got.Raw.Op == x86asm.LEA && m == x86asm.RSP {
						// An rt_sigaction system call the runtime takes
						// (decision 94): the red zone stepped over, then
						// a call of blpp_sys_sigaction in its place.
						next := cp + uint64(got.Len)
						if n, err := x86.Decode(code[next-text.Addr:], next); err == nil && n.Raw.Op == x86asm.CALL {
							checked++
							continue
						}
					}
					if consts[a] {
						if got.Kind != x86.Jmp || got.Target < text.Addr || got.Target >= text.Addr+uint64(len(code)) {
							problems = append(problems, fmt.Sprintf("%s: %#x (constant jump): copy %#x is %s, not a jump into the new code", mf.Name, a,
								cp, x86asm.GNUSyntax(got.Raw, cp, nil)))
						}
						checked++
						continue
					}
					if want.RIPRel && rewriter.HasThunk(ob.GOTSlots()[want.RIPTarget]) && thunkUse(wr, got.Raw) {
						// A use of a GOT slot that holds sigaction or its
						// kin goes to the slot's thunk (decision 101).
						checked++
						continue
					}
					if table, ok := loads[a]; ok {
						if d := tableLoad(&wr, got.Raw, table, text.Addr); d != "" {
							problems = append(problems, fmt.Sprintf("%s: %#x (%s): copy %#x is %s: %s", mf.Name, a,
								x86asm.GNUSyntax(want.Raw, a, nil), cp, x86asm.GNUSyntax(got.Raw, cp, nil), d))
						}
					}
					if d := sameOperation(wr, got.Raw, text.Addr, text.Addr+uint64(len(code))); d != "" {
						problems = append(problems, fmt.Sprintf("%s: %#x (%s): copy %#x is %s: %s", mf.Name, a,
							x86asm.GNUSyntax(want.Raw, a, nil), cp, x86asm.GNUSyntax(got.Raw, cp, nil), d))
					}
					checked++
				}
				a += uint64(want.Len)
			}
		}
		if seen != len(af.Insts) {
			problems = append(problems, fmt.Sprintf("%s: the map lists %d instructions, its blocks hold %d", mf.Name, len(af.Insts), seen))
		}
	}
	if k != len(am.Funcs) {
		problems = append(problems, fmt.Sprintf("the map has %d functions, the metadata %d instrumented ones", len(am.Funcs), k))
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("... %d more", len(problems)-10))
		}
		return checked, fmt.Errorf("address map:\n  %s", strings.Join(problems, "\n  "))
	}
	return checked, nil
}

// tableLoad checks the copy of an instruction that reads an entry of the
// jump table at table: its memory operand keeps base and index and moves
// by the distance from the table to its copy, which must lie in the new
// segments (at or above newAt). want's displacement is then set to the
// copy's, for sameOperation to compare the rest.
func tableLoad(want *x86asm.Inst, got x86asm.Inst, table, newAt uint64) string {
	if want.Op == x86asm.JMP && got.Op == x86asm.MOV {
		// A jump reading an absolute PIE table itself becomes a load of
		// the entry into a free register, the base added, and a jump
		// through it [decision 72].
		w, okW := want.Args[0].(x86asm.Mem)
		g, okG := got.Args[1].(x86asm.Mem)
		if !okW || !okG || w.Base != g.Base || w.Index != g.Index || w.Scale != g.Scale {
			return "not the table jump's load"
		}
		if moved := table + uint64(g.Disp-w.Disp); moved < newAt {
			return fmt.Sprintf("reads a table at %#x, not a copy", moved)
		}
		*want = got
		return ""
	}
	if want.Op == x86asm.MOV && got.Op == x86asm.ADD {
		// A load of an absolute PIE table that overwrites its base adds
		// the entry to the base instead (decision 168).
		w, okW := want.Args[1].(x86asm.Mem)
		g, okG := got.Args[1].(x86asm.Mem)
		if !okW || !okG || w.Base != g.Base || w.Index != g.Index || w.Scale != g.Scale || want.Args[0] != got.Args[0] || want.Args[0] != w.Base {
			return "not an add of the entry to the load's base"
		}
		if moved := table + uint64(g.Disp-w.Disp); moved < newAt {
			return fmt.Sprintf("reads a table at %#x, not a copy", moved)
		}
		*want = got
		return ""
	}
	for i, wa := range want.Args {
		w, ok := wa.(x86asm.Mem)
		if !ok {
			continue
		}
		g, ok := got.Args[i].(x86asm.Mem)
		if !ok {
			return fmt.Sprintf("operand %d is no longer in memory", i)
		}
		if w.Base == x86asm.RIP {
			return ""
		}
		if moved := table + uint64(g.Disp-w.Disp); moved < newAt {
			return fmt.Sprintf("operand %d reads a table at %#x, not a copy", i, moved)
		}
		w.Disp = g.Disp
		want.Args[i] = w
		return ""
	}
	return "no memory operand"
}

// thunkUse reports whether got is what the rewriter puts in place of want,
// a use of a GOT slot with a thunk: call *slot(%rip) a direct call, jmp
// *slot(%rip) a direct jump, mov slot(%rip),%reg a lea into %reg.
func thunkUse(want, got x86asm.Inst) bool {
	_, rel := got.Args[0].(x86asm.Rel)
	switch want.Op {
	case x86asm.CALL, x86asm.JMP:
		return got.Op == want.Op && rel
	case x86asm.MOV:
		return got.Op == x86asm.LEA && got.Args[0] == want.Args[0]
	}
	return false
}

// sameOperation compares an original instruction with its copy: the same
// opcode and operands, except relative branch targets and the
// displacement of rip-relative memory operands, and the absolute
// displacement of an operand without base register that the copy aims
// into [lo, hi), the new code (a jump table the rewriter copied there:
// mov T(,%rax,8),%rax). It returns what differs, "" when nothing does.
func sameOperation(want, got x86asm.Inst, lo, hi uint64) string {
	if want.Op != got.Op {
		return "another operation"
	}
	if len(want.Args) != len(got.Args) {
		return "another number of operands"
	}
	for i, wa := range want.Args {
		ga := got.Args[i]
		switch w := wa.(type) {
		case nil:
			if ga != nil {
				return fmt.Sprintf("operand %d added", i)
			}
		case x86asm.Rel:
			if _, ok := ga.(x86asm.Rel); !ok {
				return fmt.Sprintf("operand %d is no longer relative", i)
			}
		case x86asm.Mem:
			g, ok := ga.(x86asm.Mem)
			if !ok {
				return fmt.Sprintf("operand %d is no longer in memory", i)
			}
			if w.Base == x86asm.RIP || w.Base == 0 && uint64(g.Disp) >= lo && uint64(g.Disp) < hi {
				w.Disp, g.Disp = 0, 0
			}
			if w != g {
				return fmt.Sprintf("operand %d: %v, copy %v", i, wa, ga)
			}
		default:
			if wa != ga {
				return fmt.Sprintf("operand %d: %v, copy %v", i, wa, ga)
			}
		}
	}
	return ""
}
