// Package corpus checks blpp on real programs: a declarative corpus of
// Debian programs with workloads (testdata/corpus/corpus.json, installed
// by testdata/corpus/install.sh) and a sweep over every ELF executable in
// /usr/bin, alone and with every shared library it loads instrumented. Its tests rewrite each program, run original and rewritten
// copies side by side and require the same observable behaviour [DESIGN,
// Invariants]; for corpus programs whose callgrind run is short they also
// require every instrumented function's block counts to equal callgrind's.
//
// It is test support, like every package under internal/testsupport: the
// oracles and fixtures that blpp's tests and cmd/blpp-bench use, never
// part of the blpp command.
//
// The package's own code is the comparison of a profile's block counts
// with callgrind's (CheckExact, CompareBlocks, ReadsProcMaps), shared with
// the rewriter's Debian test.
//
// Environment:
//
//	BLPP_CORPUS=fast|all|NAME,...   which corpus entries run (default all)
//	BLPP_CORPUS_KNOWN=skip          documented known failures skip instead of failing
//	BLPP_SWEEP=1|N                  run the /usr/bin sweep (N: the first N binaries)
//	BLPP_SWEEP_BUDGET=DURATION      wall-clock bound of the sweep (default 8m)
//	BLPP_SWEEP_MODES=exe,libs       the sweep's modes: the executable's copy alone, and
//	                                as blpp run runs it, every library instrumented (default both)
//	BLPP_SWEEP_CACHE=DIR            the libraries mode's module cache (default: temporary)
//	BLPP_SWEEP_EXCLUDE_LIB=REGEX    libraries the libraries mode leaves as they are
//	BLPP_CORPUS_REPORT=DIR          also write the result tables there
//
// It trusts the programs it runs to be ordinary Debian programs: they run
// with the test's privileges, in temporary directories.
package corpus
