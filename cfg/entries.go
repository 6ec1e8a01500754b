package cfg

import (
	"sort"
	"strings"
)

// Procedures that share code become one procedure with several entries.
//
// Hand-written library code shares tails between entry points: glibc's
// __memmove_sse2_unaligned branches into the middle of
// __memmove_sse2_unaligned_erms for sizes below 16 and above 32,
// __mempcpy_* computes its result and jumps past __memmove_*'s first
// instruction, and the memset family does the same. Each procedure alone
// fails (a jump into the middle of other code), and the one jumped into
// cannot be instrumented either, since the other's original code would
// run its blocks uncounted (decision 83). Together they form a closed
// region of code that is entered only at their entries: joinEntries
// makes that region one procedure whose Addr is one member's entry and
// whose Entries are the others', with the other members' bodies as
// fragments. Its graph has an EdgeEntry from the entry block to each
// other entry's block, so each entry starts paths of its own, exactly as
// a loop head does after a backedge [Ball-Larus 96 §3.3].

// maxJoined bounds the procedures joined into one.
const maxJoined = 16

// joinEntries joins the procedures in todo whose graphs fail by jumping
// or falling into the middle of other procedures with those procedures,
// transitively, where the joined graph is complete and instrumentable
// but for its size and exception tables; a join that does not come out
// whole is dropped and its members stay as they were. It returns todo
// for the new list of procedures.
func (p *Program) joinEntries(todo []int) []int {
	// Every range of every procedure, to find the one that holds an
	// address (a fragment's too).
	type span struct {
		r Range
		i int
	}
	var spans []span
	for i, f := range p.Funcs {
		for _, r := range f.Ranges() {
			spans = append(spans, span{r, i})
		}
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].r.Addr < spans[b].r.Addr })
	holder := func(a uint64) int {
		k := sort.Search(len(spans), func(k int) bool { return spans[k].r.Addr > a }) - 1
		if k >= 0 && spans[k].r.Contains(a) {
			return spans[k].i
		}
		return -1
	}
	selected := make([]bool, len(p.Funcs))
	for _, i := range todo {
		selected[i] = true
	}
	eligible := func(i int) bool {
		f := p.Funcs[i]
		return selected[i] && !f.PLT && !f.MidFrame && f.Size+f.Pad >= 5 && !specialName(f) &&
			!HoldsSigreturn(p.Binary.Code(f.Addr))
	}
	// joined[i] is the joined procedure member i belongs to.
	joined := map[int]*joinedFunc{}
	for _, i := range todo {
		if joined[i] != nil || !joinable(p.Graphs[i]) || !eligible(i) {
			continue
		}
		members := []int{i}
		g := p.Graphs[i]
		for len(members) < maxJoined && joinable(g) {
			j := holder(g.escape)
			if j < 0 || !eligible(j) || p.Funcs[j].Addr == g.escape {
				break
			}
			if jf := joined[j]; jf != nil {
				// Join that whole procedure.
				members = append(members, jf.members...)
			} else {
				members = append(members, j)
			}
			members = dedup(members)
			g = buildGraph(p.Binary, p, joinFuncs(p.Funcs, members))
		}
		if g.Reason != ReasonOK || len(members) < 2 || len(g.EH) > 0 {
			continue
		}
		jf := &joinedFunc{members: members, f: g.Func, g: g}
		for _, m := range members {
			if old := joined[m]; old != nil && old != jf {
				for _, o := range old.members {
					joined[o] = jf
				}
			}
			joined[m] = jf
		}
	}
	if len(joined) == 0 {
		return todo
	}
	// One procedure per join, at its first member's place.
	var funcs []*Function
	var graphs []*Graph
	done := map[*joinedFunc]bool{}
	var nt []int
	for i, f := range p.Funcs {
		jf := joined[i]
		switch {
		case jf == nil:
			if selected[i] {
				nt = append(nt, len(funcs))
			}
			funcs = append(funcs, f)
			graphs = append(graphs, p.Graphs[i])
		case !done[jf]:
			done[jf] = true
			nt = append(nt, len(funcs))
			funcs = append(funcs, jf.f)
			graphs = append(graphs, jf.g)
		}
	}
	for _, jf := range joined {
		for _, m := range jf.members {
			p.byEntry[p.Funcs[m].Addr] = jf.f
		}
	}
	p.Funcs, p.Graphs = funcs, graphs
	p.funcsIdx = make(map[*Function]int, len(funcs))
	for i, f := range funcs {
		p.funcsIdx[f] = i
	}
	return nt
}

// joinedFunc is a procedure joined from members (indices of Funcs).
type joinedFunc struct {
	members []int
	f       *Function
	g       *Graph
}

// joinable reports whether g failed by leaving into the middle of other
// code, which joining might make whole.
func joinable(g *Graph) bool {
	return g != nil && g.escape != 0 && (g.Reason == ReasonEscapingJump || g.Reason == ReasonFallsOff)
}

// specialName reports a procedure whose name the analysis of its callers
// reads (no return, fork, setjmp, process-ending system call wrappers):
// it keeps its own entry.
func specialName(f *Function) bool {
	return f.HasName(func(n string) bool {
		return IsNoReturnName(n) || IsForkName(n) || IsVforkName(n) || IsReturnsTwiceName(n) || LeaveName(n) != 0
	})
}

// dedup sorts members and removes repeats.
func dedup(members []int) []int {
	sort.Ints(members)
	out := members[:0]
	for k, m := range members {
		if k == 0 || m != members[k-1] {
			out = append(out, m)
		}
	}
	return out
}

// joinFuncs is the procedure made of members (sorted indices of funcs):
// its entry and name are the largest member's (a symbol's name beats
// sub_<hex>, then the larger body, then the lower address), the others'
// entries are its Entries, their bodies and fragments its fragments.
func joinFuncs(funcs []*Function, members []int) *Function {
	primary := members[0]
	named := func(m int) bool { return !strings.HasPrefix(funcs[m].Name, "sub_") }
	for _, m := range members[1:] {
		if named(m) != named(primary) {
			if named(m) {
				primary = m
			}
			continue
		}
		if funcs[m].Size > funcs[primary].Size {
			primary = m
		}
	}
	pf := funcs[primary]
	f := *pf
	f.Parts = append([]Range(nil), pf.Parts...)
	f.PartNames = append([]string(nil), pf.PartNames...)
	f.Entries, f.EntryNames = nil, nil
	for _, m := range members {
		if m == primary {
			continue
		}
		mf := funcs[m]
		f.Entries = append(f.Entries, mf.Addr)
		f.EntryNames = append(f.EntryNames, mf.Name)
		f.Parts = append(f.Parts, Range{mf.Addr, mf.Size})
		f.PartNames = append(f.PartNames, mf.Name)
		f.Parts = append(f.Parts, mf.Parts...)
		f.PartNames = append(f.PartNames, mf.PartNames...)
	}
	return &f
}
