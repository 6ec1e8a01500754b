package cct

import (
	"fmt"
	"strings"
)

// The constants of the profile file format (docs/profile-format.md).
// They are the single source of truth: WriteCHeader emits them for the C
// runtime, so the two writers cannot drift apart.
const (
	// Magic opens every profile file.
	Magic = "BLPPPRF1"
	// Version is the format version this package writes and the only
	// one it reads (MinVersion = Version). Version 3 (decision 81) made a
	// record's func a global function id (module tag << FidBits | local
	// index) and added the MODULES section; a version-2 file's ids mean
	// something else in a process with libraries, so older files are
	// refused with a message saying to run the program again. Version 2
	// added records of uninstrumented functions (decision 70).
	Version    uint32 = 3
	MinVersion uint32 = 3

	// Section tags. A reader skips tags it does not know (forward
	// compatibility), except TagReserved, which is refused.
	TagThread   uint8 = 1
	TagReserved uint8 = 2 // the PARTIAL section of the first draft; partials now live in THREAD
	TagStats    uint8 = 3
	// TagModules lists the modules of the process (version 3, decision
	// 81): uv n, then per module uv tag, uv flags (ModuleFlag*), uv
	// load bias, uv path_len, path, uv build_id_len, build_id. A
	// record's func is then tag<<FidBits | the function's index in
	// that module's metadata.
	TagModules uint8 = 4
	// TagSamples holds the sampled attribution (decision 92): what was
	// sampled, the objects the sampled pcs lie in, and per thread its
	// samples (record, object, offset, path register, count). At most
	// one, after the THREAD sections it refers to by number. Readers
	// that do not know it skip it: the exact counts stand alone.
	TagSamples uint8 = 5
	TagTrailer uint8 = 0xff

	// FidBits splits a version-3 function id into the module tag (high
	// bits) and the function's index in the module (runtime.FidBits).
	FidBits = 20
	// FidLocalMask keeps the local function index of a global id.
	FidLocalMask = 1<<FidBits - 1
	// MaxTag is the largest module tag a 32-bit function id can carry.
	// (The runtime allots fewer: runtime.MaxModuleTag.)
	MaxTag = 1<<(32-FidBits) - 1

	// MaxVarintLen is the longest LEB128 encoding a reader accepts.
	MaxVarintLen = 10

	// FNV-1a 64 parameters of the trailer checksum.
	FNVOffset64 uint64 = 0xcbf29ce484222325
	FNVPrime64  uint64 = 0x100000001b3

	// FreqMetric is the name of metric 0, the path count itself.
	FreqMetric = "freq"
)

// Keys of the STATS section that the runtime writes. A reader keeps any
// key; these are listed so that the runtime and the reports agree on names.
const (
	StatArenaBytes     = "arena_bytes"     // bytes the runtime's allocator mapped
	StatRecords        = "records"         // call records created, all threads
	StatThreads        = "threads"         // thread blocks created
	StatDroppedRecords = "dropped_records" // activations left without a record (arena full)
)

// ModuleFlags are a MODULES entry's flag bits.
type ModuleFlags uint64

const (
	// ModuleFlagExecutable: the module is the program (tag 0).
	ModuleFlagExecutable ModuleFlags = 1 << 0
	// ModuleFlagUnloaded: dlclose unmapped the module before the write;
	// its counts are kept.
	ModuleFlagUnloaded ModuleFlags = 1 << 1
)

// KnownModuleFlags holds every defined module flag; a reader refuses the
// others.
const KnownModuleFlags = ModuleFlagExecutable | ModuleFlagUnloaded

// FidTag is the module tag of global function id fid.
func FidTag(fid uint32) uint32 { return fid >> FidBits }

// FidLocal is the function's index in its module's metadata.
func FidLocal(fid uint32) uint32 { return fid & FidLocalMask }

// Fid makes the global function id of function local of module tag.
func Fid(tag, local uint32) uint32 { return tag<<FidBits | local&FidLocalMask }

// Flags are the header's flag bits.
type Flags uint32

const (
	// FlagFlowOnly: the binary was instrumented without calling context
	// (--no-context); every record is a root, one per function and thread.
	FlagFlowOnly Flags = 1 << 0
	// FlagFatalSignal: written by the handler of a fatal signal. In a
	// merged profile: at least one input was.
	FlagFatalSignal Flags = 1 << 1
	// FlagDumpSignal: written on the dump signal while the program went
	// on running. In a merged profile: at least one input was.
	FlagDumpSignal Flags = 1 << 2
	// FlagExec: written just before an exec (decision 59); every
	// activation stopped at the exec call. In a merged profile: at least
	// one input was.
	FlagExec Flags = 1 << 3

	// KnownFlags holds every defined bit; a reader refuses the others.
	KnownFlags = FlagFlowOnly | FlagFatalSignal | FlagDumpSignal | FlagExec
)

var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagFlowOnly, "flow-only"},
	{FlagFatalSignal, "fatal-signal"},
	{FlagDumpSignal, "dump-signal"},
	{FlagExec, "exec"},
}

// String lists the set bits, joined by '|'; "0" when none is set.
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			parts = append(parts, n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint32(f)))
	}
	return strings.Join(parts, "|")
}

// MetricKind says how far a metric's values can be trusted [DESIGN 8].
type MetricKind uint8

const (
	// MetricReal: counted as named.
	MetricReal MetricKind = 0
	// MetricFallback: measured by a stand-in (cycles by rdtsc, say).
	MetricFallback MetricKind = 1
	// MetricUnavailable: listed for the record; every value is zero.
	MetricUnavailable MetricKind = 2

	numMetricKinds = 3
)

func (k MetricKind) String() string {
	switch k {
	case MetricReal:
		return "real"
	case MetricFallback:
		return "fallback"
	case MetricUnavailable:
		return "unavailable"
	}
	return fmt.Sprintf("MetricKind(%d)", uint8(k))
}
