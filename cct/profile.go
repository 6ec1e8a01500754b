package cct

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// A Metric is one column of every path entry. Metric 0 is always "freq",
// the number of times the path ran; the others are hardware-counter sums.
type Metric struct {
	Name string
	Kind MetricKind
}

// A Path is one Ball-Larus path of a record's procedure, in that record's
// calling context [Ball-Larus 96; Ammons-Ball-Larus 97 §4].
type Path struct {
	ID    uint64 // path number in [0, NumPaths) of the function
	Count uint64 // times it ran: the value of the "freq" metric
	// Metrics holds the sums of Profile.Metrics[1:] over the runs of
	// the path, exclusive of callees. nil when "freq" is the only metric.
	Metrics []uint64
	// Latency is the distribution of the path's per-execution values of
	// Profile.LatencyMetric (decision 93); nil when not recorded.
	Latency *Latency
}

// A Record is a node of a thread's calling context tree: one procedure
// reached through one chain of call sites. In a flow-only profile every
// record is a root.
type Record struct {
	Func   uint32 // index into the binary's function table
	Parent int    // index of the caller's record in Thread.Records; -1 for a root
	// CallSite is the call site in the parent's function through which
	// the record was entered: its index in the function's call-site list
	// (the binary's metadata) plus one. 0 for a root, and for a record
	// entered with no known call site under its parent (a signal handler,
	// a callback at the very start of its caller).
	CallSite uint32
	Calls    uint64 // activations of this record
	Paths    []Path // sorted by ID, IDs unique, counts ≥ 1
}

// BlockUnknown is the block of a partial path whose stopping block the
// runtime could not tell (the newest activation at a fatal signal or a
// dump); runtime.BlockUnknown has the same value.
const BlockUnknown = 0xffffffff

// A Partial counts activations that stopped without reaching a path end:
// exit() from inside, longjmp, an exception, a fatal signal, or a dump
// that caught them live [DESIGN 6]. Block and Reg identify the executed
// prefix of the path.
type Partial struct {
	Record int    // index in Thread.Records; -1 when the activation had no record
	Func   uint32 // function index; equals Records[Record].Func when Record ≥ 0
	Block  uint32 // block where the activation stopped
	Reg    int64  // the path register there
	Count  uint64 // activations that stopped so, ≥ 1
}

// A FoldedCall counts calls that did not make a record of their own:
// recursion folded onto an ancestor record (PP's bounded calling context
// tree). From is the calling record, To the record the callee's
// activations were counted in (From itself or one of its ancestors).
// Calls along a tree edge (parent to child at the child's call site) are
// the child's Calls minus the folded calls into it.
type FoldedCall struct {
	From     int    // index in Thread.Records
	CallSite uint32 // as Record.CallSite, in From's function
	To       int    // index in Thread.Records
	Count    uint64 // ≥ 1
}

// A Thread is the calling context tree of one thread block of the runtime.
// Linux reuses thread ids, so two Threads of a profile may share a TID.
type Thread struct {
	TID      uint64
	Records  []Record // parents before children
	Partials []Partial
	Folded   []FoldedCall
	// Prefixes are, in a fork child, the activations that were live at
	// the fork: the child finishes paths they began in the parent, whose
	// profile counts the blocks before the fork. Block and Reg say where
	// each stood (the fork's call, or the call its callee made), as a
	// partial's do; readers subtract the blocks of those path prefixes,
	// so that each process's block counts hold its own work only.
	Prefixes []Partial
	// Samples are the thread's samples (the SAMPLES section, decision
	// 92), sorted by (record, object, offset, register), each key once.
	Samples []Sample
}

// A Module is one instrumented object of the process (a MODULES entry,
// decision 81): the executable (tag 0) or a shared object. Records name
// functions by global id, Tag<<FidBits | the function's index in the
// module's metadata.
type Module struct {
	Tag   uint32
	Flags ModuleFlags
	// Bias is the load bias: run-time address minus link-time address.
	Bias uint64
	// Path is the file the process loaded (for blpp run, the
	// instrumented copy in the cache).
	Path string
	// BuildID is the GNU build-id of the module's instrumented file.
	BuildID []byte
}

// Name is the module's file name without directories (libz.so.1), or
// "tag N" when the path is empty.
func (m *Module) Name() string {
	if m.Path == "" {
		return fmt.Sprintf("tag %d", m.Tag)
	}
	if i := strings.LastIndexByte(m.Path, '/'); i >= 0 && i+1 < len(m.Path) {
		return m.Path[i+1:]
	}
	return m.Path
}

// A Profile is the validated model of a profile file. Parse returns only
// profiles that satisfy CheckValid, and Write writes only such profiles.
// Empty slices and maps are nil in what Parse returns.
type Profile struct {
	Version uint32 // Version (the only one read and written)
	Flags   Flags
	BuildID []byte // GNU build-id of the instrumented executable (tag 0), empty when none
	// Modules lists the instrumented objects by increasing tag (the
	// MODULES section). nil in a profile written without one: an
	// executable-only profile, whose every function has tag 0.
	Modules []Module
	PID     uint64
	TimeNS  uint64 // CLOCK_REALTIME when written, in nanoseconds
	Metrics []Metric
	// LatencyMetric is the index in Metrics of the metric whose
	// per-execution values the paths' Latency distributions count
	// (decision 93; the first after freq when the runtime writes them),
	// 0 when no path has one.
	LatencyMetric int
	Threads       []Thread
	Stats         map[string]uint64 // runtime facts (Stat* keys and others)
	// Sampling says what the program sampled (the SAMPLES section,
	// decision 92); nil when it did not, and then no thread has samples.
	Sampling *Sampling
}

// Sentinels for errors.Is. Errors from Parse are *FormatError; errors
// from CheckValid and CheckAgainst are *ModelError.
var (
	ErrBadMagic  = errors.New("not a blpp profile")
	ErrVersion   = errors.New("unsupported profile version")
	ErrChecksum  = errors.New("checksum mismatch")
	ErrTruncated = errors.New("truncated profile")
	ErrCorrupt   = errors.New("corrupt profile")
	ErrInvalid   = errors.New("invalid profile")
	ErrMismatch  = errors.New("profile does not match the binary")
)

// A ModelError is a rule of the model broken by a Profile in memory. The
// index fields locate it; -1 means not applicable.
type ModelError struct {
	Thread  int // index in Profile.Threads
	Record  int // index in Thread.Records
	Path    int // index in Record.Paths
	Partial int // index in Thread.Partials
	Msg     string
	Err     error // ErrInvalid (CheckValid) or ErrMismatch (CheckAgainst)
}

func (e *ModelError) Error() string {
	return "cct: " + e.where() + e.Msg
}

func (e *ModelError) where() string {
	var b strings.Builder
	sep := func(format string, a ...any) {
		fmt.Fprintf(&b, format, a...)
		b.WriteByte(' ')
	}
	if e.Thread >= 0 {
		sep("thread %d", e.Thread)
	}
	if e.Record >= 0 {
		sep("record %d", e.Record)
	}
	if e.Path >= 0 {
		sep("path %d", e.Path)
	}
	if e.Partial >= 0 {
		sep("partial %d", e.Partial)
	}
	if b.Len() == 0 {
		return ""
	}
	return strings.TrimSuffix(b.String(), " ") + ": "
}

func (e *ModelError) Unwrap() error { return e.Err }

// CheckValid reports the first rule of the format that p breaks
// (docs/profile-format.md, "Rules"), as a *ModelError wrapping ErrInvalid.
// Beyond the file's structure it requires that the total of every metric,
// of Calls and of partial counts over the whole profile fits in 64 bits:
// no single run can count more, and it lets FoldThreads and Flat add
// without overflow checks.
func (p *Profile) CheckValid() error {
	bad := func(thread, rec, path, part int, msg string) error {
		return &ModelError{Thread: thread, Record: rec, Path: path, Partial: part, Msg: msg, Err: ErrInvalid}
	}
	v, msg := newValidator(p)
	if msg != "" {
		return bad(-1, -1, -1, -1, msg)
	}
	for key := range p.Stats {
		if msg := checkName("stats key", key); msg != "" {
			return bad(-1, -1, -1, -1, msg)
		}
	}
	for ti := range p.Threads {
		t := &p.Threads[ti]
		if ri, msg := secondSibling(t.Records); msg != "" {
			return bad(ti, ri, -1, -1, msg)
		}
		for ri := range t.Records {
			if msg := v.record(t.Records, ri); msg != "" {
				return bad(ti, ri, -1, -1, msg)
			}
			r := &t.Records[ri]
			for pi := range r.Paths {
				if msg := v.path(r, pi); msg != "" {
					return bad(ti, ri, pi, -1, msg)
				}
				if msg := v.latency(&r.Paths[pi]); msg != "" {
					return bad(ti, ri, pi, -1, msg)
				}
			}
		}
		for ki := range t.Partials {
			if msg := v.partial(t, ki); msg != "" {
				return bad(ti, -1, -1, ki, msg)
			}
		}
		for fi := range t.Folded {
			if msg := v.folded(t, fi); msg != "" {
				return bad(ti, -1, -1, -1, fmt.Sprintf("folded call %d: %s", fi, msg))
			}
		}
		for xi := range t.Prefixes {
			if msg := v.prefix(t, xi); msg != "" {
				return bad(ti, -1, -1, -1, fmt.Sprintf("fork prefix %d: %s", xi, msg))
			}
		}
		if len(t.Samples) > 0 && p.Sampling == nil {
			return bad(ti, -1, -1, -1, "samples without a sampler (Profile.Sampling)")
		}
		for si := range t.Samples {
			if msg := v.sample(t, si); msg != "" {
				return bad(ti, -1, -1, -1, fmt.Sprintf("sample %d: %s", si, msg))
			}
		}
	}
	if msg := v.finishLatency(); msg != "" {
		return bad(-1, -1, -1, -1, msg)
	}
	return nil
}

// validator holds the rules of the model. Parse runs it while decoding,
// where it knows file offsets, and CheckValid runs it over a model, so the
// rules are written once. Each check returns "" or what is wrong.
type validator struct {
	nm       int          // metric values per path: len(Metrics)-1
	kinds    []MetricKind // kinds of Metrics[1:]
	names    []string     // names of Metrics[1:]
	flowOnly bool
	// Totals over the whole profile: path counts, then each metric, then
	// calls, then partial counts.
	total []uint64
	// tags holds the module tags functions may have, bit t%64 of word
	// t/64 for tag t: the MODULES section's, or 0 alone in an
	// executable-only profile. A set of bits, not a map: fn looks up
	// every record's tag.
	tags      [(MaxTag + 1) / 64]uint64
	noModules bool // no MODULES section: tag 0 alone
	// latencyMetric is the profile's LatencyMetric (set by the first
	// LATENCY section while parsing); hasLatency says a path had a
	// distribution; latencyTotal is the index in total of the bucket
	// counts.
	latencyMetric int
	hasLatency    bool
	latencyTotal  int
	// nobjects is the number of Sampling.Objects; samples the total of
	// sample counts so far.
	nobjects int
	samples  uint64
}

func (p *Profile) samplingObjects() int {
	if p.Sampling == nil {
		return 0
	}
	return len(p.Sampling.Objects)
}

func newValidator(p *Profile) (*validator, string) {
	if p.Version < MinVersion || p.Version > Version {
		return nil, fmt.Sprintf("version %d, want %d", p.Version, Version)
	}
	if msg := checkHeader(p.Flags, p.Metrics); msg != "" {
		return nil, msg
	}
	if p.Sampling != nil {
		if msg := checkSampling(p.Sampling); msg != "" {
			return nil, msg
		}
	}
	v := &validator{
		nobjects: p.samplingObjects(),
		nm:       len(p.Metrics) - 1,
		flowOnly: p.Flags&FlagFlowOnly != 0,
		total:    make([]uint64, len(p.Metrics)+4),

		latencyMetric: p.LatencyMetric,
		latencyTotal:  len(p.Metrics) + 3,
	}
	if msg := checkLatencyMetric(p.LatencyMetric, p.Metrics); msg != "" {
		return nil, msg
	}
	for _, m := range p.Metrics[1:] {
		v.kinds = append(v.kinds, m.Kind)
		v.names = append(v.names, m.Name)
	}
	if msg := v.setModules(p.Modules, p.BuildID); msg != "" {
		return nil, msg
	}
	return v, ""
}

// setModules checks the module table against the header and notes the
// tags it allows: tags increase (so each is listed once), fit a function
// id, carry only defined flags, the executable flag on tag 0 only, paths
// have no NUL; the header's build-id is the tag-0 module's (empty without
// one).
func (v *validator) setModules(ms []Module, headerID []byte) string {
	if ms == nil {
		v.tags[0], v.noModules = 1, true
		return ""
	}
	for i := range ms {
		m := &ms[i]
		if msg := checkModule(ms, i); msg != "" {
			return fmt.Sprintf("module %d (tag %d): %s", i, m.Tag, msg)
		}
		v.tags[m.Tag/64] |= 1 << (m.Tag % 64) // checkModule: Tag ≤ MaxTag
	}
	if len(ms) == 0 {
		return "an empty module list (a profile without modules has none)"
	}
	var exeID []byte
	if ms[0].Tag == 0 {
		exeID = ms[0].BuildID
	}
	if string(exeID) != string(headerID) {
		return fmt.Sprintf("the header's build-id %x is not the executable module's (%x)", headerID, exeID)
	}
	return ""
}

// checkModule checks ms[i] given ms[:i].
func checkModule(ms []Module, i int) string {
	m := &ms[i]
	switch {
	case m.Tag > MaxTag:
		return fmt.Sprintf("tag over %d", MaxTag)
	case i > 0 && m.Tag <= ms[i-1].Tag:
		return fmt.Sprintf("after tag %d (tags increase, each once)", ms[i-1].Tag)
	case m.Flags&^KnownModuleFlags != 0:
		return fmt.Sprintf("unknown flag bits %#x", uint64(m.Flags&^KnownModuleFlags))
	case m.Flags&ModuleFlagExecutable != 0 && m.Tag != 0:
		return "the executable flag on a tag other than 0"
	case strings.IndexByte(m.Path, 0) >= 0:
		return "a NUL byte in the path"
	}
	return ""
}

// fn checks a function id's module tag.
func (v *validator) fn(fid uint32) string {
	if t := FidTag(fid); v.tags[t/64]&(1<<(t%64)) == 0 {
		if v.noModules {
			return fmt.Sprintf("function %#x has module tag %d, but the profile lists no modules (executable only, tag 0)", fid, FidTag(fid))
		}
		return fmt.Sprintf("function %#x has module tag %d, which the module list does not hold", fid, FidTag(fid))
	}
	return ""
}

// checkHeader checks the flags and the metric list.
func checkHeader(f Flags, ms []Metric) string {
	if f&^KnownFlags != 0 {
		return fmt.Sprintf("unknown flag bits %#x", uint32(f&^KnownFlags))
	}
	if len(ms) == 0 {
		return "no metrics (\"freq\" must come first)"
	}
	if ms[0].Name != FreqMetric || ms[0].Kind != MetricReal {
		return fmt.Sprintf("metric 0 is %q (%v), want %q (real)", ms[0].Name, ms[0].Kind, FreqMetric)
	}
	seen := make(map[string]bool, len(ms))
	for i, m := range ms {
		if msg := checkName("metric name", m.Name); msg != "" {
			return fmt.Sprintf("metric %d: %s", i, msg)
		}
		if m.Kind >= numMetricKinds {
			return fmt.Sprintf("metric %d (%s): unknown kind %d", i, m.Name, uint8(m.Kind))
		}
		if seen[m.Name] {
			return fmt.Sprintf("metric %d: name %q repeated", i, m.Name)
		}
		seen[m.Name] = true
	}
	return ""
}

// checkName accepts non-empty printable ASCII without spaces, so that
// names print as they are in every report and JSON.
func checkName(what, s string) string {
	if s == "" {
		return what + " is empty"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return fmt.Sprintf("%s %q: byte %#02x is not printable ASCII", what, s, c)
		}
	}
	return ""
}

// add adds x to total i, reporting an overflow.
func (v *validator) add(i int, x uint64, what string) string {
	s, carry := bits.Add64(v.total[i], x, 0)
	if carry != 0 {
		return "the profile's total of " + what + " overflows 64 bits"
	}
	v.total[i] = s
	return ""
}

// record checks recs[i] given recs[:i], but not its paths.
func (v *validator) record(recs []Record, i int) string {
	r := &recs[i]
	switch {
	case r.Parent == -1:
		if r.CallSite != 0 {
			return fmt.Sprintf("root record with call site %d (want 0)", r.CallSite)
		}
	case r.Parent < 0 || r.Parent >= i:
		return fmt.Sprintf("parent %d is not an earlier record", r.Parent)
	case v.flowOnly:
		return "record with a parent in a flow-only profile"
	}
	if msg := v.fn(r.Func); msg != "" {
		return msg
	}
	return v.add(v.nm+1, r.Calls, "calls")
}

// path checks r.Paths[k] given r.Paths[:k].
func (v *validator) path(r *Record, k int) string {
	p := &r.Paths[k]
	if k > 0 && p.ID <= r.Paths[k-1].ID {
		return fmt.Sprintf("path id %d after %d (ids must increase)", p.ID, r.Paths[k-1].ID)
	}
	if p.Count == 0 {
		return fmt.Sprintf("path %d with count 0", p.ID)
	}
	if len(p.Metrics) != v.nm {
		return fmt.Sprintf("path %d has %d metric values, want %d", p.ID, len(p.Metrics), v.nm)
	}
	if msg := v.add(0, p.Count, FreqMetric); msg != "" {
		return msg
	}
	for j, x := range p.Metrics {
		if x != 0 && v.kinds[j] == MetricUnavailable {
			return fmt.Sprintf("path %d: value %d of unavailable metric %q", p.ID, x, v.names[j])
		}
		if msg := v.add(1+j, x, v.names[j]); msg != "" {
			return msg
		}
	}
	return ""
}

// folded checks t.Folded[k] against t.Records: To is From or one of its
// ancestors.
func (v *validator) folded(t *Thread, k int) string {
	c := &t.Folded[k]
	n := len(t.Records)
	if c.From < 0 || c.From >= n || c.To < 0 || c.To >= n {
		return fmt.Sprintf("records %d -> %d out of range (%d records)", c.From, c.To, n)
	}
	if v.flowOnly {
		return "folded call in a flow-only profile"
	}
	if c.Count == 0 {
		return "count 0"
	}
	for a := c.From; a != c.To; a = t.Records[a].Parent {
		if a < 0 {
			return fmt.Sprintf("record %d is not record %d or one of its ancestors", c.To, c.From)
		}
	}
	return v.add(v.nm+1, c.Count, "calls")
}

// partial checks t.Partials[k] against t.Records.
func (v *validator) partial(t *Thread, k int) string {
	if msg := v.partialLike(t, &t.Partials[k]); msg != "" {
		return msg
	}
	return v.add(v.nm+2, t.Partials[k].Count, "partial counts")
}

// prefix checks t.Prefixes[k] against t.Records, as a partial.
func (v *validator) prefix(t *Thread, k int) string {
	if msg := v.partialLike(t, &t.Prefixes[k]); msg != "" {
		return msg
	}
	return v.add(v.nm+3, t.Prefixes[k].Count, "fork prefix counts")
}

func (v *validator) partialLike(t *Thread, q *Partial) string {
	if q.Record != -1 {
		if q.Record < 0 || q.Record >= len(t.Records) {
			return fmt.Sprintf("record %d out of range (%d records)", q.Record, len(t.Records))
		}
		if f := t.Records[q.Record].Func; f != q.Func {
			return fmt.Sprintf("function %d, but record %d is of function %d", q.Func, q.Record, f)
		}
	}
	if msg := v.fn(q.Func); msg != "" {
		return msg
	}
	if q.Count == 0 {
		return "count 0"
	}
	return ""
}
