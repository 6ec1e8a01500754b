package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/blpp/blpp/internal/outfile"
)

// realProgram is a program of the real suite (--suite real): an installed
// Debian executable, or a C program of ours built from source so that gcc's
// -fprofile-arcs can be measured beside blpp, each with a workload of about
// a second at --scale 100. The programs are call-heavy and spend their time
// in the executable itself: blpp rewrite instruments the executable only,
// so time spent in shared libraries (libc, libstdc++) would dilute the
// overhead.
type realProgram struct {
	name string
	path string // the installed executable ("" for a program built from src)
	pkg  string // the Debian package that installs it
	src  string // C source under the data directory, built natively and with gcov counters
	// source, when set, makes a C source in dir to build instead of src
	// (natively and with gcov counters), with its own compiler and linker
	// flags.
	source func(c *config, dir string) (src string, cflags []string, err error)
	// sourceReady, with source, says why its source cannot be had here
	// (nil when it can).
	sourceReady func(c *config) error
	// command is the command line at size scale. data is the directory of
	// the committed scripts (cmd/blpp-bench/testdata/real); inputs is a
	// directory of this size's own where it may write generated inputs.
	command func(scale int, data, inputs string) (command, error)
	// startup, when set, are arguments that make the program start and
	// exit doing nothing: what the runtime costs a short run.
	startup []string
}

// realSuite lists the programs of --suite real.
var realSuite = []realProgram{
	{name: "lua5.4", path: "/usr/bin/lua5.4", pkg: "lua5.4", startup: []string{"-e", ""},
		command: func(scale int, data, _ string) (command, error) {
			return command{args: []string{filepath.Join(data, "calls.lua"), strconv.Itoa(scale)}}, nil
		}},
	{name: "gawk", path: "/usr/bin/gawk", pkg: "gawk",
		command: func(scale int, data, _ string) (command, error) {
			return command{args: []string{"-v", "n=" + strconv.Itoa(scale), "-f", filepath.Join(data, "calls.awk")}, env: []string{"LC_ALL=C"}}, nil
		}},
	{name: "python3", path: "/usr/bin/python3.11", pkg: "python3.11-minimal", startup: []string{"-c", ""},
		command: func(scale int, data, _ string) (command, error) {
			// No .pyc files written into the system's library.
			return command{args: []string{filepath.Join(data, "calls.py"), strconv.Itoa(scale)}, env: []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=0"}}, nil
		}},
	{name: "bc", path: "/usr/bin/bc", pkg: "bc",
		command: func(scale int, data, inputs string) (command, error) {
			// bc takes no arguments for its script: a first file sets n.
			size := filepath.Join(inputs, "n.bc")
			if err := os.WriteFile(size, []byte(fmt.Sprintf("n = %d\n", scale)), 0o644); err != nil {
				return command{}, err
			}
			return command{args: []string{"-q", size, filepath.Join(data, "calls.bc")}}, nil
		}},
	{name: "troff", path: "/usr/bin/troff", pkg: "groff-base",
		command: func(scale int, data, _ string) (command, error) {
			return command{args: []string{"-Tutf8", "-rN" + strconv.Itoa(scale), filepath.Join(data, "calls.tr")}}, nil
		}},
	{name: "cppcheck", path: "/usr/bin/cppcheck", pkg: "cppcheck",
		command: func(scale int, _, inputs string) (command, error) {
			src := filepath.Join(inputs, "gen.c")
			if err := os.WriteFile(src, []byte(cppcheckInput(8*scale)), 0o644); err != nil {
				return command{}, err
			}
			return command{args: []string{"-q", "--enable=warning", src}}, nil
		}},
	{name: "re2c", path: "/usr/bin/re2c", pkg: "re2c",
		command: func(scale int, _, inputs string) (command, error) {
			src := filepath.Join(inputs, "lexer.re")
			if err := os.WriteFile(src, []byte(re2cInput(40*scale)), 0o644); err != nil {
				return command{}, err
			}
			// The lexer (megabytes of C) goes to a file in the run's own
			// directory rather than through a pipe to the harness.
			return command{args: []string{"-i", "--no-generation-date", "--no-version", "-o", "lexer.c", src}}, nil
		}},
	{name: "m4", path: "/usr/bin/m4", pkg: "m4",
		command: func(scale int, data, _ string) (command, error) {
			return command{args: []string{"-Dn=" + strconv.Itoa(scale), filepath.Join(data, "calls.m4")}}, nil
		}},
	// Lua 5.4 built here from Debian's source (as one unit), so that gcc's
	// edge counting can be measured on a real interpreter beside blpp:
	// the same script as lua5.4's.
	{name: "lua-src", pkg: "gcc", source: luaOneUnit, sourceReady: func(c *config) error { _, err := luaSource(c); return err },
		command: func(scale int, data, _ string) (command, error) {
			return command{args: []string{filepath.Join(data, "calls.lua"), strconv.Itoa(scale)}}, nil
		}},
	{name: "calls", src: "calls.c", pkg: "gcc",
		command: func(scale int, _, _ string) (command, error) { return sizeCommand(scale), nil }},
}

// benchReal builds, runs and reports the real suite.
func benchReal(c *config) error {
	data := c.srcDir
	if data == "" {
		root, err := moduleRoot()
		if err != nil {
			return fmt.Errorf("%w (or pass --src)", err)
		}
		data = filepath.Join(root, "cmd", "blpp-bench", "testdata", "real")
	}
	progs, err := pickReal(c.only)
	if err != nil {
		return err
	}
	dir, done, err := c.workDir("blpp-bench-real-", "build")
	if err != nil {
		return err
	}
	defer done()
	rep := c.newReport("real")
	for _, v := range c.variants {
		rep.Variants = append(rep.Variants, v.String())
		if v == ctxTSC {
			rep.RdtscNS = rdtscNS()
		}
	}
	for _, p := range progs {
		if why := p.missing(c); why != "" {
			fmt.Fprintf(c.stderr, "%s: skipped: %s\n", p.name, why)
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s (%s)", p.name, why))
			continue
		}
		w, err := buildReal(c, p, data, dir)
		if err != nil {
			return err
		}
		res, err := measure(c, w, dir)
		if err != nil {
			return err
		}
		res.Command = commandLine(p.name, w.cmd)
		if res.DynamicShare, err = dynamicShare(c, w); err != nil {
			return err
		}
		rep.Workloads = append(rep.Workloads, res)
		if p.startup != nil {
			if res, err = measureStartup(c, w, p.startup, dir); err != nil {
				return err
			}
			rep.Startup = append(rep.Startup, res)
		}
	}
	if len(rep.Workloads) == 0 {
		return fmt.Errorf("no program of the real suite is installed: %s", strings.Join(rep.Skipped, ", "))
	}
	return c.finishReport(rep)
}

// pickReal returns the programs of the real suite that --only names (all
// without it).
func pickReal(only []string) ([]realProgram, error) {
	if len(only) == 0 {
		return realSuite, nil
	}
	var picked []realProgram
	for _, name := range only {
		found := false
		for _, p := range realSuite {
			if p.name == name {
				picked, found = append(picked, p), true
			}
		}
		if !found {
			var names []string
			for _, p := range realSuite {
				names = append(names, p.name)
			}
			return nil, &usageError{fmt.Sprintf("no program %q in the real suite (have %s)", name, strings.Join(names, ", "))}
		}
	}
	return picked, nil
}

// missing says why p cannot be measured here ("" when it can).
func (p realProgram) missing(c *config) string {
	if p.src != "" || p.source != nil {
		if err := c.needCC(); err != nil {
			return err.Error()
		}
		if p.sourceReady != nil {
			if err := p.sourceReady(c); err != nil {
				return err.Error()
			}
		}
		return ""
	}
	if _, err := os.Stat(p.path); err != nil {
		return fmt.Sprintf("%s not installed (Debian package %s)", p.path, p.pkg)
	}
	return ""
}

// buildReal makes p's variants in dir/p.name: a copy of the installed
// executable (so that every variant starts from the same directory, which
// interpreters search for their libraries) or a build of its source, and
// the rewrites; and its inputs at --scale and at --share-scale.
func buildReal(c *config, p realProgram, data, dir string) (*workload, error) {
	fmt.Fprintf(c.stderr, "%s: building\n", p.name)
	bdir := filepath.Join(dir, p.name)
	if err := os.MkdirAll(bdir, 0o755); err != nil {
		return nil, err
	}
	w := &workload{name: p.name}
	w.bins[native] = filepath.Join(bdir, p.name)
	if p.source != nil {
		var err error
		if w.src, w.cflags, err = p.source(c, bdir); err != nil {
			return nil, err
		}
	} else if p.src != "" {
		w.src = filepath.Join(data, p.src)
	}
	if w.src != "" {
		if err := compile(c.cc, w.src, w.bins[native], w.cflags...); err != nil {
			return nil, err
		}
	} else if err := copyFile(p.path, w.bins[native]); err != nil {
		return nil, err
	}
	var err error
	if w.cmd, err = realCommand(p, c.scale, data, bdir); err != nil {
		return nil, err
	}
	if w.shareCmd, err = realCommand(p, c.shareScale, data, bdir); err != nil {
		return nil, err
	}
	return w, buildVariants(c, w, bdir)
}

// realCommand is p's command line at size scale, its generated inputs in a
// directory of their own under bdir.
func realCommand(p realProgram, scale int, data, bdir string) (command, error) {
	inputs := filepath.Join(bdir, fmt.Sprintf("inputs-%d", scale))
	if err := os.MkdirAll(inputs, 0o755); err != nil {
		return command{}, err
	}
	cmd, err := p.command(max(scale, 1), data, inputs)
	if err != nil {
		return command{}, fmt.Errorf("%s: inputs: %w", p.name, err)
	}
	return cmd, nil
}

// measureStartup times w's variants running the start-up arguments: a run
// that only starts and exits, so the difference from native is what the
// runtime costs every run (reserving its arena and shadow stack,
// installing its handlers, writing the profile). Short runs are noisy;
// they are repeated more often than the workload.
func measureStartup(c *config, w *workload, args []string, dir string) (*workloadResult, error) {
	sc := *c
	sc.runs = max(20, 4*c.runs)
	sc.warmup = max(c.warmup, 1)
	sw := *w
	sw.cmd = command{args: args, env: w.cmd.env}
	sw.name = w.name + " (start-up)"
	fmt.Fprintf(c.stderr, "%s: start-up and exit\n", w.name)
	res, err := measure(&sc, &sw, dir)
	if err != nil {
		return nil, err
	}
	res.Name = w.name
	res.Command = commandLine(w.name, sw.cmd)
	return res, nil
}

// commandLine is cmd for people: the program's name and the arguments,
// quoted where needed, directories of inputs left out.
func commandLine(name string, cmd command) string {
	parts := []string{name}
	for _, a := range cmd.args {
		if filepath.IsAbs(a) {
			a = filepath.Base(a)
		}
		if a == "" || strings.ContainsAny(a, " \t'\"") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	if cmd.stdin != "" {
		parts = append(parts, "<", filepath.Base(cmd.stdin))
	}
	return strings.Join(parts, " ")
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	return outfile.WriteWith(to, 0o755, func(f *os.File) error {
		_, err := io.Copy(f, in)
		return err
	})
}

// cppcheckInput is a C file of n functions, each a loop over a switch
// that calls the previous one: enough for cppcheck's value-flow analysis
// to take its time. Deterministic in n.
func cppcheckInput(n int) string {
	var b strings.Builder
	b.WriteString("#include <string.h>\n\nstruct node { int v; struct node *next; char name[16]; };\n")
	for i := 0; i < n; i++ {
		ret := "return s;"
		if i > 0 {
			ret = fmt.Sprintf("return s + f%d(p, n - 1);", i-1)
		}
		fmt.Fprintf(&b, `
static int f%d(struct node *p, int n)
{
	int s = 0;
	char buf[16];
	for (int j = 0; j < n; j++) {
		switch ((j + %d) %% 4) {
		case 0: s += p->v * %d; break;
		case 1: s -= j; break;
		case 2: if (p->next) s += p->next->v; break;
		default: memcpy(buf, p->name, sizeof buf); s += buf[j %% 16]; break;
		}
	}
	%s
}
`, i, i, i%7+1, ret)
	}
	fmt.Fprintf(&b, "\nint main(void)\n{\n\tstruct node x = {1, 0, \"x\"};\n\treturn f%d(&x, 3) & 1;\n}\n", max(n-1, 0))
	return b.String()
}

// re2cInput is an re2c lexer with n keyword rules (pseudo-random words
// with their number) and two catch-alls: the DFA re2c builds, minimises
// and prints grows with n. Deterministic in n.
func re2cInput(n int) string {
	var b strings.Builder
	b.WriteString("int lex(const char *YYCURSOR)\n{\n\tconst char *YYMARKER;\n\t/*!re2c\n\tre2c:define:YYCTYPE = char;\n\tre2c:yyfill:enable = 0;\n")
	for i := 0; i < n; i++ {
		var word [8]byte
		for k := range word {
			word[k] = byte('a' + (uint64(i)*7919>>(3*k))%26)
		}
		fmt.Fprintf(&b, "\t\"%s%d\" { return %d; }\n", word[:], i, i)
	}
	b.WriteString("\t[a-z]+ [0-9]* { return -1; }\n\t* { return -2; }\n\t*/\n}\n")
	return b.String()
}

// luaOneUnit writes Lua 5.4's interpreter (Debian's source, luaSource) as
// one translation unit in dir, with the flags of Lua's own linux build.
func luaOneUnit(c *config, dir string) (string, []string, error) {
	src, err := luaSource(c)
	if err != nil {
		return "", nil, err
	}
	one := filepath.Join(dir, "onelua.c")
	if _, err := writeOneLua(src, one); err != nil {
		return "", nil, err
	}
	return one, []string{"-I" + src, "-DLUA_USE_LINUX", "-lm", "-ldl"}, nil
}
