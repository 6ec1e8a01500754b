package rewriter

import (
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/internal/phase"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/runtime"
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
	// failEmit, for tests only (export_test.go), names a function whose
	// code generation fails (errFailAsked): the layout is redone
	// without it, as after a real failure.
	failEmit string
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

// errFailAsked is the code generation failure Options.failEmit asks for.
var errFailAsked = errors.New("failed as the test asked")

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
	chosen = leavePartlyUnwound(b, chosen, sum)
	chosen = leaveBranchedInto(b, res.Funcs, chosen, moved, into, sum)
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
		// Their original code runs now: what it branches into past an
		// entry is left out too, as for the functions left out above.
		chosen = leaveBranchedInto(b, res.Funcs, chosen, moved, into, sum)
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
