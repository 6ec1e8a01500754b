package cct

import (
	"errors"
	"fmt"
	"os"

	"github.com/blpp/blpp/internal/cursor"
)

// A FormatError is a profile file that breaks the format. Off is the file
// offset of the offending bytes; Err is one of the sentinels ErrBadMagic,
// ErrVersion, ErrChecksum, ErrTruncated or ErrCorrupt.
type FormatError struct {
	Off int
	Msg string
	Err error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%v at offset %d (%#x): %s", e.Err, e.Off, e.Off, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

// errInternal marks a panic caught at the Parse boundary: a bug in this
// package, never a property of the input. FuzzParse fails on it.
var errInternal = errors.New("internal error in the profile reader")

// ReadFile reads and parses the profile file name: a profile, or the
// live file of a process that died in continuous mode (ParseLive).
func ReadFile(name string) (*Profile, error) {
	p, _, err := ReadFileLive(name)
	return p, err
}

// ReadFileLive is ReadFile that also says, for a live file, what it
// holds beyond the profile (nil for a profile).
func ReadFileLive(name string) (*Profile, *Live, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, err
	}
	var p *Profile
	var l *Live
	if IsLive(data) {
		p, l, err = ParseLive(data)
	} else {
		p, err = Parse(data)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, l, nil
}

// Parse decodes and validates a profile file. On failure it returns a nil
// profile and a *FormatError. It never panics, and whatever the counts in
// the file claim, it allocates no more than a small multiple of len(data).
//
// The order of the checks gives each kind of damage its own sentinel:
// magic and version first (a file of another kind or version); then the
// framing of header and sections up to the trailer (a short file is
// ErrTruncated wherever it was cut); then the checksum (a changed byte is
// ErrChecksum); and only then the meaning of every field (ErrCorrupt).
func Parse(data []byte) (p *Profile, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, &FormatError{Msg: fmt.Sprint(r), Err: errInternal}
		}
	}()
	var d decoder
	p, ferr := d.parse(data)
	if ferr != nil {
		return nil, ferr
	}
	return p, nil
}

type section struct {
	tag     uint8
	off     int // of the tag
	payload buf
}

type decoder struct {
	p *Profile
	v *validator
	// pathPool and metricPool are what is left of the blocks that the
	// records' path lists and metric values are cut from (take).
	pathPool   []Path
	metricPool []uint64
}

// poolSize is the number of items of a block of decoder.pathPool or
// metricPool: one allocation for the paths of many records, not one for
// each (a whole-process profile has tens of thousands of records).
const poolSize = 4096

// take cuts n items off the front of *pool, first made a new block of
// max(n, min(limit, poolSize)) items if it holds fewer: limit bounds the
// block by what the input can still hold. The cut's capacity is n, so
// that an append to it does not run into the next one.
func take[T any](pool *[]T, n, limit int) []T {
	if len(*pool) < n {
		*pool = make([]T, max(n, min(limit, poolSize)))
	}
	s := (*pool)[:n:n]
	*pool = (*pool)[n:]
	return s
}

func (d *decoder) parse(data []byte) (*Profile, *FormatError) {
	if len(data) < len(Magic) {
		if string(data) == Magic[:len(data)] {
			return nil, &FormatError{Off: len(data), Msg: fmt.Sprintf("%d bytes, shorter than the magic", len(data)), Err: ErrTruncated}
		}
	}
	if len(data) < len(Magic) || string(data[:len(Magic)]) != Magic {
		return nil, &FormatError{Msg: fmt.Sprintf("magic %q, want %q", data[:min(len(data), len(Magic))], Magic), Err: ErrBadMagic}
	}
	b := newBuf(data[len(Magic):], len(Magic), ErrTruncated)
	p := &Profile{Version: b.U32("version")}
	if b.Err != nil {
		return nil, b.failure()
	}
	if msg := versionMsg(p.Version); msg != "" {
		return nil, &FormatError{Off: len(Magic), Msg: msg, Err: ErrVersion}
	}

	// Framing: the header's fields, then tag and length of every section.
	flagsOff := b.Off
	p.Flags = Flags(b.U32("flags"))
	if id := b.Bytes(b.uv("build-id length"), "build id"); len(id) > 0 {
		p.BuildID = append([]byte(nil), id...)
	}
	p.PID = b.uv("pid")
	p.TimeNS = b.uv("time")
	metricsOff := b.Off
	if n := b.count(2, "metric count"); n > 0 {
		p.Metrics = make([]Metric, 0, n)
		for range n {
			name := b.Bytes(b.uv("metric name length"), "metric name")
			kind := b.U8("metric kind")
			p.Metrics = append(p.Metrics, Metric{Name: string(name), Kind: MetricKind(kind)})
		}
	}
	var secs []section
	for b.Err == nil {
		off := b.Off
		if len(b.Data) == 0 {
			b.Fail(ErrTruncated, "the file ends without a trailer")
			break
		}
		tag := b.U8("section tag")
		if tag == TagTrailer {
			sumOff := b.Off
			sum := b.U64("checksum")
			if b.Err != nil {
				break
			}
			if want := fnv1a(FNVOffset64, data[:sumOff]); sum != want {
				return nil, &FormatError{Off: sumOff, Msg: fmt.Sprintf("the file says %#016x, its bytes give %#016x", sum, want), Err: ErrChecksum}
			}
			if len(b.Data) != 0 {
				b.Fail(ErrCorrupt, "%d bytes after the trailer", len(b.Data))
			}
			break
		}
		payload := b.sub(b.uv("section length"), "section")
		secs = append(secs, section{tag, off, payload})
	}
	if b.Err != nil {
		return nil, b.failure()
	}

	// Meaning: the file is whole and as written; check what it says.
	if f := p.Flags &^ KnownFlags; f != 0 {
		return nil, &FormatError{Off: flagsOff, Msg: fmt.Sprintf("unknown flag bits %#x", uint32(f)), Err: ErrCorrupt}
	}
	if msg := checkHeader(p.Flags, p.Metrics); msg != "" {
		return nil, &FormatError{Off: metricsOff, Msg: msg, Err: ErrCorrupt}
	}
	// The module table first, wherever it stands: the records' function
	// ids are checked against it.
	modsOff := -1
	for i := range secs {
		s := &secs[i]
		if s.tag != TagModules {
			continue
		}
		if modsOff >= 0 {
			return nil, &FormatError{Off: s.off, Msg: "a second MODULES section", Err: ErrCorrupt}
		}
		modsOff = s.off
		if ferr := d.modules(p, &s.payload); ferr != nil {
			return nil, ferr
		}
	}
	v, msg := newValidator(p)
	if msg != "" {
		off := metricsOff
		if modsOff >= 0 {
			off = modsOff
		}
		return nil, &FormatError{Off: off, Msg: msg, Err: ErrCorrupt}
	}
	d.p, d.v = p, v
	statsSeen := false
	latencySeen := map[int]bool{} // threads with a LATENCY section
	var samples *section          // decoded last: it names threads by number
	for i := range secs {
		s := &secs[i]
		name := "section"
		switch s.tag {
		case TagModules:
			continue // decoded above
		case TagThread:
			name = "THREAD section"
			d.thread(&s.payload)
		case TagStats:
			name = "STATS section"
			if statsSeen {
				return nil, &FormatError{Off: s.off, Msg: "a second STATS section", Err: ErrCorrupt}
			}
			statsSeen = true
			d.stats(&s.payload)
		case TagLatency:
			name = "LATENCY section"
			d.latencySection(&s.payload, latencySeen)
		case TagSamples:
			if samples != nil {
				return nil, &FormatError{Off: s.off, Msg: "a second SAMPLES section", Err: ErrCorrupt}
			}
			samples = s
			continue
		case TagReserved:
			return nil, &FormatError{Off: s.off, Msg: fmt.Sprintf("section tag %d is reserved (partials belong in THREAD sections)", s.tag), Err: ErrCorrupt}
		default:
			continue // a later version's section: skip it
		}
		if s.payload.Err != nil {
			return nil, s.payload.failure()
		}
		if n := len(s.payload.Data); n != 0 {
			return nil, &FormatError{Off: s.payload.Off, Msg: fmt.Sprintf("%d bytes left at the end of the %s", n, name), Err: ErrCorrupt}
		}
	}
	if samples != nil {
		d.samples(&samples.payload)
		if samples.payload.Err != nil {
			return nil, samples.payload.failure()
		}
		if n := len(samples.payload.Data); n != 0 {
			return nil, &FormatError{Off: samples.payload.Off, Msg: fmt.Sprintf("%d bytes left at the end of the SAMPLES section", n), Err: ErrCorrupt}
		}
	}
	return p, nil
}

// versionMsg says why version v is not read, or "".
func versionMsg(v uint32) string {
	switch {
	case v < MinVersion:
		return fmt.Sprintf("version %d, written by an older blpp: run the program again instrumented by this one (it reads version %d)", v, Version)
	case v > Version:
		return fmt.Sprintf("version %d, written by a newer blpp (this one reads version %d)", v, Version)
	}
	return ""
}

// modules decodes a MODULES payload into p.Modules: uv n, then per module
// uv tag, uv flags, uv bias, uv path_len, path, uv build_id_len, build_id.
func (d *decoder) modules(p *Profile, b *buf) *FormatError {
	n := b.count(minModuleSize, "module count")
	if b.Err == nil && n == 0 {
		b.Fail(ErrCorrupt, "an empty MODULES section (omitted when there are no modules)")
	}
	if n > 0 {
		p.Modules = make([]Module, 0, n)
	}
	for i := range n {
		if b.Err != nil {
			break
		}
		off := b.Off
		tag := b.uv("module tag")
		m := Module{Flags: ModuleFlags(b.uv("module flags")), Bias: b.uv("module load bias")}
		m.Path = string(b.Bytes(b.uv("module path length"), "module path"))
		if id := b.Bytes(b.uv("module build-id length"), "module build id"); len(id) > 0 {
			m.BuildID = append([]byte(nil), id...)
		}
		if b.Err != nil {
			break
		}
		if tag > MaxTag {
			b.FailAt(off, ErrCorrupt, "module %d: tag %d over %d", i, tag, MaxTag)
			break
		}
		m.Tag = uint32(tag)
		p.Modules = append(p.Modules, m)
		if msg := checkModule(p.Modules, i); msg != "" {
			b.FailAt(off, ErrCorrupt, "module %d (tag %d): %s", i, m.Tag, msg)
			break
		}
	}
	if b.Err != nil {
		return b.failure()
	}
	if n := len(b.Data); n != 0 {
		return &FormatError{Off: b.Off, Msg: fmt.Sprintf("%d bytes left at the end of the MODULES section", n), Err: ErrCorrupt}
	}
	return nil
}

// Minimum encoded sizes, used to bound counts before allocating.
const (
	minRecordSize  = 5 // func, parent, callsite, calls, npaths
	minPartialSize = 5 // record, func, block, reg, count
	minFoldedSize  = 4 // from, callsite, to, count
	minPathSize    = 2 // id, count; plus one byte per further metric
	minStatSize    = 2 // key length, value
	minModuleSize  = 5 // tag, flags, bias, path length, build-id length
)

// threadName names a thread in the decoder's errors: "thread 2 (tid
// 4711)". A value, not a string or a closure: the name is made only for
// an error.
type threadName struct {
	index int
	tid   uint64
}

func (n threadName) String() string { return fmt.Sprintf("thread %d (tid %d)", n.index, n.tid) }

// thread decodes a THREAD payload: uv tid, uv nrecords, record*,
// uv npartials, partial*, and, when any, uv nfolded, folded*.
func (d *decoder) thread(b *buf) {
	t := Thread{TID: b.uv("tid")}
	where := threadName{len(d.p.Threads), t.TID}
	v := d.v
	nrec := b.count(minRecordSize, "record count")
	recs := b.Data // where the records start, for recordOff
	recsOff := b.Off
	if nrec > 0 {
		// Filled in place: the records hold pointers (Paths), and a
		// Record copied in would be written with write barriers.
		t.Records = make([]Record, nrec)
	}
	for i := range nrec {
		off := b.Off
		r := &t.Records[i]
		r.Func = b.u32v("function")
		parent := b.uv("parent")
		r.CallSite = b.u32v("call site")
		r.Calls = b.uv("calls")
		if b.Err != nil {
			return
		}
		if parent > uint64(i) {
			b.FailAt(off, ErrCorrupt, "%s record %d: parent %d (index+1) is not an earlier record", where, i, parent)
			return
		}
		r.Parent = int(parent) - 1
		if msg := v.record(t.Records[:i+1], i); msg != "" {
			b.FailAt(off, ErrCorrupt, "%s record %d: %s", where, i, msg)
			return
		}
		d.paths(b, r, where, i)
		if b.Err != nil {
			return
		}
	}
	if i, msg := secondSibling(t.Records); msg != "" {
		b.FailAt(recordOff(recs, recsOff, d.v.nm, i), ErrCorrupt, "%s record %d: %s", where, i, msg)
		return
	}
	npart := b.count(minPartialSize, "partial count")
	if !partialList(b, &t, npart, &t.Partials, "partial", v.partial, where) {
		return
	}
	// Folded calls are optional: absent when there are none, unless
	// fork prefixes follow them.
	if b.Err == nil && len(b.Data) > 0 {
		nf := b.count(minFoldedSize, "folded call count")
		if nf == 0 && b.Err == nil && len(b.Data) == 0 {
			b.Fail(ErrCorrupt, "%s: empty folded-call list (omitted when empty)", where)
			return
		}
		if nf > 0 {
			t.Folded = make([]FoldedCall, 0, nf)
		}
		for k := range nf {
			off := b.Off
			from := b.uv("folded from")
			c := FoldedCall{CallSite: b.u32v("folded call site")}
			to := b.uv("folded to")
			c.Count = b.uv("folded count")
			if b.Err != nil {
				return
			}
			if from >= uint64(len(t.Records)) || to >= uint64(len(t.Records)) {
				b.FailAt(off, ErrCorrupt, "%s folded call %d: records %d -> %d out of range (%d records)", where, k, from, to, len(t.Records))
				return
			}
			c.From, c.To = int(from), int(to)
			t.Folded = append(t.Folded, c)
			if msg := v.folded(&t, k); msg != "" {
				b.FailAt(off, ErrCorrupt, "%s folded call %d: %s", where, k, msg)
				return
			}
		}
	}
	// Fork prefixes are optional: absent when there are none.
	if b.Err == nil && len(b.Data) > 0 {
		nx := b.count(minPartialSize, "fork prefix count")
		if nx == 0 && b.Err == nil {
			b.Fail(ErrCorrupt, "%s: empty fork-prefix list (omitted when empty)", where)
			return
		}
		if !partialList(b, &t, nx, &t.Prefixes, "fork prefix", v.prefix, where) {
			return
		}
	}
	if b.Err == nil {
		d.p.Threads = append(d.p.Threads, t)
	}
}

// recordOff returns the file offset of record i of a thread whose
// records, with nm metric values per path, start at data (file offset
// off). The records up to i have been decoded without failure: only the
// error of a repeated context needs an offset after the loop, so the
// loop does not keep every record's.
func recordOff(data []byte, off, nm, i int) int {
	s := buf{cursor.Cursor{Data: data, Off: off, Short: ErrCorrupt, Located: formatError}}
	for range i {
		for range 4 { // function, parent, call site, calls
			s.uv("")
		}
		for range int(s.uv("")) * (2 + nm) { // path id, count, metric values
			s.uv("")
		}
	}
	return s.Off
}

// partialList decodes n entries encoded as partials (Thread.Partials or
// Thread.Prefixes, *list) of thread t, checking each with check; false
// when b has failed.
func partialList(b *buf, t *Thread, n int, list *[]Partial, what string, check func(*Thread, int) string, where threadName) bool {
	if n > 0 {
		*list = make([]Partial, 0, n)
	}
	for k := range n {
		off := b.Off
		rec := b.uv(what + " record")
		q := Partial{Func: b.u32v(what + " function"), Block: b.u32v(what + " block"), Reg: b.sv(what + " register"), Count: b.uv(what + " count")}
		if b.Err != nil {
			return false
		}
		if rec > uint64(len(t.Records)) {
			b.FailAt(off, ErrCorrupt, "%s %s %d: record %d (index+1) out of range (%d records)", where, what, k, rec, len(t.Records))
			return false
		}
		q.Record = int(rec) - 1
		*list = append(*list, q)
		if msg := check(t, k); msg != "" {
			b.FailAt(off, ErrCorrupt, "%s %s %d: %s", where, what, k, msg)
			return false
		}
	}
	return b.Err == nil
}

// paths decodes the path list of record ri into r.
func (d *decoder) paths(b *buf, r *Record, where threadName, ri int) {
	nm := d.v.nm
	n := b.count(minPathSize+nm, "path count")
	if n == 0 {
		return
	}
	// n ≤ limit: count checked that the rest of the input holds them.
	limit := len(b.Data) / (minPathSize + nm)
	// The paths are filled in place, as the records are; the checks
	// below see only those before path k.
	r.Paths = take(&d.pathPool, n, limit)
	var vals []uint64
	if nm > 0 {
		// n ≤ limit ≤ len/(2+nm), so n*nm and limit*nm cannot overflow
		// and are bounded by the input.
		vals = take(&d.metricPool, n*nm, limit*nm)
	}
	for k := range r.Paths {
		off := b.Off
		p := &r.Paths[k]
		p.ID = b.uv("path id")
		p.Count = b.uv("count of path")
		if nm > 0 {
			p.Metrics = vals[k*nm : (k+1)*nm : (k+1)*nm]
			for j := range p.Metrics {
				p.Metrics[j] = b.uv("metric value")
			}
		}
		if b.Err != nil {
			return
		}
		if msg := d.v.path(r, k); msg != "" {
			b.FailAt(off, ErrCorrupt, "%s record %d path %d: %s", where, ri, k, msg)
			return
		}
	}
}

// stats decodes a STATS payload: uv n, (uv key_len, key, uv value)*.
func (d *decoder) stats(b *buf) {
	n := b.count(minStatSize, "stats count")
	if n == 0 {
		return
	}
	m := make(map[string]uint64, n)
	for range n {
		off := b.Off
		key := string(b.Bytes(b.uv("stats key length"), "stats key"))
		val := b.uv("stats value")
		if b.Err != nil {
			return
		}
		if msg := checkName("stats key", key); msg != "" {
			b.FailAt(off, ErrCorrupt, "%s", msg)
			return
		}
		if _, dup := m[key]; dup {
			b.FailAt(off, ErrCorrupt, "stats key %q repeated", key)
			return
		}
		m[key] = val
	}
	d.p.Stats = m
}

// fnv1a continues an FNV-1a 64 hash over data.
func fnv1a(h uint64, data []byte) uint64 {
	for _, c := range data {
		h ^= uint64(c)
		h *= FNVPrime64
	}
	return h
}
