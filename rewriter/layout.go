package rewriter

// The layout: where the runtime, its tables and the instrumented code go
// in the new segments, and the steps that make them, from planning every
// function to the ELF plan (layout).

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/internal/phase"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter/addrmap"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

func pageUp(a uint64) uint64 { return (a + 0xfff) &^ 0xfff }

// layout places the runtime, the tables and the instrumented code in new
// segments and writes the output.
//
// into holds the branch sources (branchTargets); a layout that drops
// the analysis as it goes (gen.release) drops them too.
//
// Its steps run in the order each needs the last's results: the data
// segment's size places the code; every function is planned before any
// is emitted; the jump table copies, the call-site table and the entry
// jumps need the code's final addresses; the metadata needs the patches
// (whose original bytes it keeps).
func layout(in []byte, b *cfg.Binary, res *analysis.Result, img *runtime.Image, chosen []*analysis.Func, moved map[*analysis.Func]uint64, sum *Summary, opts Options, into **cfg.Branches, mod module) (*elfw.Pieces, *Summary, error) {
	base, err := elfw.NextFreeAddr(in)
	if err != nil {
		return nil, nil, err
	}
	rtText := base
	rw := newRWData(base+img.DataOff, img, chosen, len(sum.Skipped), opts)
	codeAddr := pageUp(rw.addr+rw.mem) + 0x1000

	g := newGen(b, img, rtText, opts, mod)
	dark := g.planDark(res, sum.Skipped, *into, len(chosen))
	phase.Mark("planDark")
	g.startRelease(res, chosen, into, opts.forceRelease)
	g.planFuncs(res, chosen, moved)
	g.planBodies()
	em, uw, err := g.emitCode(img, rtText, codeAddr, dark, rw)
	if err != nil {
		return nil, nil, err
	}
	amap := em.amap
	// The exit hook: blpp_fini takes the place of the first .fini_array
	// entry (or DT_FINI); it calls that entry's original function, then
	// writes the profile. A library's start hook is DT_INIT (hooks).
	hk, err := mod.hooks(in, b)
	if err != nil {
		return nil, nil, err
	}
	fini := hk.fini
	code, tabs, err := g.finishCode(rw, codeAddr)
	if err != nil {
		return nil, nil, err
	}
	addrOf := func(l enc.Label) uint64 {
		off, _ := g.buf.Offset(l)
		return codeAddr + uint64(off)
	}
	if err := g.resolveTables(code, tabs, rw, codeAddr, addrOf); err != nil {
		return nil, nil, err
	}
	// Unwind and exception tables for the new code, so that C++
	// exceptions, backtrace(3) and debuggers get through relocated frames.
	codeSize := code.Len()
	ehWait, err := unwindTables(uw, g, em.unwind, codeAddr, uint64(codeSize))
	phase.Mark("unwindTables")
	if err != nil {
		return nil, nil, err
	}
	// The tables are built while the rest is made (ehWait waits): an
	// early return leaves the goroutine to finish on its own.
	// No function can fail any more, so the layout will not be redone:
	// what is left of the analysis goes (a large library's graphs take
	// hundreds of megabytes, and its output as much again).
	releaseAnalysis(res, g)
	phase.Mark("release")
	// The code and the segments below it are final: the code can go to
	// the file while the rest is made, if its file offset is known.
	segs := []elfw.Segment{
		{Addr: rtText, Data: img.Text, MemSize: uint64(len(img.Text)), Flags: elf.PF_R | elf.PF_X, Name: ".blpp.rt"},
		{Addr: rw.addr, Data: rw.data, MemSize: rw.mem, Flags: elf.PF_R | elf.PF_W, Name: ".blpp.data"},
		{Addr: codeAddr, Chunks: code, MemSize: uint64(codeSize), Flags: elf.PF_R | elf.PF_X, Name: ".blpp.text"},
	}
	const codeSeg = 2
	var codeOff uint64
	if opts.early != nil {
		off, ok, err := elfw.SegmentOff(in, segs[:codeSeg], segs[codeSeg])
		if err != nil {
			return nil, nil, err
		}
		if ok {
			codeOff = off
			opts.early.start(codeSpans(off, code)...)
		}
	}
	patches, patched, err := g.codePatches(dark, addrOf)
	if err != nil {
		return nil, nil, err
	}
	var finiDT uint64
	if fini.dtFini {
		finiDT = rtText + img.Symbols[runtime.SymFini]
	} else {
		patches = append(patches, fini.patches(rtText+img.Symbols[runtime.SymFini])...)
	}
	conf, entry, initDT := g.runtimeConfig(img, rtText, rw, hk, mod, opts, len(chosen), len(sum.Skipped))
	// Metadata; its instrumentation id is what profiles carry as their
	// build-id (stored at the end of the RW data).
	metaData, instrID := g.encodeMeta(patched, sum.Skipped)
	conf.BuildIDVaddr, conf.BuildIDLen = rw.idAddr, uint64(len(instrID))
	copy(rw.at(rw.idAddr), instrID)
	runtime.PutConfig(rw.at(conf.SelfVaddr), conf)
	g.summarize(sum, len(chosen), len(dark), codeSize)
	eh, err := ehWait()
	if err != nil {
		return nil, nil, err
	}
	phase.Mark("ehWait")
	if opts.CodeMap != nil {
		if err := writeCodeMap(opts.CodeMap, g, codeAddr); err != nil {
			return nil, nil, fmt.Errorf("code map: %w", err)
		}
	}
	out, err := elfw.Plan(in, elfw.Options{
		Segments:   append(segs, eh.segments()...),
		EHFrameHdr: eh.hdr(),
		Patches:    patches,
		Fini:       finiDT,
		Init:       initDT,
		Entry:      entry,
		Sections: []elfw.Section{{Name: meta.SectionName, Data: metaData},
			{Name: addrmap.SectionName, Data: amap}},
		Symbols: append(relocatedSymbols(b, g, codeAddr, !mod.library, addrOf), runtimeSymbols(rtText, img)...),
	})
	phase.Mark("elfwPlan")
	if err != nil {
		return nil, nil, err
	}
	if codeOff != 0 && out.Segments[codeSeg].Off != codeOff {
		return nil, nil, fmt.Errorf("internal error: code written at file offset %#x, laid out at %#x", codeOff, out.Segments[codeSeg].Off)
	}
	return out.Pieces, sum, nil
}

// rwData is the RW segment the layout adds (.blpp.data): the runtime's
// data, its bss as zeros, then the tables the runtime reads, written as
// typed records (runtime/layout.go) at their addresses.
type rwData struct {
	data []byte
	addr uint64 // where data is loaded
	mem  uint64 // its size in memory
	// The tables' addresses: the function table, the call-site table
	// (nsites entries, id 0 included), the instrumentation id, the
	// metrics and the sampler.
	funcsAddr, sitesAddr, idAddr, metricsAddr, samplerAddr uint64
	nsites                                                 int
}

// at is the segment's data from address addr.
func (d *rwData) at(addr uint64) []byte { return d.data[addr-d.addr:] }

// funcEntry is the function table's entry for local function id fid.
func (d *rwData) funcEntry(fid int) []byte {
	return d.at(d.funcsAddr + uint64(fid)*runtime.FuncSize)
}

// newRWData lays out the RW segment at addr for the chosen functions and
// nskipped left-out ones, and writes the tables known before any code
// is made: the metrics and the sampler.
func newRWData(addr uint64, img *runtime.Image, chosen []*analysis.Func, nskipped int, opts Options) *rwData {
	d := &rwData{addr: addr}
	// RW file data: runtime data, its bss as zeros, then the function table.
	rw := append([]byte(nil), img.Data...)
	rw = append(rw, make([]byte, img.BSSSize)...)
	for len(rw)%16 != 0 {
		rw = append(rw, 0)
	}
	d.funcsAddr = addr + uint64(len(rw))
	// Entries for the instrumented functions, then the left-out ones
	// (decision 70).
	rw = append(rw, make([]byte, (len(chosen)+nskipped)*runtime.FuncSize)...)
	d.nsites = siteBound(chosen)
	d.sitesAddr = addr + uint64(len(rw))
	rw = append(rw, make([]byte, d.nsites*runtime.SiteSize)...)
	d.idAddr = addr + uint64(len(rw))
	rw = append(rw, make([]byte, 32)...) // the instrumentation id, filled by layout
	for len(rw)%8 != 0 {
		rw = append(rw, 0)
	}
	d.metricsAddr = addr + uint64(len(rw))
	rw = append(rw, make([]byte, len(opts.Metrics)*runtime.MetricSize)...)
	d.samplerAddr = addr + uint64(len(rw))
	if opts.Sample != nil {
		rw = append(rw, make([]byte, runtime.SamplerSize)...)
	}
	d.data, d.mem = rw, uint64(len(rw))
	if opts.Sample != nil {
		runtime.PutSampler(d.at(d.samplerAddr), *opts.Sample)
	}
	for i, m := range opts.Metrics {
		runtime.PutMetric(d.at(d.metricsAddr+uint64(i)*runtime.MetricSize),
			runtime.Metric{Type: m.Type, Config: m.Config, Name: runtime.MetricName(m.Name)})
	}
	return d
}

// siteBound is the size of the call-site table: one entry per call,
// direct tail jump and system call that may end the image [decision 59]
// in instrumented code (at most), plus id 0 (none).
func siteBound(chosen []*analysis.Func) int {
	nsites := 1
	for _, f := range chosen {
		nsites += len(f.Graph.Calls)
		for _, l := range f.Graph.Leaves {
			if l.Syscall {
				nsites++
			}
		}
		nsites += len(f.Graph.Forks)
		for _, e := range f.Graph.Edges {
			if e.Kind == cfg.EdgeTailCall {
				nsites++
			}
		}
	}
	return nsites
}

// b2u is 1 for true, 0 for false: the runtime tables' flag words.
func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// newGen is the code generator for the module: the runtime's entry
// points at their addresses with its text at rtText, and the choices
// opts and mod make for every function.
func newGen(b *cfg.Binary, img *runtime.Image, rtText uint64, opts Options, mod module) *gen {
	return &gen{b: b, buf: &enc.Buf{}, entries: map[uint64]enc.Label{}, siteRet: map[int32]enc.Label{}, pie: b.Kind != cfg.KindExec,
		stubs: Stubs{Enter: rtText + img.Symbols[runtime.SymEnter], Exit: rtText + img.Symbols[runtime.SymExit],
			TailExit: rtText + img.Symbols[runtime.SymTailExit],
			Backedge: rtText + img.Symbols[runtime.SymBackedge], LatWord: rtText + img.Symbols[runtime.SymLatWord], SetjmpRet: rtText + img.Symbols[runtime.SymSetjmpRet], ForkChild: rtText + img.Symbols[runtime.SymForkChild],
			Leaf: rtText + img.Symbols[runtime.SymLeaf], Leave: rtText + img.Symbols[runtime.SymLeave], OffR: runtime.OffR, OffCallSite: runtime.OffCallSite,
			FastSlots:    rtText + img.Symbols[runtime.SymFastSlots],
			SysSigaction: rtText + img.Symbols[runtime.SymSysSigaction], LibcSigaction: rtText + img.Symbols[runtime.SymLibcSigaction],
			LibcSignal: rtText + img.Symbols[runtime.SymLibcSignal], VforkChild: rtText + img.Symbols[runtime.SymVforkChild],
			LibcClone: rtText + img.Symbols[runtime.SymLibcClone], LibcClone3: rtText + img.Symbols[runtime.SymLibcClone3],
			LibcSwapcontext: rtText + img.Symbols[runtime.SymLibcSwapcontext], LibcSetcontext: rtText + img.Symbols[runtime.SymLibcSetcontext],
			LibcGetcontext: rtText + img.Symbols[runtime.SymLibcGetcontext], LibcMakecontext: rtText + img.Symbols[runtime.SymLibcMakecontext],
			ForkSys: rtText + img.Symbols[runtime.SymForkSys]},
		layoutSeed: opts.LayoutSeed,
		failEmit:   opts.failEmit,
		codeMap:    opts.CodeMap != nil,
		workers:    opts.Workers,
		loopRegs:   opts.LoopRegs,
		tag:        mod.tag,
		cet:        mod.cet,
		noSlots:    opts.NoSlots || mod.library,
		mode: Mode{FlowOnly: opts.NoContext, Metrics: len(opts.Metrics) > 0,
			TSCOnly: len(opts.Metrics) == 1 && opts.Metrics[0].Type == runtime.MetricTypeTSC,
			Latency: len(opts.Metrics) > 0 && !opts.NoLatency}}
}

// planFuncs plans every chosen function (plan.go): its labels, jump
// tables, entries, slot and path register, then what depends on all of
// them: closed functions, direct calls and thunks. moved holds the
// functions whose entry jump goes further in (decision 67).
func (g *gen) planFuncs(res *analysis.Result, chosen []*analysis.Func, moved map[*analysis.Func]uint64) {
	for i, f := range chosen {
		fp := &funcPlan{g: g, f: f, fid: int32(i), gid: g.globalID(int32(i)), num: f.Numbering, entry: g.buf.NewLabel()}
		if at, ok := moved[f]; ok {
			fp.prefixEnd, fp.afterPrefix = at, g.buf.NewLabel()
			if g.movedEntries == nil {
				g.movedEntries = map[uint64]bool{}
			}
			g.movedEntries[f.Func.Addr] = true
		}
		g.exitHook = g.exitHook || exitHooked(f)
		fp.blocks = make([]enc.Label, len(f.Graph.Blocks))
		for j := range fp.blocks {
			fp.blocks[j] = g.buf.NewLabel()
		}
		fp.planTables()
		g.entries[f.Func.Addr] = fp.entry
		fp.planEntries()
		g.funcs = append(g.funcs, &funcGen{funcPlan: fp, g: g, inLoop: -1})
		g.assignSlot(fp)
		g.assignPathReg(fp)
	}
	g.planClosed()
	g.planDirect()
	g.planThunks(res.Program)
	phase.Mark("planFuncs")
}

// planBodies plans the inside of every function, once all entries are
// planned.
func (g *gen) planBodies() {
	// Liveness, the call sites and the loops' plan read the graph and
	// the entries' plan alone: on every worker. planBody numbers the
	// sites and makes labels, in order, on this one; siteIDs then moves
	// the sites' maps to their ids, on every worker.
	par.Each(len(g.funcs), g.workers, func(i int) {
		fg := g.funcs[i]
		if !g.mode.Metrics {
			fg.liveIn = fg.f.Graph.RegsLiveIn()
		}
		fg.findSites()
		fg.planLoops()
	})
	phase.Mark("liveIn")
	for _, fg := range g.funcs {
		fg.planBody()
	}
	par.Each(len(g.funcs), g.workers, func(i int) { g.funcs[i].siteIDs() })
	phase.Mark("planBody")
}

// emitCode emits every planned function at codeAddr, then the counting
// stubs of the left-out functions (dark) and the thunks, and writes the
// stubs' function table entries into rw. Functions the code generator
// could not handle make an *emitError. The unwinder returned holds the
// runtime's frame, for the unwind tables.
func (g *gen) emitCode(img *runtime.Image, rtText, codeAddr uint64, dark []*darkEntry, rw *rwData) (*emission, *unwinder, error) {
	// The code grows by arrays of its own as functions are appended
	// (enc.Buf.Append), while their analysis goes.
	g.buf.Place(codeAddr)
	uw := newUnwinder(g.b)
	var err error
	if uw.rt, err = newRTFrame(img, rtText); err != nil {
		return nil, nil, err
	}
	em := g.emitAll(uw, codeAddr)
	phase.Mark("emitAll")
	if len(em.failed) > 0 {
		return nil, nil, &emitError{failed: em.failed, released: g.release}
	}
	if err := g.emitDark(dark, rtText+img.Symbols[runtime.SymDark]); err != nil {
		return nil, nil, err
	}
	if err := g.emitThunks(); err != nil {
		return nil, nil, err
	}
	darkFuncs(dark, func(fid int32, f runtime.Func) {
		runtime.PutFunc(rw.funcEntry(int(fid)), f)
	})
	return em, uw, nil
}

// placedTable is a jump table copy placed in the code, with the size of
// its entries.
type placedTable struct {
	t    newTable
	size int
}

// finishCode places the new jump tables after all code (filled by
// resolveTables), writes the function table (made at the join:
// funcGen.table) into rw, and takes the finished code from g.buf.
func (g *gen) finishCode(rw *rwData, codeAddr uint64) (enc.Code, []placedTable, error) {
	var tabs []placedTable
	for _, t := range g.tables {
		size := 4
		if !t.relative {
			size = 8
		}
		g.buf.Nop(0)
		for g.buf.Len()%8 != 0 {
			g.buf.Int3()
		}
		g.buf.Bind(t.label)
		g.buf.Zeros(size * len(t.targets))
		tabs = append(tabs, placedTable{t, size})
	}
	if len(g.sites) > rw.nsites {
		return nil, nil, fmt.Errorf("internal error: %d call sites, %d reserved", len(g.sites), rw.nsites)
	}
	for i, fg := range g.funcs {
		runtime.PutFunc(rw.funcEntry(i), fg.table)
	}
	// The code stays in the arrays it grew by (enc.Code): libLLVM's is
	// 250 MB, which one array more would copy.
	code, err := g.buf.TakeCode(codeAddr)
	phase.Mark("darkThunksTabs")
	if err != nil {
		return nil, nil, err
	}
	return code, tabs, nil
}

// resolveTables writes what waited for the code's addresses (addrOf):
// the displacements of the loads of jump table copies, the call-site
// table in rw (the return addresses of closed calls), and the entries
// of the copies tabs.
func (g *gen) resolveTables(code enc.Code, tabs []placedTable, rw *rwData, codeAddr uint64, addrOf func(enc.Label) uint64) error {
	for _, p := range g.patches {
		v := addrOf(g.tables[p.tab-1].label) + uint64(p.add)
		if int64(v) != int64(int32(v)) {
			return fmt.Errorf("jump table copy at %#x out of reach of its load's displacement", addrOf(g.tables[p.tab-1].label))
		}
		binary.LittleEndian.PutUint32(code.At(p.at), uint32(v))
	}
	// The call-site table reserved by newRWData, now that the return
	// addresses of closed calls are known.
	for i, st := range g.sites {
		site := runtime.Site{Func: st[0], Block: st[1]}
		if l, ok := g.siteRet[int32(i)]; ok {
			site.Ret = addrOf(l)
		}
		runtime.PutSite(rw.at(rw.sitesAddr+uint64(i)*runtime.SiteSize), site)
	}
	for _, t := range tabs {
		ta := addrOf(t.t.label)
		off := ta - codeAddr
		for i, tg := range t.t.targets {
			to, abs := tg.Addr() // a dead entry's original address (decision 98)
			if l, ok := tg.Label(); ok {
				to = addrOf(l)
			} else if !abs {
				return fmt.Errorf("jump table copy at %#x: entry %d has no target", ta, i)
			}
			if t.t.selfRel {
				// Counted from the entry itself (decision 168).
				binary.LittleEndian.PutUint64(code.At(int(off)+8*i), to-(ta+uint64(8*i)))
			} else if t.t.biased {
				// Counted from the base register's value [decision 72].
				binary.LittleEndian.PutUint64(code.At(int(off)+8*i), to-t.t.base)
			} else if t.t.relative {
				d := to - t.t.base
				if int64(d) != int64(int32(d)) {
					return fmt.Errorf("jump table copy at %#x: entry %d out of reach of base %#x", ta, i, t.t.base)
				}
				binary.LittleEndian.PutUint32(code.At(int(off)+4*i), uint32(d))
			} else {
				binary.LittleEndian.PutUint64(code.At(int(off)+8*i), to)
			}
		}
	}
	return nil
}

// codePatches are the patches of the original code: every instrumented
// function's original entries jump to its copy, the left-out functions'
// entries to their counting stubs (dark), and the thunks' calls. patched
// holds the original bytes they cover, for the metadata.
func (g *gen) codePatches(dark []*darkEntry, addrOf func(enc.Label) uint64) (patches []elfw.Patch, patched []meta.Patch, err error) {
	// Redirect every instrumented function's original entry.
	for _, fg := range g.funcs {
		from := g.entryJumpAt(fg.f.Func.Addr)
		to := addrOf(fg.entry)
		if fg.prefixEnd != 0 {
			from, to = fg.prefixEnd, addrOf(fg.afterPrefix)
		}
		jmp, err := enc.JmpRel32At(from, to)
		if err != nil {
			return nil, nil, fmt.Errorf("entry of %s: %w", fg.f.Func.Name, err)
		}
		patches = append(patches, elfw.Patch{Addr: from, Bytes: jmp})
		for _, x := range fg.others {
			at := g.entryJumpAt(x.addr)
			jmp, err := enc.JmpRel32At(at, addrOf(x.label))
			if err != nil {
				return nil, nil, fmt.Errorf("entry %#x of %s: %w", x.addr, fg.f.Func.Name, err)
			}
			patches = append(patches, elfw.Patch{Addr: at, Bytes: jmp})
		}
		for _, x := range fg.resumes {
			at := g.entryJumpAt(x.addr)
			if x.island != 0 {
				// A short jump to the island, which jumps on.
				short, err := enc.JmpRel8At(at, x.island)
				if err != nil {
					return nil, nil, fmt.Errorf("label %#x of %s: %w", x.addr, fg.f.Func.Name, err)
				}
				patches = append(patches, elfw.Patch{Addr: at, Bytes: short})
				at = x.island
			}
			jmp, err := enc.JmpRel32At(at, addrOf(x.label))
			if err != nil {
				return nil, nil, fmt.Errorf("label %#x of %s: %w", x.addr, fg.f.Func.Name, err)
			}
			patches = append(patches, elfw.Patch{Addr: at, Bytes: jmp})
		}
	}
	dp, err := darkPatches(dark, addrOf)
	if err != nil {
		return nil, nil, err
	}
	patches = append(patches, dp...)
	tp, err := g.thunkPatches(addrOf)
	if err != nil {
		return nil, nil, err
	}
	patches = append(patches, tp...)
	// Reports decode the original instructions: the metadata keeps the
	// bytes these patches cover.
	patched, err = patchedCode(g.b, patches)
	phase.Mark("patches")
	if err != nil {
		return nil, nil, err
	}
	return patches, patched, nil
}

// exitHooked reports whether the instrumented function f is the image's
// _exit (the C library's, or a static executable's) and makes its
// exit_group system call through the leave hook [decision 59]: a process
// whose exit ends there writes its profile at that hook, so its last
// exit hook need not write one too (ConfigFlagExitHook, decision 164).
// It reads f's graph, so planFuncs asks it (gen.exitHook) before
// emission releases the graphs.
func exitHooked(f *analysis.Func) bool {
	named := cfg.BaseName(f.Func.Name) == "_exit"
	for _, a := range f.Func.Aliases {
		named = named || cfg.BaseName(a) == "_exit"
	}
	if !named {
		return false
	}
	for _, l := range f.Graph.Leaves {
		if l.Syscall && l.Kind == cfg.LeaveExit {
			return true
		}
	}
	return false
}

// runtimeConfig is the runtime's configuration for nfuncs instrumented
// and ndark left-out functions, all but the instrumentation id, which
// the metadata makes; and the new ELF entry point and DT_INIT (0: none
// new).
func (g *gen) runtimeConfig(img *runtime.Image, rtText uint64, rw *rwData, hk *hooks, mod module, opts Options, nfuncs, ndark int) (conf runtime.Config, entry, initDT uint64) {
	cfgOff := img.Symbols[runtime.SymConfig] - img.DataOff
	conf = runtime.Config{
		Magic: runtime.ConfigMagic, SelfVaddr: rw.addr + cfgOff, OrigEntry: g.b.Entry, OrigFini: hk.fini.orig, OrigInit: hk.origInit, ModuleTag: uint64(mod.tag),
		FuncsVaddr: rw.funcsAddr, NFuncs: uint64(nfuncs), DumpSignal: runtime.DefaultDumpSignal,
		SitesVaddr: rw.sitesAddr, NSites: uint64(len(g.sites)), ShadowFrames: opts.ShadowFrames,
		NDark: uint64(ndark), LatencyEntries: opts.LatencyEntries,
	}
	if opts.NoContext {
		conf.Flags |= runtime.ConfigFlagFlowOnly
	}
	if g.mode.Metrics && !g.mode.Latency {
		conf.Flags |= runtime.ConfigFlagNoLatency
	}
	entry, initDT = rtText+img.Symbols[runtime.SymStart], 0
	if mod.library {
		// The loader never jumps to a library's e_entry.
		conf.OrigEntry, entry, initDT = 0, 0, rtText+img.Symbols[runtime.SymModInit]
		conf.Flags |= runtime.ConfigFlagLibrary
	}
	if g.callCache() {
		conf.Flags |= runtime.ConfigFlagCallCache
	}
	if g.exitHook {
		conf.Flags |= runtime.ConfigFlagExitHook
	}
	if faultInjection && fault("threads") {
		conf.Flags |= runtime.ConfigFlagFaultSharedThreads
	}
	conf.SlotsSize = g.slotsSize
	if len(opts.Metrics) > 0 {
		conf.MetricsVaddr, conf.NMetrics = rw.metricsAddr, uint64(len(opts.Metrics))
	}
	if opts.Sample != nil {
		conf.SamplerVaddr = rw.samplerAddr
	}
	return conf, entry, initDT
}

// summarize fills in what sum says of the layout: nfuncs instrumented
// functions, ndark counted left-out ones, codeSize bytes of new code
// and what the functions' plans and code are made of. The metadata has
// taken sum.Skipped in its order before.
func (g *gen) summarize(sum *Summary, nfuncs, ndark, codeSize int) {
	sort.Slice(sum.Skipped, func(i, j int) bool { return sum.Skipped[i].Entry < sum.Skipped[j].Entry })
	sum.Instrumented = nfuncs
	sum.CodeBytes = codeSize
	sum.EntriesCounted = ndark
	var sizes codeSizes
	for _, fg := range g.funcs {
		sizes.add(&fg.sz.n)
		if fg.fnHasPreg {
			sum.RegisterPaths++
		}
		if fg.closed {
			sum.ClosedFunctions++
		}
		if fg.callsOut {
			sum.ClosedCallingOut++
		}
		sum.LoopCopies += fg.stats.loopCopies
		sum.LoopCopiesPartial += fg.stats.partialCopies
		sum.LoopRegisters += fg.stats.loopRegs
		sum.LoopSwaps += fg.stats.loopSwaps
	}
	sum.CodeKinds = sizes.codeKinds()
	sum.CodeElsewhere = codeSize
	for _, k := range sum.CodeKinds {
		sum.CodeElsewhere -= k.Bytes
	}
}
