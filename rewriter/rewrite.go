package rewriter

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/internal/phase"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter/addrmap"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"

	"golang.org/x/arch/x86/x86asm"
)

// Errors for binaries the rewriter refuses as a whole.
var (
	ErrUsesGS = errors.New("the program uses the %gs segment, which blpp's instrumentation needs")
	ErrNoExit = errors.New("no exit hook possible: neither .fini_array nor DT_FINI")
)

// MaxPaths bounds the paths of one function in an instrumented binary so
// that every increment fits the sign-extended 32-bit immediates of the
// instrumentation; pathnum breaks more edges in bigger functions.
const MaxPaths = 1 << 30

// DenseMax is the largest path count given a dense counter array in the
// binary's bss; bigger functions use the runtime's hash table (as PP did).
const DenseMax = 1 << 12

// Options control Rewrite.
type Options struct {
	// Include and Exclude select functions by name (nil: all).
	Include, Exclude *regexp.Regexp
	Workers          int
	// Progress, when set, is told when each stage starts.
	Progress func(stage string)
	// NoContext makes flow-only profiles: one record per function and
	// thread instead of a calling context tree [DESIGN 7].
	NoContext bool
	// Metrics are the counters read at path boundaries besides "freq"
	// (at most runtime.MaxMetrics) [DESIGN 8].
	Metrics []Metric
	// Sample, when not nil, makes every thread of the program sample
	// its execution (--metrics sample:EVENT[@N], decision 92). It
	// changes no instrumentation: the binary is the one Metrics would
	// make, plus the sampler's table entry the runtime reads.
	Sample *runtime.Sampler
	// LayoutSeed, when not 0, moves every instrumented function by a
	// pseudo-random multiple of 16 bytes (0 to 240), the same for the
	// same seed. Only for measuring: a benchmark can then report
	// overhead over several code layouts instead of one [decision 53].
	LayoutSeed uint64
	// CodeMap, when not nil, receives the new code's map: a line per
	// stretch of one kind in one place of one function (writeCodeMap).
	CodeMap io.Writer
	// LoopRegs, for tests only, widens the use of loop path registers
	// [decision 56]: LoopRegsOnly gives no function a path register of
	// its own, so every qualifying loop of a flow-only function takes
	// one; LoopRegsSwap does that and makes every loop register swap
	// with Thread.R, even where a dead register would do.
	LoopRegs LoopRegPolicy
	// ShadowFrames bounds each thread's shadow stack (runtime.Config);
	// 0: runtime.DefaultShadowFrames.
	ShadowFrames uint64
	// ModuleTag names a shared object among the modules of a process
	// [decision 81]: 1..runtime.MaxModuleTag, 0 for the default
	// (DefaultModuleTag of its SONAME). An executable's tag is 0.
	ModuleTag uint64
	// forceRelease, for tests only (export_test.go), makes the layout
	// drop each function's analysis as it goes whatever the binary's
	// size (releaseSize).
	forceRelease bool
	// early, set by RewriteTo, writes the code segment while the rest of
	// the file is made.
	early *earlyWrite
	// NoSlots gives no function slot counters [decision 42], as shared
	// objects never have: the thread blocks that hold them are made by
	// the first module to start, and in a process with instrumented
	// libraries that is a library's DT_INIT, before the executable's
	// entry [decision 81]. blpp run sets it then.
	NoSlots bool
	// NoLatency keeps, with metrics, only each path's count and metric
	// sums: no latency distribution of its first metric (decision 93),
	// which takes a word per path and record, and an entry of
	// runtime.LatencyEntrySize bytes for each that runs. Every module of
	// a process must agree.
	NoLatency bool
	// LatencyEntries bounds the paths (per record) of each thread that
	// keep a distribution (runtime.Config); 0: runtime.LatencyEntries.
	// For tests of a full region.
	LatencyEntries uint64
	// forceIBT, for tests only (export_test.go), emits the code that
	// keeps IBT [decision 95] as if the input's note said IBT: Debian's
	// binaries are compiled with -fcf-protection but linked without the
	// note (its crt files lack the property).
	forceIBT bool
}

// LoopRegPolicy is Options.LoopRegs.
type LoopRegPolicy uint8

const (
	LoopRegsDefault LoopRegPolicy = iota
	LoopRegsOnly
	LoopRegsSwap
)

// Metric is a counter the instrumented program reads: a perf event
// (perf_event_attr type and config) or the time-stamp counter (Type
// runtime.MetricTypeTSC), named as the profile will call it.
type Metric struct {
	Name         string
	Type, Config uint64
}

func (o *Options) stage(s string) {
	if o.Progress != nil {
		o.Progress(s)
	}
}

// Skipped is a function left uninstrumented and why.
type Skipped struct {
	Name   string `json:"name"`
	Entry  string `json:"entry"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
	// Size is the function's size in bytes, fragments included.
	Size uint64 `json:"size"`
	// EntriesCounted says that its entry goes through a stub that counts
	// it (decision 70); NotCounted says why not otherwise.
	EntriesCounted bool   `json:"entries_counted"`
	NotCounted     string `json:"entries_not_counted,omitempty"`
}

// Summary reports what Rewrite did.
type Summary struct {
	// Module is the kind of object: ModuleExecutable or ModuleLibrary;
	// ModuleTag its tag in a process, Soname a library's DT_SONAME
	// [decision 81].
	Module       string    `json:"module"`
	ModuleTag    uint64    `json:"module_tag"`
	Soname       string    `json:"soname,omitempty"`
	Functions    int       `json:"functions"`
	Instrumented int       `json:"instrumented"`
	Skipped      []Skipped `json:"skipped"`
	CodeBytes    int       `json:"code_bytes"`
	// CodeKinds breaks the instrumented functions' share of CodeBytes
	// down by what it is for and where it lies (codesize.go);
	// CodeElsewhere is the rest: the stubs, thunks and counting stubs
	// shared by the image, jump table copies, padding between functions.
	CodeKinds     []CodeKind `json:"code_kinds"`
	CodeElsewhere int        `json:"code_elsewhere"`
	// RegisterPaths counts the instrumented functions whose path
	// register lives in a general register (flow-only frequency images:
	// assignPathReg), the cheapest instrumentation blpp emits.
	RegisterPaths int `json:"register_paths"`
	// LoopRegisters counts the loops given a path register of their own
	// in functions whose path register otherwise lives in memory
	// [decision 56]; LoopSwaps those of them whose register holds a
	// program value, which waits in Thread.R while the loop runs.
	LoopRegisters int `json:"loop_registers"`
	LoopSwaps     int `json:"loop_swaps"`
	// ClosedFunctions counts the closed functions [decision 57]: their
	// entries, exits and calls leave the caller's state alone.
	ClosedFunctions int `json:"closed_functions"`
	// ClosedCallingOut counts the closed functions that make outside
	// calls [decision 64]: to code that is not closed, through a
	// pointer, without return, or by a tail jump.
	ClosedCallingOut int `json:"closed_calling_out"`
	// LoopCopies counts the loops whose later iterations run in a
	// second copy of one cycle of their blocks, which counts at its head
	// [decisions 58, 63]; LoopCopiesPartial those of them with blocks
	// off that cycle, which the copy leaves for.
	LoopCopies        int `json:"loop_copies"`
	LoopCopiesPartial int `json:"loop_copies_partial"`
	// EntriesCounted counts the left-out functions whose entries are
	// counted (Skipped.EntriesCounted).
	EntriesCounted int `json:"entries_counted"`
	// Warnings say what the rewritten binary lost that the original had
	// (the CET note bits: clearCET).
	Warnings []string `json:"warnings,omitempty"`
}

// Rewrite instruments the executable in, returning the new file's bytes.
func Rewrite(in []byte, opts Options) ([]byte, *Summary, error) {
	out, sum, err := rewriteRounds(in, opts)
	if err != nil {
		return nil, nil, err
	}
	return out.Bytes(), sum, nil
}

// RewriteTo is Rewrite writing the new file to w, which must read back
// zeros where nothing was written (a new or truncated file), without
// holding all of it in memory (a large library's output is half a
// gigabyte, mostly bytes the rewriter holds already). It returns the
// file's size.
func RewriteTo(w io.WriterAt, in []byte, opts Options) (int64, *Summary, error) {
	// The new file starts with the original's bytes (elfw.Write): they
	// are written while the rewriter works, on a processor its serial
	// stretches leave idle.
	// The code segment follows once its place is known (layout).
	early := newEarlyWrite(w)
	early.start(elfw.Span{Off: 0, Data: in})
	opts.early = early
	out, sum, err := rewriteRounds(in, opts)
	phase.Mark("rounds")
	werr := early.wait()
	phase.Mark("earlyWait")
	if err != nil {
		return 0, nil, err
	}
	if werr != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrWrite, werr)
	}
	if err := out.WriteTo(w, early.spans...); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrWrite, err)
	}
	phase.Mark("write")
	return out.Size, sum, nil
}

// ErrWrite: RewriteTo could not write the new file (its error wraps
// this one and the writer's).
var ErrWrite = errors.New("writing the new file")

// rewriteRounds is Rewrite, laying the file out without assembling it.
func rewriteRounds(in []byte, opts Options) (*elfw.Pieces, *Summary, error) {
	// A layout that dropped each function's analysis as it went and then
	// failed on some functions is redone from the analysis, leaving out
	// what every earlier round failed on, in the same order (rewrite).
	var rounds []failedRound
	for {
		out, sum, err := rewrite(in, opts, rounds)
		var re *redoError
		if !errors.As(err, &re) {
			return out, sum, err
		}
		rounds = re.rounds
	}
}

// failedRound is what one layout round left out: the functions the
// code generator could not handle (by entry and name, the same in a
// fresh analysis) and their summary lines.
type failedRound struct {
	bad     map[funcKey]bool
	skipped []Skipped
}

type funcKey struct {
	addr uint64
	name string
}

func keyOf(f *analysis.Func) funcKey { return funcKey{f.Func.Addr, f.Func.Name} }

// redoError asks Rewrite to start again without the functions of rounds.
type redoError struct{ rounds []failedRound }

func (e *redoError) Error() string { return "layout to be redone from the analysis" }

// rewrite is Rewrite after the given rounds of failed layouts.
func rewrite(in []byte, opts Options, prior []failedRound) (*elfw.Pieces, *Summary, error) {
	b, err := cfg.Load(in)
	if err != nil {
		return nil, nil, err
	}
	phase.Mark("load")
	mod, err := moduleOf(b, opts)
	if err != nil {
		return nil, nil, err
	}
	mod.cet = cetOf(in, opts)
	if len(opts.Metrics) > runtime.MaxMetrics {
		return nil, nil, fmt.Errorf("%d metrics: at most %d besides freq", len(opts.Metrics), runtime.MaxMetrics)
	}
	opts.stage("analysing")
	res := analysis.Run(b, analysis.Options{Workers: opts.Workers, MaxPaths: MaxPaths, Lean: true})
	phase.Mark("analysis")
	img, err := runtime.Load()
	if err != nil {
		return nil, nil, fmt.Errorf("runtime image: %w", err)
	}
	sum := &Summary{Module: mod.name(), ModuleTag: uint64(mod.tag), Soname: mod.soname}
	finiSec := b.File.Section(".fini")
	into := branchTargets(b)
	cloneSides := cloneChildSides(b, res.Program)
	var chosen []*analysis.Func
	// moved maps a function whose entry jump goes further in to where.
	moved := map[*analysis.Func]uint64{}
	// Whether each function names %gs, decoded on every worker: it reads
	// every instruction of the binary.
	gs := make([]bool, len(res.Funcs))
	par.Each(len(res.Funcs), opts.Workers, func(i int) {
		if f := res.Funcs[i]; !f.Func.PLT {
			gs[i] = usesGS(b, f.Graph)
		}
	})
	for i, f := range res.Funcs {
		if f.Func.PLT {
			continue
		}
		sum.Functions++
		if gs[i] {
			return nil, nil, fmt.Errorf("%w (in %s)", ErrUsesGS, f.Func.Name)
		}
		skip := func(reason, detail string) {
			sum.Skipped = append(sum.Skipped, Skipped{Name: f.Func.Name, Entry: fmt.Sprintf("%#x", f.Func.Addr), Reason: reason, Detail: detail, Size: f.Func.TotalSize()})
		}
		switch {
		case !f.Instrumentable():
			skip(f.Reason(), f.Detail())
		case opts.Include != nil && !opts.Include.MatchString(f.Func.Name):
			skip("excluded", "does not match --include")
		case opts.Exclude != nil && opts.Exclude.MatchString(f.Func.Name):
			skip("excluded", "matches --exclude")
		case patchedInto(f.Func, into):
			mf, at, err := movedEntry(b, res.Program, f, into)
			switch {
			case len(f.Func.Entries) > 0:
				skip("jump into its first 5 bytes", "other code branches into the bytes an entry jump overwrites, and the entry jumps of a procedure with several entries do not move")
			case err != nil:
				skip("jump into its first 5 bytes", "other code branches into the bytes the entry jump overwrites, and the jump cannot move: "+err.Error())
			default:
				if why := pieTableBlocker(b, mf.Graph); why != "" {
					skip("absolute jump table in PIE", why)
					break
				}
				moved[mf] = at
				chosen = append(chosen, mf)
			}
		case !mod.library && finiSec != nil && f.Func.Addr == finiSec.Addr:
			// _fini runs after the last .fini_array entry, which is where
			// the profile is written. A library's blpp_fini runs it first.
			skip("runs after the profile is written", ".fini section (_fini)")
		case cloneSides[f.Func.Addr] != "":
			skip(skipCloneChild, cloneSides[f.Func.Addr])
		case mod.cet.ibt && cetBlocker(b, f, into) != "":
			skip(skipCET, cetBlocker(b, f, into))
		default:
			if why := pieTableBlocker(b, f.Graph); why != "" {
				skip("absolute jump table in PIE", why)
				break
			}
			chosen = append(chosen, f)
		}
	}
	chosen = leaveBranchedInto(chosen, moved, into, sum)
	phase.Mark("choose")
	// Function ids have runtime.FidBits bits in a module [decision 81].
	if sum.Functions > 1<<runtime.FidBits {
		return nil, nil, fmt.Errorf("%w (%d)", ErrTooManyFuncs, sum.Functions)
	}
	opts.stage("generating code")
	// A function the code generator cannot handle is left alone, and the
	// whole layout is redone without it (other functions' code may call
	// its instrumented copy).
	leaveOut := func(r failedRound) {
		sum.Skipped = append(sum.Skipped, r.skipped...)
		kept := chosen[:0]
		for _, f := range chosen {
			if !r.bad[keyOf(f)] {
				kept = append(kept, f)
			}
		}
		chosen = kept
	}
	for _, r := range prior {
		leaveOut(r)
	}
	rounds := prior
	for {
		out, sum2, err := layout(in, b, res, img, chosen, moved, sum, opts, &into, mod)
		var ee *emitError
		if !errors.As(err, &ee) {
			if err == nil {
				var warn []string
				out, warn = keepCET(out, img, mod.cet)
				sum2.Warnings = append(sum2.Warnings, warn...)
			}
			return out, sum2, err
		}
		r := failedRound{bad: map[funcKey]bool{}}
		for _, f := range ee.failed {
			r.bad[keyOf(f.f)] = true
			r.skipped = append(r.skipped, Skipped{Name: f.f.Func.Name, Entry: fmt.Sprintf("%#x", f.f.Func.Addr),
				Reason: "code generation", Detail: f.err.Error(), Size: f.f.Func.TotalSize()})
		}
		rounds = append(rounds[:len(rounds):len(rounds)], r)
		if ee.released {
			return nil, nil, &redoError{rounds}
		}
		leaveOut(r)
	}
}

type emitFailure struct {
	f   *analysis.Func
	err error
}

// emitError lists the functions whose instrumented copy could not be
// generated. released says that the analysis of others was dropped on
// the way (gen.release): a new layout needs a new analysis.
type emitError struct {
	failed   []emitFailure
	released bool
}

func (e *emitError) Error() string {
	return fmt.Sprintf("%d functions could not be generated (first: %s: %v)", len(e.failed), e.failed[0].f.Func.Name, e.failed[0].err)
}

func usesGS(b *cfg.Binary, g *cfg.Graph) bool {
	for i := range g.Blocks {
		// Most blocks' bytes rule %gs out without decoding.
		if code := b.Bytes(g.Blocks[i].Addr, int(g.Blocks[i].End-g.Blocks[i].Addr)); code != nil && !x86.MayNameGS(code) {
			continue
		}
		for in := range b.Insts(&g.Blocks[i]) {
			if in.Raw.Op == x86asm.RDGSBASE || in.Raw.Op == x86asm.WRGSBASE {
				return true
			}
			for _, arg := range in.Raw.Args {
				if m, ok := arg.(x86asm.Mem); ok && m.Segment == x86asm.GS {
					return true
				}
			}
		}
	}
	return false
}

func pageUp(a uint64) uint64 { return (a + 0xfff) &^ 0xfff }

// layout places the runtime, the tables and the instrumented code in new
// segments and writes the output.
//
// into holds the branch sources (branchTargets); a layout that drops
// the analysis as it goes (gen.release) drops them too.
func layout(in []byte, b *cfg.Binary, res *analysis.Result, img *runtime.Image, chosen []*analysis.Func, moved map[*analysis.Func]uint64, sum *Summary, opts Options, into **cfg.Branches, mod module) (*elfw.Pieces, *Summary, error) {
	base, err := elfw.NextFreeAddr(in)
	if err != nil {
		return nil, nil, err
	}
	rtText := base
	rwAddr := base + img.DataOff
	// RW file data: runtime data, its bss as zeros, then the function table.
	rw := append([]byte(nil), img.Data...)
	rw = append(rw, make([]byte, img.BSSSize)...)
	for len(rw)%16 != 0 {
		rw = append(rw, 0)
	}
	funcsAddr := rwAddr + uint64(len(rw))
	// Entries for the instrumented functions, then the left-out ones
	// (decision 70).
	rw = append(rw, make([]byte, (len(chosen)+len(sum.Skipped))*runtime.FuncSize)...)
	// The call-site table: one entry per call, direct tail jump and
	// system call that may end the image [decision 59] in instrumented
	// code (at most), plus id 0 (none).
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
	sitesAddr := rwAddr + uint64(len(rw))
	rw = append(rw, make([]byte, nsites*runtime.SiteSize)...)
	idAddr := rwAddr + uint64(len(rw))
	rw = append(rw, make([]byte, 32)...) // the instrumentation id, filled below
	for len(rw)%8 != 0 {
		rw = append(rw, 0)
	}
	metricsAddr := rwAddr + uint64(len(rw))
	rw = append(rw, make([]byte, len(opts.Metrics)*runtime.MetricSize)...)
	samplerAddr := rwAddr + uint64(len(rw))
	if opts.Sample != nil {
		rw = append(rw, make([]byte, runtime.SamplerSize)...)
	}
	rwMem := uint64(len(rw))
	// The runtime's tables in rw, from here on written as typed records
	// (runtime/layout.go) at their addresses.
	at := func(addr uint64) []byte { return rw[addr-rwAddr:] }
	funcEntry := func(fid int) []byte { return at(funcsAddr + uint64(fid)*runtime.FuncSize) }
	if opts.Sample != nil {
		runtime.PutSampler(at(samplerAddr), *opts.Sample)
	}
	for i, m := range opts.Metrics {
		runtime.PutMetric(at(metricsAddr+uint64(i)*runtime.MetricSize),
			runtime.Metric{Type: m.Type, Config: m.Config, Name: runtime.MetricName(m.Name)})
	}
	codeAddr := pageUp(rwAddr+rwMem) + 0x1000

	g := &gen{b: b, buf: &enc.Buf{}, entries: map[uint64]enc.Label{}, siteRet: map[int32]enc.Label{}, pie: b.Kind != cfg.KindExec,
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
		codeMap:    opts.CodeMap != nil,
		workers:    opts.Workers,
		loopRegs:   opts.LoopRegs,
		tag:        mod.tag,
		cet:        mod.cet,
		noSlots:    opts.NoSlots || mod.library,
		mode: Mode{FlowOnly: opts.NoContext, Metrics: len(opts.Metrics) > 0,
			TSCOnly: len(opts.Metrics) == 1 && opts.Metrics[0].Type == runtime.MetricTypeTSC,
			Latency: len(opts.Metrics) > 0 && !opts.NoLatency}}
	dark := g.planDark(res, sum.Skipped, *into, len(chosen))
	phase.Mark("planDark")
	// A large binary's functions drop their analysis once their code is
	// appended; if the layout then fails, the next starts from a new
	// analysis (Rewrite). The branch sources are done with.
	var origSize uint64
	for _, f := range chosen {
		origSize += f.Func.TotalSize()
	}
	g.release = origSize >= releaseSize || opts.forceRelease
	if g.release {
		clear(res.Program.Graphs)
		*into = nil
		b.DropRefs()
	}
	// Plan every function (plan.go), then emit each from its plan.
	for i, f := range chosen {
		fp := &funcPlan{g: g, f: f, fid: int32(i), gid: g.globalID(int32(i)), num: f.Numbering, entry: g.buf.NewLabel()}
		if at, ok := moved[f]; ok {
			fp.prefixEnd, fp.afterPrefix = at, g.buf.NewLabel()
			if g.movedEntries == nil {
				g.movedEntries = map[uint64]bool{}
			}
			g.movedEntries[f.Func.Addr] = true
		}
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
	// The code grows by arrays of its own as functions are appended
	// (enc.Buf.Append), while their analysis goes.
	g.buf.Place(codeAddr)
	uw := newUnwinder(b)
	if uw.rt, err = newRTFrame(img, rtText); err != nil {
		return nil, nil, err
	}
	em := g.emitAll(uw, codeAddr)
	phase.Mark("emitAll")
	if len(em.failed) > 0 {
		return nil, nil, &emitError{failed: em.failed, released: g.release}
	}
	amap := em.amap
	if err := g.emitDark(dark, rtText+img.Symbols[runtime.SymDark]); err != nil {
		return nil, nil, err
	}
	if err := g.emitThunks(); err != nil {
		return nil, nil, err
	}
	darkFuncs(dark, func(fid int32, f runtime.Func) {
		runtime.PutFunc(funcEntry(int(fid)), f)
	})
	// The exit hook: blpp_fini takes the place of the first .fini_array
	// entry (or DT_FINI); it calls that entry's original function, then
	// writes the profile. A library's start hook is DT_INIT (hooks).
	hk, err := mod.hooks(in, b)
	if err != nil {
		return nil, nil, err
	}
	fini := hk.fini
	// New jump tables, filled below.
	type placed struct {
		t    newTable
		size int
	}
	var tabs []placed
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
		tabs = append(tabs, placed{t, size})
	}
	if len(g.sites) > nsites {
		return nil, nil, fmt.Errorf("internal error: %d call sites, %d reserved", len(g.sites), nsites)
	}
	// The function table (made at the join: funcGen.table).
	for i, fg := range g.funcs {
		runtime.PutFunc(funcEntry(i), fg.table)
	}
	// The code stays in the arrays it grew by (enc.Code): libLLVM's is
	// 250 MB, which one array more would copy.
	code, err := g.buf.TakeCode(codeAddr)
	phase.Mark("darkThunksTabs")
	if err != nil {
		return nil, nil, err
	}
	addrOf := func(l enc.Label) uint64 {
		off, _ := g.buf.Offset(l)
		return codeAddr + uint64(off)
	}
	for _, p := range g.patches {
		v := addrOf(g.tables[p.tab-1].label) + uint64(p.add)
		if int64(v) != int64(int32(v)) {
			return nil, nil, fmt.Errorf("jump table copy at %#x out of reach of its load's displacement", addrOf(g.tables[p.tab-1].label))
		}
		binary.LittleEndian.PutUint32(code.At(p.at), uint32(v))
	}
	// The call-site table reserved above, now that the return addresses
	// of closed calls are known.
	for i, st := range g.sites {
		site := runtime.Site{Func: st[0], Block: st[1]}
		if l, ok := g.siteRet[int32(i)]; ok {
			site.Ret = addrOf(l)
		}
		runtime.PutSite(at(sitesAddr+uint64(i)*runtime.SiteSize), site)
	}
	for _, t := range tabs {
		ta := addrOf(t.t.label)
		off := ta - codeAddr
		for i, tg := range t.t.targets {
			to, abs := tg.Addr() // a dead entry's original address (decision 98)
			if l, ok := tg.Label(); ok {
				to = addrOf(l)
			} else if !abs {
				return nil, nil, fmt.Errorf("jump table copy at %#x: entry %d has no target", ta, i)
			}
			if t.t.biased {
				// Counted from the base register's value [decision 72].
				binary.LittleEndian.PutUint64(code.At(int(off)+8*i), to-t.t.base)
			} else if t.t.relative {
				d := to - t.t.base
				if int64(d) != int64(int32(d)) {
					return nil, nil, fmt.Errorf("jump table copy at %#x: entry %d out of reach of base %#x", ta, i, t.t.base)
				}
				binary.LittleEndian.PutUint32(code.At(int(off)+4*i), uint32(d))
			} else {
				binary.LittleEndian.PutUint64(code.At(int(off)+8*i), to)
			}
		}
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
		{Addr: rwAddr, Data: rw, MemSize: rwMem, Flags: elf.PF_R | elf.PF_W, Name: ".blpp.data"},
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
	// Redirect every instrumented function's original entry.
	var patches []elfw.Patch
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
	patched, err := patchedCode(b, patches)
	phase.Mark("patches")
	if err != nil {
		return nil, nil, err
	}
	var finiDT uint64
	if fini.dtFini {
		finiDT = rtText + img.Symbols[runtime.SymFini]
	} else {
		patches = append(patches, fini.patches(rtText+img.Symbols[runtime.SymFini])...)
	}
	// Runtime configuration.
	cfgOff := img.Symbols[runtime.SymConfig] - img.DataOff
	conf := runtime.Config{
		Magic: runtime.ConfigMagic, SelfVaddr: rwAddr + cfgOff, OrigEntry: b.Entry, OrigFini: fini.orig, OrigInit: hk.origInit, ModuleTag: uint64(mod.tag),
		FuncsVaddr: funcsAddr, NFuncs: uint64(len(chosen)), DumpSignal: runtime.DefaultDumpSignal,
		SitesVaddr: sitesAddr, NSites: uint64(len(g.sites)), ShadowFrames: opts.ShadowFrames,
		NDark: uint64(len(sum.Skipped)), LatencyEntries: opts.LatencyEntries,
	}
	if opts.NoContext {
		conf.Flags |= runtime.ConfigFlagFlowOnly
	}
	if g.mode.Metrics && !g.mode.Latency {
		conf.Flags |= runtime.ConfigFlagNoLatency
	}
	entry, initDT := rtText+img.Symbols[runtime.SymStart], uint64(0)
	if mod.library {
		// The loader never jumps to a library's e_entry.
		conf.OrigEntry, entry, initDT = 0, 0, rtText+img.Symbols[runtime.SymModInit]
		conf.Flags |= runtime.ConfigFlagLibrary
	}
	if g.callCache() {
		conf.Flags |= runtime.ConfigFlagCallCache
	}
	if faultInjection && fault("threads") {
		conf.Flags |= runtime.ConfigFlagFaultSharedThreads
	}
	conf.SlotsSize = g.slotsSize
	if len(opts.Metrics) > 0 {
		conf.MetricsVaddr, conf.NMetrics = metricsAddr, uint64(len(opts.Metrics))
	}
	if opts.Sample != nil {
		conf.SamplerVaddr = samplerAddr
	}
	// Metadata; its instrumentation id is what profiles carry as their
	// build-id (stored at the end of the RW data).
	tab := &meta.Table{OrigBuildID: b.BuildID, MaxPaths: MaxPaths, Patched: patched, PatchedKnown: true}
	for _, fg := range g.funcs {
		tab.Encoded = append(tab.Encoded, fg.meta)
	}
	// Functions left alone follow, so reports can list them; profile
	// function indices only refer to the instrumented ones before them.
	for _, s := range sum.Skipped {
		var entry uint64
		fmt.Sscanf(s.Entry, "0x%x", &entry)
		tab.Funcs = append(tab.Funcs, meta.Func{Name: s.Name, Entry: entry, Size: s.Size, Reason: s.Reason, EntriesCounted: s.EntriesCounted})
	}
	metaData := tab.EncodeWithID()
	phase.Mark("meta")
	// The functions' encodings are in metaData now: the output's copy
	// need not find them beside it.
	tab.Encoded = nil
	for _, fg := range g.funcs {
		fg.meta = meta.EncodedFunc{}
	}
	conf.BuildIDVaddr, conf.BuildIDLen = idAddr, uint64(len(tab.InstrID))
	copy(at(idAddr), tab.InstrID)
	runtime.PutConfig(at(rwAddr+cfgOff), conf)
	sort.Slice(sum.Skipped, func(i, j int) bool { return sum.Skipped[i].Entry < sum.Skipped[j].Entry })
	sum.Instrumented = len(chosen)
	sum.CodeBytes = codeSize
	sum.EntriesCounted = len(dark)
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
	eh, err := ehWait()
	if err != nil {
		return nil, nil, err
	}
	phase.Mark("ehWait")
	sum.CodeKinds = sizes.codeKinds()
	if opts.CodeMap != nil {
		if err := writeCodeMap(opts.CodeMap, g, codeAddr); err != nil {
			return nil, nil, fmt.Errorf("code map: %w", err)
		}
	}
	sum.CodeElsewhere = codeSize
	for _, k := range sum.CodeKinds {
		sum.CodeElsewhere -= k.Bytes
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

// releaseSize is how much original code the instrumented functions of a
// binary hold at least for the layout to drop each function's analysis
// once its code is appended (gen.release): libLLVM's graphs and
// numberings took half a gigabyte, the largest part of what the
// rewriter holds while it emits code [decision 91].
const releaseSize = 16 << 20

// releaseAnalysis drops the graphs and numberings of every procedure,
// and what the instrumented functions' plans derived from them, once
// the code, its tables and the metadata's functions are made.
func releaseAnalysis(res *analysis.Result, g *gen) {
	for _, f := range res.Funcs {
		f.Graph, f.Numbering = nil, nil
	}
	clear(res.Program.Graphs)
	for _, fg := range g.funcs {
		fg.dropAnalysis()
	}
}

// dropAnalysis drops the function's graph and numbering and the parts of its
// plan made from them, all but what the layout reads once the code is
// emitted: the entries, and the counts the summary takes (funcStats).
func (fp *funcPlan) dropAnalysis() {
	fp.f.Graph, fp.f.Numbering = nil, nil
	fp.num, fp.liveIn, fp.blocks, fp.loopOf = nil, nil, nil, nil
	fp.tabOf, fp.loadOf, fp.tailSite, fp.forkSites, fp.leaveSite, fp.forkSite, fp.siteAddrs, fp.nCalls = nil, nil, nil, nil, nil, nil, nil, 0
	fp.loops, fp.loopCopies, fp.copyBack = nil, nil, nil
}

// funcStats are the counts of a function's plan that the summary adds
// up (Summary.LoopCopies and the next three).
type funcStats struct {
	loopCopies, partialCopies, loopRegs, loopSwaps int
}

func (fp *funcPlan) stats() funcStats {
	st := funcStats{loopCopies: len(fp.loopCopies), loopRegs: len(fp.loops)}
	for _, lc := range fp.loopCopies {
		if lc.partial {
			st.partialCopies++
		}
	}
	for _, l := range fp.loops {
		if l.swap {
			st.loopSwaps++
		}
	}
	return st
}

// patchedCode returns the original bytes under each patch of the code,
// in address order, for the metadata (meta.Table.Patched).
func patchedCode(b *cfg.Binary, ps []elfw.Patch) ([]meta.Patch, error) {
	out := make([]meta.Patch, 0, len(ps))
	for _, p := range ps {
		orig := b.Bytes(p.Addr, len(p.Bytes))
		if orig == nil {
			return nil, fmt.Errorf("patch at %#x: not in the file's sections", p.Addr)
		}
		out = append(out, meta.Patch{Addr: p.Addr, Orig: append([]byte(nil), orig...)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, nil
}

// metaFunc returns f's entry in the metadata. Its blocks and edges go
// into mf's arrays (a scratch the caller reuses), its call sites are
// sites.
func metaFunc(f *analysis.Func, sites []uint64, mf *meta.Func) {
	g := f.Graph
	*mf = meta.Func{Name: f.Func.Name, Entry: f.Func.Addr, Size: f.Func.TotalSize(), Instrumented: true, NumPaths: f.Numbering.NumPaths,
		Blocks: mf.Blocks[:0], Edges: mf.Edges[:0], CallSites: sites}
	for _, blk := range g.Blocks {
		mf.Blocks = append(mf.Blocks, meta.Block{Addr: blk.Addr, End: blk.End, Insts: uint32(blk.Insts), LoopDepth: uint32(blk.LoopDepth)})
	}
	for i, e := range g.Edges {
		mf.Edges = append(mf.Edges, meta.Edge{From: int32(e.From), To: int32(e.To), Kind: meta.EdgeKind(e.Kind), Break: g.BreaksPath(cfg.EdgeID(i)), Dispatch: e.Dispatch})
	}
}

// finiHook is how the exit hook is installed: by replacing the first
// entry of .fini_array (which runs last of the array) with the thunk. In a
// PIE the entry's R_X86_64_RELATIVE addend is replaced as well.
type finiHook struct {
	dtFini   bool   // hook DT_FINI instead (no .fini_array)
	slot     uint64 // address of the .fini_array entry
	orig     uint64 // its original value (link-time address)
	relaAddr uint64 // address of the RELA entry's addend, 0 if none
}

func findFini(b *cfg.Binary) (*finiHook, error) {
	s := b.File.Section(".fini_array")
	if s == nil || s.Size < 8 || s.Type == elf.SHT_NOBITS {
		return nil, ErrNoExit
	}
	h := &finiHook{slot: s.Addr}
	v, ok := b.Pointer(s.Addr)
	if !ok {
		return nil, ErrNoExit
	}
	h.orig = v
	for _, rs := range b.File.Sections {
		if rs.Type != elf.SHT_RELA || rs.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		d := b.Bytes(rs.Addr, int(rs.Size))
		for i := 0; i+24 <= len(d); i += 24 {
			if binary.LittleEndian.Uint64(d[i:]) == s.Addr && uint32(binary.LittleEndian.Uint64(d[i+8:])) == 8 {
				h.relaAddr = rs.Addr + uint64(i) + 16
			}
		}
	}
	return h, nil
}

func (h *finiHook) patches(thunk uint64) []elfw.Patch {
	v := binary.LittleEndian.AppendUint64(nil, thunk)
	ps := []elfw.Patch{{Addr: h.slot, Bytes: v}}
	if h.relaAddr != 0 {
		ps = append(ps, elfw.Patch{Addr: h.relaAddr, Bytes: v})
	}
	return ps
}

// branchTargets collects the targets of every direct jump, branch and
// call found by a linear sweep of the executable sections, each with the
// addresses of the instructions that branch there. The entry jump
// overwrites an instrumented function's first 5 bytes, so no code that
// may run may branch into them (glibc's string functions share tails
// that way: __mempcpy_* jumps to __memmove_*+5). The sweep may decode
// data as code; a bogus target only makes the check more cautious.
func branchTargets(b *cfg.Binary) *cfg.Branches {
	// The analysis sweeps the code the same way for its reference index;
	// one sweep serves both.
	return b.BranchSources()
}

// patchedInto reports whether some branch that may run lands inside the
// bytes the entry jump of f replaces. A branch of f's own (a loop back
// to the instruction after the prologue's first push: lua's
// luaK_exp2const and others) never runs once the entry is patched, so
// long as no other code branches into f past its entry: the original
// body then never runs, and the relocated copy's branch goes to the
// relocated block. Such self-branches are allowed; any other is not.
func patchedInto(f *cfg.Function, targets *cfg.Branches) bool {
	self := false
	for _, e := range append([]uint64{f.Addr}, f.Entries...) {
		for a := e + 1; a < e+5; a++ {
			for _, src := range targets.Sources(a) {
				if !f.Contains(src) {
					return true
				}
				self = true
			}
		}
	}
	return self && enteredInside(f, targets)
}

// enteredInside reports whether code outside f branches into f anywhere
// but at its entries.
func enteredInside(f *cfg.Function, targets *cfg.Branches) bool {
	for _, r := range f.Ranges() {
		for a := r.Addr; a < r.End(); a++ {
			if f.IsEntry(a) {
				continue
			}
			for _, src := range targets.Sources(a) {
				if !f.Contains(src) {
					return true
				}
			}
		}
	}
	return false
}

// b2u is 1 for true, 0 for false: the runtime tables' flag words.
func b2u(v bool) uint64 {
	if v {
		return 1
	}
	return 0
}

// leaveBranchedInto takes out of chosen, and lists in sum, every function
// that code outside all the chosen functions branches into past its entry
// (a function left uninstrumented jumping into its middle: glibc's string
// functions share their tails between entry points). That code would run
// the function's original blocks, which count nothing, and its copy's
// counts would no longer be the function's [DESIGN 2]. The branches come
// from a linear sweep of the executable sections (into), so data decoded
// as code can only leave more out. Leaving a function out adds no branch
// into another, so one pass is enough.
func leaveBranchedInto(chosen []*analysis.Func, moved map[*analysis.Func]uint64, into *cfg.Branches, sum *Summary) []*analysis.Func {
	type span struct {
		lo, hi uint64
		f      *analysis.Func
	}
	var spans []span
	for _, f := range chosen {
		for _, r := range f.Func.Ranges() {
			spans = append(spans, span{r.Addr, r.End(), f})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].lo < spans[j].lo })
	owner := func(a uint64) *analysis.Func {
		k := sort.Search(len(spans), func(k int) bool { return spans[k].lo > a }) - 1
		if k >= 0 && a < spans[k].hi {
			return spans[k].f
		}
		return nil
	}
	bad := map[*analysis.Func]uint64{}
	for t, froms := range into.All() {
		f := owner(t)
		// Branches up to a moved entry jump run the instructions before it
		// in place and then the copy (decision 67).
		if f == nil || f.Func.IsEntry(t) || (moved[f] != 0 && t <= moved[f]) {
			continue
		}
		for _, from := range froms {
			if owner(from) == nil {
				if _, seen := bad[f]; !seen || from < bad[f] {
					bad[f] = from
				}
				break
			}
		}
	}
	if len(bad) == 0 {
		return chosen
	}
	kept := chosen[:0]
	for _, f := range chosen {
		from, ok := bad[f]
		if !ok {
			kept = append(kept, f)
			continue
		}
		sum.Skipped = append(sum.Skipped, Skipped{Name: f.Func.Name, Entry: fmt.Sprintf("%#x", f.Func.Addr),
			Reason: "branched into by uninstrumented code", Detail: fmt.Sprintf("the code at %#x, in no instrumented function, jumps into its body", from),
			Size: f.Func.TotalSize()})
	}
	return kept
}
