package corpus_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/internal/wholerun"
	"github.com/blpp/blpp/rewriter"
)

// Rewrite errors that are refusals: the binary is outside what blpp
// handles, and the rewriter says so clearly.
var refusals = []error{rewriter.ErrUsesGS, rewriter.ErrNoExit, rewriter.ErrDynamicLinker, rewriter.ErrGoProgram, rewriter.ErrTooManyFuncs, cfg.ErrUnsupported, cfg.ErrNotX86_64}

// sweepResult is one row of the sweep table.
type sweepResult struct {
	name, path          string
	instrumented, total int
	kind                string // pass, refused, FAIL, known failure, nondeterministic, original hangs, not run, - (mode not run)
	detail              string
	dur                 time.Duration // both modes
	// The libraries mode's result (sweeplibs_test.go), as kind and
	// detail, and its part of dur; static: a static program (no
	// libraries: the exe mode's run is blpp run's).
	libsKind, libsDetail string
	libsDur              time.Duration
}

// sweepKnown is testdata/corpus/sweep.json: binaries of /usr/bin that
// legitimately fail, each with the reason and a regular expression its
// failure detail must match to be excused (under BLPP_CORPUS_KNOWN=skip).
type sweepKnown struct {
	Comment []string                `json:"comment"`
	Known   map[string]knownFailure `json:"known_failures"`
	// KnownLibs are the libraries mode's own known failures; a binary
	// not listed there is excused by its known_failures entry.
	KnownLibs map[string]knownFailure `json:"known_failures_libs"`
}

type knownFailure struct {
	Reason  string `json:"reason"`
	Symptom string `json:"symptom"`
}

// TestSweepUsrBin rewrites every ELF executable in /usr/bin (not scripts,
// shared objects or setuid programs), runs original and rewritten copy with
// --version (--help when --version fails in the original), stdin from
// /dev/null and HOME in a temporary directory, and requires the same
// output and exit status. Clear refusals are listed; crashes, differences
// and hangs fail. BLPP_SWEEP=1 runs it, BLPP_SWEEP=N on the first N
// binaries; BLPP_SWEEP_BUDGET bounds its wall-clock time. Each binary
// also runs in the libraries mode (sweeplibs_test.go), as `blpp run` runs
// it, every shared library instrumented too; BLPP_SWEEP_MODES chooses.
func TestSweepUsrBin(t *testing.T) {
	if testing.Short() {
		t.Skip("sweep: long test; not under -short")
	}
	mode := os.Getenv("BLPP_SWEEP")
	if mode == "" || mode == "0" {
		t.Skip("sweep: set BLPP_SWEEP=1 (all of /usr/bin) or BLPP_SWEEP=N (the first N binaries)")
	}
	dir := "/usr/bin"
	if d := os.Getenv("BLPP_SWEEP_DIR"); d != "" {
		dir = d
	}
	budget := 8 * time.Minute
	if b := os.Getenv("BLPP_SWEEP_BUDGET"); b != "" {
		d, err := time.ParseDuration(b)
		if err != nil {
			t.Fatalf("BLPP_SWEEP_BUDGET: %v", err)
		}
		budget = d
	}
	var known sweepKnown
	data, err := os.ReadFile(filepath.Join(fixture.Root(t), "testdata", "corpus", "sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &known); err != nil {
		t.Fatalf("sweep.json: %v", err)
	}
	exe, libs := true, (*sweepLibs)(nil)
	if m := os.Getenv("BLPP_SWEEP_MODES"); m != "" {
		exe = false
		for _, x := range strings.Split(m, ",") {
			switch x {
			case "exe":
				exe = true
			case "libs":
				libs = &sweepLibs{}
			default:
				t.Fatalf("BLPP_SWEEP_MODES: %q is not exe or libs", x)
			}
		}
	} else {
		libs = &sweepLibs{}
	}
	if libs != nil {
		root := os.Getenv("BLPP_SWEEP_CACHE")
		if root == "" {
			root = t.TempDir()
		}
		var exclude *regexp.Regexp
		if re := os.Getenv("BLPP_SWEEP_EXCLUDE_LIB"); re != "" {
			if exclude, err = regexp.Compile(re); err != nil {
				t.Fatalf("BLPP_SWEEP_EXCLUDE_LIB: %v", err)
			}
		}
		libs = newSweepLibs(root, exclude)
	}
	bins, skipped := sweepCandidates(t, dir)
	if n, err := strconv.Atoi(mode); err == nil && n > 1 && n < len(bins) {
		bins = bins[:n]
	}
	t.Logf("sweep: %d ELF executables in %s (%s)", len(bins), dir, skipped)

	start := time.Now()
	deadline := start.Add(budget)
	results := make([]sweepResult, len(bins))
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				if time.Now().After(deadline) {
					results[i] = sweepResult{name: filepath.Base(bins[i]), path: bins[i], kind: "not run", detail: "time budget spent", libsKind: "not run"}
					continue
				}
				t0 := time.Now()
				results[i] = sweepOne(t, bins[i], exe, libs)
				results[i].dur = time.Since(t0)
			}
		}()
	}
	for i := range bins {
		work <- i
	}
	close(work)
	wg.Wait()

	for i := range results {
		r := &results[i]
		k, ok := known.lookup(known.Known, r.path)
		r.kind, r.detail = excuse(k, ok, r.kind, r.detail)
		if kl, ok2 := known.lookup(known.KnownLibs, r.path); ok2 {
			k, ok = kl, ok2
		}
		r.libsKind, r.libsDetail = excuse(k, ok, r.libsKind, r.libsDetail)
	}
	counts := map[string]int{}
	libsCounts := map[string]int{}
	var table strings.Builder
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "binary\tinstrumented\ttime\tresult\twith libraries\tdetail")
	var fails strings.Builder
	for _, r := range results {
		counts[r.kind]++
		libsCounts[r.libsKind]++
		inst := "-"
		if r.total > 0 {
			inst = fmt.Sprintf("%d/%d", r.instrumented, r.total)
		}
		detail := r.detail
		if r.libsDetail != r.detail && r.libsKind != "-" {
			detail += " | libraries: " + r.libsDetail
		}
		if len(detail) > 300 {
			detail = detail[:300] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\n", r.name, inst, r.dur.Round(10*time.Millisecond), r.kind, r.libsKind, detail)
		if r.kind == "FAIL" {
			fmt.Fprintf(&fails, "FAIL %s: %s\n", r.path, r.detail)
		}
		if r.libsKind == "FAIL" {
			fmt.Fprintf(&fails, "FAIL %s with libraries: %s\n", r.path, r.libsDetail)
		}
	}
	tw.Flush()
	summarise := func(counts map[string]int) string {
		var kinds []string
		for k, n := range counts {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
		sort.Strings(kinds)
		return strings.Join(kinds, ", ")
	}
	summary := fmt.Sprintf("%d binaries in %v: %s\n", len(results), time.Since(start).Round(time.Second), summarise(counts))
	var libFails []string
	if libs != nil {
		var libDur time.Duration
		for _, r := range results {
			libDur += r.libsDur
		}
		summary += fmt.Sprintf("with libraries (BLPP_SWEEP_MODES=libs; %v of the workers' time): %s\n", libDur.Round(time.Second), summarise(libsCounts))
		var libText string
		libText, libFails = libs.report()
		table.WriteString(libText)
		for _, f := range libFails {
			fmt.Fprintf(&fails, "FAIL library %s\n", f)
		}
	}
	// The test log carries the summary and the failures only: a CI log
	// shown in part (or truncated) must still show what failed. The whole
	// table goes to the report file, with the failures before and after
	// it.
	t.Logf("sweep: %s%s(the whole table: sweep.txt under BLPP_CORPUS_REPORT, or go test -v)", summary, fails.String())
	if testing.Verbose() {
		t.Logf("sweep table:\n%s", table.String())
	}
	if err := writeReport("sweep.txt", summary+fails.String()+table.String()+fails.String()+summary); err != nil {
		t.Error(err)
	}
	for _, r := range results {
		if r.kind == "FAIL" {
			t.Errorf("%s: %s", r.path, r.detail)
		}
		if r.libsKind == "FAIL" {
			t.Errorf("%s with libraries: %s", r.path, r.libsDetail)
		}
	}
	for _, f := range libFails {
		t.Errorf("library %s", f)
	}
	if counts["not run"] > 0 {
		t.Errorf("sweep: %d binaries not run within the %v budget (BLPP_SWEEP_BUDGET): a sweep that leaves binaries out has not checked them", counts["not run"], budget)
	}
}

// lookup finds the known failure of the binary at path in m: by its
// base name, else by the longest key that ends in "/" and starts path
// (a directory of programs that fail alike, such as the JDK's launchers).
func (sweepKnown) lookup(m map[string]knownFailure, path string) (knownFailure, bool) {
	if k, ok := m[filepath.Base(path)]; ok {
		return k, true
	}
	best := ""
	for key := range m {
		if strings.HasSuffix(key, "/") && strings.HasPrefix(path, key) && len(key) > len(best) {
			best = key
		}
	}
	k, ok := m[best]
	return k, ok
}

// excuse applies a documented known failure k (ok: there is one) to a
// FAIL result: its detail names the reason when the symptom matches (or
// says that it does not), and under BLPP_CORPUS_KNOWN=skip the kind
// becomes "known failure".
func excuse(k knownFailure, ok bool, kind, detail string) (string, string) {
	if !ok || kind != "FAIL" {
		return kind, detail
	}
	if !regexp.MustCompile(k.Symptom).MatchString(detail) {
		return kind, detail + " (not the documented known failure: " + k.Reason + ")"
	}
	detail = "known: " + k.Reason + "; " + detail
	if os.Getenv("BLPP_CORPUS_KNOWN") == "skip" {
		kind = "known failure"
	}
	return kind, detail
}

// sweepCandidates lists the ELF executables of dir (symbolic links
// resolved, each file once), and says what it left out.
func sweepCandidates(t *testing.T, dir string) ([]string, string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[[2]uint64]bool{}
	var out []string
	skip := map[string]int{}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			skip["not an executable file"]++
			continue
		}
		st := fi.Sys().(*syscall.Stat_t)
		id := [2]uint64{st.Dev, st.Ino}
		if seen[id] {
			skip["link to another"]++
			continue
		}
		seen[id] = true
		if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
			skip["setuid/setgid"]++
			continue
		}
		f, err := elf.Open(p)
		if err != nil {
			skip["not ELF (scripts)"]++
			continue
		}
		exe := f.Machine == elf.EM_X86_64 && (f.Type == elf.ET_EXEC || (f.Type == elf.ET_DYN && hasInterp(f)))
		f.Close()
		if !exe {
			skip["shared object or not x86-64"]++
			continue
		}
		if rp, err := filepath.EvalSymlinks(p); err == nil {
			p = rp
		}
		out = append(out, p)
	}
	// Smallest first: under a time budget the many small programs are
	// covered and the few huge ones (node, gdb, lto-dump) are the ones left
	// for later.
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	sort.SliceStable(out, func(i, j int) bool { return size(out[i]) < size(out[j]) })
	var parts []string
	for k, n := range skip {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	return out, "left out: " + strings.Join(parts, ", ")
}

func hasInterp(f *elf.File) bool {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// sweepOne runs one binary in the modes asked for: exe (its rewritten copy
// alone) and libs (as blpp run runs it, every library instrumented too;
// nil: not run). blpp run runs a static program's copy alone, so for one
// the libraries mode is the exe mode's run.
func sweepOne(t *testing.T, path string, exe bool, libs *sweepLibs) (r sweepResult) {
	r = sweepResult{name: filepath.Base(path), path: path, kind: "FAIL", libsKind: "FAIL"}
	if libs == nil {
		r.libsKind = "-"
	}
	defer func() {
		if !exe {
			r.kind, r.detail = "-", ""
		}
	}()
	loader, err := wholerun.Interpreter(path)
	if err != nil {
		r.detail = "interpreter: " + err.Error()
		r.libsKind, r.libsDetail = r.kind, r.detail
		return r
	}
	runExe := exe || libs != nil && loader == ""
	tmp, err := os.MkdirTemp("", "blpp-sweep-")
	if err != nil {
		r.detail = err.Error()
		return r
	}
	defer os.RemoveAll(tmp)
	inst := filepath.Join(tmp, r.name)
	if runExe {
		if originDirs(path) != "" {
			// The program finds its libraries and its installation through
			// $ORIGIN or /proc/self/exe: run the copy from a mirror of the
			// installation (the JDK's bin/ and its siblings, as symlinks).
			if inst, err = mirrorHome(tmp, path); err != nil {
				r.detail = err.Error()
				return r
			}
		}
		sum, refused, err := rewriteFile(path, inst)
		if sum != nil {
			r.instrumented, r.total = sum.Instrumented, sum.Functions
		}
		switch {
		case refused:
			r.kind, r.detail = "refused", err.Error()
		case err != nil:
			r.detail = "rewrite: " + firstLine(err.Error())
		}
		if err != nil {
			// A refused or failed executable is not run under blpp run
			// either: it would refuse it the same way.
			r.libsKind, r.libsDetail = r.kind, r.detail
			return r
		}
	}
	home := filepath.Join(tmp, "home")
	work := filepath.Join(tmp, "work")
	onceSpec := func(spec runSpec, timeout time.Duration) outcome {
		for _, d := range []string{home, work} {
			os.RemoveAll(d)
			os.MkdirAll(d, 0o755)
		}
		spec.Env = append([]string{"HOME=" + home, "LC_ALL=C", "LANG=C", "TZ=UTC", "BLPP_QUIET=1", "PWD=" + work,
			"BLPP_PROFILE=" + filepath.Join(tmp, "blpp.out"), "DISPLAY=", "WAYLAND_DISPLAY="}, spec.Env...)
		spec.Dir, spec.Timeout = work, timeout
		return run(spec)
	}
	onceFor := func(bin, arg string, timeout time.Duration) outcome {
		return onceSpec(runSpec{Bin: bin, Argv0: path, Args: []string{arg}}, timeout)
	}
	once := func(bin, arg string) outcome { return onceFor(bin, arg, 10*time.Second) }
	arg := "--version"
	want := once(path, arg)
	if want.Code == 127 && bytes.Contains(want.Stderr, []byte("error while loading shared libraries")) {
		r.kind, r.detail = "original cannot start", firstLine(string(want.Stderr))
		r.libsKind, r.libsDetail = r.kind, r.detail
		return r
	}
	if want.Code != 0 || want.Signal != 0 || want.TimedOut {
		if h := once(path, "--help"); h.Code == 0 && h.Signal == 0 && !h.TimedOut {
			arg, want = "--help", h
		}
	}
	if want.TimedOut {
		r.kind, r.detail = "original hangs", arg
		r.libsKind, r.libsDetail = r.kind, r.detail
		return r
	}
	// More runs of the original, made when a copy's output differs and
	// shared by both modes.
	j := sweepJudge{arg: arg, origs: []outcome{want}, again: func() outcome { return once(path, arg) }}
	if runExe {
		got := once(inst, arg)
		if got.TimedOut && !want.TimedOut {
			// A loaded CI machine can slow the copy past the timeout: it
			// runs once more with a longer one. Only a hang is retried: a
			// copy that crashes or prints something else, even once, fails.
			got = onceFor(inst, arg, 60*time.Second)
		}
		r.kind, r.detail = j.verdict(got)
	}
	switch {
	case libs != nil && loader == "":
		r.libsKind, r.libsDetail = r.kind, "static, run alone: "+r.detail
	case libs != nil:
		t0 := time.Now()
		r.libsKind, r.libsDetail = libs.sweepOne(path, loader, tmp, &j, onceSpec)
		r.libsDur = time.Since(t0)
	}
	return r
}

// sweepJudge compares rewritten copies' runs with the original's.
type sweepJudge struct {
	arg   string
	origs []outcome      // the original's runs; the first is the one compared first
	again func() outcome // one more run of the original
}

// verdict is got's result kind and detail. A program whose own runs
// differ (times, pids, random names, the order in which two children
// write to one pipe, as groff --version does) is judged against more runs
// of the original (a two-way race shows both ways in 8 runs with
// probability 99%): the copy passes when it did what one of them did,
// byte for byte, or with every number masked; where even the masked
// outputs of the original's own runs differ, the copy must still end as
// the original does (same exit status, same signal).
func (j *sweepJudge) verdict(got outcome) (kind, detail string) {
	arg, want := j.arg, j.origs[0]
	diffs := compareOutcomes(want, got)
	if len(diffs) == 0 {
		return "pass", fmt.Sprintf("%s: %s", arg, want.status())
	}
	// The original is run again, up to 8 times, to see whether its
	// output varies; 24 when the copy's output is the original's lines
	// in another order: two processes writing one stream (groff
	// --version's troff and grops) take turns as the scheduler lets
	// them, one order sometimes far likelier than the other.
	retries := 8
	if sameLines(want, got) {
		retries = 24
	}
	for i := 1; i <= retries; i++ {
		if i == len(j.origs) {
			if j.origs[i-1].TimedOut {
				break
			}
			j.origs = append(j.origs, j.again())
		}
		if o := j.origs[i]; len(compareOutcomes(o, got)) == 0 {
			return "pass", fmt.Sprintf("%s: %s (as in run %d of the original, whose output varies between runs)", arg, o.status(), i+1)
		}
	}
	origs := j.origs
	sameStatus := false
	for _, o := range origs {
		if o.status() == got.status() {
			sameStatus = true
		}
	}
	switch {
	case !sameStatus:
	case maskedSame(origs, got):
		return "pass", fmt.Sprintf("%s: %s (output varies between runs of the original; equal with numbers masked)", arg, got.status())
	case len(origs) > 1 && (!maskedSame(origs[:1], origs[1]) || len(origs) > 2 && !maskedSame(origs[:1], origs[2])):
		return "nondeterministic", fmt.Sprintf("%s: %s (the original's own runs differ with numbers masked: same status required and seen)", arg, got.status())
	}
	switch {
	case got.TimedOut:
		return "FAIL", arg + ": rewritten copy hangs (60 s)"
	case got.Signal != 0:
		return "FAIL", fmt.Sprintf("%s: rewritten copy killed by %v%s", arg, got.Signal, stderrTail(got.Stderr))
	}
	return "FAIL", arg + ": " + strings.Join(diffs, "; ")
}

// sameLines says whether got's output is want's, line for line, in some
// order, with the same status.
func sameLines(want, got outcome) bool {
	if want.status() != got.status() {
		return false
	}
	for _, p := range [][2][]byte{{want.Stdout, got.Stdout}, {want.Stderr, got.Stderr}} {
		a, b := strings.Split(string(p[0]), "\n"), strings.Split(string(p[1]), "\n")
		sort.Strings(a)
		sort.Strings(b)
		if !slices.Equal(a, b) {
			return false
		}
	}
	return true
}

// digits matches the numbers masked when a program's output varies
// between its own runs (pids, times, addresses, temporary names).
var digits = regexp.MustCompile(`0x[0-9a-fA-F]+|[0-9]+`)

func mask(b []byte) []byte { return digits.ReplaceAll(b, []byte("#")) }

// maskedSame reports whether got printed what one of origs printed, each
// output with its numbers masked, and ended the same way.
func maskedSame(origs []outcome, got outcome) bool {
	for _, o := range origs {
		if o.status() == got.status() && bytes.Equal(mask(o.Stdout), mask(got.Stdout)) && bytes.Equal(mask(o.Stderr), mask(got.Stderr)) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// originDirs returns the $ORIGIN-relative DT_RUNPATH/DT_RPATH directories
// of the executable at path, resolved against its directory, joined by
// ":" (the JDK's launchers find libjli.so through $ORIGIN/../lib).
func originDirs(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var dirs []string
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		vals, _ := f.DynString(tag)
		for _, v := range vals {
			for _, d := range strings.Split(v, ":") {
				if strings.Contains(d, "$ORIGIN") || strings.Contains(d, "${ORIGIN}") {
					d = strings.NewReplacer("${ORIGIN}", filepath.Dir(path), "$ORIGIN", filepath.Dir(path)).Replace(d)
					dirs = append(dirs, filepath.Clean(d))
				}
			}
		}
	}
	return strings.Join(dirs, ":")
}

// mirrorHome makes tmp/mirror a copy of the directory above path's
// directory made of symbolic links, except path's own directory, which
// is a real one holding links to its files, and returns where the
// rewritten copy of path goes in it.
func mirrorHome(tmp, path string) (string, error) {
	bin := filepath.Dir(path)
	home := filepath.Dir(bin)
	m := filepath.Join(tmp, "mirror")
	ents, err := os.ReadDir(home)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(m, filepath.Base(bin)), 0o755); err != nil {
		return "", err
	}
	for _, e := range ents {
		if e.Name() == filepath.Base(bin) {
			continue
		}
		if err := os.Symlink(filepath.Join(home, e.Name()), filepath.Join(m, e.Name())); err != nil {
			return "", err
		}
	}
	files, err := os.ReadDir(bin)
	if err != nil {
		return "", err
	}
	for _, e := range files {
		if e.Name() == filepath.Base(path) {
			continue
		}
		if err := os.Symlink(filepath.Join(bin, e.Name()), filepath.Join(m, filepath.Base(bin), e.Name())); err != nil {
			return "", err
		}
	}
	return filepath.Join(m, filepath.Base(bin), filepath.Base(path)), nil
}

func TestMaskedSame(t *testing.T) {
	orig := outcome{Stdout: []byte("pid 1234 at 0x7ffd12 took 3.5s\n")}
	for _, c := range []struct {
		got  outcome
		same bool
	}{
		{outcome{Stdout: []byte("pid 99 at 0xdeadbeef took 12.0s\n")}, true},
		{outcome{Stdout: []byte("pid 99 at 0xdeadbeef took 12.0 s\n")}, false},
		{outcome{Stdout: []byte("pid 99 at 0xdeadbeef took 12.0s\n"), Code: 1}, false},
		{outcome{Stdout: []byte("pid 99 at 0xdeadbeef took 12.0s\n"), Code: -1, Signal: syscall.SIGSEGV}, false},
	} {
		if got := maskedSame([]outcome{orig}, c.got); got != c.same {
			t.Errorf("maskedSame(%q, %q status %s) = %v, want %v", orig.Stdout, c.got.Stdout, c.got.status(), got, c.same)
		}
	}
}
