package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"

	"github.com/blpp/blpp/internal/wholerun"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime"
)

// Whole-process runs (decision 82): `blpp run` instruments the program and
// every shared object it loads, set up by package wholerun (the cache of
// instrumented copies, the auditor, the loader's command line). This file
// holds the command's side: the library selection flags, the cache's
// place and identity, and rewrite-module, which the auditor calls.

func init() {
	register(&command{name: "rewrite-module", hidden: true,
		summary: "rewrite a shared object for a running blpp run (called by its rtld auditor): print the copy's path",
		usage:   "[--cache-dir DIR] [--no-context] [--metrics LIST] [--no-latency] [--shadow-frames N] [--libs all|none|REGEX] [--exclude-lib REGEX] --module-tag N LIB",
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

// toolID identifies this blpp build for cache keys: the SHA-256 of its
// own executable, so that a rewriter that changed never serves copies an
// older one made. The sum is kept in the cache by the file's identity
// (wholerun.Cache.FileSum), as the inputs' are: reading the executable
// took some 7-20 ms of every cached run. Empty when the executable cannot
// be read (the key then rests on the inputs alone).
var toolID = sync.OnceValue(func() []byte {
	self, err := os.Executable()
	if err != nil {
		return nil
	}
	sum, err := (&wholerun.Cache{Root: cacheRoot()}).FileSum(self)
	if err != nil {
		return nil
	}
	return sum
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

// moduleCache is blpp's cache of instrumented copies (wholerun.Cache),
// rewriting with rewriteFile (progress on a terminal), or rewriteAlone
// when alone: the process rewrites at most that one object.
func moduleCache(alone bool) *wholerun.Cache {
	rw := rewriteFile
	if alone {
		rw = rewriteAlone
	}
	return &wholerun.Cache{Root: cacheRoot(), Tool: toolID(), Rewrite: func(in, out string, opts rewriter.Options) error {
		_, err := rw(in, out, opts)
		return err
	}}
}

// cachedModule rewrites the object at path with opts into the cache and
// returns the copy's path (wholerun.Cache.Module).
func cachedModule(path string, opts rewriter.Options, mode modeFlags) (string, error) {
	return moduleCache(false).Module(path, opts, mode.key())
}

// prepareLibs rewrites prog's start libraries that pick selects and
// installs the auditor (wholerun.Cache.Prepare); progress goes to w when
// it takes more than a second.
func prepareLibs(w io.Writer, loader, prog string, mode modeFlags, sel libSelect, pick func(string) bool, noLibs bool, extra []string) (*wholerun.Process, error) {
	self, err := selfPath()
	if err != nil {
		return nil, err
	}
	var opts rewriter.Options
	if err := mode.apply(&opts); err != nil {
		return nil, err
	}
	blpp := append([]string{self, "rewrite-module", "--cache-dir", cacheRoot()}, mode.args()...)
	blpp = append(blpp, sel.args()...)
	return moduleCache(false).Prepare(wholerun.Setup{Loader: loader, Prog: prog, Opts: opts, Mode: mode.key(),
		Pick: pick, NoLibs: noLibs, Extra: extra, Blpp: blpp, Progress: w})
}

// runRewriteModule is the auditor's call back into blpp: it rewrites LIB
// as module --module-tag into the cache and prints the path of the copy
// in its mirror (wholerun.Cache.Library), or
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
	mc := moduleCache(true)
	// A library opened relative to another's mirror is its original
	// (decision 109): selected, and printed when left out, as such.
	lib = mc.Original(lib)
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
	cp, err := mc.Library(lib, opts, mode.key())
	if err != nil {
		fmt.Fprintln(c.stdout, lib)
		return nil
	}
	fmt.Fprintln(c.stdout, cp)
	return nil
}
