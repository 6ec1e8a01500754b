package runtime

import "reflect"

// This file owns every structure that crosses the rewriter/runtime
// boundary (STYLE rule 2). The Go structs below are the definition; the C
// header blpp_layout.h is generated from them by WriteLayoutHeader, and the
// header's _Static_asserts make the C compiler confirm each offset. The
// untyped constants exist for code generators (an untyped constant fits an
// int32 displacement or an int index without conversion); layout_test.go
// checks them against unsafe.Offsetof.
//
// Every field is 8 bytes wide, so C and Go agree on the layout without
// relying on either compiler's padding rules; only Record's last two
// words hold narrower fields, each at an offset that is a multiple of its
// size and filling the word, where both compilers add no padding
// (layout_test.go checks it).

// Config is blpp_config, the runtime's configuration. It lives in the
// runtime's data at Image.Symbols[SymConfig]; the rewriter fills it by
// patching Image.Data (PutConfig) before the image is placed. All
// addresses are link-time virtual addresses of the final binary: the
// runtime adds the load bias, which it computes as the run-time address of
// blpp_config minus SelfVaddr (0 for a non-PIE executable).
type Config struct {
	Magic        uint64 `c:"magic"`          // ConfigMagic; anything else stops the program at start
	SelfVaddr    uint64 `c:"self_vaddr"`     // link-time address of blpp_config itself
	OrigEntry    uint64 `c:"orig_entry"`     // the program's own entry point; blpp_start jumps there
	OrigFini     uint64 `c:"orig_fini"`      // called by blpp_fini before it writes the profile; 0 if none
	FuncsVaddr   uint64 `c:"funcs_vaddr"`    // address of the Func table (NFuncs + NDark entries)
	NFuncs       uint64 `c:"nfuncs"`         // number of instrumented functions; function ids are [0, NFuncs)
	BuildIDVaddr uint64 `c:"build_id_vaddr"` // GNU build-id bytes of the instrumented binary; 0 if none
	BuildIDLen   uint64 `c:"build_id_len"`
	DumpSignal   uint64 `c:"dump_signal"` // signal that dumps the profile and continues; 0 = none
	Flags        uint64 `c:"flags"`       // ConfigFlag* bits
	// SitesVaddr points at NSites Site entries indexed by call-site id (id
	// 0 is "none"): the call sites instrumentation records in
	// Thread.CallSite before each call. A function's sites are the ids
	// [Func.FirstSite, Func.FirstSite+Func.NSites): its calls in address
	// order, then its direct tail jumps to instrumented functions.
	SitesVaddr uint64 `c:"sites_vaddr"`
	NSites     uint64 `c:"nsites"`
	// MetricsVaddr points at NMetrics Metric entries: the metrics besides
	// "freq" to read at path boundaries [DESIGN 8]; 0 entries: freq only.
	MetricsVaddr uint64 `c:"metrics_vaddr"`
	NMetrics     uint64 `c:"nmetrics"`
	// ArenaLimit bounds the memory of the calling context trees, counters
	// and partials (bytes; 0: DefaultArenaLimit; at most 2^38, so that a
	// thread's records fit Record.Index). Past it, new records are not
	// made (STATS dropped_records).
	ArenaLimit uint64 `c:"arena_limit"`
	// SlotsSize is the size in bytes of every thread block's slot
	// counters (at SlotsOffset in the block, before its shadow stack);
	// 0: none. Only flow-only, frequency-only images have them: there a
	// function with Func.Slot keeps its counters at a fixed offset from
	// %gs, so a backedge needs no record [decision 42].
	SlotsSize uint64 `c:"slots_size"`
	// ShadowFrames is the most shadow frames a thread's shadow stack
	// holds (0: DefaultShadowFrames). Deeper activations count their
	// paths without context, and their callers' path registers are lost
	// (STATS shadow_overflow). The address space is reserved at the
	// thread's start and made usable as the stack deepens [decision 61].
	ShadowFrames uint64 `c:"shadow_frames"`
	// NDark is the number of function ids past NFuncs, [NFuncs,
	// NFuncs+NDark): the functions left uninstrumented, in the order of
	// the metadata, whose entries the rewriter may send through a
	// counting stub (blpp_dark, decision 70). Their records hold calls
	// and no paths; their Func entries have only Slot (the calls word of
	// the flat record, in flow-only frequency images), or nothing.
	NDark uint64 `c:"ndark"`
	// OrigInit is the module's own DT_INIT (link-time address), which
	// blpp_module_init calls after it has registered the module; 0 if
	// none. Only shared objects (ConfigFlagLibrary) have the hook.
	OrigInit uint64 `c:"orig_init"`
	// ModuleTag names the module in the process [decision 81]: every
	// function id its instrumentation uses is ModuleTag<<FidBits | the
	// function's index in the module (its "local" id). The executable
	// has tag 0; shared objects 1..MaxModuleTag, unique in a process
	// (blpp run numbers them; a clash stops the program at load with a
	// message naming both modules).
	ModuleTag uint64 `c:"module_tag"`
	// SamplerVaddr points at one Sampler entry when the binary samples
	// (--metrics sample:EVENT[@N], decision 92); 0: no sampling.
	SamplerVaddr uint64 `c:"sampler_vaddr"`
	// LatencyEntries is how many paths (per record) of each thread keep
	// a latency distribution, at most (decision 93); 0: LatencyEntries.
	// The first module's value holds for the process.
	LatencyEntries uint64 `c:"latency_entries"`
}

// Config flags.
const (
	// ConfigFlagFlowOnly: count paths per function and thread, without
	// calling context (--no-context): one record per function, a root.
	ConfigFlagFlowOnly = 1 << 0
	// ConfigFlagNoFatalHandlers: do not install the handlers that write
	// the profile on SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM,
	// SIGINT, SIGPIPE, SIGHUP, SIGQUIT, SIGXCPU, SIGXFSZ, SIGTRAP, SIGSYS,
	// SIGUSR1, SIGALRM, SIGSTKFLT, SIGVTALRM, SIGPROF, SIGIO and SIGPWR.
	ConfigFlagNoFatalHandlers = 1 << 1
	// ConfigFlagCallCache: every thread block has a call cache at
	// CallCacheOffset, which context-mode inline entries read.
	ConfigFlagCallCache = 1 << 2
	// ConfigFlagFaultSharedThreads plants a fault, and only a rewriter
	// built with the blppfault tag sets it (internal/testsupport/corpus
	// TestFaultThreads): every thread takes the block it inherited for
	// its own, so threads share their creator's counters and updates are
	// lost between them.
	ConfigFlagFaultSharedThreads = 1 << 3
	// ConfigFlagLibrary: the module is a shared object. It has no entry
	// point of its own: blpp_module_init, its DT_INIT hook, registers
	// it with the process's one runtime (or makes that runtime, when it
	// is the first instrumented module to start), then runs OrigInit.
	ConfigFlagLibrary = 1 << 4
	// ConfigFlagNoLatency: with metrics, keep only each path's count and
	// metric sums, not its latency distribution (--no-latency; decision
	// 93). Every module of a process must agree.
	ConfigFlagNoLatency = 1 << 5
	// ConfigFlagExitHook: the module's _exit makes its exit_group system
	// call through the leave hook (the C library, or a static
	// executable, instrumented): a process exiting through it writes its
	// profile there, so the last exit hook need not write one first
	// (decision 164).
	ConfigFlagExitHook = 1 << 6
)

// Latency distributions [decision 93]. In an image with metrics and
// without ConfigFlagNoLatency, each path's words in a record's counters
// (and in a hash-table entry) are its count, its metric sums, then one
// more, the path's latency word [decision 148]: 0 until the path first
// runs in that record; then that execution's value, complemented, when
// it is below 2^62 (the word's top two bits set); from the path's
// second execution on (or its first, for a larger value) the address of
// its latency entry, taken from its thread's latency region
// (Thread.LatNext); or 1<<63 when the region was full, all the path's
// executions then in Thread.LatDropped alone. An entry is LatencyWords
// words about the first metric's value of each execution (the
// time-stamp counter's ticks with --metrics tsc):
//
//   - LatencySlowest words: the largest values seen, in ascending
//     order (0: not filled yet), so the first is the one a new value
//     must exceed to be kept;
//   - one word at LatencyPending: 0, or 1 + the bucket of the path's
//     latest execution counted inline, which the histogram does not
//     hold yet: the inline tsc path end counts the bucket of the
//     path's previous execution and leaves its own here, because an
//     increment at an address computed from the counter just read
//     stalls the pipeline until the read completes. The writer adds it;
//   - LatencyBuckets words from LatencyHist: a log2 histogram, bucket b
//     counting the executions whose value v has floor(log2(v|1)) = b
//     (bsr of v|1).
//
// Entries exist only for the paths that ran more than once, LatencyEntries per thread
// at most (Config.LatencyEntries: a reservation of that many times
// LatencyEntrySize bytes of address space, used as they are taken); an
// execution that finds the region full is counted in Thread.LatDropped
// and in no histogram.
const (
	LatencySlowest   = 4
	LatencyBuckets   = 64
	LatencyPending   = LatencySlowest
	LatencyHist      = LatencyPending + 1
	LatencyWords     = LatencyHist + LatencyBuckets
	LatencyEntrySize = 8 * LatencyWords
	LatencyEntries   = 1 << 18
)

// GateShut is Thread.Gate while a stub is busy on the thread or its
// shadow stack has overflowed: no thread pointer is 1 (decision 90).
const GateShut = 1

// Function ids across modules [decision 81]: a module's instrumentation
// names its function i (instrumented ones first, then the left-out ones
// whose entries it counts) as ModuleTag<<FidBits | i, so that the ids of
// all the modules of a process differ and every record, node and shadow
// frame says which module's function it is.
const (
	FidBits      = 20
	FidLocalMask = 1<<FidBits - 1
	MaxModuleTag = 1<<(31-FidBits) - 1 // ids stay positive imm32s
)

// The call cache of a context-mode thread block [decision 49]: a
// direct-mapped table of CallCacheEntries entries of CallCacheEntry bytes,
// {list, fid, node, 0}, that gives the node of function fid in a record's
// call-site node list (list: the address of the list's head word, unique
// per record and call site) without walking the list. Entry
// ((uint32(list+fid)*HashMul) >> (32-CallCacheBits)). It takes the place
// of the slot counters, which only flow-only images have, and is wiped in
// a fork child like them.
const (
	CallCacheBits    = 12
	CallCacheEntries = 1 << CallCacheBits
	CallCacheEntry   = 32
	CallCacheOffset  = SlotsOffset
	CallCacheSize    = CallCacheEntries * CallCacheEntry
)

// ConfigMagic is Config.Magic: "BLPPCFG1" read as a little-endian uint64.
const ConfigMagic = 0x3147464350504c42

// DefaultDumpSignal is the dump signal of an unpatched image (SIGUSR2).
const DefaultDumpSignal = 12

// Func is blpp_func, one entry of the table at Config.FuncsVaddr, indexed
// by function id (the number instrumentation pushes for the stubs).
type Func struct {
	NumPaths uint64 `c:"num_paths"` // path ids are [0, NumPaths); others are counted as bad_paths
	// Hashed asks the runtime to count this function's paths in a hash
	// table rather than a dense array (functions with many paths).
	Hashed    uint64 `c:"hashed"`
	FirstSite uint64 `c:"first_site"` // id of the function's first call site (see Config.SitesVaddr)
	NSites    uint64 `c:"nsites"`     // number of its call sites
	// Slot is the offset from the thread block of the function's counter
	// array ({calls, path 0, path 1, ...}) in the block's slot counters,
	// 0 if it has none (see Config.SlotsSize).
	Slot uint64 `c:"slot"`
	// PathReg is 1 + the number (0 rax ... 15 r15) of the general
	// register that holds the function's path register while its code
	// runs, 0 if Thread.R does [decision 44]. The entry saves the
	// register's value in Frame.SavedAcc[1] (SavedReg) and every exit
	// puts it back; the runtime's entry and exit stubs do the same in
	// their register save area.
	PathReg uint64 `c:"path_reg"`
	// Closed is 1 for a closed function [decision 57]: a flow-only
	// function with slot counters and a path register whose calls all go
	// straight to closed functions with the same path register that
	// return by ret (inside calls). Its
	// activations leave Thread.R, CallSite and Cur alone (their frames'
	// SavedR and SavedAcc[0] mean nothing), and its frames keep the
	// return address in Site. A closed activation that is not the newest
	// stopped at the call whose return address its (closed) callee's
	// frame holds (Site.Ret), with the path value that callee saved as
	// the register's entry value (SavedAcc[1]).
	//
	// Closed is 2 for a closed function that also makes outside calls
	// [decision 64]: to code that is not closed, through a pointer, by a
	// tail jump or without return. Such a call stores the call site and
	// the register's value in the caller's frame (SavedAcc[2] and [3],
	// FrameExtSiteOff and FrameExtROff) and clears the site when it
	// returns; the entry clears it too. An activation whose callee's frame
	// does not name its call stopped there when that site is not 0.
	Closed uint64 `c:"closed"`
}

// Metric is blpp_metric, one entry of the table at Config.MetricsVaddr.
type Metric struct {
	Type   uint64    `c:"type"`   // perf_event_attr.type, or MetricTypeTSC
	Config uint64    `c:"config"` // perf_event_attr.config
	Name   [3]uint64 `c:"name"`   // NUL-padded name as the profile calls it ("cycles")
}

// Sampler is blpp_sampler, the entry at Config.SamplerVaddr [decision
// 92]: the event each thread samples and how often. The runtime opens it
// per thread with perf_event_open (a signal per overflow, sent to the
// thread: F_SETOWN_EX, F_SETSIG) and, for the software clocks, falls back
// to a timer on the thread's CPU clock (timer_create with
// CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID); a hardware event that
// cannot be opened falls back to cpu-clock at FallbackPeriod.
type Sampler struct {
	Type   uint64    `c:"type"`   // perf_event_attr.type
	Config uint64    `c:"config"` // perf_event_attr.config
	Period uint64    `c:"period"` // events per sample (nanoseconds for the clocks)
	Signal uint64    `c:"signal"` // the real-time signal to use (0: DefaultSampleSignal)
	Name   [3]uint64 `c:"name"`   // the event's name, NUL-padded (MetricName)
	Flags  uint64    `c:"flags"`  // SamplerFlag* bits
}

// SamplerFlagTimer makes a clock event use the thread CPU-clock timer
// even where perf could sample it (tests of the fallback; machines whose
// perf signals cost too much).
const SamplerFlagTimer = 1

// LeaveExecve is the blpp_leave kind before an execve system call (its
// arguments in the registers the stub saves): the runtime writes the
// profile as for any exec (kind 2, cfg.LeaveExec) and, under blpp run,
// sends the exec through blpp so that the new program is instrumented
// too (decision 167). cfg.LeaveExecve has this value.
const LeaveExecve = 4

// DefaultSampleSignal is the signal the sampler uses unless
// Sampler.Signal names another: SIGRTMAX-1 (63). glibc keeps the first
// real-time signals (32, 33) for itself and programs count theirs up from
// SIGRTMIN (34); the runtime takes the next lower free one when a handler
// is already installed for it.
const DefaultSampleSignal = 63

// FallbackSamplePeriod is the period (nanoseconds of thread CPU time)
// of cpu-clock when it stands in for a hardware event the machine cannot
// sample: 1 kHz.
const FallbackSamplePeriod = 1000000

// PutSampler encodes s into b (at least SamplerSize bytes).
func PutSampler(b []byte, s Sampler) { putStruct(b[:SamplerSize], reflect.ValueOf(s)) }

// MetricTypeTSC is Metric.Type for the time-stamp counter (rdtsc).
const MetricTypeTSC = 0xffffffff

// MaxMetrics is the most metrics besides "freq" a binary can carry.
const MaxMetrics = 4

// DefaultArenaLimit is the arena bound when Config.ArenaLimit is 0.
const DefaultArenaLimit = 8 << 30

// DefaultShadowFrames is the shadow-stack capacity when
// Config.ShadowFrames is 0: 2^24 frames, 1.2 GB of address space per
// thread, of which a thread uses what its depth needs. A native frame
// takes at least its 8-byte return address, so this is deeper than any
// stack of up to 128 MiB can go.
const DefaultShadowFrames = 1 << 24

// Thread is blpp_thread, the per-thread block that %gs points at
// [DESIGN 4]. Instrumented code keeps the path register in R (`addq $k,
// %gs:OffR`), or in a general register that it spills to R around calls
// and stubs (Func.PathReg, decision 44); its inline fast paths read and
// write the fields named in rewriter/codegen.go, as the stubs would.
type Thread struct {
	Self     uint64 `c:"self"`      // the block's own address: %gs:0
	R        int64  `c:"r"`         // Ball-Larus path register of the running activation
	Owner    uint64 `c:"owner"`     // thread pointer (%fs:0) of the owning thread
	SP       uint64 `c:"sp"`        // next free shadow frame
	SPBase   uint64 `c:"sp_base"`   // first shadow frame
	SPLimit  uint64 `c:"sp_limit"`  // end of the shadow stack
	TID      uint64 `c:"tid"`       // kernel thread id of the owner
	Next     uint64 `c:"next"`      // next block in the runtime's list of threads
	Overflow uint64 `c:"overflow"`  // activations not pushed because the shadow stack was full
	Busy     uint64 `c:"busy"`      // nesting depth of runtime code running on this thread
	Record   uint64 `c:"record"`    // the running activation's Record; none is the runtime's zero_record, never 0 (decision 104)
	CallSite uint64 `c:"call_site"` // id of the last call site passed (movq $id, %gs:OffCallSite before each call)
	// Flat points at NFuncs record pointers: the thread's root record of
	// each function (the only records with --no-context).
	Flat uint64 `c:"flat"`
	// TailRec, TailSite and TailRSP remember a tail jump to an
	// instrumented function: its entry (at %rsp TailRSP) becomes a child
	// of TailRec at TailSite, the activation that jumped.
	TailRec  uint64 `c:"tail_rec"`
	TailSite uint64 `c:"tail_site"`
	TailRSP  uint64 `c:"tail_rsp"`
	// MStart holds each metric's value when the running path last
	// resumed; MAcc what it accumulated before (exclusive of callees).
	MStart   [MaxMetrics]uint64 `c:"mstart"`
	MAcc     [MaxMetrics]uint64 `c:"macc"`
	Records  uint64             `c:"records"`  // first record of the thread (list through Record.Next)
	LastRec  uint64             `c:"last_rec"` // last record, where new ones are linked
	NRecords uint64             `c:"nrecords"`
	Folded   uint64             `c:"folded"` // list of folded call nodes (Node.FNext)
	Partials uint64             `c:"partials"`
	PLock    uint64             `c:"plock"` // try-lock of Partials
	Epoch    uint64             `c:"epoch"` // the fork epoch the thread's records belong to
	// Cur is fid+1 when the running activation's record is fid's and
	// keeps its counters in this block's slots (Func.Slot), else 0. The
	// slot form of a backedge compares it with its own fid+1.
	Cur uint64 `c:"cur"`
	// LeafSite and LeafR are the call site (0: none) and path register of
	// a closed activation's call to a trivial function in progress
	// [decision 64]: the callee runs no other instrumented code and keeps
	// the register, so the caller stores both here before the call and
	// clears the site after it.
	LeafSite uint64 `c:"leaf_site"`
	LeafR    int64  `c:"leaf_r"`
	// DarkList, DarkRec and DarkRSP are the newest uninstrumented
	// activation that may be in progress (decision 70): the node list
	// its record hangs in, the record, its entry %rsp; all 0 if none. An
	// entry of the same function from the same call site of the same
	// record only counts and stores its %rsp in DarkRSP (the rewriter's
	// inline stub); anything else takes blpp_dark, which keeps older
	// ones too.
	DarkList uint64 `c:"dark_list"`
	DarkRec  uint64 `c:"dark_rec"`
	DarkRSP  uint64 `c:"dark_rsp"`
	// Proc is the process's runtime state (the same in every block);
	// a module that starts finds the runtime through the %gs block of
	// the thread that loads it [decision 81].
	Proc uint64 `c:"proc"`
	// FlatMods, in flow-only images, points at MaxModuleTag+1 pointers:
	// per module tag other than 0, the thread's root records of that
	// module's functions by local id (0 until the module's first stub
	// entry on this thread makes the array). The executable's are Flat.
	FlatMods uint64 `c:"flat_mods"`
	// Gate is what inline entries compare with the thread pointer
	// (decision 90): Owner while no stub is busy on the thread and its
	// shadow stack has not overflowed, else GateShut, which no thread
	// pointer equals. One compare thus tells a thread that still has
	// its creator's block, a busy stub and an overflow apart from the
	// common case; the runtime shuts the gate before it raises Busy.
	Gate uint64 `c:"gate"`
	// LatNext is where the thread's next latency entry starts, and
	// LatLimit the first address where one does not fit (both 0 without
	// a region: every execution is then dropped); LatDropped counts the
	// executions that found no room (decision 93). The inline code takes
	// an entry with xadd on LatNext, one instruction, so a signal
	// handler's own path ends cannot take the same one.
	LatNext    uint64 `c:"lat_next"`
	LatLimit   uint64 `c:"lat_limit"`
	LatDropped uint64 `c:"lat_dropped"`
}

// Frame is blpp_frame, one shadow-stack entry: an activation of an
// instrumented function that has not reached its exit.
type Frame struct {
	RSP    uint64 `c:"rsp"`     // %rsp at the activation's entry (the return address's slot)
	SavedR int64  `c:"saved_r"` // the caller's path register, restored at exit
	Func   uint64 `c:"func"`    // function id
	Record uint64 `c:"record"`  // the caller's record (Thread.Record at entry), restored at exit
	Site   uint64 `c:"site"`    // the caller's call site (Thread.CallSite at entry): where the caller stopped
	// SavedAcc is the caller's MAcc, restored at exit [DESIGN 8]. In an
	// image without metrics SavedAcc[0] holds the caller's Thread.Cur
	// instead (SavedCur: images with slot counters), and SavedAcc[1] the
	// value the function's path register (Func.PathReg) had at entry
	// (SavedReg).
	SavedAcc [MaxMetrics]uint64 `c:"saved_acc"`
}

// Record is blpp_record, a node of a thread's calling context tree
// [Ammons-Ball-Larus 97 §4]: one function reached through one chain of
// call sites. Records live in the runtime's fork-wiped arena. Inline
// instrumentation reads Func, DenseN, Hash, FirstSite, NSites and Kids:
// they come first, within its first 64 bytes, and Parent and Site, which
// only the runtime reads, after them (decision 131).
//
// A record's counters are at RecordInlineCounts from it (rec_new
// allocates both together), unless they are a thread's slot counters
// (RecordExtSlot): the record's calls at word 0, then Stride words per
// path id: its count, its metric sums and, with latency, its latency
// entry's address (decision 93).
type Record struct {
	Func uint64 `c:"func"`
	// DenseN is the number of paths counted in the dense array, 0 for a
	// hashed function: a path id at or above it takes the slow path.
	DenseN    uint64 `c:"dense_n"`
	Hash      uint64 `c:"hash"`       // the hash table of a hashed function
	FirstSite uint64 `c:"first_site"` // the function's first call-site id
	NSites    uint64 `c:"nsites"`
	// Kids points at NSites+1 node lists: [0] for entries without a
	// known call site, [1+i] for call site FirstSite+i. A list ends in
	// the runtime's zero_node, not 0, an empty list's head included
	// (decision 104).
	Kids   uint64 `c:"kids"`
	Parent uint64 `c:"parent"`
	// Anc has bit fib32(f)>>26 set for the function f of each record
	// on the chain from this one up through Parent (itself included):
	// a call whose callee's bit is clear folds onto no ancestor, and
	// the runtime does not walk the chain to find one (decision 107).
	Anc  uint64 `c:"anc"`
	Next uint64 `c:"next"` // next record of the thread
	// The fields below are narrower than a word (decision 146): a
	// context-mode process makes tens of thousands of records, most of
	// which run once. Site and Index fit 32 bits (a module's call-site
	// ids; the runtime makes at most 2^32-1 records per thread).
	Site  uint32 `c:"site"`  // call-site id in the parent (0: none)
	Index uint32 `c:"index"` // the writer's record number
	// Cold counts the path ends the runtime counted in a cold record's
	// small table: in context mode the records of hashed functions and
	// of functions with more than COLD_PATHS paths start with DenseN 0
	// and a small hash table at Hash, and move to a hot twin (dense
	// functions) or a larger table (hashed ones) once this reaches
	// promote_ends (blpp_htab.c: for a dense function in proportion to
	// its twin's size; decisions 99, 136).
	Cold uint32 `c:"cold"`
	// Listed is 1 once the record is in its thread's list (Next, Index):
	// a record is published in a node list first, and whichever stub
	// meets it unlisted links it (decision 99).
	Listed uint8 `c:"listed"`
	// Ext says which of the words Twin and Via the record has, just
	// before it (RecordExt*): few records need either, so they are
	// made only where needed (decision 146).
	//
	// Via is the record of an uninstrumented function whose activation
	// was in progress when this record was made under Parent at Site:
	// the call at Site entered uninstrumented code, and this function
	// was called back from inside it (decision 70). The profile gives
	// such a record Via as its parent, with call site 0.
	//
	// Twin is, for a cold record of a dense function (below), its hot
	// twin once it has one (0 until then), and for a hot twin the cold
	// record it stands for (decision 99): the twin has the same header
	// and index, DenseN the function's paths and its dense counters
	// inline, and is not in the thread's list; the writer adds its
	// calls and paths to the cold record's. A record with DenseN 0 and
	// Twin set is the cold one.
	//
	// Counters, for a record whose counters are its thread's slot
	// counters (flow-only frequency images, decision 42), is their
	// address; such a record has no Twin.
	Ext uint8  `c:"ext"`
	Pad uint16 `c:"pad"`
}

// The words before a record (Record.Ext): Twin or Counters (no record
// has both), when the record has one, is the word just before the
// record, and Via the word before that (just before the record when it
// has neither).
const (
	RecordExtTwin = 1 << 0
	RecordExtVia  = 1 << 1
	RecordExtSlot = 1 << 2
)

// Node is blpp_node, one callee of a call site in a Record's Kids list.
// Only a folded node (Folded 1), which the writer reads through the
// thread's list of them (Thread.Folded), has the fields from Owner on; any
// other is NodeShortSize bytes (decision 99): nothing reads them there.
type Node struct {
	Func   uint64 `c:"func"`   // the callee's function id
	Rec    uint64 `c:"rec"`    // its record: a new child, or an ancestor for folded recursion
	Next   uint64 `c:"next"`   // next node of the same call site (move-to-front); zero_node at the end
	Count  uint64 `c:"count"`  // calls through this node
	Owner  uint64 `c:"owner"`  // the calling record
	Site   uint64 `c:"site"`   // the call-site id (0: none)
	Folded uint64 `c:"folded"` // 1: Rec is Owner or one of its ancestors
	FNext  uint64 `c:"fnext"`  // next folded node of the thread
	Via    uint64 `c:"via"`    // as Record.Via: the profile's caller of a folded call
	// RNext is the next folded node whose Rec is the same record: the
	// word before that record's node lists (Kids[-1]) heads the chain,
	// so that a record made hot updates the nodes that fold onto it
	// without a walk of the thread's every folded node (decision 129).
	RNext uint64 `c:"rnext"`
}

// Site is blpp_site, an entry of the table at Config.SitesVaddr.
type Site struct {
	Func  uint64 `c:"func"`  // function id of the call's function
	Block uint64 `c:"block"` // block that ends with the call
	// Ret is the link-time address of the instruction after a closed
	// function's call (its return address), 0 for other sites.
	Ret uint64 `c:"ret"`
}

// Sizes and offsets for code generators; layout_test.go checks each one
// against the structs above.
const (
	ConfigSize = 176

	SamplerSize = 64

	FuncSize         = 56
	FuncNumPathsOff  = 0
	FuncHashedOff    = 8
	FuncFirstSiteOff = 16
	FuncNSitesOff    = 24
	FuncSlotOff      = 32
	FuncPathRegOff   = 40
	FuncClosedOff    = 48

	MetricSize = 40

	ThreadSize  = 344
	OffSelf     = 0
	OffR        = 8
	OffOwner    = 16
	OffSP       = 24
	OffSPBase   = 32
	OffSPLimit  = 40
	OffTID      = 48
	OffNext     = 56
	OffOverflow = 64
	OffBusy     = 72
	OffRecord   = 80
	OffCallSite = 88
	OffFlat     = 96
	OffTailRec  = 104
	OffCur      = 248
	OffLeafSite = 256
	OffLeafR    = 264
	OffDarkList = 272
	OffDarkRec  = 280
	OffDarkRSP  = 288
	OffProc     = 296
	OffFlatMods = 304
	OffGate     = 312
	OffLatNext  = 320
	OffLatLimit = 328
	OffLatDrop  = 336

	FrameSize        = 72
	FrameSavedCurOff = 40
	FrameSavedRegOff = 48
	// A closed function's outside call in progress [decision 64]: its
	// call site (0: none) and the path register's value there.
	FrameExtSiteOff = 56
	FrameExtROff    = 64

	SiteSize = 24

	RecordSize         = 88
	RecordFuncOff      = 0
	RecordDenseNOff    = 8
	RecordHashOff      = 16
	RecordFirstSiteOff = 24
	RecordNSitesOff    = 32
	RecordKidsOff      = 40
	RecordColdOff      = 80
	// RecordInlineCounts is where a record's counters begin, from the
	// record, unless they are slot counters: rec_new allocates both
	// together, so the inline code needs no pointer to them [decision
	// 47], and the record has none. It is the record's size:
	// context-mode records are 8-byte aligned in the small objects'
	// arena, where a gap to a line's end aligned nothing and cost every
	// record five words (decision 146).
	RecordInlineCounts = 88

	// A hashed function's record counts in hash tables (Record.Hash, the
	// newest; blpp_rt.c's struct htab): HTabEntriesOff bytes of header,
	// then entries of a key (path id + 1, 0 when empty) and the path's
	// values. A table of cap entries keeps cap times the entry size at
	// HTabBytesOff, and a key's first probe in it is entry
	// ((uint32(key)*HashMul) * cap) >> 32, which the inline code computes
	// as (uint32(key)*HashMul * bytes) >> 32 rounded down to an entry, to
	// count a path found there without the stub [decision 48]. A record's
	// first table has HTabInitCap entries.
	HTabEntriesOff = 32
	HTabBytesOff   = 24
	// HTabLeftOff is how many more keys the table takes (signed: a
	// signal handler's insertion between the inline code's test and its
	// own may take it below 0, which means full too). The runtime sets
	// it to the table's room when it makes the table; the runtime and
	// the inline code take one off for each key they put in, the inline
	// code only at the key's home entry (decision 161).
	HTabLeftOff = 8
	HTabInitCap = 64
	HashMul     = 0x9e3779b1

	// In context mode a record of a function with more than ColdPaths
	// paths starts cold (Record.Cold): a small table instead of a dense
	// array. A dense function's cold record gets its hot twin once the
	// runtime has counted PromoteEnds path ends in it, or one for every
	// PromoteBytes bytes of the twin's dense array where that is more
	// (promote_ends, decisions 99, 136). The inline code counts a path
	// its probes find in a cold record's table while fewer have been
	// counted (decision 151), so it needs the same numbers.
	ColdPaths    = 64
	PromoteEnds  = 32
	PromoteBytes = 32

	NodeSize     = 80
	NodeFuncOff  = 0
	NodeRecOff   = 8
	NodeCountOff = 24
	// NodeShortSize is the size of a node that is not folded: the
	// fields before Owner.
	NodeShortSize = 32
)

// RedZone is the number of bytes instrumentation steps over
// (`lea -RedZone(%rsp),%rsp`) before it pushes stub arguments: the
// interrupted code may keep live data below %rsp [SysV x86-64 ABI 3.2.2].
// The stubs rely on this exact value to recover the activation's %rsp.
const RedZone = 128

// SlotsOffset is where a thread block's slot counters start: after the
// 4 KiB header (struct blpp_thread and the runtime's private part).
const SlotsOffset = 4096

// BlockUnknown is the block of a partial entry whose stopping block the
// runtime cannot tell (the newest activation at a fatal signal or a dump,
// an activation left by a longjmp before it made any call). The register
// value is still exact.
const BlockUnknown = 0xffffffff
