// Command blpp profiles the acyclic paths of x86-64 Linux executables
// [Ball-Larus 96], per calling context [Ammons-Ball-Larus 97], by rewriting
// the binary: no source and no recompiling.
//
// Usage:
//
//	blpp COMMAND [flags] [args]
//	blpp COMMAND --help
//
// The usual flow is three steps, which blpp run does at once:
//
//	blpp rewrite ./prog -o prog.blpp     # instrumented copy (-v: what was left alone, and why)
//	./prog.blpp args                     # behaves like ./prog; writes blpp.out (BLPP_PROFILE)
//	blpp report blpp.out --binary prog.blpp [--view tree]
//
// The verbs, in the order of the data flow:
//
//	stats     per-function blocks, edges, loops, paths and instrumentability of a binary
//	cfg       control-flow graphs with Ball-Larus values, chord increments, backedges and loops
//	counters  which hardware metrics this machine can record per path
//	rewrite   write an instrumented copy of an executable
//	map       where each original instruction of an instrumented binary was copied to
//	run       rewrite (cached), run with the same arguments and I/O, report hot paths
//	merge     merge profiles of runs of one instrumented binary
//	report    hot paths and the views: paths, tree, callers, flat, loops, hot, procs, latency, --context, --html
//	coverage  line, block and function coverage (text or lcov)
//	annotate  source lines, or instructions, with their execution counts
//	diff      functions and paths whose share changed most between two profiles
//	export    pprof, folded stacks, LLVM sample profiles, BOLT fdata or JSON
//	demo      build the bundled example, rewrite, run and report it
//
// Each verb registers itself from its own file (report in profile.go,
// stats and cfg in static.go, map in addrmap.go, the others under their
// own names) and only parses flags, opens inputs and writes outputs;
// main.go holds the command table and turns an error into one line on
// stderr with exit status 2 (blpp run exits with the program's own
// status). The work is done by
// the packages:
//
//   - blpp/analysis (binary → CFGs → Ball-Larus numberings, over blpp/cfg
//     and blpp/pathnum) for stats and cfg;
//   - blpp/rewriter for rewrite and run: planning and code generation of
//     each function's instrumented copy and the new ELF file, with the
//     runtime of blpp/runtime linked in and the metadata tables of
//     blpp/meta and blpp/rewriter/addrmap stored in it;
//   - blpp/cct for the profile file (read, validated, merged);
//   - blpp/report for every view and export: one function per format over
//     the profile and the binary's metadata;
//   - blpp/counters for the metrics and what this machine can read;
//   - blpp/internal/outfile for every file written (whole or not at all).
//
// Every input is untrusted: a file blpp cannot handle (missing, not ELF,
// not x86-64, truncated, corrupt profile) is refused with one clear line
// and no partial output. Output schemas are in docs/formats.md, the
// profile file in docs/profile-format.md, and README.md is the user guide.
package main
