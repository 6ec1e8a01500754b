package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for blpp where a test makes a
// process run blpp: the run auditor calls `blpp rewrite-module`
// (selfPath is this binary in tests).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "rewrite-module" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}
