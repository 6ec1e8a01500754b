package rewriter

import (
	"io"

	"github.com/blpp/blpp/rewriter/elfw"
)

// earlyWrite writes parts of the new file while the rest of it is made
// (RewriteTo), on a processor the rewriter's serial stretches leave idle:
// the original's bytes from the start, and the code segment (libLLVM's
// is 250 MB) once its bytes and its file offset are final, while the
// entry jumps, the metadata and the unwind tables are made and the file
// is laid out. Pieces.WriteTo then leaves out what was written.
type earlyWrite struct {
	w     io.WriterAt
	spans []elfw.Span
	errs  chan error
	n     int
}

func newEarlyWrite(w io.WriterAt) *earlyWrite {
	return &earlyWrite{w: w, errs: make(chan error, 4)}
}

// start writes spans on a goroutine of its own. Their bytes must not
// change any more.
func (e *earlyWrite) start(spans ...elfw.Span) {
	e.spans = append(e.spans, spans...)
	e.n++
	go func() {
		for _, s := range spans {
			if _, err := e.w.WriteAt(s.Data, int64(s.Off)); err != nil {
				e.errs <- err
				return
			}
		}
		e.errs <- nil
	}()
}

// wait waits for every write started and returns the first error.
func (e *earlyWrite) wait() error {
	var first error
	for ; e.n > 0; e.n-- {
		if err := <-e.errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// codeSpans are the code's arrays as spans of the file from off.
func codeSpans(off uint64, code [][]byte) []elfw.Span {
	spans := make([]elfw.Span, 0, len(code))
	for _, a := range code {
		if len(a) > 0 {
			spans = append(spans, elfw.Span{Off: off, Data: a})
		}
		off += uint64(len(a))
	}
	return spans
}
