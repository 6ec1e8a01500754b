package wholerun

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/blpp/blpp/rewriter"
)

// Mirrors (decisions 105, 109). A program, or a library, that finds its
// installation from its own path (/proc/self/exe, $ORIGIN, dladdr or its
// link map's l_name: a JDK's launcher finds lib/libjli.so, libjvm.so
// finds JAVA_HOME and lib/modules, Python its prefix) must find the
// original's, not blpp's cache. So each copy is run from a mirror of the
// original's place, kept beside the copy in the cache
// (modules/KEY/mirror/HASH/...): the copy hard-linked under the
// original's file name in a mirror of its directory and of a few
// directories above it, each holding symbolic links to the original's
// other entries. A directory of more than mirrorMax entries (/usr/bin,
// /usr/lib/x86_64-linux-gnu) is mirrored by the way down alone: a link
// costs about half a millisecond here. A mirror is made once per copy
// and place (in a temporary directory, then renamed: concurrent runs
// share the first one made) and stays with the copy, so profiles name a
// file that lasts, and Origin finds the original from it.

// mirrorName is the directory beside a cached copy that holds its
// mirrors.
const mirrorName = "mirror"

// mirrorVersion is 2 since a large directory's mirror links the entries
// the object names (namedEntries).
const mirrorVersion = 2

// mirrorMax is the most entries of a directory a mirror links.
const mirrorMax = 64

// Directories mirrored: an executable's and the one above it
// (bin/../lib); a library's and two above it (lib/server/libjvm.so is
// three below JAVA_HOME, lib/python3.11/lib-dynload/x.so below the
// prefix).
const (
	exeMirrorLevels = 2
	libMirrorLevels = 3
)

// Mirror returns the path the program's copy inst (a copy in the cache)
// runs from: a mirror of prog's directory and of the one above it (past
// links, as /proc/self/exe names the file), with inst under prog's name.
// The same copy in another place has another mirror.
func (wp *Process) Mirror(inst, prog string) (string, error) {
	real, err := filepath.EvalSymlinks(prog)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return "", fmt.Errorf("mirror of %s: %w", prog, err)
	}
	return mirrorAt(inst, filepath.Dir(real), filepath.Base(real), exeMirrorLevels)
}

// LibMirror returns the path the loader is to open for cp, the cached
// copy of the library at path: a mirror of path's directory (past links)
// and of the two above it, with cp under path's file name. The name is
// the one the loader found (libz.so.1, not the libz.so.1.2.13 it links
// to), as the loader names the object ($ORIGIN is its directory, dladdr
// and l_name its path).
func LibMirror(cp, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("mirror of %s: %w", path, err)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return "", fmt.Errorf("mirror of %s: %w", path, err)
	}
	return mirrorAt(cp, dir, filepath.Base(abs), libMirrorLevels)
}

// mirrorAt makes (once) and returns the mirror of dir/name whose file is
// inst: levels directories, dir and those above it up to the root, below
// inst's mirror directory. dir is absolute and has no symbolic links.
func mirrorAt(inst, dir, name string, levels int) (string, error) {
	// chain[0] is dir, chain[i+1] the directory above chain[i]; the root
	// has no name and is the mirror's root itself.
	chain := []string{dir}
	for len(chain) < levels && chain[len(chain)-1] != "/" {
		chain = append(chain, filepath.Dir(chain[len(chain)-1]))
	}
	top := len(chain) - 1
	rels := make([]string, len(chain)) // chain[i]'s place below the mirror's root
	if chain[top] != "/" {
		rels[top] = filepath.Base(chain[top])
	}
	for i := top - 1; i >= 0; i-- {
		rels[i] = filepath.Join(rels[i+1], filepath.Base(chain[i]))
	}
	rel := filepath.Join(rels[0], name)
	// One copy serves files of the same content wherever they are: a
	// mirror per place (and per depth, should one copy be both).
	// mirrorVersion changes the name where what a mirror holds changes:
	// a mirror, once made, is never made again.
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s\x00%d", levels, filepath.Join(dir, name), mirrorVersion)))
	base := filepath.Join(filepath.Dir(inst), mirrorName)
	// The mirror's path is what /proc/self/exe and /proc/self/maps show
	// (the auditor compares): no symbolic links in it.
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	if r, err := filepath.EvalSymlinks(base); err == nil {
		base = r
	}
	final := filepath.Join(base, hex.EncodeToString(sum[:8]))
	if _, err := os.Lstat(filepath.Join(final, rel)); err == nil {
		return filepath.Join(final, rel), nil
	}
	root, err := os.MkdirTemp(base, "tmp.")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(root)
	keep := originEntries(inst, chain)
	keep[0] = append(keep[0], namedEntries(inst, chain[0])...)
	for i := top; i >= 0; i-- {
		skip := name
		if i > 0 {
			skip = filepath.Base(chain[i-1])
		}
		if err := linkEntries(chain[i], filepath.Join(root, rels[i]), skip, keep[i]); err != nil {
			return "", fmt.Errorf("mirror of %s: %w", filepath.Join(dir, name), err)
		}
	}
	if err := linkOrCopy(inst, filepath.Join(root, rel)); err != nil {
		return "", fmt.Errorf("mirror of %s: %w", filepath.Join(dir, name), err)
	}
	if err := os.Rename(root, final); err != nil {
		if _, serr := os.Lstat(filepath.Join(final, rel)); serr != nil {
			return "", fmt.Errorf("mirror of %s: %w", filepath.Join(dir, name), err)
		}
	}
	return filepath.Join(final, rel), nil
}

// originEntries returns, for each directory of chain (as mirrorAt's),
// the entries the object inst reaches through an $ORIGIN run path
// (DT_RUNPATH, DT_RPATH) that lead to one of its DT_NEEDED libraries:
// the library itself, or the first directory on the way to it. A large
// directory's mirror links them too, or the loader, searching $ORIGIN in
// the mirror, finds nothing: glibc's gconv/EUC-JP.so needs libJIS.so
// from $ORIGIN, among 250 other modules, and iconv -t EUC-JP failed
// (decision 121). A file that is not ELF has none.
func originEntries(inst string, chain []string) [][]string {
	keep := make([][]string, len(chain))
	f, err := elf.Open(inst)
	if err != nil {
		return keep
	}
	defer f.Close()
	needed, _ := f.DynString(elf.DT_NEEDED)
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vs, _ := f.DynString(tag)
		for _, v := range vs {
			for _, d := range strings.Split(v, ":") {
				rest, ok := strings.CutPrefix(d, "$ORIGIN")
				if !ok {
					rest, ok = strings.CutPrefix(d, "${ORIGIN}")
				}
				if ok && (rest == "" || rest[0] == '/') {
					dirs = append(dirs, filepath.Join(chain[0], rest))
				}
			}
		}
	}
	for _, d := range dirs {
		for _, n := range needed {
			if strings.Contains(n, "/") {
				continue
			}
			if _, err := os.Stat(filepath.Join(d, n)); err != nil {
				continue
			}
			for i, c := range chain {
				if rel, err := filepath.Rel(c, filepath.Join(d, n)); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
					keep[i] = append(keep[i], strings.SplitN(rel, "/", 2)[0])
					break
				}
			}
		}
	}
	return keep
}

// namedEntries returns the entries of dir, a directory too large to
// mirror whole, whose names the object inst spells in its data as a
// string of its own or as a word of one (split at '/' and ' '): a
// program that runs a sibling from its own directory names it
// (ocamlmktop.opt runs dirname(/proc/self/exe)/ocamlc, a compiler driver
// its passes), and in the mirror the sibling must be there. Nil for a
// small directory (mirrored whole) or a file that is not ELF.
func namedEntries(inst, dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) <= mirrorMax {
		return nil
	}
	f, err := elf.Open(inst)
	if err != nil {
		return nil
	}
	defer f.Close()
	names := make(map[string]bool, len(ents))
	for _, e := range ents {
		names[e.Name()] = true
	}
	var found []string
	seen := map[string]bool{}
	for _, sec := range f.Sections {
		// The data the program reads (OCaml keeps its strings in .data).
		if sec.Type != elf.SHT_PROGBITS || sec.Flags&elf.SHF_ALLOC == 0 || sec.Flags&elf.SHF_EXECINSTR != 0 {
			continue
		}
		data, err := sec.Data()
		if err != nil {
			continue
		}
		for _, str := range bytes.Split(data, []byte{0}) {
			if len(str) < 2 || len(str) > 4096 {
				continue
			}
			for _, w := range bytes.FieldsFunc(str, func(r rune) bool { return r == '/' || r == ' ' }) {
				if n := string(w); names[n] && !seen[n] {
					seen[n] = true
					found = append(found, n)
				}
			}
		}
	}
	return found
}

// linkEntries makes dir at (if needed) with a symbolic link to each entry
// of from but skip; where from has more than mirrorMax entries, to those
// of keep alone.
func linkEntries(from, at, skip string, keep []string) error {
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		return nil
	}
	if len(ents) > mirrorMax {
		// Only the way down is mirrored, and what $ORIGIN finds.
		for _, k := range keep {
			if k == skip {
				continue
			}
			if err := os.Symlink(filepath.Join(from, k), filepath.Join(at, k)); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		}
		return nil
	}
	for _, e := range ents {
		if e.Name() == skip {
			continue
		}
		if err := os.Symlink(filepath.Join(from, e.Name()), filepath.Join(at, e.Name())); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

// linkOrCopy makes to the same file as from: a hard link, or a copy with
// from's permissions where a link cannot be made.
func linkOrCopy(from, to string) error {
	err := os.Link(from, to)
	if err == nil || !(errors.Is(err, syscall.EXDEV) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EMLINK)) {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Origin returns the original of a cached copy, or of the copy's link in
// one of its mirrors, "" if unknown.
func Origin(copyPath string) string {
	d := filepath.Dir(copyPath)
	// mirror/HASH/<up to libMirrorLevels directories>/FILE: the copy's
	// directory is above mirror. (A mirrored directory may hold a link
	// named like OriginName to the original's entry: mirror first.)
	for i, e := 0, d; i <= libMirrorLevels+1; i++ {
		if filepath.Base(e) == mirrorName {
			if b, err := os.ReadFile(filepath.Join(filepath.Dir(e), OriginName)); err == nil {
				return strings.TrimSpace(string(b))
			}
			break
		}
		e = filepath.Dir(e)
	}
	if b, err := os.ReadFile(filepath.Join(d, OriginName)); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

// Original returns the file a path through one of the cache's mirrors
// stands for (the original the mirror's links lead to): a library the
// program opens relative to another's mirror (JAVA_HOME/lib/libjava.so,
// JAVA_HOME being libjvm.so's mirror) is the original library, to be
// rewritten and named as such. Any other path is returned as it is.
func (c *Cache) Original(path string) string {
	roots := []string{filepath.Join(c.Root, "modules")}
	if r, err := filepath.EvalSymlinks(roots[0]); err == nil && r != roots[0] {
		roots = append(roots, r)
	}
	for n := 0; n < 40; n++ { // each step leaves a mirror by one link
		var in string
		for _, r := range roots {
			if strings.HasPrefix(path, r+"/") {
				in = r
			}
		}
		if in == "" {
			return path
		}
		parts := strings.Split(strings.TrimPrefix(path, in+"/"), "/")
		p, moved := in, false
		for i, part := range parts {
			p = filepath.Join(p, part)
			fi, err := os.Lstat(p)
			if err != nil {
				return path
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				continue
			}
			t, err := os.Readlink(p)
			if err != nil {
				return path
			}
			if !filepath.IsAbs(t) {
				t = filepath.Join(filepath.Dir(p), t)
			}
			path, moved = filepath.Join(append([]string{t}, parts[i+1:]...)...), true
			break
		}
		if !moved {
			return path // a file of the cache itself: a copy
		}
	}
	return path
}

// Library returns the path the loader is to open for the library at path
// (which may be a path through a mirror: Original): its instrumented copy
// (Module) in the mirror of its place (LibMirror).
func (c *Cache) Library(path string, opts rewriter.Options, mode string) (string, error) {
	path = c.Original(path)
	cp, err := c.Module(path, opts, mode)
	if err != nil {
		return "", err
	}
	return LibMirror(cp, path)
}
