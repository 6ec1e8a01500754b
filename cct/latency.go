package cct

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sort"
)

// Latency distributions (decision 93): with metrics, the runtime keeps
// for every path of every record the distribution of one metric's value
// per execution (the time-stamp counter's ticks with --metrics tsc), not
// only its sum: a log2 histogram and the largest values seen. The file
// holds them in LATENCY sections, one after each THREAD section that has
// any; readers that do not know the tag skip them.

// A Bucket is one non-empty bucket of a latency histogram: Count
// executions had a value v with floor(log2(max(v, 1))) = Log2, that is,
// v in [2^Log2, 2^(Log2+1)), bucket 0 holding 0 and 1.
type Bucket struct {
	Log2  uint8 // < LatencyBuckets
	Count uint64
}

// A Latency is the distribution of one path's per-execution values of
// the profile's LatencyMetric in one record.
type Latency struct {
	// Buckets are the non-empty buckets by increasing Log2. Their
	// counts sum to the path's Count in a profile written at exit with
	// no other thread running; a profile written while the thread ran
	// (a dump, another thread's exit) may miss the executions in flight.
	Buckets []Bucket
	// Slowest holds the largest values seen, largest first: at most
	// MaxSlowest (the runtime keeps runtime.LatencySlowest per path and
	// record; Merge and FoldThreads keep as many as the longest list
	// they combine).
	Slowest []uint64
}

// Count is the number of executions the histogram counts. A valid
// profile's bucket counts fit 64 bits in total, so the sum does not
// overflow.
func (l *Latency) Count() uint64 {
	var n uint64
	for _, b := range l.Buckets {
		n += b.Count
	}
	return n
}

// Max is the largest value seen (0 when none is kept).
func (l *Latency) Max() uint64 {
	if len(l.Slowest) == 0 {
		return 0
	}
	return l.Slowest[0]
}

// BucketOf is the log2 bucket of value v: floor(log2(max(v, 1))), what
// the runtime's bsr of v|1 gives.
func BucketOf(v uint64) uint8 { return uint8(63 - bits.LeadingZeros64(v|1)) }

// Quantile returns the bucket that holds the execution of rank
// ceil(q × Count) (q in (0, 1]; the first execution for q ≤ 0), and
// false when the histogram is empty. The value lies in [2^b, 2^(b+1)):
// bucket resolution, a factor of two.
func (l *Latency) Quantile(q float64) (uint8, bool) {
	n := l.Count()
	if n == 0 {
		return 0, false
	}
	rank := uint64(1)
	if q > 0 {
		r := q * float64(n)
		rank = uint64(r)
		if float64(rank) < r {
			rank++
		}
		rank = min(max(rank, 1), n)
	}
	var seen uint64
	for _, b := range l.Buckets {
		seen += b.Count
		if seen >= rank {
			return b.Log2, true
		}
	}
	return l.Buckets[len(l.Buckets)-1].Log2, true
}

// MergeLatency returns the distribution of the executions of a and b
// together: bucket counts summed, the largest values of both kept, as
// many as the longer list holds. Either may be nil (no distribution);
// the result shares no memory with them.
func MergeLatency(a, b *Latency) *Latency {
	switch {
	case a == nil && b == nil:
		return nil
	case a == nil:
		return b.clone()
	case b == nil:
		return a.clone()
	}
	out := &Latency{Buckets: make([]Bucket, 0, len(a.Buckets)+len(b.Buckets))}
	i, j := 0, 0
	for i < len(a.Buckets) || j < len(b.Buckets) {
		switch {
		case j == len(b.Buckets) || i < len(a.Buckets) && a.Buckets[i].Log2 < b.Buckets[j].Log2:
			out.Buckets = append(out.Buckets, a.Buckets[i])
			i++
		case i == len(a.Buckets) || b.Buckets[j].Log2 < a.Buckets[i].Log2:
			out.Buckets = append(out.Buckets, b.Buckets[j])
			j++
		default:
			out.Buckets = append(out.Buckets, Bucket{a.Buckets[i].Log2, a.Buckets[i].Count + b.Buckets[j].Count})
			i++
			j++
		}
	}
	keep := max(len(a.Slowest), len(b.Slowest))
	all := append(append(make([]uint64, 0, len(a.Slowest)+len(b.Slowest)), a.Slowest...), b.Slowest...)
	sort.Slice(all, func(x, y int) bool { return all[x] > all[y] })
	if len(all) > keep {
		all = all[:keep]
	}
	if len(all) > 0 {
		out.Slowest = all
	}
	return out
}

func (l *Latency) clone() *Latency {
	c := &Latency{}
	if l.Buckets != nil {
		c.Buckets = append([]Bucket(nil), l.Buckets...)
	}
	if l.Slowest != nil {
		c.Slowest = append([]uint64(nil), l.Slowest...)
	}
	return c
}

// CheckLatencyCounts reports the first path of p with a latency
// distribution whose bucket counts do not sum to its count, or nil. In a
// profile written at exit by a program whose other threads had ended,
// they are equal (decision 93); tests assert it.
func (p *Profile) CheckLatencyCounts() error {
	for ti := range p.Threads {
		for ri := range p.Threads[ti].Records {
			r := &p.Threads[ti].Records[ri]
			for pi := range r.Paths {
				x := &r.Paths[pi]
				if x.Latency != nil && x.Latency.Count() != x.Count {
					return &ModelError{Thread: ti, Record: ri, Path: pi, Partial: -1, Err: ErrInvalid,
						Msg: fmt.Sprintf("path %d of function %#x: latency histogram counts %d executions, the path %d", x.ID, r.Func, x.Latency.Count(), x.Count)}
				}
			}
		}
	}
	return nil
}

// checkLatencyMetric checks Profile.LatencyMetric against the metrics.
func checkLatencyMetric(m int, ms []Metric) string {
	switch {
	case m == 0:
		return ""
	case m < 0 || m >= len(ms):
		return fmt.Sprintf("latency metric %d is not a metric after %q (there are %d metrics)", m, FreqMetric, len(ms))
	case ms[m].Kind == MetricUnavailable:
		return fmt.Sprintf("latency metric %d (%s) is unavailable", m, ms[m].Name)
	}
	return ""
}

// latency checks path p's distribution: buckets in order, under
// LatencyBuckets, non-empty, their counts fitting the profile's total;
// at most MaxSlowest values, largest first, none 0; and a profile
// latency metric to be of.
func (v *validator) latency(p *Path) string {
	l := p.Latency
	if l == nil {
		return ""
	}
	if v.latencyMetric == 0 {
		return fmt.Sprintf("path %d has a latency distribution, but the profile has no latency metric", p.ID)
	}
	v.hasLatency = true
	if len(l.Buckets) == 0 {
		return fmt.Sprintf("path %d: a latency distribution without buckets", p.ID)
	}
	for k, b := range l.Buckets {
		switch {
		case b.Log2 >= LatencyBuckets:
			return fmt.Sprintf("path %d: latency bucket %d (there are %d)", p.ID, b.Log2, LatencyBuckets)
		case k > 0 && b.Log2 <= l.Buckets[k-1].Log2:
			return fmt.Sprintf("path %d: latency bucket %d after %d (buckets increase)", p.ID, b.Log2, l.Buckets[k-1].Log2)
		case b.Count == 0:
			return fmt.Sprintf("path %d: latency bucket %d with count 0", p.ID, b.Log2)
		}
		if msg := v.add(v.latencyTotal, b.Count, "latency counts"); msg != "" {
			return msg
		}
	}
	if len(l.Slowest) > MaxSlowest {
		return fmt.Sprintf("path %d: %d slowest values (at most %d)", p.ID, len(l.Slowest), MaxSlowest)
	}
	for k, x := range l.Slowest {
		switch {
		case x == 0:
			return fmt.Sprintf("path %d: slowest value 0", p.ID)
		case k > 0 && x > l.Slowest[k-1]:
			return fmt.Sprintf("path %d: slowest value %d after %d (largest first)", p.ID, x, l.Slowest[k-1])
		}
	}
	return ""
}

// finishLatency checks, after every path, that a profile with a latency
// metric has a distribution somewhere: a file without LATENCY sections
// has none, so the model must not claim one.
func (v *validator) finishLatency() string {
	if v.latencyMetric != 0 && !v.hasLatency {
		return fmt.Sprintf("latency metric %d, but no path has a latency distribution", v.latencyMetric)
	}
	return ""
}

// minLatencyEntry is the smallest encoded entry: record, path, one
// bucket (index, count), no slowest value.
const minLatencyEntry = 5

// latencySection decodes a LATENCY payload into the paths of a thread
// read before it: uv thread, uv metric, uv n, then per entry uv record,
// uv path, uv nbuckets, (uv bucket, uv count)*, uv nslowest, uv value*.
// Entries increase by (record, path) and name paths the thread has.
func (d *decoder) latencySection(b *buf, seen map[int]bool) {
	off := b.Off
	ti := b.uv("latency thread")
	metric := b.uv("latency metric")
	if b.Err != nil {
		return
	}
	if ti >= uint64(len(d.p.Threads)) {
		b.FailAt(off, ErrCorrupt, "LATENCY section of thread %d, but only %d THREAD sections precede it", ti, len(d.p.Threads))
		return
	}
	if seen[int(ti)] {
		b.FailAt(off, ErrCorrupt, "a second LATENCY section of thread %d", ti)
		return
	}
	seen[int(ti)] = true
	if metric == 0 || metric >= uint64(len(d.p.Metrics)) {
		b.FailAt(off, ErrCorrupt, "latency metric %d is not a metric after %q (there are %d metrics)", metric, FreqMetric, len(d.p.Metrics))
		return
	}
	if d.p.LatencyMetric != 0 && uint64(d.p.LatencyMetric) != metric {
		b.FailAt(off, ErrCorrupt, "latency metric %d, but an earlier LATENCY section has %d", metric, d.p.LatencyMetric)
		return
	}
	if msg := checkLatencyMetric(int(metric), d.p.Metrics); msg != "" {
		b.FailAt(off, ErrCorrupt, "%s", msg)
		return
	}
	d.p.LatencyMetric = int(metric)
	d.v.latencyMetric = int(metric)
	t := &d.p.Threads[ti]
	n := b.count(minLatencyEntry, "latency entry count")
	if b.Err == nil && n == 0 {
		b.FailAt(off, ErrCorrupt, "an empty LATENCY section of thread %d (omitted when empty)", ti)
		return
	}
	prevRec, prevPath := -1, uint64(0)
	for k := range n {
		off := b.Off
		rec := b.uv("latency record")
		id := b.uv("latency path")
		if b.Err != nil {
			return
		}
		where := latencyWhere{ti, uint64(k), rec, id} // formatted only on an error
		if rec >= uint64(len(t.Records)) {
			b.FailAt(off, ErrCorrupt, "%s: record out of range (%d records)", where, len(t.Records))
			return
		}
		if int(rec) < prevRec || int(rec) == prevRec && id <= prevPath {
			b.FailAt(off, ErrCorrupt, "%s: after record %d path %d (entries increase)", where, prevRec, prevPath)
			return
		}
		prevRec, prevPath = int(rec), id
		r := &t.Records[rec]
		pi := sort.Search(len(r.Paths), func(i int) bool { return r.Paths[i].ID >= id })
		if pi == len(r.Paths) || r.Paths[pi].ID != id {
			b.FailAt(off, ErrCorrupt, "%s: the record has no such path", where)
			return
		}
		l := &Latency{}
		nb := b.count(2, "latency bucket count")
		if nb > LatencyBuckets {
			b.FailAt(off, ErrCorrupt, "%s: %d buckets (there are %d)", where, nb, LatencyBuckets)
			return
		}
		if nb > 0 {
			l.Buckets = make([]Bucket, 0, nb)
		}
		for range nb {
			x, c := b.uv("latency bucket"), b.uv("latency bucket count")
			if b.Err == nil && x >= LatencyBuckets {
				b.FailAt(off, ErrCorrupt, "%s: bucket %d (there are %d)", where, x, LatencyBuckets)
			}
			if b.Err != nil {
				return
			}
			l.Buckets = append(l.Buckets, Bucket{uint8(x), c})
		}
		ns := b.count(1, "slowest value count")
		if ns > MaxSlowest {
			b.FailAt(off, ErrCorrupt, "%s: %d slowest values (at most %d)", where, ns, MaxSlowest)
			return
		}
		if ns > 0 {
			l.Slowest = make([]uint64, 0, ns)
		}
		for range ns {
			l.Slowest = append(l.Slowest, b.uv("slowest value"))
		}
		if b.Err != nil {
			return
		}
		r.Paths[pi].Latency = l
		if msg := d.v.latency(&r.Paths[pi]); msg != "" {
			b.FailAt(off, ErrCorrupt, "thread %d record %d path %d: %s", ti, rec, pi, msg)
			return
		}
	}
}

// appendLatency encodes the LATENCY payload of thread t (index ti) of a
// profile whose latency metric is metric, or returns nil when no path of
// t has a distribution.
func appendLatency(e []byte, ti int, t *Thread, metric int) []byte {
	n := 0
	for i := range t.Records {
		for _, p := range t.Records[i].Paths {
			if p.Latency != nil {
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	e = binary.AppendUvarint(e, uint64(ti))
	e = binary.AppendUvarint(e, uint64(metric))
	e = binary.AppendUvarint(e, uint64(n))
	for i := range t.Records {
		for _, p := range t.Records[i].Paths {
			l := p.Latency
			if l == nil {
				continue
			}
			e = binary.AppendUvarint(e, uint64(i))
			e = binary.AppendUvarint(e, p.ID)
			e = binary.AppendUvarint(e, uint64(len(l.Buckets)))
			for _, b := range l.Buckets {
				e = binary.AppendUvarint(e, uint64(b.Log2))
				e = binary.AppendUvarint(e, b.Count)
			}
			e = binary.AppendUvarint(e, uint64(len(l.Slowest)))
			for _, x := range l.Slowest {
				e = binary.AppendUvarint(e, x)
			}
		}
	}
	return e
}

// latencyWhere names a latency entry in the reader's errors, as its
// String formats it: only when there is an error to report, not for
// every entry read.
type latencyWhere struct {
	thread, entry uint64
	rec, path     uint64
}

func (w latencyWhere) String() string {
	return fmt.Sprintf("thread %d latency entry %d (record %d, path %d)", w.thread, w.entry, w.rec, w.path)
}
