package main

import (
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

//go:embed demo/demo.c
var demoSource []byte

func init() {
	register(&command{name: "demo", summary: "build the bundled example with the system C compiler, rewrite, run and report it",
		usage: "[--cc CC] [--keep DIR]", run: runDemo, streams: true})
}

// runDemo compiles the embedded example, shows what blpp sees in it (the
// per-function statistics and one CFG), rewrites it, runs the instrumented
// copy and reports its hot paths.
func runDemo(c *ctx, args []string) error {
	fs := c.newFlags()
	cc := fs.String("cc", "", "C compiler (default: $CC, else cc, gcc or clang)")
	keep := fs.String("keep", "", "build in this directory and keep it (default: a temporary directory)")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if len(fs.Args()) != 0 {
		return &usageError{"demo takes no arguments"}
	}
	compiler := *cc
	if compiler == "" {
		compiler = os.Getenv("CC")
	}
	if compiler == "" {
		for _, try := range []string{"cc", "gcc", "clang"} {
			if _, err := exec.LookPath(try); err == nil {
				compiler = try
				break
			}
		}
	}
	if compiler == "" {
		return fmt.Errorf("no C compiler found: install one (Debian: apt-get install gcc) or pass --cc")
	}
	dir := *keep
	if dir == "" {
		d, err := os.MkdirTemp("", "blpp-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	src := filepath.Join(dir, "demo.c")
	bin := filepath.Join(dir, "demo")
	if err := os.WriteFile(src, demoSource, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "blpp demo: %s -O2 -g %s -o %s\n", compiler, src, bin)
	build := exec.Command(compiler, "-O2", "-g", src, "-o", bin)
	build.Stdout, build.Stderr = c.stderr, c.stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("compiling the demo with %s: %w", compiler, err)
	}
	run := exec.Command(bin)
	run.Stdout, run.Stderr = c.stdout, c.stderr
	fmt.Fprintf(c.stdout, "$ %s\n", bin)
	if err := run.Run(); err != nil {
		return fmt.Errorf("running the demo: %w", err)
	}
	r, err := analyse(bin, "", 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "\n$ blpp stats %s\n", bin)
	if err := report.StatsText(c.stdout, report.MakeStats(bin, r)); err != nil {
		return err
	}
	for i, f := range r.Funcs {
		if f.Func.Name == "classify" {
			fmt.Fprintf(c.stdout, "\n$ blpp cfg %s --func '^classify$'\n", bin)
			if err := report.CFGText(c.stdout, report.MakeCFG(bin, r, r.Funcs[i:i+1])); err != nil {
				return err
			}
		}
	}
	inst := bin + ".blpp"
	fmt.Fprintf(c.stdout, "\n$ blpp rewrite %s -o %s\n", bin, inst)
	sum, err := rewriteAlone(bin, inst, rewriter.Options{})
	if err != nil {
		return err
	}
	printSummary(c, bin, inst, sum, false)
	prof := filepath.Join(dir, "blpp.out")
	fmt.Fprintf(c.stdout, "\n$ BLPP_PROFILE=%s %s\n", prof, inst)
	ir := exec.Command(inst)
	ir.Stdout, ir.Stderr = c.stdout, c.stderr
	ir.Env = append(os.Environ(), "BLPP_PROFILE="+prof)
	if err := ir.Run(); err != nil {
		return fmt.Errorf("running the instrumented demo: %w", err)
	}
	fmt.Fprintf(c.stdout, "\n$ blpp report %s --binary %s --top 5\n", prof, inst)
	if err := writeRunReportTo(c.stdout, inst, "", prof, 5); err != nil {
		return err
	}
	// The calling context tree: the same command line the user would type.
	tree := []string{"report", prof, "--binary", inst, "--view", "tree"}
	fmt.Fprintf(c.stdout, "\n$ blpp %s\n", strings.Join(tree, " "))
	if st := blppMain(tree, c.stdout, c.stderr); st != 0 {
		return fmt.Errorf("blpp report --view tree: exit status %d", st)
	}
	return nil
}

// blppMain runs a blpp command line (the demo shows real ones).
var blppMain func(args []string, stdout, stderr io.Writer) int

func init() { blppMain = run }
