package main

import (
	"bytes"

	"github.com/blpp/blpp/report"
)

func init() {
	register(&command{name: "diff", summary: "functions and paths whose share of the run changed most between two profiles",
		usage: "OLD NEW [--binary B] [--new-binary B2] [--lib FILE]... [--module RE] [--top N] [--no-demangle]", run: runDiff})
}

func runDiff(c *ctx, args []string) error {
	fs := c.newFlags()
	binary := fs.String("binary", "", "the instrumented binary of OLD (and of NEW unless --new-binary) (default: the one each profile names, when it is still there and the same build)")
	newBinary := fs.String("new-binary", "", "the instrumented binary of NEW, when it is another build")
	top := fs.Int("top", 20, "rows per table (0: all)")
	noDemangle := noDemangleFlag(fs)
	libFlags(fs)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if len(fs.Args()) != 2 {
		return &usageError{"want two arguments: OLD NEW"}
	}
	if *newBinary == "" {
		*newBinary = *binary
	}
	old, err := loadModel(c, *binary, fs.Args()[:1], names(noDemangle))
	if err != nil {
		return err
	}
	defer old.File.Close()
	nw, err := loadModel(c, *newBinary, fs.Args()[1:], names(noDemangle))
	if err != nil {
		return err
	}
	defer nw.File.Close()
	var buf bytes.Buffer
	if err := report.DiffText(&buf, report.MakeDiff(old, nw), *top); err != nil {
		return err
	}
	return writeOutput(c, "", buf.Bytes())
}
