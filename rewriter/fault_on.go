//go:build blppfault

package rewriter

import "os"

// faultInjection is true in a blpp built with the blppfault tag: the code
// generator then plants the fault BLPP_FAULT names, so that tests can
// show the exactness oracles catch it (internal/testsupport/corpus, TestFaults).
// Never in a normal build.
const faultInjection = true

// fault reports whether the fault named k is to be planted:
//
//	chord    every non-zero chord increment is one too large
//	pathend  a loop copy's head does not count the path its backedge ended
//	partial  calls do not store their call site, so an activation that
//	         stops in a call is a partial path of unknown location
//	threads  entries do not check that the thread block is the thread's
//	         own, so new threads share their creator's: updates are lost
//	         and misplaced between threads
func fault(k string) bool { return os.Getenv("BLPP_FAULT") == k }
