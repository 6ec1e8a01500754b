package cfg

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/internal/par"
	"github.com/blpp/blpp/internal/phase"
)

// Options control whole-binary analysis.
type Options struct {
	// Workers is the number of goroutines building graphs; 0 means
	// GOMAXPROCS.
	Workers int
	// Match selects the procedures to analyse; nil means all. No-return
	// inference then only sees the selected procedures.
	Match func(*Function) bool
}

// Program is the analysed binary: every procedure and its graph.
type Program struct {
	Binary *Binary
	Funcs  []*Function // sorted by entry address
	// Graphs is parallel to Funcs; nil for procedures not selected.
	Graphs []*Graph

	byEntry  map[uint64]*Function
	noRet    map[uint64]bool // entry -> known not to return
	noRetMu  sync.RWMutex
	funcsIdx map[*Function]int
	// scan: builds make each graph's flow scan (Graph.scan) for
	// discovery, which is running.
	scan bool
}

// noReturnNames are library procedures that never return to their caller
// (C11 7.22.4, POSIX, the Itanium C++ ABI 2.4 and 15, glibc internals).
var noReturnNames = map[string]bool{
	"exit": true, "_exit": true, "_Exit": true, "quick_exit": true, "abort": true,
	"__stack_chk_fail": true, "__stack_chk_fail_local": true,
	"__assert_fail": true, "__assert_perror_fail": true, "__assert": true,
	"__assert_rtn": true, "__fortify_fail": true, "__chk_fail": true,
	"__libc_fatal": true, "__libc_start_main": true, "__libc_start_call_main": true,
	"_Unwind_Resume": true, "__cxa_throw": true, "__cxa_rethrow": true,
	"__cxa_bad_cast": true, "__cxa_bad_typeid": true, "__cxa_pure_virtual": true,
	"__cxa_deleted_virtual": true, "__cxa_call_unexpected": true,
	"__cxa_throw_bad_array_new_length": true, "_ZSt9terminatev": true,
	"_ZSt10unexpectedv": true, "err": true, "errx": true, "verr": true, "verrx": true,
	"longjmp": true, "_longjmp": true, "siglongjmp": true, "__longjmp_chk": true,
	"pthread_exit": true, "thrd_exit": true, "__pthread_unwind": true,
	"__pthread_unwind_next": true, "_dl_signal_error": true, "__libc_longjmp": true,
	"__libc_siglongjmp": true, "rust_panic": true, "__rust_start_panic": true,
}

// BaseName is a symbol's name without its PLT suffix and symbol version
// (memcpy@plt, _Fork@@GLIBC_2.34): the name the tables of known
// functions below, and the tests' oracles, match on.
func BaseName(name string) string {
	name = strings.TrimSuffix(name, "@plt")
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	return name
}

// IsNoReturnName reports whether a procedure of this name (PLT suffix and
// symbol version ignored) is known never to return.
func IsNoReturnName(name string) bool {
	name = BaseName(name)
	if noReturnNames[name] {
		return true
	}
	// libstdc++'s std::__throw_* helpers and __gnu_cxx::__throw_*.
	if (strings.HasPrefix(name, "_ZSt") || strings.HasPrefix(name, "_ZN9__gnu_cxx")) && strings.Contains(name, "__throw_") {
		return true
	}
	// Rust's core::panicking::* and std::process::exit/abort.
	if strings.HasPrefix(name, "_ZN4core9panicking") || strings.HasPrefix(name, "_ZN3std7process4exit") ||
		strings.HasPrefix(name, "_ZN3std7process5abort") || strings.HasPrefix(name, "_ZN5alloc5alloc18handle_alloc_error") {
		return true
	}
	return false
}

// IsForkName reports fork and its kin (POSIX fork, glibc's _Fork,
// __fork and __libc_fork, and daemon, whose child returns from it),
// whose calls return in a child process that has a copy of the memory
// image of the call. vfork is not one: its child borrows the parent's
// memory until it execs.
func IsForkName(name string) bool {
	name = BaseName(name)
	switch name {
	case "fork", "_Fork", "__fork", "__libc_fork":
		return true
	case "daemon":
		// It forks, and returns 0 in the child alone (decision 94).
		return true
	}
	return false
}

// IsVforkName reports vfork and glibc's __vfork, whose child runs in its
// parent's memory, on its stack, until it execs or exits.
func IsVforkName(name string) bool {
	name = BaseName(name)
	return name == "vfork" || name == "__vfork"
}

// isVfork reports a procedure named vfork or __vfork (an alias counts).
func isVfork(f *Function) bool { return f.HasName(IsVforkName) }

// ContextFunc is the user-context function (C library: swapcontext,
// setcontext, getcontext, makecontext) a symbol of this name is, by its
// public name; "" for any other (decision 122).
func ContextFunc(name string) string {
	name = BaseName(name)
	name = strings.TrimPrefix(name, "__")
	switch name {
	case "swapcontext", "setcontext", "getcontext", "makecontext":
		return name
	}
	return ""
}

// IsContextName reports a user-context function's name (ContextFunc).
func IsContextName(name string) bool { return ContextFunc(name) != "" }

// IsReturnsTwiceName reports setjmp and its kin (C11 7.13.1.1, POSIX
// sigsetjmp, glibc's internal names), whose calls can return twice.
func IsReturnsTwiceName(name string) bool {
	name = BaseName(name)
	switch name {
	case "setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp", "savectx", "getcontext":
		return true
	}
	return false
}

// IsCopiedName reports code the program copies at run time and runs from
// the copy (ReasonCopied): V8's embedded builtins.
func IsCopiedName(name string) bool { return strings.HasPrefix(name, "Builtins_") }

func (p *Program) funcAt(addr uint64) *Function { return p.byEntry[addr] }

func (p *Program) scanning() bool { return p.scan }

func (p *Program) noReturn(addr uint64) bool {
	p.noRetMu.RLock()
	defer p.noRetMu.RUnlock()
	return p.noRet[addr]
}

// FuncAt returns the procedure whose entry is addr, or nil.
func (p *Program) FuncAt(addr uint64) *Function { return p.byEntry[addr] }

// NoReturn reports whether the procedure at entry addr is known never to
// return, by name or by proof from its graph.
func (p *Program) NoReturn(addr uint64) bool { return p.noReturn(addr) }

// Graph returns the graph of f, or nil when it was not analysed.
func (p *Program) Graph(f *Function) *Graph {
	if i, ok := p.funcsIdx[f]; ok {
		return p.Graphs[i]
	}
	return nil
}

// GraphAt builds the graph of f as if it began at entry, an instruction
// of its main body after its first: the instructions before entry are
// no part of it, and a branch back to f's own entry is a tail call to
// f. The rewriter redirects such a function at entry when other code
// branches into its first bytes [decision 67]. It returns nil when entry
// is not inside the main body.
func (p *Program) GraphAt(f *Function, entry uint64) *Graph {
	if entry <= f.Addr || entry-f.Addr >= f.Size {
		return nil
	}
	c := *f
	c.Addr, c.Size = entry, f.Size-(entry-f.Addr)
	g := buildGraph(p.Binary, p, &c)
	if len(g.Blocks) > 0 {
		g.FindLoops()
		g.ComputeFlagsLiveness()
		g.MarkDispatch()
	}
	return g
}

// Analyze discovers the procedures of b and builds the graph of each
// selected one, in parallel. It infers no-return procedures to a fixed
// point: a procedure none of whose exits returns (every exit is a call to
// a no-return procedure, a trap, or a tail call to one) does not return,
// and its callers are rebuilt with that knowledge. Loops, loop depths and
// flags liveness are computed for every graph.
func Analyze(b *Binary, opts Options) *Program {
	funcs := b.Functions()
	phase.Mark("functions")
	p := &Program{Binary: b, Funcs: funcs, Graphs: make([]*Graph, len(funcs)),
		byEntry: make(map[uint64]*Function, len(funcs)), noRet: make(map[uint64]bool),
		funcsIdx: make(map[*Function]int, len(funcs))}
	for i, f := range funcs {
		p.byEntry[f.Addr] = f
		p.funcsIdx[f] = i
		if IsNoReturnName(f.Name) {
			p.noRet[f.Addr] = true
		}
		for _, a := range f.Aliases {
			if IsNoReturnName(a) {
				p.noRet[f.Addr] = true
			}
		}
	}
	// Whether each unnamed procedure saves its context like setjmp
	// (it decodes the procedure's start), on every worker.
	par.Chunks(len(funcs), 1024, opts.Workers, func(_, lo, hi int) {
		for _, f := range funcs[lo:hi] {
			if !f.PLT && strings.HasPrefix(f.Name, "sub_") && SavesContext(b, f.Addr) {
				f.ReturnsTwice = true
			}
		}
	})
	phase.Mark("maps")
	var todo []int
	for i, f := range funcs {
		if opts.Match == nil || opts.Match(f) {
			todo = append(todo, i)
		}
	}
	workers := opts.Workers
	buildAll := func(idx []int) {
		forEach(idx, workers, func(i int) { p.Graphs[i] = buildGraph(b, p, p.Funcs[i]) })
	}
	// The rounds' builds start with the largest procedures (largestFirst);
	// the first build of every procedure keeps address order: its tail
	// is short against its length.
	build := func(idx []int) { buildAll(largestFirst(p.Funcs, idx)) }
	if p.needsDiscovery() {
		// Discovery needs every procedure's flow, selected or not.
		all := make([]int, len(p.Funcs))
		for i := range all {
			all[i] = i
		}
		// The builds make the graphs' flow scans (Graph.scan) for
		// discovery, saving it a decoding of every procedure.
		p.scan = true
		buildAll(all)
		phase.Mark("buildAll")
		p.discover(build, workers)
		phase.Mark("discover")
		p.scan = false
		for _, g := range p.Graphs {
			if g != nil {
				g.scan = nil
			}
		}
		todo = todo[:0]
		for i, f := range p.Funcs {
			if opts.Match == nil || opts.Match(f) {
				todo = append(todo, i)
			} else {
				p.Graphs[i] = nil
			}
		}
	} else {
		buildAll(todo)
	}
	todo = p.joinFragments(todo, build)
	p.padRuns(todo, build)
	phase.Mark("joinFragments")
	todo = p.joinEntries(todo)
	phase.Mark("joinEntries")
	p.blockEntries(todo, build)
	// No-return inference to a fixed point (bounded: each round adds at
	// least one procedure).
	for round := 0; round < 32; round++ {
		// The tests read p.noRet alone: on every worker, collected in
		// todo's order.
		proves := make([]bool, len(todo))
		par.Each(len(todo), workers, func(k int) {
			g := p.Graphs[todo[k]]
			proves[k] = !p.noRet[g.Func.Addr] && provesNoReturn(p, g)
		})
		var found []uint64
		for k, i := range todo {
			if proves[k] {
				found = append(found, p.Graphs[i].Func.Addr)
			}
		}
		if len(found) == 0 {
			break
		}
		newly := make(map[uint64]bool, len(found))
		for _, a := range found {
			p.noRet[a] = true
			newly[a] = true
		}
		calls := make([]bool, len(todo))
		par.Each(len(todo), workers, func(k int) {
			for _, c := range p.Graphs[todo[k]].Calls {
				if newly[c.Target] && !c.NoReturn {
					calls[k] = true
					break
				}
			}
		})
		var again []int
		for k, i := range todo {
			if calls[k] {
				again = append(again, i)
			}
		}
		build(again)
	}
	phase.Mark("noreturn")
	// Per-graph analyses.
	forEach(todo, workers, func(i int) {
		if g := p.Graphs[i]; len(g.Blocks) > 0 {
			g.FindLoops()
			g.ComputeFlagsLiveness()
			g.MarkDispatch()
			g.checkEntryFlags()
		}
	})
	phase.Mark("loopsflags")
	return p
}

// largestFirst returns the indices of idx in decreasing size of their
// procedures (address order among equals), so that the workers start
// with the longest builds: a round that rebuilds a few thousand
// procedures, one of them among the largest of the program (libLLVM:
// 8,000 blocks, 0.1 s), otherwise ends with one worker building it
// while the others wait. Each build writes its own graph and reads
// nothing another build of the round writes, so the order changes no
// result.
func largestFirst(funcs []*Function, idx []int) []int {
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(funcs[b].TotalSize(), funcs[a].TotalSize()) })
	return out
}

// callsTo returns the entries of the procedures keyed in ranges that a
// call in the graphs of todo, or the program's entry point, targets.
func (p *Program) callsTo(todo []int, ranges map[int]map[int]bool) map[uint64]bool {
	want := make(map[uint64]bool, len(ranges))
	for j := range ranges {
		want[p.Funcs[j].Addr] = true
	}
	var parts [par.MaxChunks][]uint64
	par.Chunks(len(todo), 1024, 0, func(c, lo, hi int) {
		var out []uint64
		for _, i := range todo[lo:hi] {
			for _, cl := range p.Graphs[i].Calls {
				if want[cl.Target] {
					out = append(out, cl.Target)
				}
			}
		}
		parts[c] = out
	})
	called := map[uint64]bool{p.Binary.Entry: true}
	for _, out := range parts {
		for _, a := range out {
			called[a] = true
		}
	}
	return called
}

// forEach runs fn on every index with the given number of goroutines.
func forEach(idx []int, workers int, fn func(int)) {
	par.Each(len(idx), workers, func(k int) { fn(idx[k]) })
}

// provesNoReturn reports whether every way out of g avoids returning. Only
// completely analysed graphs count.
func provesNoReturn(p *Program, g *Graph) bool {
	if g.Reason != ReasonOK && g.Reason != ReasonTooShort || len(g.Blocks) == 0 {
		return false
	}
	for _, e := range g.Edges {
		switch e.Kind {
		case EdgeReturn:
			return false
		case EdgeTailCall:
			if e.Target == 0 || !p.noRet[e.Target] {
				return false
			}
		}
	}
	return true
}

// jumpsInto reports whether f's body holds a direct jump into r, by a
// linear sweep (used only to disambiguate cold fragments' parents).
func jumpsInto(b *Binary, f *Function, r Range) bool {
	code := b.Code(f.Addr)
	if uint64(len(code)) > f.Size {
		code = code[:f.Size]
	}
	for off := 0; off < len(code); {
		in, err := x86.DecodeInfo(code[off:], f.Addr+uint64(off))
		if err != nil {
			off++
			continue
		}
		if (in.Kind == x86.Jmp || in.Kind == x86.Jcc) && r.Contains(in.Target) {
			return true
		}
		off += in.Len
	}
	return false
}

// Stats summarises a Program.
type Stats struct {
	Functions, Instrumentable int
	ByReason                  map[Reason]int
}

// Summary counts analysed procedures and the reasons others are refused.
func (p *Program) Summary() Stats {
	s := Stats{ByReason: make(map[Reason]int)}
	for _, g := range p.Graphs {
		if g == nil {
			continue
		}
		s.Functions++
		if g.Instrumentable() {
			s.Instrumentable++
		} else {
			s.ByReason[g.Reason]++
		}
	}
	return s
}

// SortedReasons returns the reasons of s in decreasing count.
func (s Stats) SortedReasons() []Reason {
	var rs []Reason
	for r := range s.ByReason {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool {
		if s.ByReason[rs[i]] != s.ByReason[rs[j]] {
			return s.ByReason[rs[i]] > s.ByReason[rs[j]]
		}
		return rs[i] < rs[j]
	})
	return rs
}

// containing returns the index of the procedure whose main body holds addr.
func (p *Program) containing(addr uint64) int {
	i := sort.Search(len(p.Funcs), func(i int) bool { return p.Funcs[i].Addr > addr }) - 1
	if i >= 0 && p.Funcs[i].Contains(addr) {
		return i
	}
	return -1
}

// joinFragments finds, in stripped binaries, the split-off parts gcc puts
// in .text.unlikely (foo.cold). Such a part has an FDE but no name, is
// never the target of a call, and is jumped to (at its start or in its
// middle) from exactly one procedure. It becomes a fragment of that
// procedure, is removed from the procedure list, and the parent is
// rebuilt. When two unnamed, uncalled ranges jump into each other, the one
// at the lower address is taken for the fragment (.text.unlikely precedes
// .text in the GNU linker's default script). Named fragments were joined
// by name already (Binary.Functions).
//
// A range whose FDE starts mid-frame can only be a fragment, and joins at
// once. One that starts like a function (a fragment of a frameless
// function does too) waits for a round in which no such sure fragment is
// left to join: a procedure that jumps into its own fragment stops
// decoding there, so until that fragment is joined and the procedure
// rebuilt, the calls after the jump are unknown, and one of them may
// call the range (troff: 0x41cb0 was called only from such a procedure,
// and joining it to a landing pad that tail-jumps to it lost its 659
// calls from the count).
func (p *Program) joinFragments(todo []int, build func([]int)) []int {
	taken := p.Binary.dataPointers()
	// A fragment's FDE starts mid-frame; a real function's does not.
	// Nor is a fragment called (a call anywhere in the program, in a
	// procedure whose graph failed too: busybox calls 0x418ee0 from
	// seven sites, and a 5-byte function jumps to it), its address
	// stored in data (a vtable, a table of callbacks) or taken by code
	// (static glibc's IFUNC resolvers lea the variant they pick:
	// busybox's 0x445430, which memmove also tail-jumps to, ran 36,041
	// times in its original bytes while taken for memmove's
	// fragment), even when the only direct transfer to it is a jump (a
	// landing pad's tail call). A fragment of a frameless function
	// starts with the initial rules too, so that alone does not
	// decide. Without these tests, decoding landing pads joined real
	// functions to their callers.
	//
	// mayBeFragment is all of it but the calls the graphs make; it
	// reads nothing a round changes but Parts, which only grow, so a
	// range it refuses at a round's start stays refused to its end.
	//
	// A non-PIE's jump tables hold absolute addresses, so a fragment
	// that a table of its parent leads to (cc1plus's unsigned_condition
	// sends two cases to its .cold call of fancy_abort) is in data too:
	// the words of escaping tables (Graph.escapeWords) do not count.
	var tableWords map[uint64]int32
	mayBeFragment := func(j int) bool {
		f := p.Funcs[j]
		inData := taken[f.Addr] > tableWords[f.Addr]
		return f.Source == FromFDE && (f.MidFrame || !inData && !p.Binary.referenced(f.Addr)) && !p.Binary.calledDirectly(f.Addr) && len(f.Parts) == 0
	}
	for round := 0; round < 16; round++ {
		tableWords = map[uint64]int32{}
		for _, i := range todo {
			if g := p.Graphs[i]; g != nil && g.Reason == ReasonEscapingJump && g.escapeWords > 0 {
				tableWords[g.escape] += g.escapeWords
			}
		}
		// What each procedure jumps into, on every worker, kept where
		// the range may be a fragment (most jumps out are tail calls
		// to functions) and the jumper may have fragments: a
		// procedure found without an FDE (discover.go) was built
		// without unwind tables, and so were its own fragments, so a
		// range with an FDE it jumps to is another procedure.
		into := make([][]int, len(todo))
		par.Each(len(todo), 0, func(k int) {
			i := todo[k]
			if p.Funcs[i].Discovered() {
				return
			}
			g := p.Graphs[i]
			var js []int
			keep := func(j int) {
				if j >= 0 && j != i && mayBeFragment(j) {
					js = append(js, j)
				}
			}
			// Jumps in code only landing pads reach do not join: a
			// cleanup's tail call to a function called elsewhere only
			// through pointers looks like a jump into a fragment. (A
			// landing pad outside the function does join: see below.)
			var normal []bool
			for _, e := range g.Edges {
				if e.Kind != EdgeTailCall || e.Target == 0 {
					continue
				}
				f := p.byEntry[e.Target]
				if f == nil {
					continue
				}
				if normal == nil {
					normal = g.normalBlocks()
				}
				if int(e.From) < len(normal) && !normal[e.From] {
					continue
				}
				keep(p.funcsIdx[f])
			}
			if g.Reason == ReasonEscapingJump && g.escape != 0 {
				keep(p.containing(g.escape))
			}
			into[k] = js
		})
		jumpers := map[int]map[int]bool{} // range index -> procedures jumping into it
		for k, i := range todo {
			for _, j := range into[k] {
				if jumpers[j] == nil {
					jumpers[j] = map[int]bool{}
				}
				jumpers[j][i] = true
			}
		}
		// Which of those ranges the graphs call, on every worker.
		called := p.callsTo(todo, jumpers)
		isFragment := func(j int) bool {
			return mayBeFragment(j) && !called[p.Funcs[j].Addr]
		}
		drop := map[int]bool{}
		rebuild := map[int]bool{}
		// Map order must not decide which range joins which: the result
		// would differ from run to run.
		keys := make([]int, 0, len(jumpers))
		for j := range jumpers {
			keys = append(keys, j)
		}
		sort.Ints(keys)
		sure := false // a mid-frame range joins this round
		for _, j := range keys {
			if len(jumpers[j]) == 1 && isFragment(j) && p.Funcs[j].MidFrame {
				sure = true
				break
			}
		}
		for _, j := range keys {
			set := jumpers[j]
			if len(set) != 1 || !isFragment(j) || sure && !p.Funcs[j].MidFrame {
				continue
			}
			var i int
			for k := range set {
				i = k
			}
			if drop[i] || rebuild[j] {
				continue
			}
			if jumpers[i][j] && isFragment(i) && p.Funcs[i].Addr < p.Funcs[j].Addr {
				continue // i is the fragment of j, not the reverse
			}
			frag, parent := p.Funcs[j], p.Funcs[i]
			parent.Parts = append(parent.Parts, Range{frag.Addr, frag.Size})
			parent.PartNames = append(parent.PartNames, frag.Name)
			delete(p.byEntry, frag.Addr)
			drop[j] = true
			rebuild[i] = true
		}
		if len(drop) == 0 {
			return todo
		}
		// Compact Funcs and Graphs, keeping the indices in todo in step.
		newIdx := make([]int, len(p.Funcs))
		var funcs []*Function
		var graphs []*Graph
		for i, f := range p.Funcs {
			if drop[i] {
				newIdx[i] = -1
				continue
			}
			newIdx[i] = len(funcs)
			funcs = append(funcs, f)
			graphs = append(graphs, p.Graphs[i])
		}
		p.Funcs, p.Graphs = funcs, graphs
		p.funcsIdx = make(map[*Function]int, len(funcs))
		for i, f := range funcs {
			p.funcsIdx[f] = i
		}
		var nt, again []int
		for _, i := range todo {
			if newIdx[i] >= 0 {
				nt = append(nt, newIdx[i])
				if rebuild[i] {
					again = append(again, newIdx[i])
				}
			}
		}
		todo = nt
		build(again)
	}
	return todo
}

// padRuns gives each procedure whose flow runs through the nops after
// its range into the next procedure's entry (Graph.padTo) those nops,
// and builds it again: they run every time that way (glibc's
// __memmove_chk_avx_unaligned runs five 11-byte nopw before
// __memmove_avx_unaligned, 0.6% of make's instructions), and counted
// they must lie in a block. Only padding grows a range (the builder
// decoded nothing but nops there): no procedure's range holds its ends
// [decision 178].
func (p *Program) padRuns(todo []int, build func([]int)) {
	var again []int
	for _, i := range todo {
		g, f := p.Graphs[i], p.Funcs[i]
		if g == nil || g.padTo == 0 || g.padTo <= f.Addr+f.Size || p.byEntry[g.padTo] == nil {
			continue
		}
		if p.containing(f.Addr+f.Size) >= 0 || p.containing(g.padTo-1) >= 0 {
			continue
		}
		f.NopsFrom = f.Addr + f.Size
		f.Size, f.Pad = g.padTo-f.Addr, 0
		again = append(again, i)
	}
	if len(again) > 0 {
		build(again)
	}
}

// blockEntries gives a block of hand-written interpreter code the entries
// other procedures jump to (decision 174). LuaJIT's virtual machine is
// one range of assembly with one FDE whose rules hold its C frame
// throughout: lua_call, lua_resume and others end with a jump to one of
// its entry points (lj_vm_call, lj_vm_resume, …), which set the frame
// up, and its first bytes are the handler of bytecode 0, reached only
// through the dispatch table. Where a procedure's escaping jump or a
// direct call lands inside such a block (its gotos reaching the labels of
// an offset table) away from its entries, the target becomes an entry.
// A mid-frame block's start is a label like any other handler, not an
// entry: the lowest target is its Addr, the others its Entries, and the
// bytes before the lowest a part. A block that its one jumper took for a
// fragment (joinFragments) adds the targets to that procedure's Entries.
// The jumpers are built again, their jumps now tail calls. A block whose
// graph does not come out whole stays as it was.
func (p *Program) blockEntries(todo []int, build func([]int)) {
	orig := map[int]Range{}
	for round := 0; round < 4; round++ {
		var blocks []int
		for _, k := range todo {
			if g := p.Graphs[k]; g != nil && g.offsetDispatch {
				blocks = append(blocks, k)
			}
		}
		if len(blocks) == 0 {
			return
		}
		holder := func(a uint64) int {
			for _, k := range blocks {
				if f := p.Funcs[k]; f.Contains(a) && !f.IsEntry(a) {
					return k
				}
			}
			return -1
		}
		targets := map[int][]uint64{}
		jumpers := map[int][]int{}
		for _, i := range todo {
			g := p.Graphs[i]
			if g == nil {
				continue
			}
			if g.Reason == ReasonEscapingJump && g.escape != 0 {
				if j := holder(g.escape); j >= 0 && j != i {
					targets[j] = append(targets[j], g.escape)
					jumpers[j] = append(jumpers[j], i)
				}
			}
			// A direct call into the block's middle (lua_pcall calls
			// lj_vm_pcall) would run its original code.
			for _, c := range g.Calls {
				if j := holder(c.Target); j >= 0 && c.Target != 0 {
					targets[j] = append(targets[j], c.Target)
				}
			}
		}
		if len(targets) == 0 {
			return
		}
		keys := make([]int, 0, len(targets))
		for j := range targets {
			keys = append(keys, j)
		}
		sort.Ints(keys)
		var again []int
		for _, j := range keys {
			old, oldG := p.Funcs[j], p.Graphs[j]
			prevOrig, hadOrig := orig[j]
			f := *old
			if old.MidFrame {
				// The block's start is a label, not an entry: the
				// lowest target becomes Addr, the bytes before it a part.
				r, ok := orig[j]
				if !ok {
					r = Range{old.Addr, old.Size}
				}
				entries := append(append([]uint64{old.Addr}, old.Entries...), targets[j]...)
				if old.Addr == r.Addr {
					entries = entries[1:]
				}
				slices.Sort(entries)
				entries = slices.Compact(entries)
				f.Addr, f.Size = entries[0], r.End()-entries[0]
				f.Entries = entries[1:]
				f.Parts = nil
				if f.Addr > r.Addr {
					f.Parts = append(f.Parts, Range{r.Addr, f.Addr - r.Addr})
				}
				for _, pt := range old.Parts {
					if pt.Addr != r.Addr {
						f.Parts = append(f.Parts, pt)
					}
				}
				orig[j] = r
			} else {
				// A procedure that took the block for a fragment of its
				// own (its one jumper): the targets join its entries.
				f.Entries = append(slices.Clone(old.Entries), targets[j]...)
				slices.Sort(f.Entries)
				f.Entries = slices.Compact(f.Entries)
			}
			f.EntryNames = nil
			for _, e := range f.Entries {
				f.EntryNames = append(f.EntryNames, fmt.Sprintf("%s+%#x", old.Name, e-old.Addr))
			}
			p.Funcs[j] = &f
			build([]int{j})
			if p.Graphs[j].Reason != ReasonOK {
				p.Funcs[j], p.Graphs[j] = old, oldG
				if hadOrig {
					orig[j] = prevOrig
				} else {
					delete(orig, j)
				}
				continue
			}
			if p.byEntry[old.Addr] == old {
				delete(p.byEntry, old.Addr)
			}
			for _, e := range old.Entries {
				if p.byEntry[e] == old {
					delete(p.byEntry, e)
				}
			}
			p.byEntry[f.Addr] = &f
			for _, e := range f.Entries {
				p.byEntry[e] = &f
			}
			delete(p.funcsIdx, old)
			p.funcsIdx[&f] = j
			again = append(again, jumpers[j]...)
		}
		build(again)
	}
}
