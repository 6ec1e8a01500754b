package main

import (
	"github.com/blpp/blpp/cct"
	"strings"
)

func init() {
	register(&command{name: "merge", summary: "merge profiles of runs of one instrumented program into one profile (per module, by build-id)",
		usage: "PROFILE... -o OUT [--fold-threads]", run: runMerge})
}

func runMerge(c *ctx, args []string) error {
	fs := c.newFlags()
	out := fs.StringP("output", "o", "", "the merged profile to write (required)")
	fold := fs.Bool("fold-threads", false, "fold every thread into one calling-context tree")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return &usageError{"-o OUT is required"}
	}
	if len(fs.Args()) == 0 {
		return &usageError{"want at least one PROFILE argument"}
	}
	var ps []*cct.Profile
	for _, name := range fs.Args() {
		p, err := cct.ReadFile(name)
		if err != nil {
			return err
		}
		ps = append(ps, p)
	}
	p, err := cct.MergeNamed(fs.Args(), ps)
	if err != nil {
		// The command already says "merge".
		return retold{strings.TrimPrefix(err.Error(), "merge: "), err}
	}
	if *fold {
		p = p.FoldThreads()
	}
	return p.WriteFile(*out)
}

// retold is an error told in other words, which still wraps it.
type retold struct {
	msg string
	err error
}

func (r retold) Error() string { return r.msg }
func (r retold) Unwrap() error { return r.err }
