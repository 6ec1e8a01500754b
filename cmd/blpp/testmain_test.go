package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for blpp where a test makes a
// process run blpp: the run auditor calls `blpp rewrite-module`
// (selfPath is this binary in tests), and the whole-process tests start
// `blpp run` as a process of its own, so that the program has real
// standard streams and exit status. go test's own arguments all start
// with -test., never with a command's name.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && find(os.Args[1]) != nil {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
