package rewriter

import (
	goruntime "runtime"
	"sync"

	"github.com/blpp/blpp/cfg/x86"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/rewriter/addrmap"
	"github.com/blpp/blpp/rewriter/enc"
	"github.com/blpp/blpp/runtime"
)

// Emission runs on every worker. Each function's code goes into a child
// of the image's code buffer (enc.Buf.Child), through a view of the
// generator whose buffer is that child; the functions are then appended
// to the image's buffer in table order (join), as if emitted there one
// after another.
//
// A function's bytes depend on where it starts only through alignment
// (alignTo: block starts on 64-byte lines) and through the %rsp
// displacement the buffer is at when it starts (unwind rows): not on
// the address itself, since every field is filled once the code is laid
// out. So the workers take consecutive runs of functions (chunks) and
// emit each one at the offset, modulo maxAlign, and displacement that
// the one before it in the chunk ends at; the first of a chunk is a
// guess. The join checks each function's guess against where the image
// has got to and emits it again, there and then, when it was wrong:
// usually the first function of a chunk, and the ones after it until a
// function with a 64-byte aligned block brings the offsets back in
// step. The result is the serial emission's, byte for byte.
//
// Where it was emitted the worker also works out the function's unwind
// rows and address map, which depend only on its own code; the join
// moves them with the code. The plan is read only (funcPlan); what
// emission writes outside the function (call-site return labels, jump
// table copies and their loads) goes to the view and is merged at the
// join.

// maxAlign is the largest alignment the emitters ask for (alignTo).
const maxAlign = 64

// chunkBytes is how much original code a chunk holds at least: enough
// that a wrong guess at its start costs little, few enough that the
// workers share the work evenly.
const chunkBytes = 64 << 10

// childSize is about how many bytes of code emission makes of a byte of
// original code (libLLVM: 261 MB of 52 MB, a little under 5 on average;
// a function that makes more grows its arrays once more).
const childSize = 4

// funcCode is one function's emitted code, before the join.
type funcCode struct {
	fg      *funcGen
	buf     *enc.Buf // the child it was emitted into
	at      int      // where buf was meant to start in the image's buffer
	sp      int32    // and the %rsp displacement there
	err     error
	siteRet map[int32]enc.Label
	patches []patch
	unwind  funcUnwind
	amap    addrmap.Code
	meta    meta.EncodedFunc
}

// emitOne emits fp's function into a new child of g.buf meant to start
// at offset at with %rsp displacement sp, and works out its unwind rows
// and address map there.
func (g *gen) emitOne(fp *funcPlan, at int, sp int32, uw *unwinder, codeAddr uint64) *funcCode {
	view := *g
	view.buf = g.buf.Child(at, sp, childSize*int(fp.f.Func.TotalSize()))
	view.siteRet = nil // made by the first closed call (setIn)
	view.patches = nil
	fg := &funcGen{funcPlan: fp, g: &view, inLoop: -1}
	sc, _ := scratchPool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer scratchPool.Put(sc)
	fg.marks, fg.copies = sc.marks, sc.copies
	if sc.dec == nil {
		sc.dec = x86.NewDecoder()
	}
	fg.dec = sc.dec
	// A function emitted again fills its table copies again.
	for _, t := range fp.tabOf {
		g.tables[t].done, g.tables[t].targets = false, nil
	}
	fc := &funcCode{fg: fg, buf: view.buf, at: at, sp: sp}
	fc.err = fg.emit()
	if fc.err == nil {
		fc.err = fg.tablesDone()
	}
	if fc.err == nil && g.failEmit != "" && fp.f.Func.Name == g.failEmit {
		fc.err = errFailAsked
	}
	if fc.err == nil {
		fc.unwind = uw.info(g.b, fg, view.buf.SPLog(), sp, codeAddr)
		fc.amap = fg.addrMapCode(codeAddr, &sc.rec)
		metaFunc(fp.f, fp.siteAddrs, &sc.meta)
		fc.meta = meta.EncodeFunc(&sc.meta)
	}
	fc.siteRet, fc.patches = view.siteRet, view.patches
	sc.marks, sc.copies = fg.marks, fg.copies
	fg.dec = nil
	fg.emitted()
	return fc
}

// scratch holds arrays a function's emission fills and its worker is
// done with when emitOne returns, for the next function.
type scratch struct {
	marks  []unwindMark
	copies []copyMark
	meta   meta.Func
	rec    addrmap.Recorder
	dec    *x86.Decoder
}

var scratchPool sync.Pool

// emission is what emitAll leaves for the layout.
type emission struct {
	failed []emitFailure
	unwind []funcUnwind // per g.funcs
	amap   []byte       // the encoded address map
	// reemitted counts the functions emitted again at the join.
	reemitted int
}

// emitAll emits every function of g.funcs into g.buf, placed at
// codeAddr, on g.workers workers, and joins them in order.
func (g *gen) emitAll(uw *unwinder, codeAddr uint64) *emission {
	n := len(g.funcs)
	em := &emission{unwind: make([]funcUnwind, n)}
	plans := make([]*funcPlan, n)
	for i, fg := range g.funcs {
		plans[i] = fg.funcPlan
	}
	// Chunks: runs of consecutive functions of chunkBytes or more.
	type chunk struct {
		lo, hi int
		done   chan struct{}
		// panicked holds what a worker's emission panicked with: the
		// join panics with it, on the caller's goroutine, whose recover
		// (cmd/blpp) reports an internal error as it did before.
		panicked any
	}
	var chunks []chunk
	for lo := 0; lo < n; {
		hi, size := lo, uint64(0)
		for hi < n && size < chunkBytes {
			size += plans[hi].f.Func.TotalSize()
			hi++
		}
		chunks = append(chunks, chunk{lo: lo, hi: hi, done: make(chan struct{})})
		lo = hi
	}
	workers := g.workers
	if workers <= 0 {
		workers = goruntime.GOMAXPROCS(0)
	}
	codes := make([]*funcCode, n)
	// At most this many chunks are emitted ahead of the join.
	ahead := make(chan struct{}, 2*workers)
	next := make(chan int)
	go func() {
		for c := range chunks {
			ahead <- struct{}{}
			next <- c
		}
		close(next)
	}()
	for range workers {
		go func() {
			for c := range next {
				func() {
					defer func() {
						chunks[c].panicked = recover()
						close(chunks[c].done)
					}()
					at, sp := 0, int32(0)
					for i := chunks[c].lo; i < chunks[c].hi; i++ {
						fc := g.emitOne(plans[i], at, sp, uw, codeAddr)
						codes[i] = fc
						at, sp = (fc.buf.Len()+15)&^15, fc.buf.SP()
					}
				}()
			}
		}()
	}
	// The functions whose plans others read while they are emitted
	// (closed and trivial callees: plan.go) keep their analysis.
	keep := map[*funcPlan]bool{}
	for _, fp := range g.closedAt {
		keep[fp] = true
	}
	for _, fp := range g.trivialAt {
		keep[fp] = true
	}
	amap := addrmap.NewEncoder(n)
	// The workers copy g (emitOne's view): what the join collects for g
	// waits until they are done.
	siteRet := map[int32]enc.Label{}
	var patches []patch
	for c := range chunks {
		<-chunks[c].done
		if p := chunks[c].panicked; p != nil {
			panic(p)
		}
		for i := chunks[c].lo; i < chunks[c].hi; i++ {
			fc := codes[i]
			codes[i] = nil
			alignTo(g.buf, 16, 15)
			if fc.at%maxAlign != g.buf.Len()%maxAlign || fc.sp != g.buf.SP() {
				fc = g.emitOne(plans[i], g.buf.Len(), g.buf.SP(), uw, codeAddr)
				em.reemitted++
			}
			shift, err := g.buf.Append(fc.buf)
			fg := fc.fg
			fg.g = g
			g.funcs[i] = fg
			if err != nil && fc.err == nil {
				fc.err = err
			}
			if fc.err != nil {
				em.failed = append(em.failed, emitFailure{fg.f, fc.err})
				continue
			}
			fg.start += shift
			fg.end += shift
			fg.table = runtime.Func{NumPaths: fg.num.NumPaths, Hashed: b2u(fg.hashed()), FirstSite: uint64(fg.firstSite),
				NSites: uint64(fg.nsites()), Slot: uint64(fg.slot), PathReg: fg.pathRegField(), Closed: fg.closedField()}
			fg.meta = fc.meta
			fg.stats = fg.funcPlan.stats()
			if g.release && !keep[fg.funcPlan] {
				fg.dropAnalysis()
			}
			for site, l := range fc.siteRet {
				siteRet[site] = l
			}
			for _, p := range fc.patches {
				p.at += shift
				patches = append(patches, p)
			}
			if fc.unwind.ef != nil {
				fc.unwind.ef.shift(shift, codeAddr)
			}
			em.unwind[i] = fc.unwind
			fc.amap.Shift(shift)
			amap.AddCode(&fc.amap)
		}
		<-ahead
	}
	for site, l := range siteRet {
		g.siteRet[site] = l
	}
	g.patches = append(g.patches, patches...)
	em.amap = amap.Bytes()
	return em
}
