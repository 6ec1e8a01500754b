package main

import (
	"bytes"
	"fmt"

	"github.com/blpp/blpp/report"
)

func init() {
	register(&command{name: "coverage", summary: "line, block and function coverage per source file (text or an lcov tracefile)",
		usage: "PROFILE... [--binary B] [--debug-dir DIR] [--lib FILE]... [--module RE] [--format text|lcov] [--no-demangle] [-o OUT]", run: runCoverage})
}

func runCoverage(c *ctx, args []string) error {
	fs := c.newFlags()
	binary := binaryFlag(fs)
	debugDirFlag(fs)
	libFlags(fs)
	format := fs.String("format", "text", "text, or lcov (a tracefile for genhtml)")
	noDemangle := noDemangleFlag(fs)
	out := outputFlag(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *format != "text" && *format != "lcov" {
		return &usageError{fmt.Sprintf("--format %q: want text or lcov", *format)}
	}
	m, err := loadModel(c, *binary, fs.Args(), names(noDemangle))
	if err != nil {
		return err
	}
	defer m.File.Close()
	cov := report.MakeCoverage(m)
	var buf bytes.Buffer
	if *format == "lcov" {
		if len(cov.Files) == 0 {
			return report.ErrNoDebugInfo
		}
		err = report.CoverageLcov(&buf, cov)
	} else {
		err = report.CoverageText(&buf, cov)
	}
	if err != nil {
		return err
	}
	return writeOutput(c, *out, buf.Bytes())
}
