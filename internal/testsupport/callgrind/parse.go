package callgrind

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"strconv"
	"strings"
)

// maxLine bounds the length of one line of input. Callgrind's longest lines
// are function names with calling contexts (--separate-callers), far
// shorter than this.
const maxLine = 4 << 20

// Parse reads one callgrind output file from r and returns the counts of
// object, the main object's name exactly as callgrind prints it in ob=
// lines (the absolute path of the executable, symbolic links resolved).
// Costs of other objects are dropped, except what Profile.External and the
// Unknown fields keep. A profile that never names object is refused with
// ErrNoProfile.
//
// Both the compressed (name ids, relative subpositions) and the plain forms
// of the format are accepted [Callgrind Format Specification §3.1.5,
// §3.1.6]. A relative subposition is taken relative to the previous
// self-cost line, as callgrind's writer computes it: the position lines
// that follow calls=, jump= and jcnd= do not move the reference.
func Parse(r io.Reader, object string) (*Profile, error) {
	return parseNamed(r, "", object)
}

// ParseFile is Parse on the file at path; errors name the file.
func ParseFile(path, object string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("callgrind: %w", err)
	}
	defer f.Close()
	return parseNamed(f, path, object)
}

func parseNamed(r io.Reader, file, object string) (*Profile, error) {
	if object == "" {
		return nil, errors.New("callgrind: no object name given")
	}
	p, seen, err := parse(r, file, func(ob string) bool { return ob == object })
	if err != nil {
		return nil, err
	}
	if !seen {
		where := file
		if where == "" {
			where = "the profile"
		}
		return nil, fmt.Errorf("%w: %s does not name object %q", ErrNoProfile, where, object)
	}
	return p, nil
}

// parse reads a callgrind file and keeps the costs of the objects match
// accepts (all of them are called by the first accepted name). seen reports
// whether any object was accepted. Panics are turned into errInternal: the
// parser is meant never to panic, and FuzzParse checks that.
func parse(r io.Reader, file string, match func(string) bool) (p *Profile, seen bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			p, seen, err = nil, false, fmt.Errorf("%w: %v", errInternal, v)
		}
	}()
	ps := newParser(file, match)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		ps.line++
		if err := ps.handle(sc.Text()); err != nil {
			return nil, false, err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			ps.line++
			return nil, false, ps.errf("line longer than %d bytes", maxLine)
		}
		if file != "" {
			return nil, false, fmt.Errorf("callgrind: read %s: %w", file, err)
		}
		return nil, false, fmt.Errorf("callgrind: read: %w", err)
	}
	if err := ps.finish(); err != nil {
		return nil, false, err
	}
	return ps.prof, ps.seen, nil
}

// Name spaces of compressed names [Callgrind Format Specification §3.1.5]:
// one for objects (ob=, cob=), one for files (fl=, fi=, fe=, cfi=, cfl=,
// jfi=) and one for functions (fn=, cfn=, jfn=, frfn=).
const (
	spaceObject = iota
	spaceFile
	spaceFunc
	numSpaces
)

// objKind classifies the object of a cost or call end.
type objKind uint8

const (
	kindOther   objKind = iota // some object we do not keep
	kindMain                   // the object being profiled
	kindUnknown                // UnknownObject
)

// partState says where in a part the parser is.
type partState uint8

const (
	stateHeader partState = iota // header lines of a part
	stateBody                    // cost and position lines
	stateClosed                  // after totals:, until the next header
)

type pendKind uint8

const (
	pendNone pendKind = iota
	pendCall          // calls= seen; its cost line comes next
	pendJump          // jump=/jcnd= seen; the source position comes next
)

// pending is a calls=, jump= or jcnd= line whose second line has not been
// read yet.
type pending struct {
	kind     pendKind
	line     int
	key      string // "calls", "jump" or "jcnd"
	count    uint64 // calls, or jumps followed
	executed uint64 // jcnd: executions of the jump
	cond     bool
	target   uint64
}

type parser struct {
	file  string
	line  int
	match func(string) bool
	kinds map[string]objKind // memo of classify
	prof  *Profile
	seen  bool

	names [numSpaces]map[uint64]string

	// Header of the current part.
	state     partState
	events    []string
	irCol     int      // index of Ir in events, -1 if absent
	positions []string // subposition kinds, in order
	instrCol  int      // index of "instr" in positions, -1 if absent
	partIr    uint64   // Ir summed over the part's self-cost lines

	last []uint64 // subpositions of the previous self-cost line
	cur  []uint64 // scratch

	ob     string
	obKind objKind
	cob    string
	cobSet bool
	cfn    string

	pend pending
}

func newParser(file string, match func(string) bool) *parser {
	ps := &parser{
		file:  file,
		match: match,
		kinds: map[string]objKind{},
		prof:  newProfile(""),
		irCol: -1,
	}
	for i := range ps.names {
		ps.names[i] = map[uint64]string{}
	}
	// Without a positions: line a cost line starts with a source line
	// number [Callgrind Format Specification §3.2.2].
	ps.setPositions([]string{"line"})
	return ps
}

func (ps *parser) errf(format string, args ...any) error {
	return &ParseError{File: ps.file, Line: ps.line, Msg: fmt.Sprintf(format, args...), Err: ErrSyntax}
}

func (ps *parser) errAt(line int, format string, args ...any) error {
	return &ParseError{File: ps.file, Line: line, Msg: fmt.Sprintf(format, args...), Err: ErrSyntax}
}

func (ps *parser) errIs(sentinel error) error {
	return &ParseError{File: ps.file, Line: ps.line, Err: sentinel}
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 60
	if len(s) <= n {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:n]) + "..."
}

// bodyKeys are the keys of "key=value" body lines.
var bodyKeys = map[string]bool{
	"ob": true, "fl": true, "fi": true, "fe": true, "fn": true,
	"cob": true, "cfi": true, "cfl": true, "cfn": true,
	"calls": true, "jump": true, "jcnd": true,
	"jfi": true, "jfn": true,
	// Written by callgrind with --mangle-names=no (frfn=, rec=) and
	// --dump-bbs=yes (bb=, ln=); they carry nothing we count.
	"frfn": true, "rec": true, "bb": true, "ln": true,
}

func (ps *parser) handle(s string) error {
	s = strings.Trim(s, " \t\r")
	if s == "" || s[0] == '#' {
		return nil
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '+' || c == '-' || c == '*' {
		return ps.costLine(s)
	}
	if i := strings.IndexByte(s, '='); i > 0 && bodyKeys[s[:i]] {
		return ps.bodyLine(s[:i], strings.TrimLeft(s[i+1:], " \t"))
	}
	if i := strings.IndexByte(s, ':'); i > 0 && isHeaderKey(s[:i]) {
		return ps.headerLine(s[:i], strings.TrimSpace(s[i+1:]))
	}
	return ps.errf("unrecognised line %s", clip(s))
}

// isHeaderKey accepts "key" of a "key: value" line: a letter followed by
// letters, digits, spaces and parentheses (callgrind writes
// "timeframe (BB):").
func isHeaderKey(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == ' ' || c == '(' || c == ')' || c == '_'):
		default:
			return false
		}
	}
	return true
}

// checkPending refuses a line that cannot follow an unfinished calls=,
// jump= or jcnd=.
func (ps *parser) checkPending() error {
	switch ps.pend.kind {
	case pendCall:
		return ps.errf("%q on line %d is not followed by its cost line", "calls=", ps.pend.line)
	case pendJump:
		return ps.errf("%q on line %d is not followed by its source position", ps.pend.key+"=", ps.pend.line)
	}
	return nil
}

func (ps *parser) headerLine(key, val string) error {
	if err := ps.checkPending(); err != nil {
		return err
	}
	if key == "totals" {
		if err := ps.checkTotals(val); err != nil {
			return err
		}
		ps.state = stateClosed
		return nil
	}
	if ps.state != stateHeader {
		ps.newPart()
	}
	switch key {
	case "version":
		v, err := strconv.Atoi(val)
		if err != nil || v < 0 {
			return ps.errf("version %s is not a number", clip(val))
		}
		if v > 1 {
			return ps.errf("format version %d is not supported (only 1)", v)
		}
	case "pid":
		v, err := strconv.Atoi(val)
		if err != nil || v < 0 {
			return ps.errf("pid %s is not a number", clip(val))
		}
		ps.prof.PIDs = mergePIDs(ps.prof.PIDs, []int{v})
	case "positions":
		return ps.parsePositions(val)
	case "events":
		f := strings.Fields(val)
		if len(f) == 0 {
			return ps.errf("events: lists no event")
		}
		ps.events = f
		ps.irCol = -1
		for i, e := range f {
			if e == "Ir" {
				ps.irCol = i
				break
			}
		}
	case "summary":
		if _, err := ps.parseCosts(strings.Fields(val)); err != nil {
			return err
		}
	case "desc":
		// "desc: Trigger: --dump-after=blpp_fini": why callgrind dumped
		// this part.
		if t, ok := strings.CutPrefix(val, "Trigger:"); ok {
			ps.prof.Triggers = append(ps.prof.Triggers, strings.TrimSpace(t))
		}
	}
	// Other keys (creator, cmd, part, thread, desc, event, ...) describe
	// the run and do not change how costs read.
	return nil
}

func (ps *parser) parsePositions(val string) error {
	f := strings.Fields(val)
	seen := map[string]bool{}
	for _, k := range f {
		switch k {
		case "instr", "bb", "line":
		default:
			return ps.errf("positions: unknown subposition %s", clip(k))
		}
		if seen[k] {
			return ps.errf("positions: %q listed twice", k)
		}
		seen[k] = true
	}
	ps.setPositions(f)
	return nil
}

func (ps *parser) setPositions(f []string) {
	ps.positions = f
	ps.instrCol = -1
	for i, k := range f {
		if k == "instr" {
			ps.instrCol = i
		}
	}
	ps.last = make([]uint64, len(f))
	ps.cur = make([]uint64, len(f))
}

// newPart starts a new part of a file holding several dumps
// (--combine-dumps=yes). Name ids stay defined: callgrind numbers them
// across the whole file.
func (ps *parser) newPart() {
	ps.state = stateHeader
	ps.partIr = 0
	clear(ps.last)
	ps.ob, ps.obKind = "", kindOther
	ps.cob, ps.cobSet, ps.cfn = "", false, ""
}

// checkTotals compares the totals: line callgrind writes at the end of a
// dump with the sum of the part's self costs: a cheap guard against a
// truncated or mangled file.
func (ps *parser) checkTotals(val string) error {
	v, err := ps.parseCosts(strings.Fields(val))
	if err != nil {
		return err
	}
	if ps.irCol < 0 {
		return nil
	}
	var ir uint64
	if ps.irCol < len(v) {
		ir = v[ps.irCol]
	}
	if ir != ps.partIr {
		return ps.errf("totals: gives Ir %d but the cost lines of the part sum to %d", ir, ps.partIr)
	}
	return nil
}

// parseCosts parses event counts; there may be fewer than events (the rest
// are zero), never more.
func (ps *parser) parseCosts(f []string) ([]uint64, error) {
	if ps.events == nil {
		return nil, ps.errf("costs before the events: header")
	}
	if len(f) > len(ps.events) {
		return nil, ps.errf("%d costs, but events: lists %d", len(f), len(ps.events))
	}
	v := make([]uint64, len(f))
	for i, s := range f {
		n, err := parseNum(s)
		if err != nil {
			return nil, ps.errf("cost %s: %v", clip(s), err)
		}
		v[i] = n
	}
	return v, nil
}

func (ps *parser) enterBody() {
	if ps.state != stateBody {
		if ps.state == stateClosed {
			ps.newPart()
		}
		ps.state = stateBody
		ps.prof.Parts++
	}
}

func (ps *parser) bodyLine(key, val string) error {
	if err := ps.checkPending(); err != nil {
		return err
	}
	ps.enterBody()
	switch key {
	case "ob":
		name, err := ps.name(spaceObject, key, val)
		if err != nil {
			return err
		}
		ps.ob, ps.obKind = name, ps.classify(name)
	case "cob":
		name, err := ps.name(spaceObject, key, val)
		if err != nil {
			return err
		}
		ps.cob, ps.cobSet = name, true
	case "fl", "fi", "fe", "cfi", "cfl", "jfi":
		_, err := ps.name(spaceFile, key, val)
		return err
	case "fn", "jfn", "frfn":
		_, err := ps.name(spaceFunc, key, val)
		return err
	case "cfn":
		name, err := ps.name(spaceFunc, key, val)
		if err != nil {
			return err
		}
		ps.cfn = name
	case "calls":
		return ps.callsLine(val)
	case "jump", "jcnd":
		return ps.jumpLine(key, val)
	}
	// rec=, bb=, ln=: nothing to keep.
	return nil
}

// name resolves a position name, defining or looking up a compressed id
// [Callgrind Format Specification §3.1.5]: "(id) name" defines, "(id)"
// refers back, anything else is the name itself.
func (ps *parser) name(space int, key, val string) (string, error) {
	if len(val) < 2 || val[0] != '(' || val[1] < '0' || val[1] > '9' {
		return val, nil
	}
	end := strings.IndexByte(val, ')')
	if end < 0 {
		return "", ps.errf("%s=: compressed name %s lacks ')'", key, clip(val))
	}
	id, err := strconv.ParseUint(val[1:end], 10, 64)
	if err != nil {
		return "", ps.errf("%s=: compressed name id %s is not a number", key, clip(val[1:end]))
	}
	rest := strings.TrimLeft(val[end+1:], " \t")
	m := ps.names[space]
	if rest == "" {
		s, ok := m[id]
		if !ok {
			return "", ps.errf("%s=(%d) used before it is defined", key, id)
		}
		return s, nil
	}
	if old, ok := m[id]; ok && old != rest {
		return "", ps.errf("%s=(%d) redefined: was %s, now %s", key, id, clip(old), clip(rest))
	}
	m[id] = rest
	return rest, nil
}

// classify tells the main object, UnknownObject and the rest apart.
func (ps *parser) classify(ob string) objKind {
	if k, ok := ps.kinds[ob]; ok {
		return k
	}
	k := kindOther
	switch {
	case ps.match(ob):
		k = kindMain
		if !ps.seen {
			ps.seen = true
			ps.prof.Object = ob
		}
	case ob == UnknownObject:
		k = kindUnknown
	}
	ps.kinds[ob] = k
	return k
}

// objName is the name a location of kind k in object ob is recorded
// under: all accepted objects go by the first accepted name.
func (ps *parser) objName(ob string, k objKind) string {
	if k == kindMain {
		return ps.prof.Object
	}
	return ob
}

// positionsOf parses the n subpositions at the start of f, each relative to
// ps.last, into ps.cur.
func (ps *parser) positionsOf(f []string) error {
	n := len(ps.positions)
	if len(f) < n {
		return ps.errf("%d subpositions, but positions: lists %d", len(f), n)
	}
	for i := 0; i < n; i++ {
		v, err := subposition(f[i], ps.last[i])
		if err != nil {
			return ps.errf("%s subposition %s: %v", ps.positions[i], clip(f[i]), err)
		}
		ps.cur[i] = v
	}
	return nil
}

// baseName drops the 'N suffix callgrind gives the N-th recursion level of
// a function (fib'2).
func baseName(fn string) string {
	i := strings.LastIndexByte(fn, '\'')
	if i <= 0 || i == len(fn)-1 {
		return fn
	}
	for _, c := range fn[i+1:] {
		if c < '0' || c > '9' {
			return fn
		}
	}
	return fn[:i]
}

// subposition evaluates one subposition: absolute (decimal or 0x hex),
// "+d" or "-d" relative to last, or "*" for last itself [Callgrind Format
// Specification §3.1.6].
func subposition(tok string, last uint64) (uint64, error) {
	switch tok[0] {
	case '*':
		if tok != "*" {
			return 0, errors.New("junk after '*'")
		}
		return last, nil
	case '+':
		d, err := parseNum(tok[1:])
		if err != nil {
			return 0, err
		}
		s, carry := bits.Add64(last, d, 0)
		if carry != 0 {
			return 0, errors.New("overflows 64 bits")
		}
		return s, nil
	case '-':
		d, err := parseNum(tok[1:])
		if err != nil {
			return 0, err
		}
		if d > last {
			return 0, errors.New("goes below zero")
		}
		return last - d, nil
	}
	return parseNum(tok)
}

var (
	errNotNumber = errors.New("not a number")
	errRange     = errors.New("does not fit in 64 bits")
)

// parseNum parses an unsigned decimal or 0x-prefixed hexadecimal number.
func parseNum(s string) (uint64, error) {
	var v uint64
	var err error
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		v, err = strconv.ParseUint(s[2:], 16, 64)
	} else {
		v, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, errRange
		}
		return 0, errNotNumber
	}
	return v, nil
}
