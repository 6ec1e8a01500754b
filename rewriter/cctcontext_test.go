package rewriter_test

// What TestCCT (cct_test.go) reads the binaries and profiles with: the
// functions and call instructions of a fixture as objdump sees them,
// and the contexts of a profile with their blocks, calls and sites.

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/report"
)

// binaryInfo is what the tests read from the original binary: its
// function symbols and its disassembly.
type binaryInfo struct {
	path    string
	funcs   []funcSym          // by address
	entries map[uint64]string  // function entry → name
	insns   map[uint64]insnRef // call and jump instructions by address
}

type funcSym struct {
	name       string
	start, end uint64
}

// insnRef is a call or jump instruction as objdump prints it.
type insnRef struct {
	jump     bool   // jmp, not call
	indirect bool   // through a register or memory
	target   uint64 // direct target
	sym      string // objdump's symbol for the target, without "@plt" or "+off"
	offset   bool   // the target is inside sym, not its start
}

func loadBinary(t *testing.T, path string) *binaryInfo {
	t.Helper()
	b := &binaryInfo{path: path, entries: map[uint64]string{}, insns: map[uint64]insnRef{}}
	for _, s := range fixture.FuncSymbols(t, path) { // sorted by address, as funcAt needs
		name := strings.TrimSuffix(s.Name, ".cold")
		b.funcs = append(b.funcs, funcSym{name, s.Value, s.Value + s.Size})
		if !strings.HasSuffix(s.Name, ".cold") {
			b.entries[s.Value] = name
		}
	}

	objdump := fixture.RequireTool(t, "objdump", "binutils")
	out, err := exec.Command(objdump, "-d", "-w", "--no-show-raw-insn", path).Output()
	if err != nil {
		t.Fatalf("objdump %s: %v", path, err)
	}
	line := regexp.MustCompile(`^\s*([0-9a-f]+):\t(.*)$`)
	target := regexp.MustCompile(`^([0-9a-f]+) <([^>]*)>`)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		addr, _ := strconv.ParseUint(m[1], 16, 64)
		fields := strings.Fields(m[2])
		for len(fields) > 0 && (fields[0] == "notrack" || fields[0] == "bnd" || strings.HasPrefix(fields[0], "rex")) {
			fields = fields[1:]
		}
		if len(fields) < 2 {
			continue
		}
		var in insnRef
		switch fields[0] {
		case "call", "callq":
		case "jmp", "jmpq":
			in.jump = true
		default:
			continue
		}
		ops := strings.Join(fields[1:], " ")
		if strings.HasPrefix(ops, "*") {
			in.indirect = true
		} else if tm := target.FindStringSubmatch(ops); tm != nil {
			in.target, _ = strconv.ParseUint(tm[1], 16, 64)
			sym := tm[2]
			if i := strings.Index(sym, "+0x"); i >= 0 {
				sym, in.offset = sym[:i], true
			}
			in.sym = strings.TrimSuffix(sym, "@plt")
		}
		b.insns[addr] = in
	}
	return b
}

// funcAt names the function whose code holds addr, or "".
func (b *binaryInfo) funcAt(addr uint64) string {
	i := sort.Search(len(b.funcs), func(i int) bool { return b.funcs[i].start > addr }) - 1
	for ; i >= 0; i-- {
		if f := b.funcs[i]; addr < f.end {
			return f.name
		} else if f.start < addr && f.end <= addr {
			break
		}
	}
	return ""
}

// tailJumps lists the tail jumps of function fn as "fn>g" (a direct jump
// to the entry of another function g) and "fn>*" (an indirect jump).
func (b *binaryInfo) tailJumps(fn string) []string {
	var out []string
	for addr, in := range b.insns {
		if !in.jump || b.funcAt(addr) != fn {
			continue
		}
		switch {
		case in.indirect:
			out = append(out, fn+">*")
		case !in.offset && in.sym != fn && b.entries[in.target] != "":
			out = append(out, fn+">"+in.sym)
		}
	}
	sort.Strings(out)
	return out
}

// checkTailJumps fails the test setup when a tail-call fixture was built
// without the tail jumps it exists for, or when another fixture has a
// tail jump its expected tree does not foresee.
func (b *binaryInfo) checkTailJumps(t *testing.T, what string, fx cctFixture) {
	t.Helper()
	have := map[string]bool{}
	var all []string
	for _, fn := range fx.own {
		for _, j := range b.tailJumps(fn) {
			have[j] = true
			all = append(all, j)
		}
	}
	for _, j := range fx.tail {
		if !have[j] {
			t.Fatalf("%s: setup: the build has no tail jump %s (tail jumps found: %q); the compiler emitted calls where the fixture needs jumps", what, j, all)
		}
	}
	if len(fx.tail) == 0 && len(all) > 0 {
		t.Fatalf("%s: setup: tail jumps %q in a fixture whose expected tree assumes calls", what, all)
	}
}

// siteVia describes call site addr as reached from its function when it
// leads to callee: "" for a direct call of callee, "*" for an indirect
// call, "jmp"/"jmp*" for tail jumps, the directly called function's name
// otherwise (a callback through it), "?" for an address that is no call
// or jump.
func (b *binaryInfo) siteVia(addr uint64, callee string) string {
	in, ok := b.insns[addr]
	switch {
	case !ok:
		return "?"
	case in.indirect && in.jump:
		return "jmp*"
	case in.indirect:
		return "*"
	case in.jump && in.sym == callee && !in.offset:
		return "jmp"
	case in.jump:
		return "jmp " + in.sym
	case in.sym == callee && !in.offset:
		return ""
	}
	return in.sym
}

// contexts is a profile read against its binary's metadata.
type contexts struct {
	what string
	tab  *meta.Table
	prof *cct.Profile
	// siteFunc maps call sites to functions, for funcOf.
	siteFunc map[uint64]int
}

func newContexts(t *testing.T, what string, tab *meta.Table, prof *cct.Profile) *contexts {
	t.Helper()
	return &contexts{what: what, tab: tab, prof: prof}
}

// recordBlocks expands one record's paths and partials to block counts,
// and counts its activations seen as paths or partials that begin at the
// entry.
func (c *contexts) recordBlocks(t *testing.T, th *cct.Thread, ri int, counts map[uint32][]uint64) (starts uint64) {
	t.Helper()
	r := &th.Records[ri]
	cnt := counts[r.Func]
	if cnt == nil {
		cnt = make([]uint64, len(c.tab.Funcs[r.Func].Blocks))
		counts[r.Func] = cnt
	}
	for _, p := range r.Paths {
		e, err := c.tab.ExpandPath(r.Func, p.ID)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		for _, bl := range e.Blocks {
			cnt[bl] += p.Count
		}
		if e.FromEntry {
			starts += p.Count
		}
	}
	return starts
}

// partialBlocks expands a partial path; ok is false when its stopping
// point is unknown.
func (c *contexts) partialBlocks(t *testing.T, q *cct.Partial, counts map[uint32][]uint64) (fromEntry, ok bool) {
	t.Helper()
	if q.Block == cct.BlockUnknown {
		return false, false
	}
	e, err := c.tab.ExpandPartial(q.Func, q.Block, q.Reg)
	if err != nil {
		t.Fatalf("%s: %v", c.what, err)
	}
	if e == nil {
		return false, false
	}
	cnt := counts[q.Func]
	if cnt == nil {
		cnt = make([]uint64, len(c.tab.Funcs[q.Func].Blocks))
		counts[q.Func] = cnt
	}
	for _, bl := range e.Blocks {
		cnt[bl] += q.Count
	}
	return e.FromEntry, true
}

// checkBlockSums expands every record (every context) on its own, sums
// the block counts over the contexts and threads, and requires the sums to
// equal the report's per-function counts, which compareCounts compared
// with callgrind's.
func (c *contexts) checkBlockSums(t *testing.T, doc *report.PathDoc) {
	t.Helper()
	counts := map[uint32][]uint64{}
	for ti := range c.prof.Threads {
		th := &c.prof.Threads[ti]
		for ri := range th.Records {
			c.recordBlocks(t, th, ri, counts)
		}
		for k := range th.Partials {
			c.partialBlocks(t, &th.Partials[k], counts)
		}
	}
	byName := map[string]*report.PathFunc{}
	for i := range doc.Functions {
		byName[doc.Functions[i].Name] = &doc.Functions[i]
	}
	for fid, cnt := range counts {
		mf := &c.tab.Funcs[fid]
		pf := byName[mf.Name]
		if pf == nil {
			t.Errorf("%s: %s is not in the report", c.what, mf.Name)
			continue
		}
		for i, bl := range pf.Blocks {
			if i < len(cnt) && bl.Count != cnt[i] {
				t.Errorf("%s: %s block %s: %d summed over contexts, %d in the report", c.what, mf.Name, bl.Addr, cnt[i], bl.Count)
			}
		}
	}
}

// foldedInto sums, per record, the folded calls onto it.
func foldedInto(th *cct.Thread) map[int]uint64 {
	into := map[int]uint64{}
	for _, fc := range th.Folded {
		into[fc.To] += fc.Count
	}
	return into
}

// checkRecordCalls: in every record of a fixture function, each
// activation began one path at the entry, which either completed or is a
// partial path of the record. So Calls equals the paths and partials that
// start at the entry.
func (c *contexts) checkRecordCalls(t *testing.T, own map[string]bool) {
	t.Helper()
	scratch := map[uint32][]uint64{}
	for ti := range c.prof.Threads {
		th := &c.prof.Threads[ti]
		starts := make([]uint64, len(th.Records))
		known := make([]bool, len(th.Records))
		for ri := range th.Records {
			starts[ri] = c.recordBlocks(t, th, ri, scratch)
			known[ri] = true
		}
		for k := range th.Partials {
			q := &th.Partials[k]
			if q.Record < 0 {
				continue
			}
			fromEntry, ok := c.partialBlocks(t, q, scratch)
			if !ok {
				known[q.Record] = false
			} else if fromEntry {
				starts[q.Record] += q.Count
			}
		}
		for ri, r := range th.Records {
			name := c.tab.Funcs[r.Func].Name
			if !own[name] || !known[ri] {
				continue
			}
			if starts[ri] != r.Calls {
				t.Errorf("%s: thread %d record %d (%s): %d calls, but %d paths and partials begin at its entry", c.what, ti, ri, name, r.Calls, starts[ri])
			}
		}
	}
}

// site returns the original address of call site cs (Record.CallSite
// convention: index + 1) of function fn, or 0.
func (c *contexts) site(t *testing.T, fn uint32, cs uint32) uint64 {
	t.Helper()
	if cs == 0 {
		return 0
	}
	sites := c.tab.Funcs[fn].CallSites
	if int(cs) > len(sites) {
		t.Errorf("%s: call site %d of %s, which has %d", c.what, cs, c.tab.Funcs[fn].Name, len(sites))
		return 0
	}
	return sites[cs-1]
}

// step writes record ri as a chain element under its parent.
func (c *contexts) step(t *testing.T, bin *binaryInfo, caller uint32, cs uint32, callee uint32) string {
	t.Helper()
	name := c.tab.Funcs[callee].Name
	if cs == 0 {
		return name + "(via -)"
	}
	via := bin.siteVia(c.site(t, caller, cs), name)
	if via == "" {
		return name
	}
	return name + "(via " + via + ")"
}

// trees builds each thread's tree as cctTree, dropping threads without
// fixture code. A record of a fixture function outside every anchored
// chain is an error.
func (c *contexts) trees(t *testing.T, bin *binaryInfo, own map[string]bool) []cctTree {
	t.Helper()
	var out []cctTree
	for ti := range c.prof.Threads {
		th := &c.prof.Threads[ti]
		chains := make([]string, len(th.Records))
		tr := newTree()
		for ri, r := range th.Records {
			name := c.tab.Funcs[r.Func].Name
			switch {
			case name == "main" || r.Parent < 0 && own[name]:
				chains[ri] = name
			case r.Parent >= 0 && chains[r.Parent] != "":
				chains[ri] = chains[r.Parent] + "/" + c.step(t, bin, th.Records[r.Parent].Func, r.CallSite, r.Func)
			case own[name]:
				var up []string
				for p := ri; p >= 0; p = th.Records[p].Parent {
					up = append([]string{c.tab.Funcs[th.Records[p].Func].Name}, up...)
				}
				t.Errorf("%s: thread %d: record %d of %s lies outside main and the thread roots: %s", c.what, ti, ri, name, strings.Join(up, "/"))
				continue
			default:
				continue
			}
			tr.Calls[chains[ri]] += r.Calls
		}
		for _, fc := range th.Folded {
			if fc.From < 0 || fc.From >= len(th.Records) || fc.To < 0 || fc.To >= len(th.Records) {
				t.Errorf("%s: thread %d: folded call %+v names no record", c.what, ti, fc)
				continue
			}
			from, to := chains[fc.From], chains[fc.To]
			if from == "" || to == "" {
				continue
			}
			k := from + " -> " + c.step(t, bin, th.Records[fc.From].Func, fc.CallSite, th.Records[fc.To].Func) + " = " + to
			tr.Folded[k] += fc.Count
		}
		if !tr.empty() {
			out = append(out, tr)
		}
	}
	return out
}

// checkSitesAgainstCallgrind: for every call instruction (or tail jump)
// of an instrumented function and every instrumented function it reaches
// directly or indirectly, the calls the tree counts there, summed over
// contexts and threads (tree edges: Calls minus the calls folded onto the
// record; plus the folded calls), equal callgrind's count for the
// instruction and the callee's entry. Tree edges at a site callgrind never
// saw reach the callee must be callbacks: the site is no direct transfer
// to the callee, and callgrind saw it enter code that is not an
// instrumented function.
func (c *contexts) checkSitesAgainstCallgrind(t *testing.T, bin *binaryInfo, cg *callgrind.Profile) {
	t.Helper()
	entries := map[uint64]int{} // entry → function index, instrumented only
	for i, f := range c.tab.Funcs {
		if f.Instrumented {
			entries[f.Entry] = i
		}
	}
	type key struct{ site, callee uint64 }
	ours := map[key]uint64{}
	for ti := range c.prof.Threads {
		th := &c.prof.Threads[ti]
		into := foldedInto(th)
		for ri, r := range th.Records {
			if r.Parent < 0 || r.CallSite == 0 {
				continue
			}
			s := c.site(t, th.Records[r.Parent].Func, r.CallSite)
			if into[ri] > r.Calls {
				t.Errorf("%s: thread %d record %d (%s): %d calls folded onto it, %d calls in all", c.what, ti, ri, c.tab.Funcs[r.Func].Name, into[ri], r.Calls)
				continue
			}
			ours[key{s, c.tab.Funcs[r.Func].Entry}] += r.Calls - into[ri]
		}
		for _, fc := range th.Folded {
			if fc.From < 0 || fc.From >= len(th.Records) || fc.To < 0 || fc.To >= len(th.Records) {
				continue // reported by trees
			}
			s := c.site(t, th.Records[fc.From].Func, fc.CallSite)
			ours[key{s, c.tab.Funcs[th.Records[fc.To].Func].Entry}] += fc.Count
		}
	}
	theirs := map[key]uint64{}
	leaves := map[uint64]bool{} // sites callgrind saw enter other code
	for k, n := range cg.Calls {
		if _, ok := entries[k[1]]; ok {
			if _, ok := c.funcOf(k[0]); ok {
				theirs[key{k[0], k[1]}] += n
				continue
			}
		}
		leaves[k[0]] = true
	}
	// A jump from one instrumented function to another's entry that
	// callgrind lists as a jump, because it cannot tell the two functions
	// apart (crt's frame_dummy jmp register_tm_clones: symbols of size 0).
	for k, j := range cg.Jumps {
		callee, ok := entries[k[1]]
		if from, ok2 := c.funcOf(k[0]); ok && ok2 && from != callee {
			theirs[key{k[0], k[1]}] += j.Count
		}
	}
	for a := range cg.External {
		if a.From.Object == cg.Object {
			leaves[a.From.Addr] = true
		}
	}
	// Indirect tail jumps (decision 31): callgrind's calls from f's
	// `jmp *` to g, where the tree has none, are compared per (f, g) with
	// the tree's calls of g under f's caller at sites that call f.
	type pair struct{ from, to int }
	theirsVia, oursVia := map[pair]uint64{}, map[pair]uint64{}
	for k, n := range theirs {
		if in := bin.insns[k.site]; in.jump && in.indirect && ours[k] == 0 {
			if f, ok := c.funcOf(k.site); ok {
				theirsVia[pair{f, entries[k.callee]}] += n
				delete(theirs, k)
			}
		}
	}
	name := func(k key) string {
		caller := "?"
		if fi, ok := c.funcOf(k.site); ok {
			caller = c.tab.Funcs[fi].Name
		}
		return fmt.Sprintf("%s@%#x -> %s", caller, k.site, c.tab.Funcs[entries[k.callee]].Name)
	}
	for k, n := range theirs {
		if ours[k] != n {
			t.Errorf("%s: calls %s: blpp %d, callgrind %d", c.what, name(k), ours[k], n)
		}
	}
	for k, n := range ours {
		if _, ok := theirs[k]; ok || n == 0 {
			continue
		}
		// Not a call of the callee by callgrind: a callback, which must
		// have entered code outside the instrumented functions there.
		via := bin.siteVia(k.site, c.tab.Funcs[entries[k.callee]].Name)
		if in := bin.insns[k.site]; !in.jump && !in.indirect && !in.offset {
			if f, ok := entries[in.target]; ok {
				oursVia[pair{f, entries[k.callee]}] += n
				continue
			}
		}
		if via == "" || via == "jmp" || !leaves[k.site] {
			t.Errorf("%s: calls %s (%q): blpp %d, callgrind none, and the site is no callback through uninstrumented code", c.what, name(k), via, n)
		}
	}
	// Functions that only uninstrumented code calls (a thread's start
	// routine behind std::thread's virtual _M_run): the tree cannot put
	// the callee of their indirect tail jump under any call site.
	calledInside := map[uint64]bool{}
	for k := range cg.Calls {
		if _, ok := c.funcOf(k[0]); ok {
			calledInside[k[1]] = true
		}
	}
	for p, n := range theirsVia {
		if oursVia[p] == 0 && !calledInside[c.tab.Funcs[p.from].Entry] {
			t.Logf("%s: %d calls %s -> %s by indirect tail jump from a function only uninstrumented code calls: not in the tree (decision 31)",
				c.what, n, c.tab.Funcs[p.from].Name, c.tab.Funcs[p.to].Name)
			continue
		}
		if oursVia[p] != n {
			from, to := c.tab.Funcs[p.from].Name, c.tab.Funcs[p.to].Name
			t.Errorf("%s: calls %s -> %s by indirect tail jump: blpp %d (at the call sites of %s), callgrind %d",
				c.what, from, to, oursVia[p], from, n)
		}
	}
	for p, n := range oursVia {
		if _, ok := theirsVia[p]; !ok {
			from, to := c.tab.Funcs[p.from].Name, c.tab.Funcs[p.to].Name
			t.Errorf("%s: %d calls of %s at call sites of %s, which callgrind never saw jump to %s",
				c.what, n, to, from, to)
		}
	}
}

// funcOf returns the instrumented function whose code holds addr: the one
// listing it as a call site, else the one whose range [Entry, Entry+Size)
// holds it. The metadata knows the bounds of functions whose symbols have
// no size (crt's register_tm_clones and friends).
func (c *contexts) funcOf(addr uint64) (int, bool) {
	if c.siteFunc == nil {
		c.siteFunc = map[uint64]int{}
		for i, f := range c.tab.Funcs {
			if !f.Instrumented {
				continue
			}
			for _, s := range f.CallSites {
				c.siteFunc[s] = i
			}
		}
	}
	if i, ok := c.siteFunc[addr]; ok {
		return i, true
	}
	best := -1
	for i, f := range c.tab.Funcs {
		if f.Instrumented && f.Entry <= addr && addr < f.Entry+f.Size && (best < 0 || f.Entry > c.tab.Funcs[best].Entry) {
			best = i
		}
	}
	return best, best >= 0
}
