package rewriter

import (
	"fmt"

	"github.com/blpp/blpp/cfg/ehframe"
	"github.com/blpp/blpp/rewriter/ehwrite"
	"github.com/blpp/blpp/runtime"
)

// rtFrame is the runtime's unwind tables (runtime.Image.Frame: an FDE for
// each of its C functions and stubs) and the address its text lands at in
// the output. buildEH moves each FDE there, after the relocated
// functions', so that a debugger or a profiler stopped in the runtime
// (a stub called from an entry, the profile writer at exit) unwinds into
// the instrumented code and on to main (decision 159). The image's own
// .eh_frame is never copied: its PC-relative pointers hold distances
// inside the image, re-encoded like any other FDE's.
type rtFrame struct {
	frame *ehframe.Frame
	text  uint64
}

// newRTFrame parses img's tables for its text placed at text; nil when the
// image has none.
func newRTFrame(img *runtime.Image, text uint64) (*rtFrame, error) {
	if len(img.Frame) == 0 {
		return nil, nil
	}
	f, err := ehframe.ParseFrame(img.Frame, img.FrameAddr, ehframe.Options{})
	if err != nil {
		return nil, fmt.Errorf("runtime image: .eh_frame: %w", err)
	}
	for _, e := range f.Entries {
		if e.End > uint64(len(img.Text)) || e.LSDA != 0 {
			return nil, fmt.Errorf("runtime image: FDE [%#x,%#x) outside its text or with an exception table", e.Begin, e.End)
		}
	}
	return &rtFrame{frame: f, text: text}, nil
}

// size is what add adds to a Builder: its FDEs and the bytes of their
// programs, with room for the runtime's CIE among them (Builder.Reserve).
func (r *rtFrame) size() (fdes, progBytes int) {
	if r == nil {
		return 0, 0
	}
	for _, c := range r.frame.CIEs {
		progBytes += 64 + len(c.Augmentation) + len(c.Initial)
	}
	for _, e := range r.frame.Entries {
		progBytes += len(e.Program)
	}
	return len(r.frame.Entries), progBytes
}

// add gives bld the runtime's FDEs at their place in the output.
func (r *rtFrame) add(bld *ehwrite.Builder) error {
	if r == nil {
		return nil
	}
	for _, e := range r.frame.Entries {
		if e.End == e.Begin {
			continue
		}
		if err := bld.AddFDEProgram(e.CIE, r.text+e.Begin, r.text+e.End, e.Program, nil, 0); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	return nil
}
