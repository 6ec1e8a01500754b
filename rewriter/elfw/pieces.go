package elfw

import (
	"fmt"
	"io"
	"syscall"
)

// Pieces is a rewritten file laid out but not assembled: byte slices at
// file offsets, each later one written over the earlier ones, and zeros
// where none is. Most of a rewritten file is bytes that exist already
// (the original, the new segments' code and tables), so a caller that
// writes the file (WriteTo) need not build it in memory first: a large
// library's output was one more array of half a gigabyte, and a copy.
type Pieces struct {
	// Size is the file's size.
	Size   int64
	pieces []piece
}

type piece struct {
	off  uint64
	data []byte
}

// Whole is the file b as Pieces.
func Whole(b []byte) *Pieces {
	return &Pieces{Size: int64(len(b)), pieces: []piece{{0, b}}}
}

// put places data at off. Pieces keeps data: the caller must not change
// it.
func (p *Pieces) put(off uint64, data []byte) {
	if len(data) > 0 {
		p.pieces = append(p.pieces, piece{off, data})
	}
}

// patchGap is how far apart two patches of the original may be and
// still go out as one piece (putPatches).
const patchGap = 4096

// putPatches places n patches over base, the piece at offset 0: patch
// i is data at off (at(i)), sorted by offset and not overlapping.
// Patches less than patchGap apart go out as one piece, base's bytes
// between them copied: a large library's entry jumps are a hundred
// thousand 5-byte patches, which written one by one cost as many
// system calls (a second of libLLVM's rewrite).
func (p *Pieces) putPatches(base []byte, n int, at func(i int) (off uint64, data []byte)) {
	for i := 0; i < n; {
		lo, d := at(i)
		hi := lo + uint64(len(d))
		j := i + 1
		for ; j < n; j++ {
			o, d := at(j)
			if o < hi || o-hi >= patchGap || o+uint64(len(d)) > uint64(len(base)) {
				break
			}
			hi = o + uint64(len(d))
		}
		if j == i+1 || hi > uint64(len(base)) {
			p.put(lo, d)
			i++
			continue
		}
		run := append([]byte(nil), base[lo:hi]...)
		for ; i < j; i++ {
			o, d := at(i)
			copy(run[o-lo:], d)
		}
		p.put(lo, run)
	}
}

// Bytes assembles the file.
func (p *Pieces) Bytes() []byte {
	buf := make([]byte, p.Size)
	for _, pc := range p.pieces {
		copy(buf[pc.off:], pc.data)
	}
	return buf
}

// Span is bytes at a file offset.
type Span struct {
	Off  uint64
	Data []byte
}

// WriteTo writes the file to w, which must read back zeros where
// nothing was written (a new or truncated file): the pieces go in
// order, over each other where they overlap, and the last one ends the
// file. written are pieces the caller wrote to w before (the original at
// offset 0, a segment's arrays at SegmentOff): a piece that is one of
// them (the same offset and the same bytes, by identity: the same array
// and length) is taken for written already, unless an earlier piece
// overlaps it, which writing it now must cover again. A span that is no
// piece must lie inside one, else it is an error: the file would hold
// bytes the layout does not.
func (p *Pieces) WriteTo(w io.WriterAt, written ...Span) error {
	done := make(map[uint64]Span, len(written))
	for _, s := range written {
		if len(s.Data) > 0 {
			done[s.Off] = s
		}
	}
	skip := make([]bool, len(p.pieces))
	for k, pc := range p.pieces {
		s, ok := done[pc.off]
		if !ok || len(s.Data) != len(pc.data) || &s.Data[0] != &pc.data[0] {
			continue
		}
		delete(done, pc.off)
		skip[k] = true
		end := pc.off + uint64(len(pc.data))
		for _, q := range p.pieces[:k] {
			if q.off < end && pc.off < q.off+uint64(len(q.data)) {
				skip[k] = false
				break
			}
		}
	}
	// A span that is no piece must lie in one, which writes over it (a
	// file assembled after its layout: Whole).
	for _, s := range done {
		covered := false
		for _, pc := range p.pieces {
			if pc.off <= s.Off && s.Off+uint64(len(s.Data)) <= pc.off+uint64(len(pc.data)) {
				covered = true
				break
			}
		}
		if !covered {
			return fmt.Errorf("elfw: internal error: bytes written early at file offset %#x are neither a piece of the file nor inside one", s.Off)
		}
	}
	for k, pc := range p.pieces {
		if skip[k] {
			continue
		}
		if _, err := w.WriteAt(pc.data, int64(pc.off)); err != nil {
			return err
		}
	}
	return nil
}

// ends reports whether the last piece ends the file (so that writing
// the pieces gives the file its size).
func (p *Pieces) ends() bool {
	n := len(p.pieces)
	return n > 0 && int64(p.pieces[n-1].off)+int64(len(p.pieces[n-1].data)) == p.Size
}

// sparse returns a view of the file as long as it that holds the bytes
// of the given ranges and zeros elsewhere, and a function that frees it.
// The view is a private anonymous mapping: the pages the ranges do not
// touch take no memory.
func (p *Pieces) sparse(ranges ...[2]uint64) ([]byte, func(), error) {
	if p.Size <= 0 || p.Size > 1<<40 {
		return nil, nil, fmt.Errorf("file of %d bytes", p.Size)
	}
	view, err := syscall.Mmap(-1, 0, int(p.Size), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, nil, fmt.Errorf("mapping %d bytes: %w", p.Size, err)
	}
	for _, pc := range p.pieces {
		end := pc.off + uint64(len(pc.data))
		for _, r := range ranges {
			lo, hi := max(pc.off, r[0]), min(end, r[1])
			if lo < hi {
				copy(view[lo:hi], pc.data[lo-pc.off:hi-pc.off])
			}
		}
	}
	return view, func() { syscall.Munmap(view) }, nil
}
