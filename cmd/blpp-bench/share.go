package main

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/blpp/blpp/internal/testsupport/callgrind"
	"github.com/blpp/blpp/internal/testsupport/corpus"
	blppreport "github.com/blpp/blpp/report"
)

// dynamicShare measures, for the workload's first blpp rewrite (context
// mode when measured), the share of the native binary's executed
// instructions that lie in instrumented functions (DESIGN decision 14):
// callgrind runs the native binary at --share-scale, which runs the same
// code as the timed runs, fewer times. It returns -1 when valgrind is not
// installed or --share-scale is 0.
func dynamicShare(c *config, w *workload) (float64, error) {
	if c.shareScale <= 0 {
		return -1, nil
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		return -1, nil
	}
	inst := ""
	for _, v := range []variant{ctx, flow, ctxTSC} {
		if w.bins[v] != "" {
			inst = w.bins[v]
			break
		}
	}
	if inst == "" {
		return -1, nil
	}
	fmt.Fprintf(c.stderr, "%s: dynamic share (callgrind, scale %d)\n", w.name, c.shareScale)
	opts := callgrind.Options{Args: w.shareCmd.args, Env: w.shareCmd.env}
	if w.shareCmd.stdin != "" {
		var err error
		if opts.Stdin, err = os.ReadFile(w.shareCmd.stdin); err != nil {
			return 0, err
		}
	}
	// A directory of its own, as the timed runs have: some workloads write
	// files where they run.
	dir, err := os.MkdirTemp("", "blpp-bench-share-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	opts.Dir = dir
	cg, err := callgrind.Run(w.bins[native], opts)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", w.name, err)
	}
	tab, f, err := blppreport.LoadMeta(inst)
	if err != nil {
		return 0, err
	}
	f.Close()
	plt, err := corpus.PLTRanges(w.bins[native])
	if err != nil {
		return 0, err
	}
	return corpus.DynamicShareOf(tab, cg, plt).Ratio(), nil
}
