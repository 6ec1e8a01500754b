package report

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// DebugInfo is the one reader of the DWARF of the original binary, which
// stays in the instrumented copy [DESIGN 12], for every view and export:
// the line table as address ranges (with discriminators), and the tree of
// subprograms and inlined subroutines with their address ranges, names and
// declaration lines [DWARF5 3.3, 3.3.8, 6.2]. A nil *DebugInfo knows no
// lines: its methods return nothing.
type DebugInfo struct {
	rows   []LineRange // sorted by Addr, disjoint
	scopes []*Scope    // concrete subprograms; see at
	// index: (low, high, scope) of every range of every concrete
	// subprogram, sorted by low.
	index []scopeRange
	// units, when set, holds the compile units instead: their tables are
	// read one unit at a time, when a lookup first needs them.
	units *unitIndex

	// A lazy DebugInfo (LazyDebugInfo) reads its DWARF when first asked:
	// a whole-process profile has a module for every library, and
	// reading all their DWARF (libc's separate debug file alone takes
	// a third of a second) is wasted on a report that shows a few of
	// them.
	lazy func() *DebugInfo
	once sync.Once
	real *DebugInfo
}

// LazyDebugInfo returns a DebugInfo that calls load (NewDebugInfo of some
// file) the first time it is asked anything.
func LazyDebugInfo(load func() *DebugInfo) *DebugInfo { return &DebugInfo{lazy: load} }

// get is di itself, or for a lazy one what its loader read (nil: no DWARF).
func (di *DebugInfo) get() *DebugInfo {
	if di == nil || di.lazy == nil {
		return di
	}
	di.once.Do(func() { di.real = di.lazy() })
	return di.real
}

// HasLines reports whether the DWARF has a line table.
func (di *DebugInfo) HasLines() bool {
	d := di.get()
	if d != nil && d.units != nil {
		return d.units.hasLines()
	}
	return d != nil && len(d.rows) > 0
}

// A LineRange is one row of the line table, from its address to the next
// row's [DWARF5 6.2.2].
type LineRange struct {
	Addr, End     uint64
	File          string // as the line table names it (a path)
	Line          int
	Discriminator int // the base discriminator (LLVM's encoding decoded)
	// Dup is LLVM's duplication factor: the code is one of Dup copies of
	// the source (loop unrolling, vectorization), so it ran 1/Dup of the
	// times the source did; 0 where the encoding has none.
	Dup int
}

// A Scope is a concrete subprogram or an inlined subroutine.
type Scope struct {
	Name     string // DW_AT_name
	Linkage  string // DW_AT_linkage_name, "" when absent
	DeclFile string
	DeclLine int
	Ranges   [][2]uint64
	// For an inlined subroutine: where the caller called it.
	CallFile          string
	CallLine          int
	CallDiscriminator int
	Parent            *Scope // nil for a subprogram
	Inlined           []*Scope
}

// SymbolName is the name the linker and the profile tools use: the
// linkage (mangled) name when there is one.
func (s *Scope) SymbolName() string {
	if s.Linkage != "" {
		return s.Linkage
	}
	return s.Name
}

func (s *Scope) contains(a uint64) bool {
	for _, r := range s.Ranges {
		if a >= r[0] && a < r[1] {
			return true
		}
	}
	return false
}

type scopeRange struct {
	lo, hi uint64
	s      *Scope
}

// NewDebugInfo reads the DWARF of f; nil when f has none (or none that
// reads). It reads only the compile units' headers and address ranges: a
// unit's line program and tree of scopes are read when a lookup first
// asks for an address the unit covers (dwarfunits.go), so a report pays
// for the units of the code it shows, not for the whole module. Malformed
// parts are skipped: reports then lack lines, nothing more.
func NewDebugInfo(f *elf.File) *DebugInfo { return newDebugInfoCached(f, "") }

// newDebugInfoCached is NewDebugInfo with f's decompressed DWARF kept in
// cacheDir ("": none; dwarfOf).
func newDebugInfoCached(f *elf.File, cacheDir string) (di *DebugInfo) {
	defer func() {
		// debug/dwarf is not hardened against every malformed input;
		// without usable DWARF the reports fall back to addresses.
		if recover() != nil {
			di = nil
		}
	}()
	d, err := dwarfOf(f, cacheDir)
	if err != nil {
		return nil
	}
	return debugInfoOf(d)
}

// debugInfoOf indexes the compile units of d; nil when it has none.
func debugInfoOf(d *dwarf.Data) (di *DebugInfo) {
	defer func() {
		if recover() != nil {
			di = nil
		}
	}()
	u := newUnitIndex(d)
	if u == nil {
		return nil
	}
	return &DebugInfo{units: u}
}

// readUnit reads the line program and the scopes of the compile unit
// whose entry is at off: the tables of that unit alone, as an eager
// DebugInfo; nil when it has neither.
func readUnit(d *dwarf.Data, off dwarf.Offset, origins map[dwarf.Offset]*origin) (di *DebugInfo) {
	defer func() {
		if recover() != nil {
			di = nil
		}
	}()
	di = &DebugInfo{}
	r := d.Reader()
	r.Seek(off)
	cu, err := r.Next()
	if err != nil || cu == nil || cu.Tag != dwarf.TagCompileUnit {
		return nil
	}
	llvmDisc := strings.Contains(strings.ToLower(stringAttr(cu, dwarf.AttrProducer)), "clang")
	var files []*dwarf.LineFile
	if lr, err := d.LineReader(cu); err == nil && lr != nil {
		files = lr.Files()
		di.readLines(lr, llvmDisc)
	}
	fileName := func(e *dwarf.Entry, a dwarf.Attr) string {
		i, ok := e.Val(a).(int64)
		if !ok || i < 0 || int(i) >= len(files) || files[i] == nil {
			return ""
		}
		return files[i].Name
	}
	if !cu.Children {
		return di.finish()
	}
	// Walk the unit's tree, keeping the innermost enclosing scope.
	type level struct{ s *Scope }
	stack := []level{{nil}}
	for len(stack) > 0 {
		e, err := r.Next()
		if err != nil || e == nil {
			return di.finish()
		}
		if e.Tag == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		cur := stack[len(stack)-1].s
		var s *Scope
		switch e.Tag {
		case dwarf.TagSubprogram, dwarf.TagInlinedSubroutine:
			rs, err := d.Ranges(e)
			if err != nil || len(rs) == 0 {
				break
			}
			o := resolveOrigin(d, e, origins, fileName, 0)
			s = &Scope{Name: o.name, Linkage: o.linkage, DeclFile: o.file, DeclLine: o.line, Ranges: rs}
			if e.Tag == dwarf.TagInlinedSubroutine {
				if cur == nil {
					s = nil // an inlined subroutine outside any subprogram: ignore
					break
				}
				s.CallFile = fileName(e, dwarf.AttrCallFile)
				s.CallLine = int(intAttr(e, dwarf.AttrCallLine))
				s.CallDiscriminator = int(intAttr(e, dwarf.Attr(0x2136))) // DW_AT_GNU_discriminator
				if llvmDisc {
					s.CallDiscriminator = llvmBaseDiscriminator(s.CallDiscriminator)
				}
				s.Parent = cur
				cur.Inlined = append(cur.Inlined, s)
			} else if cur == nil {
				di.scopes = append(di.scopes, s)
			} else {
				s = nil // a nested subprogram (not C); not a scope we track
			}
		}
		if e.Children {
			next := cur
			if s != nil {
				next = s
			}
			stack = append(stack, level{next})
		}
	}
	return di.finish()
}

func (di *DebugInfo) finish() *DebugInfo {
	di.rows = clipRows(di.rows)
	for _, s := range di.scopes {
		for _, rg := range s.Ranges {
			if rg[1] > rg[0] {
				di.index = append(di.index, scopeRange{rg[0], rg[1], s})
			}
		}
	}
	sort.SliceStable(di.index, func(i, j int) bool { return di.index[i].lo < di.index[j].lo })
	if len(di.rows) == 0 && len(di.scopes) == 0 {
		return nil
	}
	return di
}

// clipRows sorts rows by address (stably) and clips overlapping ones (two
// sequences claiming one address) so that lookups see disjoint ranges.
func clipRows(rows []LineRange) []LineRange {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Addr < rows[j].Addr })
	out := rows[:0]
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].End > r.Addr {
			out[n-1].End = r.Addr
			if out[n-1].End <= out[n-1].Addr {
				out = out[:n-1]
			}
		}
		if r.End > r.Addr {
			out = append(out, r)
		}
	}
	return out
}

func (di *DebugInfo) readLines(lr *dwarf.LineReader, llvmDisc bool) {
	var le dwarf.LineEntry
	var prev *LineRange
	for {
		if err := lr.Next(&le); err != nil {
			return
		}
		if prev != nil {
			prev.End = le.Address
			if prev.End > prev.Addr {
				di.rows = append(di.rows, *prev)
			}
			prev = nil
		}
		if le.EndSequence || le.File == nil {
			continue
		}
		disc, dup := le.Discriminator, 0
		if llvmDisc {
			disc, dup = llvmBaseDiscriminator(le.Discriminator), llvmDupFactor(le.Discriminator)
		}
		prev = &LineRange{Addr: le.Address, File: le.File.Name, Line: le.Line, Discriminator: disc, Dup: dup}
	}
}

// llvmBaseDiscriminator decodes the base discriminator from LLVM's
// encoding of a DWARF discriminator (base, duplication factor and copy id
// in prefix-encoded fields; llvm/IR/DebugInfoMetadata.h,
// getUnsignedFromPrefixEncoding): sample profiles carry the base only.
func llvmBaseDiscriminator(d int) int {
	u := uint32(d)
	if u&1 != 0 {
		return 0
	}
	u >>= 1
	if u&0x20 != 0 {
		return int((u>>1)&0xfe0 | u&0x1f)
	}
	return int(u & 0x1f)
}

// llvmDupFactor decodes the duplication factor, the component after the
// base discriminator (getDuplicationFactorFromDiscriminator): 0 when there
// is none.
func llvmDupFactor(d int) int {
	u := uint32(d)
	// getNextComponentInDiscriminator: skip the base's 1, 7 or 14 bits.
	switch {
	case u&1 != 0:
		u >>= 1
	case u&0x40 != 0:
		u >>= 14
	default:
		u >>= 7
	}
	return llvmBaseDiscriminator(int(u))
}

// origin is what an abstract origin or specification says about a scope.
type origin struct {
	name, linkage, file string
	line                int
}

// resolveOrigin follows DW_AT_abstract_origin and DW_AT_specification
// [DWARF5 3.3.8.3, 2.13.2] to collect the name and declaration of e.
func resolveOrigin(d *dwarf.Data, e *dwarf.Entry, cache map[dwarf.Offset]*origin, fileName func(*dwarf.Entry, dwarf.Attr) string, depth int) origin {
	o := origin{name: stringAttr(e, dwarf.AttrName), linkage: stringAttr(e, dwarf.AttrLinkageName)}
	if o.linkage == "" {
		o.linkage = stringAttr(e, dwarf.Attr(0x2007)) // DW_AT_MIPS_linkage_name (older gcc)
	}
	o.line = int(intAttr(e, dwarf.AttrDeclLine))
	o.file = fileName(e, dwarf.AttrDeclFile)
	if depth > 8 {
		return o
	}
	for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
		off, ok := e.Val(a).(dwarf.Offset)
		if !ok {
			continue
		}
		p, ok := cache[off]
		if !ok {
			rr := d.Reader()
			rr.Seek(off)
			oe, err := rr.Next()
			if err != nil || oe == nil {
				cache[off] = nil
				continue
			}
			po := resolveOrigin(d, oe, cache, fileName, depth+1)
			p = &po
			cache[off] = p
		}
		if p == nil {
			continue
		}
		if o.name == "" {
			o.name = p.name
		}
		if o.linkage == "" {
			o.linkage = p.linkage
		}
		if o.line == 0 {
			o.line = p.line
		}
		if o.file == "" {
			o.file = p.file
		}
	}
	return o
}

func stringAttr(e *dwarf.Entry, a dwarf.Attr) string {
	s, _ := e.Val(a).(string)
	return s
}

func intAttr(e *dwarf.Entry, a dwarf.Attr) int64 {
	switch v := e.Val(a).(type) {
	case int64:
		return v
	case uint64:
		return int64(v)
	}
	return 0
}

// Rows returns the line rows overlapping [lo, hi), in address order.
func (di *DebugInfo) Rows(lo, hi uint64) []LineRange {
	if di = di.get(); di == nil {
		return nil
	}
	if di.units != nil {
		return di.units.rows(lo, hi)
	}
	i := sort.Search(len(di.rows), func(i int) bool { return di.rows[i].End > lo })
	j := i
	for j < len(di.rows) && di.rows[j].Addr < hi {
		j++
	}
	return di.rows[i:j]
}

// A LineRun is a stretch of code of one source line in one frame: rows
// of the line table that follow each other with the same file and line
// (discriminators and statement flags aside) and the same innermost
// inline scope, clipped to the range asked for.
type LineRun struct {
	Addr, End uint64
	File      string
	Line      int
	Scope     *Scope // innermost scope at Addr; nil without one
}

// LineRuns splits [lo, hi) into LineRuns, in address order. Code the line
// table does not cover (before its first row, or in a gap) gets a run of
// line 0, so that the runs cover [lo, hi) whole; nil when the table knows
// nothing of [lo, hi).
func (di *DebugInfo) LineRuns(lo, hi uint64) []LineRun {
	rows := di.Rows(lo, hi)
	if len(rows) == 0 {
		return nil
	}
	var out []LineRun
	add := func(r LineRun) {
		if r.End <= r.Addr {
			return
		}
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.End == r.Addr && p.File == r.File && p.Line == r.Line && p.Scope == r.Scope {
				p.End = r.End
				return
			}
		}
		out = append(out, r)
	}
	innermost := func(a uint64) *Scope {
		if fs := di.Frames(a); len(fs) > 0 {
			return fs[len(fs)-1]
		}
		return nil
	}
	at := lo
	for _, r := range rows {
		start, end := max(r.Addr, lo), min(r.End, hi)
		if start > at {
			add(LineRun{Addr: at, End: start, Scope: innermost(at)})
		}
		add(LineRun{Addr: start, End: end, File: r.File, Line: r.Line, Scope: innermost(start)})
		at = end
	}
	if at < hi {
		add(LineRun{Addr: at, End: hi, Scope: innermost(at)})
	}
	return out
}

// LineAt returns the row holding addr.
func (di *DebugInfo) LineAt(addr uint64) (LineRange, bool) {
	rs := di.Rows(addr, addr+1)
	if len(rs) == 0 {
		return LineRange{}, false
	}
	return rs[0], true
}

// Frames returns the scopes holding addr, outermost (the subprogram)
// first, innermost inlined subroutine last; nil when no subprogram holds
// it.
func (di *DebugInfo) Frames(addr uint64) []*Scope {
	if di = di.get(); di == nil {
		return nil
	}
	if di.units != nil {
		return di.units.frames(addr)
	}
	i := sort.Search(len(di.index), func(i int) bool { return di.index[i].lo > addr }) - 1
	var s *Scope
	// Ranges of different subprograms do not overlap in sane DWARF; scan
	// back a little in case they do.
	for k := i; k >= 0 && k > i-4; k-- {
		if addr >= di.index[k].lo && addr < di.index[k].hi {
			s = di.index[k].s
			break
		}
	}
	if s == nil {
		return nil
	}
	out := []*Scope{s}
	for {
		var next *Scope
		for _, c := range s.Inlined {
			if c.contains(addr) {
				next = c
				break
			}
		}
		if next == nil {
			return out
		}
		out = append(out, next)
		s = next
	}
}

// Subprogram returns the concrete subprogram holding addr, or nil.
func (di *DebugInfo) Subprogram(addr uint64) *Scope {
	if fs := di.Frames(addr); len(fs) > 0 {
		return fs[0]
	}
	return nil
}

// At returns "file:line" for addr (the file's base name), or "".
func (di *DebugInfo) At(addr uint64) string {
	r, ok := di.LineAt(addr)
	if !ok || r.File == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", shortFile(r.File), r.Line)
}

// Span returns the lines of the code in [lo, hi): "f.c:3-7" when they
// are in one file, the files' spans joined by ", " otherwise; "" when the
// tables know none.
func (di *DebugInfo) Span(lo, hi uint64) string {
	if di == nil || hi <= lo {
		return ""
	}
	type span struct {
		file   string
		lo, hi int
	}
	var spans []span
	add := func(r LineRange) {
		if r.File == "" || r.Line == 0 {
			return
		}
		for k := range spans {
			if spans[k].file == r.File {
				spans[k].lo = min(spans[k].lo, r.Line)
				spans[k].hi = max(spans[k].hi, r.Line)
				return
			}
		}
		spans = append(spans, span{r.File, r.Line, r.Line})
	}
	for _, r := range di.Rows(lo, hi) {
		add(r)
	}
	var parts []string
	for _, s := range spans {
		if s.lo == s.hi {
			parts = append(parts, fmt.Sprintf("%s:%d", shortFile(s.file), s.lo))
		} else {
			parts = append(parts, fmt.Sprintf("%s:%d-%d", shortFile(s.file), s.lo, s.hi))
		}
	}
	return strings.Join(parts, ", ")
}

func shortFile(f string) string {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i] == '/' {
			return f[i+1:]
		}
	}
	return f
}

// writeBlockLine writes one block of an expanded path: its original
// address and, when the line tables know it, file:line.
func writeBlockLine(w io.Writer, indent string, addr uint64, lines *DebugInfo) {
	if loc := lines.At(addr); loc != "" {
		fmt.Fprintf(w, "%s%s  %s\n", indent, hex(addr), loc)
	} else {
		fmt.Fprintf(w, "%s%s\n", indent, hex(addr))
	}
}
