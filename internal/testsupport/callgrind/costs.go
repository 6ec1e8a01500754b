package callgrind

import "strings"

// Body lines that carry counts: cost lines (an instruction's Ir), calls=
// and the line after it, jump= and jcnd= and their source lines, and what
// is pending at the end of the input. parse.go reads the header and the
// name and position lines around them.

// costLine reads a line that starts with a position: the call site of a
// pending calls=, the source of a pending jump= or jcnd=, or else a
// self-cost line, whose Ir the instruction at that position ran.
func (ps *parser) costLine(s string) error {
	if ps.events == nil {
		return ps.errf("cost line before the events: header")
	}
	ps.enterBody()
	f := strings.Fields(s)
	if err := ps.positionsOf(f); err != nil {
		return err
	}
	costs := f[len(ps.positions):]
	switch ps.pend.kind {
	case pendCall:
		v, err := ps.parseCosts(costs)
		if err != nil {
			return err
		}
		_ = v // inclusive cost of the call: not an execution count
		return ps.finishCall()
	case pendJump:
		if len(costs) > 0 {
			return ps.errf("source position of %q on line %d carries costs", ps.pend.key+"=", ps.pend.line)
		}
		return ps.finishJump()
	}
	v, err := ps.parseCosts(costs)
	if err != nil {
		return err
	}
	copy(ps.last, ps.cur)
	if ps.instrCol < 0 {
		return ps.errIs(ErrNoInstr)
	}
	if ps.irCol < 0 {
		return ps.errIs(ErrNoIr)
	}
	var ir uint64
	if ps.irCol < len(v) {
		ir = v[ps.irCol]
	}
	if !add64(&ps.partIr, ir) {
		return ps.errf("Ir of the part overflows 64 bits")
	}
	if ir == 0 {
		return nil
	}
	if !addCount(ps.prof.ObjectIr, ps.objName(ps.ob, ps.obKind), ir) {
		return ps.errf("Ir of object %s overflows 64 bits", ps.ob)
	}
	addr := ps.cur[ps.instrCol]
	exec, _ := ps.counts()
	if exec == nil {
		return nil
	}
	if !addCount(exec, addr, ir) {
		return ps.errf("Ir of %#x overflows 64 bits", addr)
	}
	return nil
}

// target parses the target position of calls=, jump= or jcnd= (relative
// to the previous self-cost line, without moving it) and returns its
// instruction address.
func (ps *parser) target(f []string, key string) (uint64, error) {
	if len(f) != len(ps.positions) {
		return 0, ps.errf("%s= target has %d subpositions, but positions: lists %d", key, len(f), len(ps.positions))
	}
	if err := ps.positionsOf(f); err != nil {
		return 0, err
	}
	if ps.instrCol < 0 {
		return 0, ps.errIs(ErrNoInstr)
	}
	return ps.cur[ps.instrCol], nil
}

func (ps *parser) callsLine(val string) error {
	f := strings.Fields(val)
	if len(f) == 0 {
		return ps.errf("calls= without a count")
	}
	n, err := parseNum(f[0])
	if err != nil {
		return ps.errf("calls= count %s: %v", clip(f[0]), err)
	}
	t, err := ps.target(f[1:], "calls")
	if err != nil {
		return err
	}
	ps.pend = pending{kind: pendCall, line: ps.line, key: "calls", count: n, target: t}
	return nil
}

func (ps *parser) jumpLine(key, val string) error {
	f := strings.Fields(val)
	if len(f) == 0 {
		return ps.errf("%s= without a count", key)
	}
	pd := pending{kind: pendJump, line: ps.line, key: key, cond: key == "jcnd"}
	var err error
	switch {
	case key == "jump":
		pd.count, err = parseNum(f[0])
		f = f[1:]
	case strings.Contains(f[0], "/"):
		// What callgrind writes: jcnd=<followed>/<executed>.
		a, b, _ := strings.Cut(f[0], "/")
		if pd.count, err = parseNum(a); err == nil {
			pd.executed, err = parseNum(b)
		}
		f = f[1:]
	default:
		// What the specification's grammar says: jcnd=<executed>
		// <followed>.
		if len(f) < 2 {
			return ps.errf("jcnd= needs two counts")
		}
		if pd.executed, err = parseNum(f[0]); err == nil {
			pd.count, err = parseNum(f[1])
		}
		f = f[2:]
	}
	if err != nil {
		return ps.errf("%s= count: %v", key, err)
	}
	if pd.target, err = ps.target(f, key); err != nil {
		return err
	}
	ps.pend = pd
	return nil
}

// finishCall records the call announced by the pending calls= line; ps.cur
// holds the call site.
func (ps *parser) finishCall() error {
	pd := ps.pend
	ps.pend = pending{}
	cob, cobKind := ps.ob, ps.obKind
	if ps.cobSet {
		cob, cobKind = ps.cob, ps.classify(ps.cob)
	}
	// Like kcachegrind, a cob= holds for one call only; callgrind repeats
	// it before every call into another object.
	ps.cob, ps.cobSet = "", false
	if ps.instrCol < 0 {
		return ps.errIs(ErrNoInstr)
	}
	site := ps.cur[ps.instrCol]
	if pd.count == 0 || ps.obKind == kindOther && cobKind == kindOther {
		// calls=0 lines are calls still active at an earlier dump.
		return nil
	}
	to := Loc{ps.objName(cob, cobKind), pd.target}
	var ok bool
	if ps.obKind == kindMain && cobKind == kindMain {
		ok = addCount(ps.prof.Calls, [2]uint64{site, pd.target}, pd.count)
	} else {
		from := Loc{ps.objName(ps.ob, ps.obKind), site}
		ok = addCount(ps.prof.External, Arc{from, to}, pd.count)
	}
	if !ok {
		return ps.errf("call count overflows 64 bits")
	}
	if ps.cfn != "" {
		if _, ok := ps.prof.Names[to]; !ok {
			ps.prof.Names[to] = baseName(ps.cfn)
		}
	}
	return nil
}

// counts returns where the current object's instruction and jump counts
// go: the main object's maps, those of code filed under ???, or nil for
// any other object.
func (ps *parser) counts() (exec map[uint64]uint64, jumps map[[2]uint64]Jump) {
	switch ps.obKind {
	case kindMain:
		return ps.prof.Exec, ps.prof.Jumps
	case kindUnknown:
		return ps.prof.UnknownExec, ps.prof.UnknownJumps
	}
	return nil, nil
}

// finishJump records the jump announced by the pending jump= or jcnd=
// line; ps.cur holds its source.
func (ps *parser) finishJump() error {
	pd := ps.pend
	ps.pend = pending{}
	if ps.instrCol < 0 {
		return ps.errIs(ErrNoInstr)
	}
	if pd.count == 0 && pd.executed == 0 {
		return nil
	}
	k := [2]uint64{ps.cur[ps.instrCol], pd.target}
	j := Jump{Count: pd.count, Executed: pd.executed, Conditional: pd.cond}
	_, jumps := ps.counts()
	if jumps == nil {
		return nil
	}
	if !addJump(jumps, k, j) {
		return ps.errf("jump count overflows 64 bits")
	}
	return nil
}

func (ps *parser) finish() error {
	switch ps.pend.kind {
	case pendCall:
		return ps.errAt(ps.pend.line, "%q at the end of the input without its cost line", "calls=")
	case pendJump:
		return ps.errAt(ps.pend.line, "%q at the end of the input without its source position", ps.pend.key+"=")
	}
	return nil
}
