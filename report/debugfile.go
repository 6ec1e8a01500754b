package report

// This file finds separate debug info: distributions (Debian's dh_strip,
// Fedora's find-debuginfo) strip programs and ship their DWARF and full
// symbol table in a second file, found by the build-id note or the
// .gnu_debuglink section the stripped program keeps. blpp's rewriter keeps
// both in the instrumented copy, and the metadata records the original's
// build-id (meta.Table.OrigBuildID), so the same lookup works on it.

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/blpp/blpp/meta"
)

// SystemDebugDir is the global debug directory gdb searches by default.
const SystemDebugDir = "/usr/lib/debug"

// DebugOptions says where to look for separate debug info when the binary
// has no DWARF of its own.
type DebugOptions struct {
	// Dirs are searched before SystemDebugDir, as gdb searches its
	// debug-file-directory: <dir>/.build-id/xx/rest.debug, then
	// <dir>/<binary's directory>/<debuglink name> (blpp --debug-dir).
	Dirs []string
	// NoSystemDir leaves SystemDebugDir out (tests).
	NoSystemDir bool
	// Debuginfod is the value of DEBUGINFOD_URLS (space-separated). Only
	// file:// URLs and plain local directories laid out as a debuginfod
	// server's tree (<root>/buildid/<hex>/debuginfo) are read: blpp does
	// not fetch over the network.
	Debuginfod string
	// CacheDir keeps the decompressed DWARF of files whose debug
	// sections are compressed, by build-id ("": none; dwarfOf).
	CacheDir string
}

// A DebugSource says where a module's DWARF and symbols came from.
type DebugSource struct {
	// Path is the separate debug file read; "" when the DWARF is the
	// binary's own or none was found.
	Path string
	// Via is how Path was found: "build-id", "debuglink" or "debuginfod".
	Via string
	// Notes say which candidates were refused and why (a debuglink CRC or
	// a build-id that does not match), and which DEBUGINFOD_URLS entries
	// were not read; for the commands to print.
	Notes []string
}

// debugLoad is what LoadDebug returns to the model.
type debugLoad struct {
	Debug   *DebugInfo
	Symbols *Symbols
	// names maps an address to the best .symtab function name the
	// separate debug file gives it (global before local), for functions
	// the stripped metadata calls sub_<hex>.
	names  map[uint64]string
	Source DebugSource
}

// loadDebug reads the DWARF and symbols of binary (path, open file f whose
// original build-id is buildID): f's own when it has DWARF, else those of
// the separate debug file found as gdb finds it [gdb manual, "Debugging
// Information in Separate Files"]:
//
//  1. <dir>/.build-id/<xx>/<rest>.debug for each of o.Dirs, then
//     SystemDebugDir;
//  2. the .gnu_debuglink name in the binary's directory, in its .debug/
//     subdirectory, then in <dir>/<binary's absolute directory>/ for each
//     of those directories; the file's CRC-32 must equal the link's;
//  3. <root>/buildid/<hex>/debuginfo for each local DEBUGINFOD_URLS root.
//
// A candidate whose build-id differs from the binary's is refused with a
// note. Nothing found: f's own symbols and no lines, as before.
func loadDebug(binary string, f *elf.File, buildID []byte, o DebugOptions) debugLoad {
	own := lazySymbols(f)
	if hasDWARF(f) {
		return debugLoad{Debug: newDebugInfoCached(f, o.CacheDir), Symbols: own}
	}
	if len(buildID) == 0 {
		buildID = noteBuildID(f)
	}
	var src DebugSource
	df := findDebugFile(binary, f, buildID, o, &src)
	if df == nil {
		return debugLoad{Symbols: own, Source: src}
	}
	defer df.Close()
	// .symtab is read once, for the symbols and the names.
	symtab, err := df.Symbols()
	var names map[uint64]string
	if err == nil {
		names = symtabNames(symtab)
	} else {
		symtab = nil
	}
	ds := funcSyms(df, symtab)
	// The DWARF is read when a view first needs a line (LazyDebugInfo),
	// from the file opened again then.
	path := src.Path
	di := LazyDebugInfo(func() *DebugInfo {
		f, err := elf.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		return newDebugInfoCached(f, o.CacheDir)
	})
	return debugLoad{Debug: di, Symbols: own.merge(ds), names: names, Source: src}
}

func hasDWARF(f *elf.File) bool {
	s := f.Section(".debug_info")
	if s == nil {
		s = f.Section(".zdebug_info")
	}
	return s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0
}

func (o DebugOptions) dirs() []string {
	ds := append([]string(nil), o.Dirs...)
	if !o.NoSystemDir {
		ds = append(ds, SystemDebugDir)
	}
	return ds
}

// findDebugFile returns the first acceptable candidate, opened; src says
// which, and why others were refused.
func findDebugFile(binary string, f *elf.File, buildID []byte, o DebugOptions, src *DebugSource) *elf.File {
	try := func(path, via string, check func(string) string) *elf.File {
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			return nil
		}
		if check != nil {
			if why := check(path); why != "" {
				src.Notes = append(src.Notes, fmt.Sprintf("%s: %s: skipped", path, why))
				return nil
			}
		}
		// Found by build-id, the file must say it has that build-id; found
		// by debuglink, its CRC-32 vouches for it unless it names another.
		df, why := openDebugFile(path, buildID, via != "debuglink")
		if df == nil {
			src.Notes = append(src.Notes, fmt.Sprintf("%s: %s: refused", path, why))
			return nil
		}
		src.Path, src.Via = path, via
		return df
	}
	if len(buildID) >= 2 {
		h := fmt.Sprintf("%x", buildID)
		for _, d := range o.dirs() {
			if df := try(filepath.Join(d, ".build-id", h[:2], h[2:]+".debug"), "build-id", nil); df != nil {
				return df
			}
		}
	}
	if name, crc, ok := debugLink(f); ok {
		check := func(path string) string {
			got, err := fileCRC(path)
			if err != nil {
				return err.Error()
			}
			if got != crc {
				return fmt.Sprintf("CRC-32 %08x, but %s's .gnu_debuglink wants %08x", got, binary, crc)
			}
			return ""
		}
		dir := filepath.Dir(binary)
		cands := []string{filepath.Join(dir, name), filepath.Join(dir, ".debug", name)}
		if abs, err := filepath.Abs(dir); err == nil {
			for _, d := range o.dirs() {
				cands = append(cands, filepath.Join(d, abs, name))
			}
		}
		for _, c := range cands {
			if df := try(c, "debuglink", check); df != nil {
				return df
			}
		}
	}
	if len(buildID) > 0 {
		h := fmt.Sprintf("%x", buildID)
		var remote []string
		for _, u := range strings.Fields(o.Debuginfod) {
			root, ok := strings.CutPrefix(u, "file://")
			if !ok && !filepath.IsAbs(u) {
				remote = append(remote, u)
				continue
			}
			if df := try(filepath.Join(root, "buildid", h, "debuginfo"), "debuginfod", nil); df != nil {
				return df
			}
		}
		if len(remote) > 0 {
			// Said only when nothing was found: a user whose
			// DEBUGINFOD_URLS names a server learns why it was not asked.
			src.Notes = append(src.Notes, fmt.Sprintf("no debug info found for build-id %s; DEBUGINFOD_URLS %s not asked: blpp reads only file:// URLs and local directories", h, strings.Join(remote, " ")))
		}
	}
	return nil
}

// openDebugFile opens path as an ELF file with DWARF whose build-id is
// buildID (when it has one, or always with needID); why says why not.
func openDebugFile(path string, buildID []byte, needID bool) (df *elf.File, why string) {
	defer func() {
		// debug/elf is not hardened against every malformed input.
		if r := recover(); r != nil {
			df, why = nil, fmt.Sprintf("malformed ELF file (%v)", r)
		}
	}()
	df, err := elf.Open(path)
	if err != nil {
		return nil, err.Error()
	}
	if id := noteBuildID(df); len(buildID) > 0 && (len(id) > 0 || needID) && !bytes.Equal(id, buildID) {
		df.Close()
		if len(id) == 0 {
			return nil, fmt.Sprintf("no build-id, but the binary's is %x", buildID)
		}
		return nil, fmt.Sprintf("build-id %x, but the binary's is %x", id, buildID)
	}
	if !hasDWARF(df) {
		df.Close()
		return nil, "no DWARF"
	}
	return df, ""
}

// noteBuildID returns the NT_GNU_BUILD_ID descriptor of f's notes, or nil
// [gABI "Note Section"; NT_GNU_BUILD_ID = 3, owner "GNU"].
func noteBuildID(f *elf.File) []byte {
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		d, err := s.Data()
		if err != nil {
			continue
		}
		if id := parseBuildIDNote(d, f.ByteOrder); id != nil {
			return id
		}
	}
	return nil
}

// parseBuildIDNote returns the NT_GNU_BUILD_ID descriptor among the notes
// in d, or nil.
func parseBuildIDNote(d []byte, bo binary.ByteOrder) []byte {
	for len(d) >= 12 {
		namesz, descsz, typ := bo.Uint32(d), bo.Uint32(d[4:]), bo.Uint32(d[8:])
		nameEnd := 12 + uint64(namesz)
		descOff := (nameEnd + 3) &^ 3
		descEnd := descOff + uint64(descsz)
		if descEnd > uint64(len(d)) {
			return nil
		}
		if typ == 3 && namesz == 4 && string(d[12:nameEnd]) == "GNU\x00" {
			return append([]byte(nil), d[descOff:descEnd]...)
		}
		next := (descEnd + 3) &^ 3
		if next > uint64(len(d)) {
			return nil
		}
		d = d[next:]
	}
	return nil
}

// debugLink decodes .gnu_debuglink: a NUL-terminated file name, padding
// to 4 bytes, then the CRC-32 of the debug file [gdb manual, "Debugging
// Information in Separate Files"].
func debugLink(f *elf.File) (name string, crc uint32, ok bool) {
	s := f.Section(".gnu_debuglink")
	if s == nil || s.Type == elf.SHT_NOBITS {
		return "", 0, false
	}
	d, err := s.Data()
	if err != nil {
		return "", 0, false
	}
	return parseDebugLink(d, f.ByteOrder)
}

// parseDebugLink decodes the contents of a .gnu_debuglink section.
func parseDebugLink(d []byte, bo binary.ByteOrder) (name string, crc uint32, ok bool) {
	n := bytes.IndexByte(d, 0)
	off := (n + 4) &^ 3
	if n <= 0 || off+4 > len(d) {
		return "", 0, false
	}
	name = string(d[:n])
	// A bare file name only: the link must not lead out of the directories
	// searched.
	if strings.ContainsRune(name, '/') || name == "." || name == ".." {
		return "", 0, false
	}
	return name, bo.Uint32(d[off:]), true
}

// fileCRC is the CRC-32 (IEEE, as gdb's gnu_debuglink_crc32) of the file.
func fileCRC(path string) (uint32, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, fh); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// symtabNames maps each function address of a .symtab, ss, to its name, a
// global or weak symbol before a local one (cfg names functions so).
func symtabNames(ss []elf.Symbol) map[uint64]string {
	out := map[uint64]string{}
	global := map[uint64]bool{}
	for _, y := range ss {
		if elf.ST_TYPE(y.Info) != elf.STT_FUNC || y.Value == 0 || y.Section == elf.SHN_UNDEF || y.Name == "" {
			continue
		}
		g := elf.ST_BIND(y.Info) != elf.STB_LOCAL
		if _, ok := out[y.Value]; !ok || (g && !global[y.Value]) {
			out[y.Value], global[y.Value] = y.Name, g
		}
	}
	return out
}

// merge returns the symbols of s and the function symbols o (funcSyms)
// of another file, s's first at a shared address and size. They are
// sorted and merged when first looked up: a report that looks up no
// symbol does neither, nor reads s's (whose file must stay open until
// then, as lazySymbols's).
func (s *Symbols) merge(o []elfSym) *Symbols {
	if len(o) == 0 {
		return s
	}
	return &Symbols{read: func() []elfSym { return mergeSyms(s.list(), dedupeSyms(sortSyms(o))) }}
}

// nameStripped gives the functions the metadata calls sub_<hex> the name
// the separate debug file's symbol table gives their entry. The table is
// copied first: the caller's stays as the rewriter wrote it.
func nameStripped(tab *meta.Table, names map[uint64]string) *meta.Table {
	if len(names) == 0 {
		return tab
	}
	var t *meta.Table
	for i := range tab.Funcs {
		f := &tab.Funcs[i]
		name, ok := names[f.Entry]
		// The prefix first: Sprintf of every named entry took a
		// millisecond of a whole-process report.
		if !ok || !strings.HasPrefix(f.Name, "sub_") || f.Name != fmt.Sprintf("sub_%x", f.Entry) {
			continue
		}
		if t == nil {
			c := *tab
			c.Funcs = append([]meta.Func(nil), tab.Funcs...)
			t = &c
		}
		t.Funcs[i].Name = name
	}
	if t != nil {
		return t
	}
	return tab
}
