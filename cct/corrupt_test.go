package cct

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

var sentinels = []error{ErrBadMagic, ErrVersion, ErrChecksum, ErrTruncated, ErrCorrupt}

// checkFormatError fails unless err is a *FormatError inside data with
// one of the sentinels, and returns it.
func checkFormatError(t *testing.T, err error, data []byte) *FormatError {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *FormatError", err, err)
	}
	if fe.Off < 0 || fe.Off > len(data) {
		t.Fatalf("%v: offset outside the %d bytes", err, len(data))
	}
	for _, s := range sentinels {
		if fe.Err == s {
			return fe
		}
	}
	t.Fatalf("%v: sentinel %v is not one of ours", err, fe.Err)
	return nil
}

// TestTruncate: every proper prefix of a file is refused as truncated.
func TestTruncate(t *testing.T) {
	files := [][]byte{readHex(t, "testdata/small.hex")}
	for seed := range uint64(20) {
		p := randProfile(rand.New(rand.NewPCG(seed, 2)))
		files = append(files, p.encode())
	}
	for fi, data := range files {
		for n := range len(data) {
			p, err := Parse(data[:n])
			if err == nil || p != nil {
				t.Fatalf("file %d cut at %d of %d: no error", fi, n, len(data))
			}
			fe := checkFormatError(t, err, data[:n])
			if !errors.Is(err, ErrTruncated) {
				t.Fatalf("file %d cut at %d of %d: %v, want ErrTruncated", fi, n, len(data), err)
			}
			_ = fe
		}
	}
}

// TestFlip: changing any byte of a file to any other value is refused,
// with ErrBadMagic in the magic, ErrVersion in the version and a located
// error of ours elsewhere; a changed byte that leaves the framing alone
// (flags, build id, names, the checksum itself) is ErrChecksum.
func TestFlip(t *testing.T) {
	orig := readHex(t, "testdata/small.hex")
	// Offsets in small.hex whose bytes are content, not framing.
	content := map[int]bool{}
	for _, r := range [][2]int{{12, 16}, {17, 21}, {30, 35}, {36, 40}, {47, 53}, {54, 58}, {68, 82}, {83, 85}, {141, 148}} {
		for i := r[0]; i < r[1]; i++ {
			content[i] = true
		}
	}
	counts := map[error]int{}
	data := make([]byte, len(orig))
	for off := range orig {
		for x := 1; x < 256; x++ {
			copy(data, orig)
			data[off] ^= byte(x)
			p, err := Parse(data)
			if err == nil || p != nil {
				t.Fatalf("byte %d ^ %#x: accepted", off, x)
			}
			fe := checkFormatError(t, err, data)
			counts[fe.Err]++
			var want error
			switch {
			case off < 8:
				want = ErrBadMagic
			case off < 12 && readable(data[8:12]):
				want = ErrChecksum // another version this blpp reads
			case off < 12:
				want = ErrVersion
			case content[off]:
				want = ErrChecksum
			}
			if want != nil && fe.Err != want {
				t.Fatalf("byte %d ^ %#x: %v, want %v", off, x, err, want)
			}
		}
	}
	t.Logf("outcomes: %v", counts)
}

// readable says whether the little-endian version v is one Parse reads.
func readable(v []byte) bool {
	n := uint32(v[0]) | uint32(v[1])<<8 | uint32(v[2])<<16 | uint32(v[3])<<24
	return n >= MinVersion && n <= Version
}

// TestFlipRandom: one changed byte in random profiles is always refused.
func TestFlipRandom(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 3))
		data := randProfile(rng).encode()
		off := rng.IntN(len(data))
		data[off] ^= byte(1 + rng.IntN(255))
		if _, err := Parse(data); err == nil {
			t.Fatalf("seed %d: byte %d changed, accepted", seed, off)
		} else {
			checkFormatError(t, err, data)
		}
	}
}

// modelCases break one rule of the model each. CheckValid must refuse the
// profile with ErrInvalid, and Parse must refuse its encoding with the
// same message (the rules are written once, in validator).
var modelCases = []struct {
	name   string
	break_ func(p *Profile)
	msg    string
	parse  error // sentinel from Parse when not ErrCorrupt; nil: do not parse
}{
	{"version", func(p *Profile) { p.Version = 2 }, "version 2", ErrVersion},
	{"module tag order", func(p *Profile) { p.Modules[1].Tag = 0 }, "module 1 (tag 0): after tag 0 (tags increase, each once)", ErrCorrupt},
	{"module tag too big", func(p *Profile) { p.Modules[1].Tag = MaxTag + 1 }, "over 4095", ErrCorrupt},
	{"module flags", func(p *Profile) { p.Modules[1].Flags = 8 }, "module 1 (tag 5): unknown flag bits 0x8", ErrCorrupt},
	{"library as executable", func(p *Profile) { p.Modules[1].Flags = ModuleFlagExecutable }, "the executable flag on a tag other than 0", ErrCorrupt},
	{"module path NUL", func(p *Profile) { p.Modules[1].Path = "a\x00b" }, "a NUL byte in the path", ErrCorrupt},
	{"header build-id", func(p *Profile) { p.BuildID = []byte{1} }, "the header's build-id 01 is not the executable module's (deadbeef)", ErrCorrupt},
	{"no executable module", func(p *Profile) { p.Modules = p.Modules[1:]; p.Threads = nil }, "the header's build-id deadbeef is not the executable module's ()", ErrCorrupt},
	{"unlisted module", func(p *Profile) { p.Threads[0].Records[1].Func = 6<<FidBits | 3 }, "function 0x600003 has module tag 6, which the module list does not hold", ErrCorrupt},
	{"partial of unlisted module", func(p *Profile) { p.Threads[0].Partials[0].Record = -1; p.Threads[0].Partials[0].Func = 7 << FidBits }, "function 0x700000 has module tag 7", ErrCorrupt},
	{"no modules, tag not 0", func(p *Profile) { p.Modules = nil; p.Threads[0].Records[1].Func = 5<<FidBits | 3 }, "function 0x500003 has module tag 5, but the profile lists no modules (executable only, tag 0)", ErrCorrupt},
	{"unknown flag", func(p *Profile) { p.Flags |= 0x10 }, "unknown flag bits 0x10", ErrCorrupt},
	{"no metrics", func(p *Profile) { p.Metrics = nil; p.Threads = nil }, "no metrics", ErrCorrupt},
	{"freq not first", func(p *Profile) { p.Metrics[0].Name = "cycles" }, `metric 0 is "cycles"`, ErrCorrupt},
	{"freq not real", func(p *Profile) { p.Metrics[0].Kind = MetricFallback }, `metric 0 is "freq" (fallback)`, ErrCorrupt},
	{"kind", func(p *Profile) { p.Metrics[1].Kind = 3 }, "unknown kind 3", ErrCorrupt},
	{"repeated metric", func(p *Profile) { p.Metrics[1].Name = "freq" }, `name "freq" repeated`, ErrCorrupt},
	{"empty metric", func(p *Profile) { p.Metrics[1].Name = "" }, "metric name is empty", ErrCorrupt},
	{"metric with space", func(p *Profile) { p.Metrics[1].Name = "a b" }, "not printable ASCII", ErrCorrupt},
	{"root call site", func(p *Profile) { p.Threads[0].Records[0].CallSite = 3 }, "root record with call site 3", ErrCorrupt},
	{"forward parent", func(p *Profile) { p.Threads[0].Records[1].Parent = 1 }, "is not an earlier record", ErrCorrupt},
	{"negative parent", func(p *Profile) { p.Threads[0].Records[1].Parent = -7 }, "is not an earlier record", ErrCorrupt},
	{"flow-only child", func(p *Profile) { p.Flags |= FlagFlowOnly }, "record with a parent in a flow-only profile", ErrCorrupt},
	{"sibling twice", func(p *Profile) {
		t := &p.Threads[0]
		t.Records = append(t.Records, Record{Func: 3, Parent: 0, CallSite: 1})
	}, "second record of function 3 at call site 1 under parent 0", ErrCorrupt},
	{"root twice", func(p *Profile) {
		t := &p.Threads[0]
		t.Records = append(t.Records, Record{Func: 0, Parent: -1})
	}, "second record of function 0", ErrCorrupt},
	{"path order", func(p *Profile) { p.Threads[0].Records[0].Paths[1].ID = 0 }, "path id 0 after 0", ErrCorrupt},
	{"path order 2", func(p *Profile) {
		ps := p.Threads[0].Records[0].Paths
		ps[0], ps[1] = ps[1], ps[0]
	}, "path id 0 after 2", ErrCorrupt},
	{"path count 0", func(p *Profile) { p.Threads[0].Records[0].Paths[1].Count = 0 }, "path 2 with count 0", ErrCorrupt},
	{"metric values", func(p *Profile) { p.Threads[0].Records[0].Paths[1].Metrics = nil }, "has 0 metric values, want 1", nil},
	{"unavailable value", func(p *Profile) { p.Metrics[1].Kind = MetricUnavailable }, `value 300 of unavailable metric "tsc"`, ErrCorrupt},
	{"freq total", func(p *Profile) {
		p.Threads[0].Records[0].Paths[1].Count = 1 << 63
		p.Threads[0].Records[1].Paths[0].Count = 1 << 63
	}, "total of freq overflows", ErrCorrupt},
	{"metric total", func(p *Profile) { p.Threads[0].Records[0].Paths[1].Metrics[0] = ^uint64(0) }, "total of tsc overflows", ErrCorrupt},
	{"calls total", func(p *Profile) { p.Threads[0].Records[1].Calls = ^uint64(0) }, "total of calls overflows", ErrCorrupt},
	{"partial total", func(p *Profile) {
		t := &p.Threads[0]
		t.Partials = append(t.Partials, Partial{Record: -1, Count: ^uint64(0)})
	}, "total of partial counts overflows", ErrCorrupt},
	{"partial record", func(p *Profile) { p.Threads[0].Partials[0].Record = 2 }, "out of range (2 records)", ErrCorrupt},
	{"partial record negative", func(p *Profile) { p.Threads[0].Partials[0].Record = -2 }, "out of range", ErrCorrupt},
	{"partial function", func(p *Profile) { p.Threads[0].Partials[0].Func = 3 }, "function 3, but record 0 is of function 0", ErrCorrupt},
	{"partial count", func(p *Profile) { p.Threads[0].Partials[0].Count = 0 }, "count 0", ErrCorrupt},
	{"stats key", func(p *Profile) { p.Stats[""] = 1 }, "stats key is empty", ErrCorrupt},
	{"stats key bytes", func(p *Profile) { p.Stats["é"] = 1 }, "not printable ASCII", ErrCorrupt},
}

func TestModelRules(t *testing.T) {
	if err := smallProfile().CheckValid(); err != nil {
		t.Fatal(err)
	}
	for _, c := range modelCases {
		t.Run(c.name, func(t *testing.T) {
			p := smallProfile()
			c.break_(p)
			err := p.CheckValid()
			var me *ModelError
			if !errors.As(err, &me) || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("CheckValid: %v, want ErrInvalid with %q", err, c.msg)
			}
			if _, err := p.MarshalBinary(); err == nil {
				t.Fatal("MarshalBinary accepted it")
			}
			if c.parse == nil {
				return
			}
			data := p.encode()
			q, err := Parse(data)
			if q != nil || !errors.Is(err, c.parse) {
				t.Fatalf("Parse: %v, want %v", err, c.parse)
			}
			checkFormatError(t, err, data)
			if c.parse == ErrCorrupt && !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Parse: %v, want %q", err, c.msg)
			}
		})
	}
}

// exeModule is a MODULES payload listing the executable of rawHeader.
var exeModule = rawFile{}.uv(1).uv(0).uv(uint64(ModuleFlagExecutable)).uv(0).str("/p").str("\x01\x02")

// TestModulesAnywhere: the reader takes the MODULES section wherever it
// stands (the writer puts it first), and a record of a listed library
// module is read with its global id.
func TestModulesAnywhere(t *testing.T) {
	lib := rawFile{}.uv(2).uv(0).uv(1).uv(0).str("/p").str("\x01\x02").uv(5).uv(2).uv(1 << 40).str("/lib/l.so").str("\x07")
	data := rawHeader().section(TagThread, rawFile{}.uv(1).uv(1).uv(5<<FidBits|3).uv(0).uv(0).uv(1).uv(0).uv(0)).section(TagModules, lib).trailer()
	p, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Modules) != 2 || p.Modules[1].Tag != 5 || p.Modules[1].Flags != ModuleFlagUnloaded || p.Modules[1].Bias != 1<<40 || p.Modules[1].Name() != "l.so" ||
		p.Threads[0].Records[0].Func != 5<<FidBits|3 || FidTag(p.Threads[0].Records[0].Func) != 5 || FidLocal(p.Threads[0].Records[0].Func) != 3 {
		t.Fatalf("parsed %+v", p)
	}
	// The writer moves the section right after the header.
	out, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if h := len(rawHeader()); out[h] != TagModules {
		t.Fatalf("tag %d after the header, want MODULES", out[h])
	}
}

// emptyThread is a THREAD payload with no records and no partials.
var emptyThread = rawFile{}.uv(1).uv(0).uv(0)

// rawCases are files the writer cannot make.
var rawCases = []struct {
	name string
	data []byte
	err  error
	msg  string
	off  int // expected offset, -1: any
}{
	{"empty", nil, ErrTruncated, "shorter than the magic", 0},
	{"half magic", []byte("BLPP"), ErrTruncated, "shorter than the magic", 4},
	{"other magic", []byte("BLPPPRF2\x01\x00\x00\x00"), ErrBadMagic, `magic "BLPPPRF2"`, 0},
	{"short other", []byte("\x7fELF"), ErrBadMagic, "magic", 0},
	{"version", rawFile(Magic).u32(7), ErrVersion, "version 7", 8},
	{"no trailer", rawHeader(), ErrTruncated, "without a trailer", len(rawHeader())},
	{"checksum", append(rawHeader().u8(TagTrailer), 1, 2, 3, 4, 5, 6, 7, 8), ErrChecksum, "the file says 0x0807060504030201", len(rawHeader()) + 1},
	{"after trailer", append(rawHeader().trailer(), 0), ErrCorrupt, "1 bytes after the trailer", len(rawHeader()) + 9},
	{"eleven-byte varint", rawFile(Magic).u32(Version).u32(0).uv(0).raw(0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00).trailer(), ErrCorrupt, "pid: varint does not fit in 64 bits", 17},
	{"varint 2^64", rawFile(Magic).u32(Version).u32(0).uv(0).raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02).trailer(), ErrCorrupt, "does not fit in 64 bits", 17},
	{"huge build id", rawFile(Magic).u32(Version).u32(0).uv(1 << 62).trailer(), ErrTruncated, "build id: need 4611686018427387904 bytes", -1},
	{"huge metric count", rawFile(Magic).u32(Version).u32(0).uv(0).uv(0).uv(0).uv(1 << 60).trailer(), ErrTruncated, "metric count 1152921504606846976", 19},
	{"section past end", rawHeader().u8(TagThread).uv(1000).raw(1, 2, 3).trailer(), ErrTruncated, "section: need 1000 bytes", -1},
	{"reserved tag", rawHeader().section(TagReserved, rawFile{}.uv(0)).trailer(), ErrCorrupt, "section tag 2 is reserved", len(rawHeader())},
	{"two stats", rawHeader().section(TagStats, rawFile{}.uv(0)).section(TagStats, rawFile{}.uv(0)).trailer(), ErrCorrupt, "a second STATS section", len(rawHeader()) + 3},
	{"stats key twice", rawHeader().section(TagStats, rawFile{}.uv(2).str("a").uv(1).str("a").uv(2)).trailer(), ErrCorrupt, `stats key "a" repeated`, len(rawHeader()) + 6},
	{"stats count", rawHeader().section(TagStats, rawFile{}.uv(1<<40).str("a").uv(1)).trailer(), ErrCorrupt, "stats count 1099511627776", -1},
	{"stats short", rawHeader().section(TagStats, rawFile{}.uv(1).str("abc")).trailer(), ErrCorrupt, "stats value: varint runs past the end", -1},
	{"thread leftover", rawHeader().section(TagThread, emptyThread.raw(0)).trailer(), ErrCorrupt, "empty folded-call list", -1},
	{"folded to a child", rawHeader().section(TagThread, rawFile{}.uv(1).uv(2).uv(0).uv(0).uv(0).uv(1).uv(0).uv(1).uv(1).uv(1).uv(1).uv(0).
		uv(0).uv(1).uv(0).uv(1).uv(1).uv(1)).trailer(), ErrCorrupt, "record 1 is not record 0 or one of its ancestors", -1},
	{"stats leftover", rawHeader().section(TagStats, rawFile{}.uv(0).raw(9, 9)).trailer(), ErrCorrupt, "2 bytes left at the end of the STATS section", -1},
	{"record count", rawHeader().section(TagThread, rawFile{}.uv(1).uv(1<<60).uv(0)).trailer(), ErrCorrupt, "record count 1152921504606846976", -1},
	{"path count", rawHeader().section(TagThread, rawFile{}.uv(1).uv(1).uv(0).uv(0).uv(0).uv(1).uv(1<<60).uv(0)).trailer(), ErrCorrupt, "path count 1152921504606846976", -1},
	{"partial count", rawHeader().section(TagThread, rawFile{}.uv(1).uv(0).uv(1<<60).uv(0).uv(0).uv(0).uv(0).uv(0)).trailer(), ErrCorrupt, "partial count 1152921504606846976", -1},
	{"function 2^32", rawHeader().section(TagThread, rawFile{}.uv(1).uv(1).uv(1<<32).uv(0).uv(0).uv(1).uv(0).uv(0)).trailer(), ErrCorrupt, "function 4294967296 does not fit in 32 bits", -1},
	{"huge parent", rawHeader().section(TagThread, rawFile{}.uv(1).uv(1).uv(0).uv(1<<63).uv(0).uv(1).uv(0).uv(0)).trailer(), ErrCorrupt, "parent 9223372036854775808 (index+1) is not an earlier record", -1},
	{"huge partial record", rawHeader().section(TagThread, rawFile{}.uv(1).uv(0).uv(1).uv(1<<63).uv(0).uv(0).sv(0).uv(1)).trailer(), ErrCorrupt, "record 9223372036854775808 (index+1) out of range (0 records)", -1},
	{"empty modules", rawHeader().section(TagModules, rawFile{}.uv(0)).trailer(), ErrCorrupt, "an empty MODULES section", -1},
	{"two modules sections", rawHeader().section(TagModules, exeModule).section(TagModules, exeModule).trailer(), ErrCorrupt, "a second MODULES section", -1},
	{"module count", rawHeader().section(TagModules, rawFile{}.uv(1<<40).uv(0)).trailer(), ErrCorrupt, "module count 1099511627776", -1},
	{"module short", rawHeader().section(TagModules, rawFile{}.uv(1).uv(0).uv(1).uv(0).str("/p")).trailer(), ErrCorrupt, "module build-id length: varint runs past the end", -1},
	{"module path past end", rawHeader().section(TagModules, rawFile{}.uv(1).uv(0).uv(1).uv(0).uv(99).str("/p")).trailer(), ErrCorrupt, "module path", -1},
	{"modules leftover", rawHeader().section(TagModules, exeModule.raw(7)).trailer(), ErrCorrupt, "1 bytes left at the end of the MODULES section", -1},
	{"module tag 2^20", rawHeader().section(TagModules, rawFile{}.uv(1).uv(1<<20).uv(0).uv(0).str("/l").str("")).trailer(), ErrCorrupt, "tag 1048576 over 4095", -1},
	{"module flags", rawHeader().section(TagModules, rawFile{}.uv(1).uv(0).uv(4).uv(0).str("/p").str("\x01\x02")).trailer(), ErrCorrupt, "unknown flag bits 0x4", -1},
	{"module header build-id", rawHeader().section(TagModules, rawFile{}.uv(1).uv(0).uv(1).uv(0).str("/p").str("\x09")).trailer(), ErrCorrupt, "the header's build-id 0102 is not the executable module's (09)", -1},
	{"record of an unlisted module", rawHeader().section(TagModules, exeModule).section(TagThread, rawFile{}.uv(1).uv(1).uv(5<<FidBits).uv(0).uv(0).uv(1).uv(0).uv(0)).trailer(), ErrCorrupt, "module tag 5, which the module list does not hold", -1},
	{"library record without modules", rawHeader().section(TagThread, rawFile{}.uv(1).uv(1).uv(5<<FidBits).uv(0).uv(0).uv(1).uv(0).uv(0)).trailer(), ErrCorrupt, "but the profile lists no modules", -1},
	{"short record", rawHeader().section(TagThread, rawFile{}.uv(1).uv(1).uv(0).uv(0).uv(0).uv(1).uv(0)).trailer(), ErrCorrupt, "partial count: varint runs past the end", -1},
}

func TestRawCorruptions(t *testing.T) {
	for _, c := range rawCases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Parse(c.data)
			if p != nil || !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("Parse: %v, want %v with %q", err, c.err, c.msg)
			}
			fe := checkFormatError(t, err, c.data)
			if c.off >= 0 && fe.Off != c.off {
				t.Fatalf("%v: offset %d, want %d", err, fe.Off, c.off)
			}
		})
	}
}

// TestSkipsUnknownSections: a section of a later version is skipped.
func TestSkipsUnknownSections(t *testing.T) {
	data := rawHeader().section(9, rawFile{}.raw(1, 2, 3)).section(TagThread, emptyThread).section(0, nil).trailer()
	p, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Threads) != 1 || p.Threads[0].TID != 1 || p.Threads[0].Records != nil {
		t.Fatalf("threads %+v", p.Threads)
	}
	if string(p.BuildID) != "\x01\x02" || p.PID != 7 || p.TimeNS != 8 || len(p.Metrics) != 2 {
		t.Fatalf("header %+v", p)
	}
}

// TestRepeatedTID: Linux reuses thread ids; two threads may share one.
func TestRepeatedTID(t *testing.T) {
	data := rawHeader().section(TagThread, emptyThread).section(TagThread, emptyThread).trailer()
	p, err := Parse(data)
	if err != nil || len(p.Threads) != 2 {
		t.Fatalf("%v, %+v", err, p)
	}
}

// TestHugeCountsDoNotAllocate: counts are bounded by the bytes left
// before anything is allocated for them.
func TestHugeCountsDoNotAllocate(t *testing.T) {
	for _, c := range rawCases {
		if !strings.Contains(c.name, "count") && !strings.HasPrefix(c.name, "huge") {
			continue
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 10 {
			Parse(c.data)
		}
		runtime.ReadMemStats(&after)
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<16 {
			t.Errorf("%s: 10 parses allocated %d bytes", c.name, d)
		}
	}
}

// TestVersions: files of versions 1 and 2 (written before module
// tables, decision 81) are refused with ErrVersion and a message that
// says what to do; so is a version past Version.
func TestVersions(t *testing.T) {
	withVersion := func(v byte) []byte {
		b := readHex(t, "testdata/small.hex")
		b[8] = v
		h := fnv.New64a()
		h.Write(b[:len(b)-8])
		binary.LittleEndian.PutUint64(b[len(b)-8:], h.Sum64())
		return b
	}
	for _, v := range []byte{1, 2} {
		p, err := Parse(withVersion(v))
		if p != nil || !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "written by an older blpp: run the program again instrumented by this one") {
			t.Fatalf("version %d: %v, want ErrVersion saying to run again", v, err)
		}
	}
	if _, err := Parse(withVersion(byte(Version + 1))); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "newer blpp") {
		t.Fatalf("version %d: %v, want ErrVersion", Version+1, err)
	}
}
