// Command blpp-bench measures what blpp costs: how much slower the
// workloads under testdata/bench run once rewritten, in each of blpp's
// modes, next to gcc's own edge counting (-fprofile-arcs); how long and
// how much memory a rewrite takes; and how long an instrumented program
// takes to write its profile at exit.
//
//	go run ./cmd/blpp-bench [--runs N] [--layouts L] [--cc gcc] [--only NAME,...] [--variants V,...] [--scale S] [--json]
//	go run ./cmd/blpp-bench --suite real [--only PROGRAM,...] [--runs N] [--scale S] [--json]
//	go run ./cmd/blpp-bench --profile-write [--calls N] [--runs N] [--json]
//	go run ./cmd/blpp-bench --rewrite-python [--python /usr/bin/python3.11] [--json]
//	go run ./cmd/blpp-bench --pgo [--pgo-program lua|lua-one|tinyvm] [--pgo-lto none|thin] [--pgo-builds lines,probes,bolt] [--lua-src DIR] [--runs N] [--pgo-scale S] [--train-scale S] [--clang clang-16] [--llvm-bolt PATH] [--json]
//
// Each workload is built five ways (--variants selects among the last
// four; native is always built):
//
//	native   cc -O2
//	gcov     cc -O2 -fprofile-arcs
//	flow     the native binary rewritten with rewriter.Options{NoContext: true}
//	         (blpp rewrite --no-context: path frequencies, one record per function)
//	ctx      rewritten with the zero Options (calling context tree + path frequencies)
//	ctx+tsc  rewritten with a "tsc" metric (blpp rewrite --metrics tsc)
//
// The rewrites happen in-process with rewriter.Rewrite. The variants then
// run in turn (native, gcov, flow, ctx, ctx+tsc, native, ...) so that a
// change in the machine's load hits all of them alike, each in a fresh
// directory that is removed afterwards (the gcov run's .gcda file and the
// blpp runs' profiles go there, so every run does the same work). Every
// run must print what the native run printed, byte for byte, and exit the
// same way; a blpp run must leave a valid profile and the gcov run a .gcda
// file. A ratio is the median over the rounds of the per-round ratio to the
// native run of the same round.
//
// A blpp variant is rewritten --layouts times, with rewriter.Options
// LayoutSeed 0 (what blpp rewrite writes), 1, 2, ...: the same code with
// each function moved by a different multiple of 16 bytes. Round i runs
// layout i mod L, so the median ratio is taken over layouts as well as
// over runs. Where code lands in cache lines and branch-predictor sets
// changes a program's speed by itself, and one layout's ratio can be a
// lucky or an unlucky draw (Mytkowicz et al., "Producing wrong data
// without doing anything obviously wrong!", ASPLOS 2009; Curtsinger and
// Berger, "Stabilizer", ASPLOS 2013). The per-layout medians are printed
// too [decision 53]. Peak memory is taken in the warm-up runs,
// through GNU time (see runOnce for why not from the child's rusage). The
// size of the calling context tree (records, the runtime's arena_bytes and
// record_bytes stats, the profile file's size) is read from the profile of
// the last ctx+tsc run.
//
// --suite real measures real programs instead of the loop kernels
// (real.go, issue 27): installed Debian programs that are call-heavy and
// spend their time in the executable (lua5.4, gawk, python3, bc, troff,
// cppcheck, re2c, m4), each with a workload of about a second at scale 100
// (scripts under testdata/real, other inputs generated deterministically),
// and two programs built here, natively and with -fprofile-arcs, so that
// gcov can be put beside blpp: lua-src, Lua 5.4 from Debian's source as
// one unit (fetched as --pgo fetches it, or --lua-src; skipped, saying
// why, where neither works), running lua5.4's script, and calls.c, a
// call-heavy C program of ours. An installed program is copied into the
// build directory and rewritten from there, executable only, as blpp
// rewrite does; one that is not installed is skipped, naming its Debian
// package (testdata/corpus/install.sh installs them). The variants run
// alternately as above. Besides the ratios the table gives each program's
// dynamic share, peak resident set per variant against issue 27's target
// for context mode (1.5 × native + 20 MB), and the start-up and exit cost
// of commands that do nothing (lua5.4 -e "", python3 -c ""), run 20 times
// or more per variant.
//
// --profile-write builds testdata/profile_write.c (4 threads making 10
// million calls in total through 342 calling contexts each), rewrites it
// with the zero Options and reports how long the instrumented program
// takes from the end of main to its exit, which is when the runtime writes
// the profile; more than a second is a failure (see benchProfileWrite).
//
// --pgo measures what blpp's profile is worth to a compiler and to BOLT.
// The program (--pgo-program) is Lua 5.4, its source fetched once with
// apt-get source lua5.4 from Debian's archive into the user's cache
// directory (or --lua-src), built as its makefile builds it (each file a
// translation unit; lua-one: all of them as one) and running
// testdata/pgo/workload.lua; or testdata/pgo/tinyvm.c (a bytecode
// interpreter of a few thousand lines, one translation unit) running
// testdata/pgo/workload.tl. It is built six ways with clang -O2 -g:
//
//	plain                    nothing more
//	blpp sample-PGO, lines   a -fdebug-info-for-profiling build rewritten, run on
//	                         the script, its profile exported as by blpp export
//	                         --format llvm-sample and fed back with
//	                         -fprofile-sample-use
//	blpp sample-PGO, probes  the same with -fpseudo-probe-for-profiling: the
//	                         export is probe-based; used with
//	                         -fsample-profile-use-profi
//	clang IR-PGO             -fprofile-instr-generate, llvm-profdata merge,
//	                         -fprofile-instr-use
//	blpp + BOLT              a -Wl,--emit-relocs build rewritten, run, exported
//	                         as bolt-fdata and optimized by llvm-bolt with it
//	BOLT's own + BOLT        the same build instrumented by llvm-bolt -instrument,
//	                         run, and optimized with that profile (the reference
//	                         for blpp's BOLT profile, as IR-PGO is for its sample
//	                         profiles)
//
// Both sample-PGO builds add -funique-internal-linkage-names (static
// functions of different files get names of their own). --pgo-lto thin
// builds every one of them with -flto=thin (linked by gold with LLVM's
// plugin, which reads the profile again at link time); --pgo-builds
// leaves out the sample-PGO or BOLT builds (plain and IR-PGO are always
// built). The builds then
// run the script in alternating rounds, each round starting with another
// build; each must print what plain printed. Speedups are medians of
// per-round ratios to plain, on CPU time (the machine is shared: wall
// times wander more) and wall time, and a build's share of IR-PGO's gain
// is (speedup - 1) / (IR-PGO speedup - 1). clang's warnings about each
// profile are listed; llvm-profdata must read blpp's files. The entry
// counts of blpp's sample profiles are compared with those of clang's
// instrumentation (equal on a deterministic program such as tinyvm; Lua
// seeds its string hashes from the clock), and what llvm-bolt says of both
// BOLT profiles (functions profiled, stale, ignored) is printed.
//
// Progress goes to stderr; stdout gets the table, or with --json one JSON
// object (fields documented on report, profileWriteReport and
// pythonReport). Exit status: 0, 1 when a measurement fails (a build
// error, different output, a missing profile, a profile write over the
// limit), 2 for a bad command line.
//
// What it trusts: the compiler, GNU time and the programs it measures to
// be what they say; it checks their output and exit status, and the
// profiles they leave, rather than their timings.
package main
