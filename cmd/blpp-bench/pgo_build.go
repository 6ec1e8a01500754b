package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/blpp/blpp/cct"
	blppreport "github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// pgoFlags are the clang flags of each step. blpp's sample profiles come
// in two kinds, each with the flags its training build and the build that
// uses it share [clang's user manual, "Using Sampling Profilers"]:
// line-based, -fdebug-info-for-profiling (discriminators that tell apart
// blocks of one source line); and probe-based, -fpseudo-probe-for-profiling
// (each block and call numbered before optimization, wherever its code
// ends up). Both add -funique-internal-linkage-names, which gives static
// functions of different files names of their own (a sample profile
// matches functions by name). The BOLT builds keep their relocations
// (-Wl,--emit-relocs) so that BOLT can move functions [BOLT's README,
// "Input Binary Requirements"]. Only the probes change the code clang
// generates (a little: a probe keeps its block apart). The build that uses
// the probe-based profile adds -fsample-profile-use-profi: clang infers
// block and edge counts as a flow consistent with the probes' counts
// (profile inference) instead of propagating weights heuristically, which
// matters where a probe's count is not its block's own (a block the
// training build turned into a conditional move; decision 103).
var (
	pgoProbesUse  = []string{"-fsample-profile-use-profi"}
	pgoBase       = []string{"-O2", "-g"}
	pgoLinesBase  = []string{"-O2", "-g", "-fdebug-info-for-profiling", "-funique-internal-linkage-names"}
	pgoProbesBase = []string{"-O2", "-g", "-fpseudo-probe-for-profiling", "-funique-internal-linkage-names"}
	pgoBoltBase   = []string{"-O2", "-g", "-Wl,--emit-relocs"}
	// pgoBoltOpts are the optimizations of BOLT's README's example run.
	pgoBoltOpts = []string{"-reorder-blocks=ext-tsp", "-reorder-functions=hfsort", "-split-functions", "-split-all-cold",
		"-split-eh", "-icf=1", "-use-gnu-stack"}
)

// The --pgo-lto modes. ThinLTO links with gold and LLVM's plugin (Debian
// has no lld in clang-16's dependencies); clang's driver hands the plugin
// the profile too (-plugin-opt=sample-profile=...), so that the sample
// loader runs again after functions of other files were imported and can
// inline the calls the training build inlined across files.
const (
	pgoLTONone = "none"
	pgoLTOThin = "thin"
)

// The optional builds --pgo-builds names.
const (
	pgoBuildLines  = "lines"
	pgoBuildProbes = "probes"
	pgoBuildBolt   = "bolt"
)

// parsePGOBuilds reads --pgo-builds.
func parsePGOBuilds(list string) (map[string]bool, error) {
	all := []string{pgoBuildLines, pgoBuildProbes, pgoBuildBolt}
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case "all":
			for _, b := range all {
				want[b] = true
			}
		case pgoBuildLines, pgoBuildProbes, pgoBuildBolt:
			want[name] = true
		default:
			return nil, fmt.Errorf("--pgo-builds: no build %q (have %s, all)", name, strings.Join(all, ", "))
		}
	}
	return want, nil
}

// withFlags is base followed by more, in a slice of its own.
func withFlags(base []string, more ...string) []string {
	return append(append([]string(nil), base...), more...)
}

// buildPGO makes the builds --pgo-builds asks for, plain first, each with
// the --pgo-lto flags.
func buildPGO(c *config, rep *pgoReport, prog *pgoProgram, dir string) ([]*pgoTimes, error) {
	bin := func(name string) string { return filepath.Join(dir, name) }
	var lto []string
	if c.pgoLTO == pgoLTOThin {
		lto = []string{"-flto=thin", "-fuse-ld=gold"}
	}
	base := withFlags(pgoBase, lto...)
	fmt.Fprintln(c.stderr, "pgo: building plain")
	if _, err := clang(c, prog, bin("plain"), base); err != nil {
		return nil, err
	}
	builds := []*pgoTimes{{Name: pgoPlain, bin: bin("plain"), Flags: base}}

	// clang's own instrumentation.
	fmt.Fprintln(c.stderr, "pgo: training with clang -fprofile-instr-generate")
	if _, err := clang(c, prog, bin("irgen"), withFlags(base, "-fprofile-instr-generate")); err != nil {
		return nil, err
	}
	raw := bin("ir.profraw")
	if _, err := runPGOScript(bin("irgen"), prog.Script, c.trainScale, dir, "LLVM_PROFILE_FILE="+raw); err != nil {
		return nil, fmt.Errorf("IR-PGO training run: %w", err)
	}
	data := bin("ir.profdata")
	if msg, err := exec.Command(c.profdata, "merge", "-o", data, raw).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s merge: %v\n%s", c.profdata, err, msg)
	}
	var err error
	irFlags := withFlags(base, "-fprofile-instr-use="+data)
	if rep.IRWarnings, err = clang(c, prog, bin("irpgo"), irFlags); err != nil {
		return nil, err
	}
	irShow, err := exec.Command(c.profdata, "show", "--all-functions", data).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s show --all-functions: %v\n%s", c.profdata, err, trim(irShow))
	}
	irCounts := irFunctionCounts(string(irShow))

	// blpp's sample profiles: rewrite the training build, run the script,
	// export, rebuild with the profile.
	for _, k := range []struct {
		name, build string
		flags, use  []string
		sp          *pgoSampleProfile
	}{{"lines", pgoLines, pgoLinesBase, nil, &rep.Lines}, {"probes", pgoProbes, pgoProbesBase, pgoProbesUse, &rep.Probes}} {
		if !c.pgoBuilds[k.name] {
			continue
		}
		fmt.Fprintf(c.stderr, "pgo: training with blpp for clang -fprofile-sample-use (%s)\n", k.name)
		flags := withFlags(k.flags, lto...)
		train := bin("train." + k.name)
		if _, err := clang(c, prog, train, flags); err != nil {
			return nil, err
		}
		prof, err := blppTrain(c, rep, train, prog, dir, blppreport.ExportLLVMSample)
		if err != nil {
			return nil, err
		}
		profFile := bin("blpp." + k.name + ".txt")
		if err := os.WriteFile(profFile, prof, 0o644); err != nil {
			return nil, err
		}
		k.sp.Bytes = len(prof)
		if k.sp.Functions, k.sp.ProbeBased, err = sampleFunctions(c, profFile); err != nil {
			return nil, err
		}
		use := withFlags(withFlags(flags, k.use...), "-fprofile-sample-use="+profFile)
		if k.sp.Warnings, err = clang(c, prog, bin("sample."+k.name), use); err != nil {
			return nil, err
		}
		k.sp.Entries = compareEntries(prof, irCounts)
		builds = append(builds, &pgoTimes{Name: k.build, bin: bin("sample." + k.name), Flags: use})
	}
	builds = append(builds, &pgoTimes{Name: pgoIR, bin: bin("irpgo"), Flags: irFlags})
	if !c.pgoBuilds[pgoBuildBolt] {
		return builds, nil
	}

	// BOLT, fed by blpp and, for reference, by its own instrumentation.
	fmt.Fprintln(c.stderr, "pgo: training with blpp for llvm-bolt")
	relocs := withFlags(pgoBoltBase, lto...)
	if _, err := clang(c, prog, bin("relocs"), relocs); err != nil {
		return nil, err
	}
	var counts *pgoReport // the rewrite's function counts, when no sample build gave them
	if rep.Functions == 0 {
		counts = rep
	}
	fdata, err := blppTrain(c, counts, bin("relocs"), prog, dir, blppreport.ExportBoltFdata)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(bin("blpp.fdata"), fdata, 0o644); err != nil {
		return nil, err
	}
	if rep.Bolt, err = runBolt(c, bin("relocs"), bin("bolt"), bin("blpp.fdata")); err != nil {
		return nil, err
	}
	fmt.Fprintln(c.stderr, "pgo: training with llvm-bolt -instrument")
	if log, err := exec.Command(c.bolt, bin("relocs"), "-instrument", "-o", bin("boltgen"),
		"-instrumentation-file="+bin("bolt.own.fdata")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s -instrument: %v\n%s", c.bolt, err, trim(log))
	}
	if _, err := runPGOScript(bin("boltgen"), prog.Script, c.trainScale, dir); err != nil {
		return nil, fmt.Errorf("BOLT training run: %w", err)
	}
	if rep.BoltOwn, err = runBolt(c, bin("relocs"), bin("boltown"), bin("bolt.own.fdata")); err != nil {
		return nil, err
	}
	return append(builds, &pgoTimes{Name: pgoBolt, bin: bin("bolt"), Flags: relocs}, &pgoTimes{Name: pgoBoltOwn, bin: bin("boltown"), Flags: relocs}), nil
}

// exporter is one of report's profile exports.
type exporter func(io.Writer, *blppreport.Model, blppreport.ExportOptions) error

// blppTrain rewrites train as blpp rewrite does, runs the script under it,
// and exports the profile as blpp export does. The sample profile names
// source lines, which the rewritten binary's DWARF (the original's, kept)
// gives, and BOLT's profile offsets in the original functions: no address
// of the rewritten code is in either. rep, when not nil, gets the rewrite's
// function counts.
func blppTrain(c *config, rep *pgoReport, train string, prog *pgoProgram, dir string, export exporter) ([]byte, error) {
	data, err := os.ReadFile(train)
	if err != nil {
		return nil, err
	}
	out, sum, err := rewriter.Rewrite(data, rewriter.Options{})
	if err != nil {
		return nil, fmt.Errorf("rewrite %s: %w", train, err)
	}
	if rep != nil {
		rep.Functions, rep.Instrumented = sum.Functions, sum.Instrumented
	}
	inst := train + ".blpp"
	if err := os.WriteFile(inst, out, 0o755); err != nil {
		return nil, err
	}
	profile := train + ".blpp.out"
	if _, err := runPGOScript(inst, prog.Script, c.trainScale, dir, "BLPP_PROFILE="+profile); err != nil {
		return nil, fmt.Errorf("blpp training run: %w", err)
	}
	p, err := cct.ReadFile(profile)
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	tab, f, err := blppreport.LoadMeta(inst)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := blppreport.NewModel(inst, tab, p, f)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := export(&buf, m, blppreport.ExportOptions{}); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	return buf.Bytes(), nil
}

// sampleFunctions reads a sample profile with llvm-profdata show, as
// clang's reader does, counts its top-level functions, and tells whether
// it read the profile as probe-based (with CFG checksums).
func sampleFunctions(c *config, file string) (n int, probes bool, err error) {
	out, err := exec.Command(c.profdata, "show", "--sample", file).CombinedOutput()
	if err != nil {
		return 0, false, fmt.Errorf("%s show --sample %s: %v\n%s", c.profdata, file, err, trim(out))
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "Function: ") {
			n++
			probes = probes || strings.Contains(l, "CFG checksum")
		}
	}
	return n, probes, nil
}

// pgoEntries compares the entry counts of blpp's sample profile (head
// samples) with those of clang's instrumentation, both exact counts of one
// deterministic run. Only functions that blpp's profile shows out of line
// and nowhere inlined compare: clang counts the entries of inlined copies
// too.
type pgoEntries struct {
	Compared int      `json:"compared"`
	Equal    int      `json:"equal"`
	Differ   []string `json:"differ"` // "name: blpp N, clang M", the first few
}

// compareEntries compares the head samples of blpp's text sample profile
// with the function counts of clang's instrumentation.
func compareEntries(sample []byte, ir map[string]uint64) pgoEntries {
	var e pgoEntries
	heads, inlined := sampleHeads(sample)
	names := make([]string, 0, len(heads))
	for name := range heads {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n, ok := ir[plainName(name)]
		if !ok || inlined[name] {
			continue
		}
		e.Compared++
		if n == heads[name] {
			e.Equal++
		} else if len(e.Differ) < 10 {
			e.Differ = append(e.Differ, fmt.Sprintf("%s: blpp %d, clang %d", name, heads[name], n))
		}
	}
	return e
}

// plainName is the source name of a function a sample profile names by
// its -funique-internal-linkage-names name: _ZL7l_allocPvS_mm.__uniq.123
// (a static function, mangled the C++ way to carry the suffix) is l_alloc.
func plainName(name string) string {
	base, _, uniq := strings.Cut(name, ".__uniq.")
	if !uniq || !strings.HasPrefix(base, "_ZL") {
		return name
	}
	// _ZL<length><name><parameter types>
	rest := base[3:]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(rest[:i])
	if err != nil || i+n > len(rest) {
		return name
	}
	return rest[i : i+n]
}

// sampleHeads reads an LLVM text sample profile: the head samples of each
// top-level function, and the names of the functions inlined anywhere.
func sampleHeads(text []byte) (heads map[string]uint64, inlined map[string]bool) {
	heads, inlined = map[string]uint64{}, map[string]bool{}
	nested := regexp.MustCompile(`^\s+[0-9]+(?:\.[0-9]+)?: ([^\s:]+):[0-9]+$`)
	for _, l := range strings.Split(string(text), "\n") {
		if l == "" {
			continue
		}
		if l[0] != ' ' {
			// name:total:head; the name itself may hold colons.
			i := strings.LastIndexByte(l, ':')
			j := strings.LastIndexByte(l[:max(i, 0)], ':')
			if j <= 0 {
				continue
			}
			if h, err := strconv.ParseUint(l[i+1:], 10, 64); err == nil {
				heads[l[:j]] = h
			}
			continue
		}
		if m := nested.FindStringSubmatch(l); m != nil {
			inlined[m[1]] = true
		}
	}
	return heads, inlined
}

// irFunctionCounts reads llvm-profdata show --all-functions of a profile
// of clang's front-end instrumentation: each function's count (its first
// counter, the entries of its body). Local functions are named
// "file.c:name" there; they go by name, as in a sample profile, and a name
// two functions have is left out.
func irFunctionCounts(show string) map[string]uint64 {
	out := map[string]uint64{}
	twice := map[string]bool{}
	name := ""
	for _, l := range strings.Split(show, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "    ") && strings.HasSuffix(t, ":"):
			name = strings.TrimSuffix(t, ":")
			if i := strings.LastIndexByte(name, ':'); i >= 0 {
				name = name[i+1:]
			}
		case strings.HasPrefix(t, "Function count: ") && name != "":
			if n, err := strconv.ParseUint(strings.TrimPrefix(t, "Function count: "), 10, 64); err == nil {
				if _, ok := out[name]; ok || twice[name] {
					twice[name] = true
					delete(out, name)
				} else {
					out[name] = n
				}
			}
			name = ""
		}
	}
	return out
}

// boltResult is what llvm-bolt said of a profile.
type boltResult struct {
	Profiled  int      `json:"profiled"`  // functions with a non-empty profile
	Functions int      `json:"functions"` // functions in the binary
	Stale     int      `json:"stale"`     // functions whose profile does not match their code
	Ignored   int      `json:"ignored"`   // profiled objects BOLT found no function for
	Warnings  []string `json:"warnings"`  // BOLT-WARNING lines
}

var (
	boltProfiled = regexp.MustCompile(`BOLT-INFO: ([0-9]+) out of ([0-9]+) functions in the binary .* have non-empty execution profile`)
	boltStale    = regexp.MustCompile(`BOLT-WARNING: ([0-9]+) \([0-9.]+%\) functions have invalid \(possibly stale\) profile`)
	boltIgnored  = regexp.MustCompile(`BOLT-INFO: profile for ([0-9]+) objects was ignored`)
)

// runBolt optimizes in into out with the profile fdata.
func runBolt(c *config, in, out, fdata string) (boltResult, error) {
	var b boltResult
	args := append([]string{in, "-o", out, "-data=" + fdata}, pgoBoltOpts...)
	log, err := exec.Command(c.bolt, args...).CombinedOutput()
	if err != nil {
		return b, fmt.Errorf("%s %s: %v\n%s", c.bolt, strings.Join(args, " "), err, trim(log))
	}
	if m := boltProfiled.FindSubmatch(log); m != nil {
		b.Profiled, _ = strconv.Atoi(string(m[1]))
		b.Functions, _ = strconv.Atoi(string(m[2]))
	}
	if m := boltStale.FindSubmatch(log); m != nil {
		b.Stale, _ = strconv.Atoi(string(m[1]))
	}
	if m := boltIgnored.FindSubmatch(log); m != nil {
		b.Ignored, _ = strconv.Atoi(string(m[1]))
	}
	for _, l := range strings.Split(string(log), "\n") {
		if strings.HasPrefix(l, "BOLT-WARNING") && !strings.Contains(l, "debug info will be stripped") {
			b.Warnings = append(b.Warnings, strings.TrimSpace(l))
		}
	}
	return b, nil
}

// clang compiles the program into out with flags and returns its
// diagnostics, one per line that says "warning:".
func clang(c *config, prog *pgoProgram, out string, flags []string) ([]string, error) {
	args := append(append(append([]string(nil), flags...), prog.CFlags...), "-o", out)
	args = append(args, prog.Sources...)
	args = append(args, prog.LDFlags...)
	cmd := exec.Command(c.clang, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", c.clang, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var warn []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "warning:") {
			warn = append(warn, strings.TrimSpace(l))
		}
	}
	return warn, nil
}
