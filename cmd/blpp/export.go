package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/blpp/blpp/cct"

	"github.com/blpp/blpp/internal/outfile"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/report"

	"github.com/spf13/pflag"
)

func init() {
	register(&command{name: "export", summary: "convert profiles to pprof, folded stacks, LLVM sample profiles, BOLT fdata or JSON",
		usage: "PROFILE... [--binary B] [--debug-dir DIR] [--lib FILE]... [--module RE] --format pprof|folded|llvm-sample|bolt-fdata|json [-o OUT|DIR] [--metric M] [--granularity lines|functions] [--no-demangle]", run: runExport})
}

// exporters maps --format to the report function writing it.
var exporters = map[string]func(io.Writer, *report.Model, report.ExportOptions) error{
	"pprof":       report.ExportPprof,
	"folded":      report.ExportFolded,
	"llvm-sample": report.ExportLLVMSample,
	"bolt-fdata":  report.ExportBoltFdata,
}

// binaryFlag is the --binary of the commands that read profiles (loadModel).
func binaryFlag(fs *pflag.FlagSet) *string {
	return fs.String("binary", "", "the instrumented binary the profiles came from (default: the one the profile names, when it is still there and the same build)")
}

// noDemangleFlag is the --no-demangle of the commands that show function
// names to people; names reads it.
func noDemangleFlag(fs *pflag.FlagSet) *bool {
	return fs.Bool("no-demangle", false, "show C++ and Rust function names mangled, as the symbol table has them")
}

// names are the report.NameOptions of a --no-demangle flag.
func names(noDemangle *bool) report.NameOptions { return report.NameOptions{Raw: *noDemangle} }

// debugDirFlag is --debug-dir: more directories searched for separate
// debug info (report.DebugOptions), read back by modelOptions.
func debugDirFlag(fs *pflag.FlagSet) {
	fs.StringArray("debug-dir", nil, "look for separate debug info in DIR too, as in /usr/lib/debug (DIR/.build-id/xx/rest.debug); repeatable or DIR1:DIR2")
}

// libFlags are --lib and --module of the commands that load a model:
// the instrumented files of the profile's library modules, and the
// modules whose functions the views show (read back by loadModel).
func libFlags(fs *pflag.FlagSet) {
	fs.StringArray("lib", nil, "the instrumented file of a library module of the profile, matched by build-id (default: the path the profile recorded); repeatable")
	fs.String("module", "", "show only the functions of the modules whose name (libz.so.1) matches this regular expression")
}

// modelOptions are the report.ModelOptions of the running command's
// --debug-dir and of DEBUGINFOD_URLS (local roots only).
func modelOptions(c *ctx) report.ModelOptions {
	var o report.ModelOptions
	dirs, _ := c.fs.GetStringArray("debug-dir")
	for _, d := range dirs {
		o.Debug.Dirs = append(o.Debug.Dirs, filepath.SplitList(d)...)
	}
	o.Debug.Debuginfod = os.Getenv("DEBUGINFOD_URLS")
	o.Debug.CacheDir = filepath.Join(cacheRoot(), "dwarf")
	return o
}

// debugNotes prints what the search for separate debug info refused.
func debugNotes(c *ctx, m *report.Model) {
	for k := range m.Modules {
		prefix := ""
		if len(m.Modules) > 1 {
			prefix = "module " + m.Modules[k].Name + ": "
		}
		for _, n := range m.Modules[k].DebugSource.Notes {
			fmt.Fprintf(c.stderr, "blpp: note: %s%s\n", prefix, n)
		}
	}
}

// outputFlag is the -o of the commands whose output goes through
// writeOutput.
func outputFlag(fs *pflag.FlagSet) *string {
	return fs.StringP("output", "o", "", "write to this file (default: standard output)")
}

// loadModel reads and merges the profiles and lays them over the
// instrumented binary, with the running command's --debug-dir (c nil:
// none; the search's notes go to c.stderr); the model shows names as o
// says. The caller closes the returned model's File.
func loadModel(c *ctx, binary string, profiles []string, o report.NameOptions) (*report.Model, error) {
	if len(profiles) == 0 {
		return nil, &usageError{"want at least one PROFILE argument"}
	}
	prof, err := readProfiles(profiles)
	if err != nil {
		return nil, err
	}
	binary, tab, f, err := openBinary(binary, prof, profiles[0], nil)
	if err != nil {
		return nil, err
	}
	var mo report.ModelOptions
	if c != nil {
		mo = modelOptions(c)
	}
	if mo.Libs, err = openLibs(c, prof, nil); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", profiles[0], err)
	}
	m, err := report.NewModelWith(binary, tab, prof, f, mo)
	if err != nil {
		f.Close()
		report.CloseModules(mo.Libs)
		return nil, fmt.Errorf("%s: %w", profiles[0], err)
	}
	if err := moduleFilter(c, m); err != nil {
		return nil, err
	}
	m.Names = o
	if c != nil {
		debugNotes(c, m)
	}
	return m, nil
}

func runExport(c *ctx, args []string) error {
	fs := c.newFlags()
	binary := binaryFlag(fs)
	debugDirFlag(fs)
	libFlags(fs)
	format := fs.String("format", "", "pprof, folded, llvm-sample, bolt-fdata or json (required)")
	out := fs.StringP("output", "o", "", "write to this file (default: standard output); bolt-fdata and llvm-sample: when it is a directory, one file per module in it, named after the module (required for a profile of several modules)")
	metric := fs.String("metric", "insns", "folded: the value of each stack (insns, count, calls or a metric of the profile)")
	granularity := fs.String("granularity", report.GranularityLines, "pprof: a sample per source line of each block that ran in each context (lines), or one per context at its function (functions: for profiles of millions of contexts)")
	noDemangle := noDemangleFlag(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	var write func(io.Writer, *report.Model) error
	switch *format {
	case "json":
	case "":
		return &usageError{"--format is required: pprof, folded, llvm-sample, bolt-fdata or json"}
	default:
		ex, ok := exporters[*format]
		if !ok {
			return &usageError{fmt.Sprintf("--format %q: want pprof, folded, llvm-sample, bolt-fdata or json", *format)}
		}
		write = func(w io.Writer, m *report.Model) error {
			return ex(w, m, report.ExportOptions{Metric: *metric, Granularity: *granularity})
		}
	}
	if g := *granularity; g != report.GranularityLines && g != report.GranularityFunctions {
		return &usageError{fmt.Sprintf("--granularity %q: want %s or %s", g, report.GranularityLines, report.GranularityFunctions)}
	}
	if fs.Changed("granularity") && *format != "pprof" {
		return &usageError{"--granularity is pprof's: the other formats have one granularity"}
	}
	if *format == "pprof" && *out == "" {
		if f, ok := c.stdout.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				return &usageError{"--format pprof writes binary data: give -o FILE or redirect standard output"}
			}
		}
	}
	m, err := loadModel(c, *binary, fs.Args(), names(noDemangle))
	if err != nil {
		return err
	}
	defer m.File.Close()
	if ext, ok := perModule[*format]; ok {
		isDir := false
		if fi, err := os.Stat(*out); err == nil && fi.IsDir() {
			isDir = true
		}
		if len(m.Modules) > 1 && !isDir {
			return &usageError{fmt.Sprintf("--format %s writes one file per module, and this profile has %d modules: give -o DIR (an existing directory)", *format, len(m.Modules))}
		}
		if isDir {
			return exportPerModule(c, *out, ext, m, write)
		}
	}
	if *format == "json" {
		// The document of blpp report --format json, contexts included.
		write = func(w io.Writer, m *report.Model) error { return report.PathsJSON(w, m) }
	}
	return writeStreamed(c, *out, func(w io.Writer) error { return write(w, m) })
}

// writeStreamed has write fill path (internal/outfile.Stream: a failure
// leaves no partial file) or, when path is empty, standard output,
// through a buffer: the exports of a whole-process profile are
// gigabytes, more than is worth holding (decision 139). The exporters
// find what they refuse before they write.
func writeStreamed(c *ctx, path string, write func(io.Writer) error) error {
	through := func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	}
	if path == "" {
		return through(c.stdout)
	}
	return outfile.Stream(path, 0o644, through)
}

// openLibs opens the library modules' files of prof, by the running
// command's --lib (c nil: the recorded paths only).
func openLibs(c *ctx, prof *cct.Profile, need report.FuncSet) (map[uint32]report.ModuleFile, error) {
	var libs []string
	if c != nil && c.fs != nil && c.fs.Lookup("lib") != nil {
		libs, _ = c.fs.GetStringArray("lib")
	}
	if len(libs) > 0 && prof.Modules == nil {
		return nil, &usageError{"--lib: the profile has no library modules (an executable-only profile)"}
	}
	return report.OpenModules(prof, libs, need)
}

// moduleFilter applies the running command's --module to m.
func moduleFilter(c *ctx, m *report.Model) error {
	if c == nil || c.fs == nil || c.fs.Lookup("module") == nil || !c.fs.Changed("module") {
		return nil
	}
	expr, _ := c.fs.GetString("module")
	re, err := regexp.Compile(expr)
	if err != nil {
		return &usageError{fmt.Sprintf("--module: %v", err)}
	}
	return m.FilterModules(re)
}

// perModule lists the formats written one file per module (they name
// functions by symbol and address, which only mean something in one
// file), with the extension of each file.
var perModule = map[string]string{
	"bolt-fdata":  ".fdata",
	"llvm-sample": ".llvm-sample.txt",
}

// exportPerModule writes dir/<module><ext> for each module of m, every
// file made before any is written. A source-level format (llvm-sample)
// leaves out the modules without DWARF line tables, as most system
// libraries are shipped, and names them on stderr; it fails only when
// no module has them.
func exportPerModule(c *ctx, dir, ext string, m *report.Model, write func(io.Writer, *report.Model) error) error {
	files := make([][]byte, len(m.Modules))
	var noLines []string
	for k := range m.Modules {
		var buf bytes.Buffer
		if err := write(&buf, m.ModuleView(k)); err != nil {
			if errors.Is(err, report.ErrNoDebugInfo) && len(m.Modules) > 1 {
				noLines = append(noLines, m.Modules[k].Name)
				files[k] = nil
				continue
			}
			return fmt.Errorf("module %s: %w", m.Modules[k].Name, err)
		}
		files[k] = buf.Bytes()
	}
	if len(noLines) == len(m.Modules) {
		return fmt.Errorf("no module has DWARF line information (build with -g, or install the libraries' -dbgsym packages and give --debug-dir): %s", strings.Join(noLines, ", "))
	}
	for k, data := range files {
		if data == nil {
			continue
		}
		if err := outfile.Write(filepath.Join(dir, m.Modules[k].Name+ext), data, 0o644); err != nil {
			return err
		}
	}
	if len(noLines) > 0 {
		fmt.Fprintf(c.stderr, "blpp export: no DWARF line information, no %s file: %s\n", ext, strings.Join(noLines, ", "))
	}
	return nil
}

// writeOutput writes data to path (through a temporary file renamed into
// place, internal/outfile) or, when path is empty, to standard output.
func writeOutput(c *ctx, path string, data []byte) error {
	if path == "" {
		_, err := c.stdout.Write(data)
		return err
	}
	return outfile.Write(path, data, 0o644)
}

// openBinary opens the instrumented binary whose metadata explains prof
// (read from the file named profName): binary when given, else the file
// the profile's executable module names, provided it is still there and
// still the build that wrote the profile (its instrumentation id is the
// profile's build-id).
func openBinary(binary string, prof *cct.Profile, profName string, need report.FuncSet) (string, *meta.Table, *elf.File, error) {
	if binary != "" {
		tab, f, err := report.LoadMetaOf(binary, 0, need)
		return binary, tab, f, err
	}
	required := func(why string) error {
		return &usageError{fmt.Sprintf("--binary is required: %s; give the instrumented binary that wrote %s", why, profName)}
	}
	for _, m := range prof.Modules {
		if m.Tag != 0 {
			continue
		}
		if m.Path == "" {
			break
		}
		tab, f, err := report.LoadMetaOf(m.Path, 0, need)
		if err != nil {
			return "", nil, nil, required(fmt.Sprintf("the profile names %s, which cannot be read (%v)", m.Path, err))
		}
		if len(tab.InstrID) > 0 && string(tab.InstrID) != string(prof.BuildID) {
			f.Close()
			return "", nil, nil, required(fmt.Sprintf("the profile names %s, which is now another build (build-id %x, the profile's %x)", m.Path, tab.InstrID, prof.BuildID))
		}
		return m.Path, tab, f, nil
	}
	return "", nil, nil, required("the profile does not name the binary that wrote it")
}
