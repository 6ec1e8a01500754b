package rewriter_test

// The static check of decision 95: in a rewritten binary that keeps CET
// IBT, every place an indirect branch may reach starts with endbr64, and
// the new code keeps the shadow stack paired. It reads the output file
// and the original's analysis only, not the rewriter's internals, and
// finds the targets as a CPU would meet them:
//
//   - entries: every function entry that starts with endbr64 in the
//     original still does (function pointers land there), and the entry
//     jump of an instrumented one leads to new code that starts with
//     endbr64;
//   - jump tables: each table copy a relocated load reads (found by the
//     load's displacement, cfg.JumpTable.Loads: adding d to it reads a
//     copy d bytes away), every entry decoded as the table's kind;
//   - landing pads: every landing pad of the output's .gcc_except_table
//     for new code (.eh_frame's FDEs in .blpp.text);
//   - return sites: after each copy of a call the original follows with
//     endbr64 (setjmp, vfork: longjmp comes back by a jump);
//   - hooks: e_entry, DT_INIT, DT_FINI and the runtime's blpp_fini (the
//     first fini_array entry), which the loader and libc call by pointer,
//     where they lead into the runtime.
//
// For the shadow stack it decodes the new code linearly and requires
// every ret to be a copy of an original ret, no call to the next
// instruction (call/pop), and no instruction that writes the shadow
// stack pointer.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/rewriter/addrmap"

	"golang.org/x/arch/x86/x86asm"
)

// ibtStats counts what checkIBT checked; First holds, per kind of
// target ("relocated", "table", "pad", "return"), the first one checked
// in the new code (the mutation test overwrites it).
type ibtStats struct {
	Entries, Relocated, Tables, TableTargets, Pads, Returns, Hooks, Insts int
	First                                                                 map[string]uint64
}

func (s *ibtStats) first(kind string, a uint64) {
	if s.First == nil {
		s.First = map[string]uint64{}
	}
	if _, ok := s.First[kind]; !ok {
		s.First[kind] = a
	}
}

// ibtImage reads a rewritten file by virtual address.
type ibtImage struct {
	f     *elf.File
	data  []byte
	progs []*elf.Prog
}

func (m *ibtImage) bytes(addr uint64, n int) []byte {
	for _, p := range m.progs {
		if addr >= p.Vaddr && addr-p.Vaddr+uint64(n) <= p.Filesz {
			off := p.Off + addr - p.Vaddr
			if off+uint64(n) <= uint64(len(m.data)) {
				return m.data[off : off+uint64(n)]
			}
		}
	}
	return nil
}

// inst decodes the instruction at addr.
func (m *ibtImage) inst(addr uint64) (x86.Inst, error) {
	for n := 15; n > 0; n-- {
		if c := m.bytes(addr, n); c != nil {
			return x86.Decode(c, addr)
		}
	}
	return x86.Inst{}, fmt.Errorf("%#x: not in the file", addr)
}

func (m *ibtImage) endbr(addr uint64) bool {
	c := m.bytes(addr, 4)
	return bytes.Equal(c, []byte{0xf3, 0x0f, 0x1e, 0xfa})
}

func (m *ibtImage) section(name string) (*elf.Section, []byte, error) {
	s := m.f.Section(name)
	if s == nil {
		return nil, nil, nil
	}
	d, err := s.Data()
	return s, d, err
}

// checkIBT checks the rewritten file inst against its original orig and
// returns what it checked and every violation found.
func checkIBT(orig, inst []byte) (ibtStats, []string, error) {
	var st ibtStats
	var bad []string
	badf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	b, err := cfg.Load(orig)
	if err != nil {
		return st, nil, err
	}
	res := analysis.Run(b, analysis.Options{MaxPaths: rewriter.MaxPaths})
	f, err := elf.NewFile(bytes.NewReader(inst))
	if err != nil {
		return st, nil, err
	}
	m := &ibtImage{f: f, data: inst}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			m.progs = append(m.progs, p)
		}
	}
	_, md, err := m.section(meta.SectionName)
	if err != nil || md == nil {
		return st, nil, fmt.Errorf("metadata: %v", err)
	}
	tab, err := meta.Decode(md)
	if err != nil {
		return st, nil, err
	}
	amap, err := addrmap.FromELF(f)
	if err != nil {
		return st, nil, err
	}
	copies := amap.Index()
	text := f.Section(".blpp.text")
	if text == nil {
		return st, nil, fmt.Errorf("no .blpp.text")
	}
	inText := func(a uint64) bool { return a >= text.Addr && a < text.Addr+text.Size }
	instrumented := map[uint64]bool{}
	for _, fn := range tab.Funcs {
		if fn.Instrumented {
			instrumented[fn.Entry] = true
		}
	}
	patchAt := map[uint64]bool{}
	for _, p := range tab.Patched {
		patchAt[p.Addr] = true
	}
	origEndbr := func(a uint64) bool {
		c := b.Bytes(a, 4)
		return c != nil && bytes.Equal(c, []byte{0xf3, 0x0f, 0x1e, 0xfa})
	}
	jmpTarget := func(a uint64) (uint64, bool) {
		c := m.bytes(a, 5)
		if c == nil || c[0] != 0xe9 {
			return 0, false
		}
		return a + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(c[1:])))), true
	}

	// Entries.
	for _, af := range res.Funcs {
		fn := af.Func
		if fn.PLT {
			continue
		}
		for _, e := range append([]uint64{fn.Addr}, fn.Entries...) {
			if !origEndbr(e) {
				continue
			}
			st.Entries++
			if !m.endbr(e) {
				badf("entry %#x of %s: endbr64 overwritten", e, fn.Name)
				continue
			}
			if !instrumented[fn.Addr] {
				continue
			}
			// The entry jump after the endbr64, or a moved entry's
			// further in [decision 67], whose copy of the prefix is as
			// long as the original.
			at, prefix := e+4, uint64(0)
			if !patchAt[at] {
				for a := e + 1; a < e+32; a++ {
					if patchAt[a] {
						at, prefix = a, a-e
						break
					}
				}
			}
			to, ok := jmpTarget(at)
			if !ok || !inText(to) {
				badf("entry %#x of %s: no entry jump after its endbr64", e, fn.Name)
				continue
			}
			st.Relocated++
			st.first("relocated", to-prefix)
			if !m.endbr(to - prefix) {
				badf("entry %#x of %s: its relocated entry %#x does not start with endbr64", e, fn.Name, to-prefix)
			}
		}
	}

	// Jump table copies and return sites.
	pie := f.Type == elf.ET_DYN
	tablesStart := text.Addr + text.Size
	for _, af := range res.Funcs {
		if !instrumented[af.Func.Addr] || af.Graph == nil {
			continue
		}
		gr := af.Graph
		for i := range gr.Tables {
			jt := &gr.Tables[i]
			copyAddr, baseAddr, ok := uint64(0), uint64(0), false
			for _, l := range jt.Loads {
				om, ok1 := indexedOperand(b.Code(l), l)
				cs := copies[l]
				if !ok1 || len(cs) == 0 {
					badf("table at %#x: its load %#x has no copy or no indexed operand", jt.Table, l)
					continue
				}
				for _, c := range cs {
					nm, ok2 := indexedAfter(m, c, om)
					if !ok2 {
						badf("table at %#x: the copy %#x of its load %#x reads no table", jt.Table, c, l)
						continue
					}
					ca := jt.Table + uint64(nm.Disp-om.Disp)
					if ok && ca != copyAddr {
						badf("table at %#x: loads read copies at %#x and %#x", jt.Table, copyAddr, ca)
					}
					copyAddr, baseAddr, ok = ca, jt.Table-uint64(om.Disp), true
				}
			}
			if !ok {
				continue
			}
			if !inText(copyAddr) {
				badf("table at %#x: copy at %#x is not in the new code", jt.Table, copyAddr)
				continue
			}
			tablesStart = min(tablesStart, copyAddr)
			st.Tables++
			for k := 0; k < jt.Entries; k++ {
				e := m.bytes(copyAddr+uint64(k*jt.EntrySize), jt.EntrySize)
				if e == nil {
					badf("table at %#x: copy entry %d unreadable", jt.Table, k)
					break
				}
				var to uint64
				switch {
				case jt.Relative:
					to = jt.Base + uint64(int64(int32(binary.LittleEndian.Uint32(e))))
				case pie: // counted from the base register [decision 72]
					to = baseAddr + binary.LittleEndian.Uint64(e)
				default:
					to = binary.LittleEndian.Uint64(e)
				}
				if jt.IsDead(k) {
					// An impossible case keeps its original address,
					// past the body (decision 98).
					if to != jt.Targets[k] {
						badf("table at %#x (copy %#x): dead entry %d leads to %#x, not %#x", jt.Table, copyAddr, k, to, jt.Targets[k])
					}
					continue
				}
				st.TableTargets++
				st.first("table", to)
				if !inText(to) || !m.endbr(to) {
					badf("table at %#x (copy %#x): entry %d leads to %#x, which does not start with endbr64", jt.Table, copyAddr, k, to)
				}
			}
		}
		for _, c := range gr.Calls {
			in, err := x86.Decode(b.Code(c.Addr), c.Addr)
			if err != nil || !origEndbr(c.Addr+uint64(in.Len)) {
				continue
			}
			for _, nc := range copies[c.Addr] {
				ni, err := m.inst(nc)
				st.Returns++
				st.first("return", nc+uint64(ni.Len))
				if err != nil || (ni.Kind != x86.Call && ni.Kind != x86.CallIndirect) || !m.endbr(nc+uint64(ni.Len)) {
					badf("call %#x (copy %#x): the original returns onto endbr64, the copy does not", c.Addr, nc)
				}
			}
		}
	}

	// Landing pads of the new code.
	ehs, eh, err := m.section(".eh_frame")
	if err != nil {
		return st, nil, err
	}
	lss, ls, err := m.section(".gcc_except_table")
	if err != nil {
		return st, nil, err
	}
	if ehs != nil {
		fdes, err := ehframe.Parse(eh, ehs.Addr, ehframe.Options{})
		if err != nil {
			return st, nil, fmt.Errorf(".eh_frame: %w", err)
		}
		for _, fde := range fdes {
			if !inText(fde.Begin) || fde.LSDA == 0 {
				continue
			}
			if lss == nil {
				badf("FDE %#x: LSDA %#x but no .gcc_except_table", fde.Begin, fde.LSDA)
				continue
			}
			l, err := ehframe.ParseLSDA(ls, lss.Addr, fde.LSDA, fde.Begin, ehframe.Options{})
			if err != nil {
				badf("FDE %#x: %v", fde.Begin, err)
				continue
			}
			for _, cs := range l.CallSites {
				if cs.LandingPad == 0 {
					continue
				}
				st.Pads++
				st.first("pad", cs.LandingPad)
				if !m.endbr(cs.LandingPad) {
					badf("landing pad %#x (FDE %#x) does not start with endbr64", cs.LandingPad, fde.Begin)
				}
			}
		}
	}

	// Hooks the loader and libc call by pointer.
	hooks := map[string]uint64{}
	if f.Type == elf.ET_EXEC || f.Entry != 0 && b.Kind != cfg.KindShared {
		hooks["e_entry"] = f.Entry
	}
	if ds := f.Section(".dynamic"); ds != nil {
		d, _ := ds.Data()
		for i := 0; i+16 <= len(d); i += 16 {
			tag, v := elf.DynTag(binary.LittleEndian.Uint64(d[i:])), binary.LittleEndian.Uint64(d[i+8:])
			if tag == elf.DT_INIT || tag == elf.DT_FINI {
				hooks[tag.String()] = v
			}
		}
	}
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "blpp_fini" || s.Name == "blpp_module_init" || s.Name == "blpp_start" {
				hooks[s.Name] = s.Value
			}
		}
	}
	if _, ok := hooks["blpp_fini"]; !ok {
		badf("no blpp_fini symbol")
	}
	rt := f.Section(".blpp.rt")
	for name, a := range hooks {
		if rt == nil || a < rt.Addr || a >= rt.Addr+rt.Size {
			continue // the original's own (Debian's _init and _fini have no endbr64)
		}
		st.Hooks++
		if !m.endbr(a) {
			badf("%s %#x does not start with endbr64", name, a)
		}
	}

	// The shadow stack: the new code decoded from its start to the first
	// table copy (everything before is code).
	rev := map[uint64]uint64{}
	for o, cs := range copies {
		for _, c := range cs {
			rev[c] = o
		}
	}
	code := m.bytes(text.Addr, int(tablesStart-text.Addr))
	for off := 0; off < len(code); {
		a := text.Addr + uint64(off)
		in, err := x86.Decode(code[off:], a)
		if err != nil {
			badf("new code at %#x does not decode: %v", a, err)
			break
		}
		st.Insts++
		switch {
		case in.Kind == x86.Ret:
			o, ok := rev[a]
			oi, err := x86.Decode(b.Code(o), o)
			if !ok || err != nil || oi.Kind != x86.Ret {
				badf("ret at %#x is not a copy of an original ret", a)
			}
		case in.Kind == x86.Call && in.Target == a+uint64(in.Len):
			badf("call at %#x to the next instruction", a)
		case shadowStackOp(in.Op):
			if _, ok := rev[a]; !ok {
				badf("%s at %#x writes the shadow stack pointer", x86.OpString(in.Op), a)
			}
		}
		off += in.Len
	}
	sort.Strings(bad)
	return st, bad, nil
}

// shadowStackOp reports whether op moves or writes the shadow stack.
func shadowStackOp(op x86asm.Op) bool {
	switch op {
	case x86.INCSSPD, x86.INCSSPQ, x86.RSTORSSP, x86.SAVEPREVSSP, x86.SETSSBSY, x86.CLRSSBSY,
		x86.WRSSD, x86.WRSSQ, x86.WRUSSD, x86.WRUSSQ:
		return true
	}
	return false
}

// indexedOperand returns the memory operand with an index register of
// the instruction at addr: a jump table's load.
func indexedOperand(code []byte, addr uint64) (x86asm.Mem, bool) {
	in, err := x86.Decode(code, addr)
	if err != nil {
		return x86asm.Mem{}, false
	}
	for _, a := range in.Raw.Args {
		if mm, ok := a.(x86asm.Mem); ok && mm.Index != 0 {
			return mm, true
		}
	}
	return x86asm.Mem{}, false
}

// indexedAfter finds, among the few instructions from a, the one that
// reads memory indexed by om's index register with its scale: the copy
// of the load (a PIE table's jump reads it after borrowing a register,
// decision 72).
func indexedAfter(m *ibtImage, a uint64, om x86asm.Mem) (x86asm.Mem, bool) {
	for n := 0; n < 4; n++ {
		in, err := m.inst(a)
		if err != nil {
			return x86asm.Mem{}, false
		}
		for _, arg := range in.Raw.Args {
			if mm, ok := arg.(x86asm.Mem); ok && mm.Index == om.Index && mm.Scale == om.Scale {
				return mm, true
			}
		}
		a += uint64(in.Len)
	}
	return x86asm.Mem{}, false
}
