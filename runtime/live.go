package runtime

import (
	"fmt"
	"reflect"
)

// Continuous mode (decision 94): with BLPP_PROFILE naming a file with
// %c, the runtime keeps its counters, calling context trees and partials
// in a shared mapping of the profile file itself, from the start, so that
// the file is a profile at every instant, even after SIGKILL. Such a live
// file is the runtime's memory as it is: a LiveHeader page, then the
// runtime's arena (records, nodes, counters, hash tables, partials
// tables), with a LiveThread per thread block and a LiveMod per module.
// Every pointer in it is an address in the process, and the file is
// mapped at LiveHeader.Base: a pointer p is at file offset p - Base.
// Package cct reads it (cct.ParseLive) into the profile model. At a clean
// exit the runtime writes the ordinary profile over it.

// LiveMagic is LiveHeader.Magic: "BLPPLIV1" read as a little-endian
// uint64. The file's first 8 bytes are the string.
const (
	LiveMagic   = 0x3156494c50504c42
	LiveVersion = 4 // 2: folded nodes are 80 bytes (Node.RNext, decision 129); 3: record fields reordered; 4: records of 88 bytes, no Counts, Twin, Via and slot counters in words before them (decision 146)
	// LiveHeaderSize is the size of the header page; struct wiped (the
	// statistics, LiveWiped) follows it.
	LiveHeaderSize = 4096
)

// LiveHeader is blpp_live, at offset 0 of a live file.
type LiveHeader struct {
	Magic   uint64 `c:"magic"`
	Version uint64 `c:"version"`
	// Base is the address the file is mapped at in the process.
	Base uint64 `c:"base"`
	// Size is how many bytes of the file the runtime uses; the file may
	// be longer (never shorter, once the runtime has grown it).
	Size uint64 `c:"size"`
	PID  uint64 `c:"pid"`
	// Flags are the profile's header flags (cct.FlagFlowOnly).
	Flags  uint64 `c:"flags"`
	TimeNS uint64 `c:"time_ns"` // CLOCK_REALTIME when the process began counting
	// NMetrics metrics besides freq, each with a kind (the profile's
	// metric kinds) and a NUL-padded name of up to 23 bytes.
	NMetrics uint64                 `c:"nmetrics"`
	MKind    [MaxMetrics]uint64     `c:"mkind"`
	MName    [MaxMetrics * 3]uint64 `c:"mname"`
	Threads  uint64                 `c:"threads"` // the newest LiveThread
	Mods     uint64                 `c:"mods"`    // the newest LiveMod
	Wiped    uint64                 `c:"wiped"`   // struct wiped: LiveWipedStatsOff, LiveWipedPrefixesOff
	// Stride is the words per path in a record's counters and a hash
	// entry's: 1 + NMetrics, one more with latency entries (decision 93).
	Stride   uint64    `c:"stride"`
	Reserved [7]uint64 `c:"reserved"`
}

// LiveThread is blpp_live_thread: a thread block's part of the file,
// which the runtime keeps in step with the block (live_sync).
type LiveThread struct {
	Next     uint64 `c:"next"`
	TID      uint64 `c:"tid"`
	Records  uint64 `c:"records"`  // Thread.Records: its first record (list through Record.Next)
	NRecords uint64 `c:"nrecords"` // records linked so far (the list may hold one more, being linked)
	Folded   uint64 `c:"folded"`   // Thread.Folded: folded-call nodes (list through Node.FNext)
	Partials uint64 `c:"partials"` // Thread.Partials: a partials table (LivePtabCap Pents)
	Block    uint64 `c:"block"`    // the thread block's address (struct wiped's prefix owner)
}

// LiveMod is blpp_live_mod, a module of the process (the profile's
// MODULES entry).
type LiveMod struct {
	Next       uint64     `c:"next"`
	Tag        uint64     `c:"tag"`
	Flags      uint64     `c:"flags"` // cct.ModuleFlags
	Bias       uint64     `c:"bias"`
	BuildIDLen uint64     `c:"build_id_len"`
	BuildID    [32]uint64 `c:"build_id"`
	PathLen    uint64     `c:"path_len"`
	Path       [64]uint64 `c:"path"`
}

// Pent is blpp_pent, one entry of a partials table: an activation that
// stopped at block Block with path register Reg (runtime's struct ptab:
// LivePtabCap entries; Count 0 marks an empty one, and is written last).
type Pent struct {
	Rec   uint64 `c:"rec"`
	Func  uint64 `c:"func"`
	Block uint64 `c:"block"`
	Reg   int64  `c:"reg"`
	Count uint64 `c:"count"`
}

const (
	// LivePtabCap is the number of entries of a partials table.
	LivePtabCap = 4096
	// The offsets in struct wiped of the statistics (LiveStatNames, in
	// order) and of the fork prefixes' table and owner block.
	LiveWipedStatsOff       = 16
	LiveWipedPrefixesOff    = LiveWipedStatsOff + 8*13
	LiveWipedPrefixOwnerOff = LiveWipedPrefixesOff + 16
	// A hash table's capacity and next older table (HTabEntriesOff,
	// HTabBytesOff are the others).
	HTabCapOff  = 0
	HTabNextOff = 16
)

// LiveStatNames are the runtime's statistics in struct wiped's order, by
// their STATS keys.
var LiveStatNames = []string{"bad_funcs", "bad_paths", "dropped_counts", "dropped_partials", "exit_mismatch",
	"shadow_overflow", "unwound_frames", StatDroppedRecords, "no_record", "stub_entries", "stub_exits",
	"stub_backedges", "stub_dark"}

// StatDroppedRecords is the statistic of records not made.
const StatDroppedRecords = "dropped_records"

var liveStructs = []layoutStruct{
	{"blpp_live", reflect.TypeOf(LiveHeader{}), "the header of a continuous-mode (live) profile file"},
	{"blpp_live_thread", reflect.TypeOf(LiveThread{}), "a thread block's part of a live file"},
	{"blpp_live_mod", reflect.TypeOf(LiveMod{}), "a module's entry in a live file"},
	{"blpp_pent", reflect.TypeOf(Pent{}), "a partials table entry"},
}

var liveDefines = []struct{ name, value string }{
	{"BLPP_LIVE_MAGIC", fmt.Sprintf("%#xull", uint64(LiveMagic))},
	{"BLPP_LIVE_VERSION", fmt.Sprint(LiveVersion)},
	{"BLPP_LIVE_HEADER_SIZE", fmt.Sprint(LiveHeaderSize)},
	{"BLPP_LIVE_PTAB_CAP", fmt.Sprint(LivePtabCap)},
	{"BLPP_LIVE_NSTATS", fmt.Sprint(len(LiveStatNames))},
	{"BLPP_LIVE_WIPED_STATS_OFF", fmt.Sprint(LiveWipedStatsOff)},
	{"BLPP_LIVE_WIPED_PREFIXES_OFF", fmt.Sprint(LiveWipedPrefixesOff)},
	{"BLPP_LIVE_WIPED_PREFIX_OWNER_OFF", fmt.Sprint(LiveWipedPrefixOwnerOff)},
	{"BLPP_HTAB_CAP_OFF", fmt.Sprint(HTabCapOff)},
	{"BLPP_HTAB_NEXT_OFF", fmt.Sprint(HTabNextOff)},
}
