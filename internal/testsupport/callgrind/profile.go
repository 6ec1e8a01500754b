package callgrind

import (
	"fmt"
	"math/bits"
	"slices"
	"syscall"
)

// UnknownObject is the object name callgrind gives code it cannot place in
// a mapped ELF object with symbols: among others the .init, .plt and .fini
// sections of every executable. Its addresses are run-time addresses.
const UnknownObject = "???"

// Loc is an instruction address in an object. Object is the name callgrind
// prints in ob=/cob= lines; Addr is the address as callgrind prints it: the
// ELF virtual address for mapped objects (callgrind subtracts each object's
// load bias), the run-time address for UnknownObject.
type Loc struct {
	Object string
	Addr   uint64
}

func (l Loc) String() string { return fmt.Sprintf("%s@%#x", l.Object, l.Addr) }

// Arc is a control transfer callgrind reports as a call: From is the call
// site (the address of the transferring instruction), To the first
// instruction executed after it.
type Arc struct {
	From, To Loc
}

// Jump is what callgrind reports for a jump from one instruction to
// another within one object (jump= and jcnd= lines).
type Jump struct {
	// Count is the number of times control went from the source to the
	// target.
	Count uint64
	// Executed is, for a conditional jump, the number of times the source
	// instruction ran (taken or not), summed over the contexts callgrind
	// listed it in; 0 for an unconditional jump.
	Executed uint64
	// Conditional says the counts came from jcnd= lines.
	Conditional bool
}

// Profile holds the exact counts callgrind measured for one executable
// object (the "main object"), summed over every context, part, thread and
// process file that was parsed.
//
// Addresses of the main object are ELF virtual addresses: callgrind prints
// code of a position-independent executable with its load bias removed.
// Code callgrind files under UnknownObject (.init, .plt, .fini) is kept in
// UnknownExec and UnknownJumps at run-time addresses until FoldUnknown (Run
// calls it) moves what belongs to the main object into Exec, Calls and
// Jumps.
type Profile struct {
	// Object is the main object's name as callgrind prints it: the absolute
	// path of the executable with symbolic links resolved.
	Object string

	// Exec maps an instruction address to the number of times the
	// instruction executed (its Ir). A rep-prefixed string instruction
	// counts n+1 per execution with count register n: once per iteration
	// plus the final test. Instructions that never ran are absent.
	Exec map[uint64]uint64

	// Calls counts transfers callgrind reports as calls whose site and
	// target both lie in the main object, keyed by (site, target). Besides
	// call instructions this includes jumps from one function into another
	// (tail calls, jumps between foo and foo.cold), which callgrind turns
	// into calls; the key is then the jump instruction and its target.
	Calls map[[2]uint64]uint64

	// Jumps counts jumps inside the main object, keyed by (source,
	// target). They come from --collect-jumps=yes; fall-through is not
	// listed, and a rep-prefixed instruction shows as a conditional jump to
	// itself.
	Jumps map[[2]uint64]Jump

	// External counts calls with one end in the main object (or in
	// UnknownObject) and the other elsewhere: calls into shared libraries,
	// callbacks from them (qsort comparators, main called from libc).
	External map[Arc]uint64

	// Names holds, for the target of every recorded call, the function
	// name callgrind gave it (cfn=), without the 'N recursion-level suffix
	// callgrind appends.
	Names map[Loc]string

	// ObjectIr holds every object's executed instructions (the sum of its
	// Ir), keyed by the name callgrind prints in ob= lines: the main
	// object under Object, code callgrind cannot place under
	// UnknownObject, shared libraries and the dynamic loader by path. It
	// is the whole process's work, the denominator of issue 25's gauge.
	ObjectIr map[string]uint64

	// UnknownExec and UnknownJumps are Exec and Jumps of UnknownObject at
	// run-time addresses, for code FoldUnknown did not (or could not)
	// attribute to the main object.
	UnknownExec  map[uint64]uint64
	UnknownJumps map[[2]uint64]Jump

	// Bias is the load bias FoldUnknown used: run-time address minus ELF
	// address of the main object (0 for ET_EXEC). Folded says FoldUnknown
	// established it and moved the main object's code out of UnknownExec.
	Bias   uint64
	Folded bool

	// Triggers lists what made callgrind dump each part that said so
	// ("desc: Trigger: ..."), in file order: "Program termination",
	// "--dump-before=fork", "--dump-after=blpp_fini", ...
	Triggers []string

	// After holds, when Run was given Options.SplitAfter, the counts of
	// the dumps each process made after a dump that function's return
	// triggered: the work done after it returned (the same object,
	// folded with the same bias). nil otherwise.
	After *Profile

	// PIDs lists, sorted and without repeats, the process ids named by the
	// pid: headers of the parsed files.
	PIDs []int
	// Parts counts the parsed profile parts (dumps).
	Parts int

	// Set by Run only: the exit status of the started process (-1 when a
	// signal ended it), the signal that ended it (0 if none), and what it
	// wrote to standard output and error. valgrind's own messages go to a
	// log file, not to Stderr.
	ExitCode int
	Signal   syscall.Signal
	Stdout   []byte
	Stderr   []byte
}

func newProfile(object string) *Profile {
	return &Profile{
		Object:       object,
		Exec:         map[uint64]uint64{},
		Calls:        map[[2]uint64]uint64{},
		Jumps:        map[[2]uint64]Jump{},
		External:     map[Arc]uint64{},
		Names:        map[Loc]string{},
		ObjectIr:     map[string]uint64{},
		UnknownExec:  map[uint64]uint64{},
		UnknownJumps: map[[2]uint64]Jump{},
	}
}

// CallsTo returns how many calls callgrind saw arrive at addr of the main
// object, from the main object (Calls) and from elsewhere (External). For a
// function entry that only calls reach, this is the number of times the
// function was entered.
func (p *Profile) CallsTo(addr uint64) uint64 {
	var n uint64
	for k, c := range p.Calls {
		if k[1] == addr {
			n += c
		}
	}
	to := Loc{p.Object, addr}
	for a, c := range p.External {
		if a.To == to {
			n += c
		}
	}
	return n
}

// add64 adds b to *a, refusing to wrap.
func add64(a *uint64, b uint64) bool {
	s, carry := bits.Add64(*a, b, 0)
	if carry != 0 {
		return false
	}
	*a = s
	return true
}

func addCount[K comparable](m map[K]uint64, k K, n uint64) bool {
	v := m[k]
	if !add64(&v, n) {
		return false
	}
	m[k] = v
	return true
}

func addJump(m map[[2]uint64]Jump, k [2]uint64, j Jump) bool {
	v := m[k]
	if !add64(&v.Count, j.Count) || !add64(&v.Executed, j.Executed) {
		return false
	}
	v.Conditional = v.Conditional || j.Conditional
	m[k] = v
	return true
}

// addAll adds every entry of q to p with add; false when a sum overflows.
func addAll[K comparable, V any](p, q map[K]V, add func(map[K]V, K, V) bool) bool {
	for k, v := range q {
		if !add(p, k, v) {
			return false
		}
	}
	return true
}

// merge adds the counts of q to p. Both must describe the same object.
func (p *Profile) merge(q *Profile) error {
	overflow := fmt.Errorf("merge: %w: count overflows 64 bits", ErrSyntax)
	if p.Object == "" {
		p.Object = q.Object
	} else if q.Object != p.Object {
		q = q.renamed(p.Object)
	}
	if !addAll(p.Exec, q.Exec, addCount) || !addAll(p.Calls, q.Calls, addCount) ||
		!addAll(p.Jumps, q.Jumps, addJump) || !addAll(p.External, q.External, addCount) {
		return overflow
	}
	for k, s := range q.Names {
		if _, ok := p.Names[k]; !ok {
			p.Names[k] = s
		}
	}
	if !addAll(p.UnknownExec, q.UnknownExec, addCount) || !addAll(p.UnknownJumps, q.UnknownJumps, addJump) ||
		!addAll(p.ObjectIr, q.ObjectIr, addCount) {
		return overflow
	}
	p.PIDs = mergePIDs(p.PIDs, q.PIDs)
	p.Parts += q.Parts
	p.Triggers = append(p.Triggers, q.Triggers...)
	return nil
}

func mergePIDs(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// renamed returns a shallow copy of p whose main-object locations carry the
// name object, for merging files that spell the same executable
// differently (a hard link, a bind mount).
func (p *Profile) renamed(object string) *Profile {
	q := *p
	fix := func(l Loc) Loc {
		if l.Object == p.Object {
			l.Object = object
		}
		return l
	}
	q.External = make(map[Arc]uint64, len(p.External))
	for a, n := range p.External {
		q.External[Arc{fix(a.From), fix(a.To)}] += n
	}
	q.Names = make(map[Loc]string, len(p.Names))
	for l, s := range p.Names {
		q.Names[fix(l)] = s
	}
	q.ObjectIr = make(map[string]uint64, len(p.ObjectIr))
	for ob, n := range p.ObjectIr {
		if ob == p.Object {
			ob = object
		}
		q.ObjectIr[ob] += n
	}
	q.Object = object
	return &q
}
