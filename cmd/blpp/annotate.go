package main

import (
	"bytes"

	"github.com/blpp/blpp/report"
)

func init() {
	register(&command{name: "annotate", summary: "source lines (or, without DWARF, instructions) with their execution counts",
		usage: "PROFILE... [--binary B] [--debug-dir DIR] [--lib FILE]... [--module RE] [FILE|FUNC] [--disasm] [--no-demangle] [-o OUT]", run: runAnnotate})
}

func runAnnotate(c *ctx, args []string) error {
	fs := c.newFlags()
	binary := binaryFlag(fs)
	noDemangle := noDemangleFlag(fs)
	debugDirFlag(fs)
	libFlags(fs)
	disasm := fs.Bool("disasm", false, "annotate the disassembly even when the binary has line information")
	out := outputFlag(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	// The last argument names a file or a function when it is not a
	// profile: profiles are files that exist, and so may sources be, so
	// the target is told apart by reading it as a profile.
	profiles, target := fs.Args(), ""
	if n := len(profiles); n >= 2 {
		if _, err := readProfiles(profiles[n-1:]); err != nil {
			profiles, target = profiles[:n-1], profiles[n-1]
		}
	}
	m, err := loadModel(c, *binary, profiles, names(noDemangle))
	if err != nil {
		return err
	}
	defer m.File.Close()
	var buf bytes.Buffer
	if err := report.Annotate(&buf, m, report.AnnotateOptions{Target: target, Disasm: *disasm}); err != nil {
		return err
	}
	return writeOutput(c, *out, buf.Bytes())
}
