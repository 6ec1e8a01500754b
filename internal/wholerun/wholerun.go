// Package wholerun sets up a whole-process run (decision 82): the
// instrumented copies of a program's executable and of every shared
// object it loads at start, kept in a cache keyed by content, and the
// dynamic loader's command line that runs them with blpp's rtld auditor
// (package runtime/audit), which hands the loader those copies and has
// blpp rewrite, there and then, any other object the program dlopen's.
//
// `blpp run` and the tests that run programs the way it does (the
// /usr/bin sweep, the whole-process oracles) share it, so that what they
// check is what the command does.
//
// The start libraries are the loader's own list (ld.so --list, which maps
// them without running the program). The kernel starts the executable's
// copy from a mirror of the program's installation kept beside the copy
// (Mirror), so that /proc/self/exe and $ORIGIN lead where the program's
// own do; the environment names the auditor (LD_AUDIT) and a directory of
// links named as the program asks for its libraries (DT_NEEDED names, and
// extra files by base name) to the copies, or to the originals of those
// that run as they are (LD_LIBRARY_PATH, before the user's own), and the
// auditor takes these entries out again before the program runs, so that
// the program and its children see their own environment (Command,
// decision 105). Each library's copy is opened from a mirror of the
// library's own place (LibMirror, decision 109), so that a library that
// finds its installation from its own path (libjvm.so) finds the
// original's.
//
// What it trusts: the system loader's list mode, and the cache directory
// to hold only what a Cache wrote there.
package wholerun

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/blpp/blpp/internal/outfile"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"
	"github.com/blpp/blpp/runtime/audit"
)

// Lib is one shared object of a program's start, as the loader resolves
// it: the name the program asks for and the file.
type Lib struct{ Name, Path string }

// Interpreter is prog's PT_INTERP, "" for a static program.
func Interpreter(prog string) (string, error) {
	f, err := elf.Open(prog)
	if err != nil {
		return "", err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return "", err
			}
			return string(bytes.TrimRight(b, "\x00")), nil
		}
	}
	return "", nil
}

// StartLibs lists the shared objects prog loads at start, in the loader's
// order, from the loader's own list mode. The loader itself and the vDSO
// are left out.
func StartLibs(loader, prog string) ([]Lib, error) {
	out, err := exec.Command(loader, "--list", prog).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return nil, fmt.Errorf("%s --list %s: %s", loader, prog, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("%s --list %s: %w", loader, prog, err)
	}
	var libs []Lib
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)"
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[1] != "=>" || !filepath.IsAbs(f[2]) {
			continue
		}
		libs = append(libs, Lib{Name: f[0], Path: f[2]})
	}
	return libs, nil
}

// Cache holds instrumented copies under Root/modules/<key>/<file name>:
// the copy keeps its file name, which reports call the module by, and a
// file OriginName beside it names the original. The key hashes the
// original's bytes, the runtime image, Tool, the mode and the options
// that change the copy, so that a changed input never serves an old copy.
// A Cache may be used by several goroutines: each copy is made once.
type Cache struct {
	Root string
	// Tool identifies the rewriter's build (nil: the key rests on the
	// inputs alone).
	Tool []byte
	// Rewrite writes the instrumented copy of in to out, never a partial
	// one (nil: RewriteFile, in this process).
	Rewrite func(in, out string, opts rewriter.Options) error

	mu      sync.Mutex
	pending map[string]*sync.Mutex // copies being made, by path
	sums    map[fileID][]byte      // content hashes of files already read
}

// fileID tells whether a file is the one hashed before: a sweep asks for
// libc (and for the 100 MB of libLLVM) hundreds of times, and every blpp
// run for each of the program's libraries. The change time is in it
// because no program can set it: a file rewritten in place with its old
// size and modification time put back still gets a new one.
type fileID struct {
	path               string
	dev, ino           uint64
	size, mtime, ctime int64
}

// key names id's entry under Root/sums.
func (id fileID) key() string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d %d %d %d %d", id.path, id.dev, id.ino, id.size, id.mtime, id.ctime))
	return hex.EncodeToString(h[:16])
}

// OriginName is the file beside a cached copy that names its original.
const OriginName = "origin"

// Module returns the path of the instrumented copy of the object at path,
// rewritten with opts when the cache lacks it; mode names the options
// that are not in the key otherwise (metrics, context, shadow frames), as
// the caller spells them.
func (c *Cache) Module(path string, opts rewriter.Options, mode string) (string, error) {
	sum, err := c.contentSum(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(sum)
	h.Write(runtime.ImageBytes())
	h.Write(c.Tool)
	fmt.Fprintf(h, "%s tag=%d noslots=%v", mode, opts.ModuleTag, opts.NoSlots)
	dir := filepath.Join(c.Root, "modules", hex.EncodeToString(h.Sum(nil)[:12]))
	out := filepath.Join(dir, filepath.Base(path))
	unlock := c.lock(out)
	defer unlock()
	if _, err := os.Stat(out); err == nil {
		if _, err := os.Stat(filepath.Join(dir, OriginName)); err != nil {
			writeOrigin(dir, path)
		}
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	rewrite := c.Rewrite
	if rewrite == nil {
		rewrite = func(in, out string, opts rewriter.Options) error {
			_, err := RewriteFile(in, out, opts)
			return err
		}
	}
	if err := rewrite(path, out, opts); err != nil {
		return "", err
	}
	writeOrigin(dir, path)
	return out, nil
}

// contentSum is the SHA-256 of the file at path, remembered while the
// file stays the same (device, inode, size, modification and change
// times): in memory, and under Root/sums for later runs. Hashing the 18
// libraries of clang (180 MB) took 0.2 s of every cached blpp run
// (decision 132).
// FileSum is the SHA-256 of the file at path, remembered under Root/sums
// by the file's identity (fileID) so that a file met again is not read.
func (c *Cache) FileSum(path string) ([]byte, error) { return c.contentSum(path) }

func (c *Cache) contentSum(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var id fileID
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id = fileID{path: path, dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), mtime: fi.ModTime().UnixNano(), ctime: st.Ctim.Nano()}
		c.mu.Lock()
		sum, ok := c.sums[id]
		c.mu.Unlock()
		if ok {
			return sum, nil
		}
		if sum := c.storedSum(id); sum != nil {
			c.remember(id, sum)
			return sum, nil
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	sum := h.Sum(nil)
	if id.path != "" {
		c.remember(id, sum)
		c.storeSum(id, sum)
	}
	return sum, nil
}

func (c *Cache) remember(id fileID, sum []byte) {
	c.mu.Lock()
	if c.sums == nil {
		c.sums = map[fileID][]byte{}
	}
	c.sums[id] = sum
	c.mu.Unlock()
}

// storedSum is id's sum from an earlier run, nil when there is none (or
// what is there is not a sum).
func (c *Cache) storedSum(id fileID) []byte {
	if c.Root == "" {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.Root, "sums", id.key()))
	if err != nil || len(b) != sha256.Size {
		return nil
	}
	return b
}

// storeSum keeps id's sum for later runs; failing to is no error (the
// next run hashes the file again).
func (c *Cache) storeSum(id fileID, sum []byte) {
	if c.Root == "" {
		return
	}
	dir := filepath.Join(c.Root, "sums")
	if os.MkdirAll(dir, 0o755) == nil {
		_ = outfile.Write(filepath.Join(dir, id.key()), sum, 0o644)
	}
}

// lock serialises the making of one copy: two programs of a sweep that
// both need libc wait for one rewrite instead of making two.
func (c *Cache) lock(out string) (unlock func()) {
	c.mu.Lock()
	if c.pending == nil {
		c.pending = map[string]*sync.Mutex{}
	}
	m := c.pending[out]
	if m == nil {
		m = new(sync.Mutex)
		c.pending[out] = m
	}
	c.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// writeOrigin notes beside a cached copy which file it was made from, for
// tools and tests that put a profile's modules next to their originals.
// Best effort: the copy is usable without it.
func writeOrigin(dir, path string) {
	if abs, err := filepath.Abs(path); err == nil {
		os.WriteFile(filepath.Join(dir, OriginName), []byte(abs+"\n"), 0o644)
	}
}

// Setup says what Prepare sets up.
type Setup struct {
	Loader, Prog string
	// Opts and Mode are the mode of the copies (Cache.Module); each
	// library gets its own ModuleTag.
	Opts rewriter.Options
	Mode string
	// Pick selects the libraries to instrument (nil: all); the others run
	// as they are. With NoLibs nothing is rewritten and there is no
	// auditor: the links lead to the originals, so that the executable's
	// $ORIGIN run path still finds them.
	Pick   func(path string) bool
	NoLibs bool
	// Extra are objects the program dlopen's by bare name: they follow
	// the start libraries and are found in DIR by their base names.
	Extra []string
	// Blpp is the command the auditor runs, with `--module-tag N PATH`
	// added, to rewrite an object the program opens later; it prints the
	// path of the copy in its mirror (Cache.Library). Absolute path
	// first; nil: such objects run as they are.
	Blpp []string
	// Progress, when set, is told once when the rewrites take more than
	// a second.
	Progress io.Writer
}

// Process is a prepared whole-process run.
type Process struct {
	Loader  string
	Auditor string // ld.so --audit object, "" without one
	Dir     string // the auditor's directory, removed by Close
	LibDir  string // the links to the libraries (--library-path)
	// Skipped are the libraries that run as they are because they could
	// not be rewritten, each with the reason.
	Skipped []string
	// StaticTLS is the glibc.rtld.optional_static_tls the start-up
	// libraries need under the auditor (statictls.go); 0: the default.
	StaticTLS uint64
	// Profile, when set, is the profile path for the runtime: Command
	// passes it in a BLPP_PROFILE entry that the auditor takes out (code
	// 'B'), so that the program does not see it; the runtime reads it
	// from /proc/self/environ (decision 140).
	Profile string
	// Follow, when set, is a directory holding a link named blpp to the
	// blpp executable: the runtime sends the program's execs through it,
	// so that what the program execs runs instrumented too (decision
	// 167). Passed as Profile is (code 'F').
	Follow string
}

// Prepare rewrites s.Prog's start libraries that s.Pick selects into the
// cache and installs the auditor. A library that cannot be rewritten runs
// as it is and is listed in Skipped. The executable's own copy is the
// caller's (Cache.Module with NoSlots, decision 81).
func (c *Cache) Prepare(s Setup) (*Process, error) {
	// The loader's $ORIGIN is the file the kernel runs, past links
	// (/usr/bin/java is a link into the JDK, whose RUNPATH is
	// $ORIGIN/../lib).
	prog := s.Prog
	if p, err := filepath.EvalSymlinks(prog); err == nil {
		if p, err = filepath.Abs(p); err == nil {
			prog = p
		}
	}
	libs, err := StartLibs(s.Loader, prog)
	if err != nil {
		return nil, err
	}
	for _, x := range s.Extra {
		p, err := filepath.Abs(x)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("--lib: %w", err)
		} else if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("--lib: %s is not a file", x)
		}
		libs = append(libs, Lib{Name: filepath.Base(p), Path: p})
	}
	pick := s.Pick
	if pick == nil || s.NoLibs {
		pick = func(string) bool { return !s.NoLibs }
	}
	wp := &Process{Loader: s.Loader, StaticTLS: staticTLS(libs)}
	if wp.Dir, err = c.runDir(); err != nil {
		return nil, err
	}
	wp.LibDir = filepath.Join(wp.Dir, "lib")
	if err := os.Mkdir(wp.LibDir, 0o755); err != nil {
		wp.Close()
		return nil, err
	}
	m := audit.Map{Objects: map[string]string{}, Blpp: s.Blpp}
	// link puts the library the program asks for by name into DIR, and
	// tells the auditor that DIR's entry is to (not an object to rewrite).
	link := func(l Lib, to string) {
		if l.Name == "" || strings.ContainsRune(l.Name, '/') {
			return
		}
		at := filepath.Join(wp.LibDir, l.Name)
		if os.Symlink(to, at) == nil {
			m.Objects[at] = to
		}
	}
	start := time.Now()
	said := false
	// Each library's tag follows from its name (rewriter.DefaultModuleTag,
	// the next free one on a clash), so that a library keeps its tag, and
	// its cached copy, from one program to the next.
	taken := map[uint32]bool{0: true}
	for _, l := range libs {
		if !pick(l.Path) {
			m.Objects[l.Path] = l.Path
			link(l, l.Path)
			continue
		}
		if !said && s.Progress != nil && time.Since(start) > time.Second {
			fmt.Fprintf(s.Progress, "blpp run: instrumenting %d shared objects (cached for later runs)\n", len(libs))
			said = true
		}
		tag := rewriter.DefaultModuleTag(l.Name)
		for taken[tag] {
			tag = tag%runtime.MaxModuleTag + 1
		}
		taken[tag] = true
		m.Used = append(m.Used, int(tag))
		opts := s.Opts
		opts.ModuleTag = uint64(tag)
		// The loader opens the copy from its mirror (decision 109).
		cp, err := c.Library(l.Path, opts, s.Mode)
		if err != nil {
			wp.Skipped = append(wp.Skipped, fmt.Sprintf("%s: %s", l.Name, strings.TrimPrefix(err.Error(), l.Path+": ")))
			m.Objects[l.Path] = l.Path
			link(l, l.Path)
			continue
		}
		m.Objects[l.Path] = cp
		link(l, cp)
	}
	// With no library instrumented the auditor still hands the program
	// its own environment back (Command).
	if wp.Auditor, err = audit.Install(wp.Dir, m); err != nil {
		wp.Close()
		return nil, err
	}
	return wp, nil
}

// Close removes the set-up directory.
func (wp *Process) Close() error { return os.RemoveAll(wp.Dir) }

// RewriteFile rewrites the object in into out with in's permissions. The
// output goes to a temporary file beside out and is renamed, so a
// failure never leaves a partial out.
func RewriteFile(in, out string, opts rewriter.Options) (*rewriter.Summary, error) {
	fi, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a binary", in)
	}
	data, err := os.ReadFile(in)
	if err != nil {
		return nil, err
	}
	// The new file goes straight to disk from the rewriter's pieces (a
	// large library's is half a gigabyte); a device or FIFO gets it
	// assembled.
	var sum *rewriter.Summary
	var rerr error
	err = outfile.WriteWith(out, fi.Mode().Perm(), func(f *os.File) error {
		_, sum, rerr = rewriter.RewriteTo(f, data, opts)
		return rerr
	})
	if errors.Is(err, outfile.ErrNotRegular) {
		var res []byte
		res, sum, rerr = rewriter.Rewrite(data, opts)
		if rerr == nil {
			err = outfile.Write(out, res, fi.Mode().Perm())
		}
	}
	if rerr != nil && !errors.Is(rerr, rewriter.ErrWrite) {
		return nil, fmt.Errorf("%s: %w", in, rerr)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", out, err)
	}
	return sum, nil
}
