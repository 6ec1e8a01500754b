package cct

import (
	"errors"
	"testing"
)

// TestSiblingOffset: a record that repeats a sibling's context is
// refused at its own offset, which the reader finds again after the
// record loop (recordOff) by skipping the records before it: varints of
// several bytes, paths with metric values, and records without paths.
func TestSiblingOffset(t *testing.T) {
	type rec struct {
		fn, parent, site, calls uint64 // parent is index+1
		paths                   int
	}
	recs := []rec{
		{1 << 19, 0, 0, 1 << 40, 3},
		{5, 1, 300, 2, 0},
		{1<<20 - 1, 1, 1, 1, 2},
		{70000, 3, 2, 1 << 20, 1},
		{1<<20 - 1, 1, 1, 7, 1}, // record 2's context again
	}
	payload := rawFile{}.uv(9).uv(uint64(len(recs)))
	var offs []int
	for _, r := range recs {
		offs = append(offs, len(payload))
		payload = payload.uv(r.fn).uv(r.parent).uv(r.site).uv(r.calls).uv(uint64(r.paths))
		for k := range r.paths {
			payload = payload.uv(uint64(1000 * k)).uv(1 << (7 * k)).uv(uint64(200 + k)) // id, count, tsc
		}
	}
	payload = payload.uv(0) // no partials
	head := rawHeader()
	data := head.section(TagThread, payload).trailer()
	start := len(head.u8(TagThread).uv(uint64(len(payload))))
	_, err := Parse(data)
	var fe *FormatError
	if !errors.As(err, &fe) || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Parse: %v, want a second record refused", err)
	}
	if want := start + offs[4]; fe.Off != want {
		t.Errorf("refused at offset %d, want %d (record 4): %v", fe.Off, want, err)
	}
	if want := "thread 0 (tid 9) record 4: second record of function 1048575 at call site 1 under parent 0"; fe.Msg != want {
		t.Errorf("message %q, want %q", fe.Msg, want)
	}
}
