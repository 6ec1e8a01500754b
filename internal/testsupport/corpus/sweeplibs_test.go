package corpus_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/wholerun"
	"github.com/blpp/blpp/rewriter"
)

// The sweep's libraries mode runs each program as `blpp run` does
// (decision 82, package wholerun): the executable's copy without slot
// counters and every shared object it loads instrumented, under the
// dynamic loader with blpp's rtld auditor. One module cache serves the
// whole sweep, so libc and the other common libraries are rewritten once.
//
// Environment:
//
//	BLPP_SWEEP_MODES=exe,libs     the modes that run (default both)
//	BLPP_SWEEP_CACHE=DIR          the module cache (default: a temporary
//	                              directory, removed at the end)
//	BLPP_SWEEP_EXCLUDE_LIB=REGEX  libraries that run as they are (to leave
//	                              out libLLVM while iterating on a small
//	                              machine); listed in the report

// rewriteModuleCmd is the first argument with which the auditor runs this
// test binary (sweepLibs.blppArgv) for an object a program dlopen's.
const rewriteModuleCmd = "rewrite-module"

// sweepTool identifies the rewriter in this test binary for the cache's
// keys: the hash of the binary itself.
var sweepTool = sync.OnceValue(func() []byte {
	f, err := os.Open(os.Args[0])
	if err != nil {
		return nil
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return h.Sum(nil)
})

// sweepMode is the cache key part of the options the sweep rewrites with
// (blpp run's defaults).
const sweepMode = "sweep ctx=true metrics=freq shadow=0"

// sweepCache is the module cache at root; its rewrites run in child
// processes (rewriteFileWith), so that a rewriter crash is one library's
// failure.
func sweepCache(root string, libErrs *libErrors) *wholerun.Cache {
	return &wholerun.Cache{Root: root, Tool: sweepTool(), Rewrite: func(in, out string, opts rewriter.Options) error {
		_, refused, err := rewriteFileWith(in, out, rewriteOpts{ModuleTag: opts.ModuleTag, NoSlots: opts.NoSlots})
		if err != nil && libErrs != nil && opts.ModuleTag != 0 {
			libErrs.note(in, refused, err)
		}
		if refused {
			return refusal{err}
		}
		return err
	}}
}

// refusal is a rewrite error that is one of refusals.
type refusal struct{ error }

func (r refusal) Unwrap() error { return r.error }

// rewriteModule answers the auditor: `rewrite-module --cache-dir DIR
// [--exclude-lib REGEX] --module-tag N LIB` prints the path of LIB's copy (LIB itself when it
// cannot be rewritten: the program loads it as it is).
func rewriteModule(args []string) int {
	req := wholerun.ParseModuleRequest(args)
	dir, lib, exclude, tag := req.CacheDir, req.Lib, req.ExcludeLib, req.Tag
	if dir == "" || lib == "" || tag == 0 {
		fmt.Fprintf(os.Stderr, "usage: %s --cache-dir DIR --module-tag N LIB\n", rewriteModuleCmd)
		return 2
	}
	c := sweepCache(dir, nil)
	lib = c.Original(lib)
	if exclude != "" {
		if re, err := regexp.Compile(exclude); err == nil && re.MatchString(lib) {
			fmt.Println(lib)
			return 0
		}
	}
	cp, err := c.Library(lib, rewriter.Options{ModuleTag: tag}, sweepMode)
	if err != nil {
		cp = lib
	}
	fmt.Println(cp)
	return 0
}

// libErrors collects the libraries that could not be rewritten, once
// each, for the sweep's report: a refusal is listed, any other error
// fails the sweep like a program's.
type libErrors struct {
	mu   sync.Mutex
	errs map[string]libError
}

type libError struct {
	refused bool
	err     string
}

func (l *libErrors) note(path string, refused bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.errs == nil {
		l.errs = map[string]libError{}
	}
	l.errs[path] = libError{refused, firstLine(err.Error())}
}

// sweepLibs is the libraries mode's state, shared by the sweep's workers.
type sweepLibs struct {
	cache   *wholerun.Cache
	root    string
	exclude *regexp.Regexp // BLPP_SWEEP_EXCLUDE_LIB, nil: none
	libErrs libErrors

	mu         sync.Mutex
	excludedBy map[string][]string // excluded library → programs that load it
}

func newSweepLibs(root string, exclude *regexp.Regexp) *sweepLibs {
	s := &sweepLibs{root: root, exclude: exclude, excludedBy: map[string][]string{}}
	s.cache = sweepCache(root, &s.libErrs)
	return s
}

// sweepOne runs the dynamic program at path (loader: its interpreter) as
// blpp run does, with j's argument, and judges it
// as the exe mode does; the profile must be written and readable too.
func (s *sweepLibs) sweepOne(path, loader, tmp string, j *sweepJudge, once func(spec runSpec, timeout time.Duration) outcome) (kind, detail string) {
	inst, err := s.cache.Module(path, rewriter.Options{NoSlots: true}, sweepMode)
	var ref refusal
	switch {
	case errors.As(err, &ref):
		return "refused", err.Error()
	case err != nil:
		return "FAIL", "rewrite: " + firstLine(err.Error())
	}
	pick := func(lib string) bool {
		if s.exclude != nil && s.exclude.MatchString(lib) {
			s.mu.Lock()
			s.excludedBy[lib] = append(s.excludedBy[lib], filepath.Base(path))
			s.mu.Unlock()
			return false
		}
		return true
	}
	// The auditor runs this test binary for what the program dlopen's
	// (rewriteModule), with an empty environment: the exclusion goes on
	// its command line.
	self, err := os.Executable()
	if err != nil {
		return "FAIL", err.Error()
	}
	blpp := []string{self, rewriteModuleCmd, "--cache-dir", s.root}
	if s.exclude != nil {
		blpp = append(blpp, "--exclude-lib", s.exclude.String())
	}
	wp, err := s.cache.Prepare(wholerun.Setup{Loader: loader, Prog: path, Mode: sweepMode, Pick: pick, Blpp: blpp})
	if err != nil {
		return "FAIL", "set-up: " + firstLine(err.Error())
	}
	defer wp.Close()
	prof := filepath.Join(tmp, "libs.out")
	exe, err := wp.Mirror(inst, path)
	if err != nil {
		return "FAIL", "set-up: " + firstLine(err.Error())
	}
	_, env := wp.EnvAdded(os.Environ(), exe)
	spec := runSpec{Bin: exe, Argv0: path, Args: []string{j.arg}, Env: append(env, "BLPP_PROFILE="+prof)}
	got := once(spec, 10*time.Second)
	if got.TimedOut {
		got = once(spec, 60*time.Second)
	}
	var profErr error
	if got.Err == nil && !got.TimedOut {
		_, profErr = cct.ReadFile(prof)
	}
	kind, detail = j.verdict(got)
	if kind != "FAIL" {
		if p := profileProblem(profErr); p != "" {
			kind, detail = "FAIL", j.arg+": "+p
		}
	}
	if len(wp.Skipped) > 0 {
		detail += fmt.Sprintf(" [%d libraries as they are: %s]", len(wp.Skipped), strings.Join(wp.Skipped, "; "))
	}
	return kind, detail
}

// report lists the libraries left as they are: those the exclusion knob
// named, with the programs that load them, and those the rewriter
// refused or failed on. failed are the rewriter's failures (not
// refusals), which fail the sweep.
func (s *sweepLibs) report() (text string, failed []string) {
	var b strings.Builder
	var libs []string
	for l := range s.excludedBy {
		libs = append(libs, l)
	}
	sort.Strings(libs)
	for _, l := range libs {
		progs := s.excludedBy[l]
		sort.Strings(progs)
		fmt.Fprintf(&b, "excluded (BLPP_SWEEP_EXCLUDE_LIB): %s, loaded by %d programs: %s\n", l, len(progs), strings.Join(progs, " "))
	}
	libs = libs[:0]
	for l := range s.libErrs.errs {
		libs = append(libs, l)
	}
	sort.Strings(libs)
	for _, l := range libs {
		e := s.libErrs.errs[l]
		kind := "refused"
		if !e.refused {
			kind = "FAIL"
			failed = append(failed, fmt.Sprintf("%s: rewrite: %s", l, e.err))
		}
		fmt.Fprintf(&b, "library %s: %s: %s\n", kind, l, e.err)
	}
	return b.String(), failed
}

// profileProblem says what is wrong with a libraries-mode profile, "" when
// nothing is.
func profileProblem(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, os.ErrNotExist):
		return "no profile written"
	}
	return "profile unreadable: " + firstLine(err.Error())
}
