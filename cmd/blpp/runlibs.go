package main

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
	"regexp"
	"strings"
	"sync"
	"time"

	"blpp/rewriter"
	"blpp/runtime"
	"blpp/runtime/audit"
)

// Whole-process runs (decision 82): `blpp run` instruments the program and
// every shared object it loads. The objects it needs at start are listed
// by the system loader itself (ld.so --list), rewritten into the cache and
// numbered 1, 2, ... as modules; the program then runs under the loader
// with blpp's rtld auditor (package runtime/audit), which hands the loader
// the instrumented copy of each of them and has blpp rewrite, there and
// then, any other object the program dlopen's.
//
// The loader is also given --library-path DIR, a directory of links named
// as the program asks for its libraries (DT_NEEDED names, and --lib files
// by base name) to the copies, or to the originals of those that run as
// they are, followed by the user's LD_LIBRARY_PATH. The executable the
// loader starts is the copy in the cache, so an $ORIGIN in its run path
// names the cache: without DIR, a program that finds its libraries
// through $ORIGIN would not start. --library-path rather than
// LD_LIBRARY_PATH keeps the program's environment its own (its children
// inherit nothing new). In the program, /proc/self/exe is the loader.

func init() {
	register(&command{name: "rewrite-module", hidden: true,
		summary: "rewrite a shared object for a running blpp run (called by its rtld auditor): print the copy's path",
		usage:   "[--cache-dir DIR] [--no-context] [--metrics LIST] [--shadow-frames N] [--libs all|none|REGEX] [--exclude-lib REGEX] --module-tag N LIB",
		run:     runRewriteModule})
}

// libSelect is --libs and --exclude-lib.
type libSelect struct {
	libs, exclude *string
}

func addLibFlags(fs interface {
	String(name, value, usage string) *string
}) libSelect {
	return libSelect{
		libs:    fs.String("libs", "all", "shared objects to instrument: all, none, or those whose path matches this regular expression"),
		exclude: fs.String("exclude-lib", "", "do not instrument shared objects whose path matches this regular expression"),
	}
}

// compile checks the flags; none says no library is instrumented.
func (s libSelect) compile() (pick func(path string) bool, none bool, err error) {
	var inc, exc *regexp.Regexp
	switch *s.libs {
	case "all", "":
	case "none":
		return func(string) bool { return false }, true, nil
	default:
		if inc, err = regexp.Compile(*s.libs); err != nil {
			return nil, false, &usageError{fmt.Sprintf("--libs: %v", err)}
		}
	}
	if *s.exclude != "" {
		if exc, err = regexp.Compile(*s.exclude); err != nil {
			return nil, false, &usageError{fmt.Sprintf("--exclude-lib: %v", err)}
		}
	}
	return func(path string) bool {
		return (inc == nil || inc.MatchString(path)) && (exc == nil || !exc.MatchString(path))
	}, false, nil
}

// args are the flags that give the same selection again.
func (s libSelect) args() []string { return []string{"--libs", *s.libs, "--exclude-lib", *s.exclude} }

// neededLib is one shared object of a program's start, as the loader
// resolves it.
type neededLib struct{ Name, Path string }

// interpreter is prog's PT_INTERP, "" for a static program.
func interpreter(prog string) (string, error) {
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

// startLibs lists the shared objects prog loads at start, in the loader's
// order, from the loader's own list mode (it maps them without running
// the program). The loader itself and the vDSO are left out.
func startLibs(loader, prog string) ([]neededLib, error) {
	out, err := exec.Command(loader, "--list", prog).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && len(ee.Stderr) > 0 {
			return nil, fmt.Errorf("%s --list %s: %s", loader, prog, strings.TrimSpace(string(ee.Stderr)))
		}
		return nil, fmt.Errorf("%s --list %s: %w", loader, prog, err)
	}
	var libs []neededLib
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x...)"
		f := strings.Fields(sc.Text())
		if len(f) < 3 || f[1] != "=>" || !filepath.IsAbs(f[2]) {
			continue
		}
		libs = append(libs, neededLib{Name: f[0], Path: f[2]})
	}
	return libs, nil
}

// toolID identifies this blpp build for cache keys: the SHA-256 of its
// own executable (read once, about 20 ms), so that a rewriter that
// changed never serves copies an older one made. Empty when the
// executable cannot be read (the key then rests on the inputs alone).
var toolID = sync.OnceValue(func() []byte {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	f, err := os.Open(self)
	if err != nil {
		return nil
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil
	}
	return h.Sum(nil)
})

// cacheOverride is the cache root `blpp rewrite-module --cache-dir`
// names: the auditor runs it with an empty environment.
var cacheOverride string

// cacheRoot is blpp's cache directory: $XDG_CACHE_HOME/blpp or
// ~/.cache/blpp (the temporary directory's blpp without either).
func cacheRoot() string {
	if cacheOverride != "" {
		return cacheOverride
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "blpp")
}

// selfPath is the blpp executable the auditor runs (a test binary
// replaces it: TestMain answers rewrite-module).
var selfPath = os.Executable

// cachedModule rewrites the object at path with opts into the cache (key:
// its bytes, the runtime image, the options) and returns the copy's path:
// <cache>/<key>/<base name>, so that the copy keeps its file name, which
// reports call the module by.
func cachedModule(path string, opts rewriter.Options, mode modeFlags) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(data)
	h.Write(runtime.ImageBytes())
	h.Write(toolID())
	fmt.Fprintf(h, "%s tag=%d noslots=%v", mode.key(), opts.ModuleTag, opts.NoSlots)
	dir := filepath.Join(cacheRoot(), "modules", hex.EncodeToString(h.Sum(nil)[:12]))
	out := filepath.Join(dir, filepath.Base(path))
	if _, err := os.Stat(out); err == nil {
		if _, err := os.Stat(filepath.Join(dir, originName)); err != nil {
			writeOrigin(dir, path)
		}
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if _, err := rewriteFile(path, out, opts); err != nil {
		return "", err
	}
	writeOrigin(dir, path)
	return out, nil
}

// writeOrigin notes beside a cached copy which file it was made from, for
// tools and tests that put a profile's modules next to their originals.
// Best effort: the copy is usable without it.
func writeOrigin(dir, path string) {
	if abs, err := filepath.Abs(path); err == nil {
		os.WriteFile(filepath.Join(dir, originName), []byte(abs+"\n"), 0o644)
	}
}

// originName is the file beside a cached copy that names its original.
const originName = "origin"

// cachedOrigin returns the original of a cached copy ("" if unknown).
func cachedOrigin(copyPath string) string {
	b, err := os.ReadFile(filepath.Join(filepath.Dir(copyPath), originName))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// wholeProcess is what run sets up for a dynamic program with libraries.
type wholeProcess struct {
	loader  string
	auditor string // ld.so --audit object
	dir     string // the auditor's directory, removed after the run
	libDir  string // the links to the libraries (--library-path)
	skipped []string
}

// prepareLibs rewrites prog's start libraries that pick selects and
// installs the auditor; progress goes to w when it takes more than a
// second. A library that cannot be rewritten runs as it is and is listed
// in skipped.
//
// With noLibs (--libs none) nothing is rewritten and there is no auditor:
// the links lead to the originals, so that the executable's $ORIGIN run
// path still finds them.
func prepareLibs(w io.Writer, loader, prog string, mode modeFlags, sel libSelect, pick func(string) bool, noLibs bool, extra []string) (*wholeProcess, error) {
	libs, err := startLibs(loader, prog)
	if err != nil {
		return nil, err
	}
	// --lib files (objects the program dlopen's by name) come after the
	// start libraries, found in DIR by their base names.
	for _, x := range extra {
		p, err := filepath.Abs(x)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("--lib: %w", err)
		} else if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("--lib: %s is not a file", x)
		}
		libs = append(libs, neededLib{Name: filepath.Base(p), Path: p})
	}
	self, err := selfPath()
	if err != nil {
		return nil, err
	}
	wp := &wholeProcess{loader: loader}
	if wp.dir, err = os.MkdirTemp("", "blpp-audit-"); err != nil {
		return nil, err
	}
	wp.libDir = filepath.Join(wp.dir, "lib")
	if err := os.Mkdir(wp.libDir, 0o755); err != nil {
		os.RemoveAll(wp.dir)
		return nil, err
	}
	m := audit.Map{Objects: map[string]string{}}
	// link puts the library the program asks for by name into DIR, and
	// tells the auditor that DIR's entry is to (not an object to rewrite).
	link := func(l neededLib, to string) {
		if l.Name == "" || strings.ContainsRune(l.Name, '/') {
			return
		}
		at := filepath.Join(wp.libDir, l.Name)
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
		if !said && time.Since(start) > time.Second {
			fmt.Fprintf(w, "blpp run: instrumenting %d shared objects (cached for later runs)\n", len(libs))
			said = true
		}
		var opts rewriter.Options
		if err := mode.apply(&opts); err != nil {
			os.RemoveAll(wp.dir)
			return nil, err
		}
		tag := rewriter.DefaultModuleTag(l.Name)
		for taken[tag] {
			tag = tag%runtime.MaxModuleTag + 1
		}
		taken[tag] = true
		m.Used = append(m.Used, int(tag))
		opts.ModuleTag = uint64(tag)
		cp, err := cachedModule(l.Path, opts, mode)
		if err != nil {
			wp.skipped = append(wp.skipped, fmt.Sprintf("%s: %v", l.Name, trimPathErr(err, l.Path)))
			m.Objects[l.Path] = l.Path
			link(l, l.Path)
			continue
		}
		m.Objects[l.Path] = cp
		link(l, cp)
	}
	m.Blpp = append([]string{self, "rewrite-module", "--cache-dir", cacheRoot()}, mode.args()...)
	m.Blpp = append(m.Blpp, sel.args()...)
	if noLibs {
		return wp, nil
	}
	if wp.auditor, err = audit.Install(wp.dir, m); err != nil {
		os.RemoveAll(wp.dir)
		return nil, err
	}
	return wp, nil
}

func trimPathErr(err error, path string) string {
	return strings.TrimPrefix(err.Error(), path+": ")
}

// command runs inst (prog's instrumented copy) under the loader with the
// auditor, DIR then the user's LD_LIBRARY_PATH as the library path, and
// argv[0] as given.
func (wp *wholeProcess) command(inst, argv0 string, args []string) *exec.Cmd {
	lp := wp.libDir
	if v := os.Getenv("LD_LIBRARY_PATH"); v != "" {
		lp += ":" + v
	}
	a := []string{"--library-path", lp, "--argv0", argv0}
	if wp.auditor != "" {
		a = append(a, "--audit", wp.auditor)
	}
	a = append(append(a, inst), args...)
	return exec.Command(wp.loader, a...)
}

// runRewriteModule is the auditor's call back into blpp: it rewrites LIB
// as module --module-tag into the cache and prints the copy's path, or
// LIB itself when the selection leaves it out or it cannot be rewritten
// (the program then loads it as it is).
func runRewriteModule(c *ctx, args []string) error {
	fs := c.newFlags()
	mode := addModeFlags(fs)
	sel := addLibFlags(fs)
	tag := fs.Uint64("module-tag", 0, "the module's tag")
	cache := fs.String("cache-dir", "", "blpp's cache directory (the auditor runs blpp without an environment)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	lib, err := oneArg(fs.Args(), "LIB")
	if err != nil {
		return err
	}
	if *cache != "" {
		cacheOverride = *cache
	}
	pick, _, err := sel.compile()
	if err != nil {
		return err
	}
	if !pick(lib) || *tag == 0 || *tag > runtime.MaxModuleTag {
		fmt.Fprintln(c.stdout, lib)
		return nil
	}
	var opts rewriter.Options
	if err := mode.apply(&opts); err != nil {
		return err
	}
	opts.ModuleTag = *tag
	cp, err := cachedModule(lib, opts, mode)
	if err != nil {
		fmt.Fprintln(c.stdout, lib)
		return nil
	}
	fmt.Fprintln(c.stdout, cp)
	return nil
}
