package report

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"github.com/blpp/blpp/internal/outfile"
)

// The DWARF sections the reader uses: DebugInfo reads units, line programs
// and ranges, never location lists, types or frames, so .debug_loc and
// .debug_loclists (libc: 1.4 MB) are neither decompressed nor kept.
var (
	dwarfCore = []string{".debug_abbrev", ".debug_info", ".debug_line", ".debug_ranges", ".debug_str"}
	dwarf5    = []string{".debug_addr", ".debug_line_str", ".debug_rnglists", ".debug_str_offsets"}
)

// dwarfOf returns the DWARF of f as DebugInfo reads it. Where f's debug
// sections are compressed (Debian's separate debug files are), it keeps
// them decompressed in cacheDir, under f's build-id and section sizes, so
// that the next report of the same module does not inflate them again
// (libc's 2.3 MB of compressed .debug_info take 80 ms): that was most of
// what a report of a short program cost once units were read lazily
// (decision 126). Without cacheDir, a build-id or compressed sections, or
// for relocatable files and old .zdebug sections, it is f.DWARF().
func dwarfOf(f *elf.File, cacheDir string) (*dwarf.Data, error) {
	if f.Type == elf.ET_REL || cacheDir == "" {
		return f.DWARF()
	}
	compressed := false
	for _, s := range f.Sections {
		if len(s.Name) > 7 && s.Name[:7] == ".zdebug" {
			return f.DWARF()
		}
		if s.Flags&elf.SHF_COMPRESSED != 0 && isDWARFSection(s.Name) {
			compressed = true
		}
	}
	id := noteBuildID(f)
	if !compressed || len(id) == 0 {
		return f.DWARF()
	}
	path := filepath.Join(cacheDir, dwarfCacheKey(f, id))
	if b, err := os.ReadFile(path); err == nil {
		if secs, err := decodeDWARFCache(b); err == nil {
			if d, err := dwarfFrom(secs); err == nil {
				return d, nil
			}
		}
	}
	secs := map[string][]byte{}
	for _, name := range append(append([]string{}, dwarfCore...), dwarf5...) {
		s := f.Section(name)
		if s == nil {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return f.DWARF()
		}
		secs[name] = b
	}
	d, err := dwarfFrom(secs)
	if err != nil {
		return nil, err
	}
	if os.MkdirAll(cacheDir, 0o755) == nil {
		_ = outfile.Write(path, encodeDWARFCache(secs), 0o644) // a cache: a failure costs the next report time, nothing more
	}
	return d, nil
}

func isDWARFSection(name string) bool {
	for _, n := range append(append([]string{}, dwarfCore...), dwarf5...) {
		if n == name {
			return true
		}
	}
	return false
}

// dwarfCacheKey names f's entry: its build-id and the sizes of its debug
// sections, so that a file rebuilt with the same code and other DWARF,
// which can keep the build-id, does not match.
func dwarfCacheKey(f *elf.File, id []byte) string {
	h := crc32.NewIEEE()
	for _, s := range f.Sections {
		if isDWARFSection(s.Name) {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], s.Size)
			h.Write([]byte(s.Name))
			h.Write(b[:])
		}
	}
	return fmt.Sprintf("%x-%08x.dwarf", id, h.Sum32())
}

// dwarfFrom builds the reader's dwarf.Data from sections by name.
func dwarfFrom(secs map[string][]byte) (*dwarf.Data, error) {
	d, err := dwarf.New(secs[".debug_abbrev"], nil, nil, secs[".debug_info"], secs[".debug_line"], nil, secs[".debug_ranges"], secs[".debug_str"])
	if err != nil {
		return nil, err
	}
	for _, name := range dwarf5 {
		if b, ok := secs[name]; ok {
			if err := d.AddSection(name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// The cache file: dwarfCacheMagic, then per section its name and data
// (uvarint lengths), then the CRC-32C of everything before it.
const dwarfCacheMagic = "BLPPDWF1"

var errDWARFCache = errors.New("bad DWARF cache file")

func encodeDWARFCache(secs map[string][]byte) []byte {
	n := len(dwarfCacheMagic) + 4
	for k, v := range secs {
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	b := append(make([]byte, 0, n), dwarfCacheMagic...)
	for _, name := range append(append([]string{}, dwarfCore...), dwarf5...) {
		v, ok := secs[name]
		if !ok {
			continue
		}
		b = appendBytes(b, []byte(name))
		b = appendBytes(b, v)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeDWARFCache checks and splits a cache file; the sections alias b.
func decodeDWARFCache(b []byte) (map[string][]byte, error) {
	if len(b) < len(dwarfCacheMagic)+4 || !bytes.HasPrefix(b, []byte(dwarfCacheMagic)) {
		return nil, errDWARFCache
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != sum {
		return nil, errDWARFCache
	}
	rest := body[len(dwarfCacheMagic):]
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, false
		}
		v := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return v, true
	}
	secs := map[string][]byte{}
	for len(rest) > 0 {
		name, ok := next()
		if !ok || !isDWARFSection(string(name)) {
			return nil, errDWARFCache
		}
		v, ok := next()
		if !ok {
			return nil, errDWARFCache
		}
		secs[string(name)] = v
	}
	if secs[".debug_info"] == nil || secs[".debug_abbrev"] == nil {
		return nil, errDWARFCache
	}
	return secs, nil
}
