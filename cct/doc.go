// Package cct owns the blpp profile file: the calling context trees with
// Ball-Larus path counts and per-path metrics that the runtime of an
// instrumented binary writes at exit, on a fatal signal or on the dump
// signal [DESIGN 7, 8, 11].
//
// Like pprof's profile package, it keeps a validated model (Profile,
// CheckValid) apart from the reports built on it. It provides:
//
//   - the model: threads of call records (one per procedure and chain of
//     call sites [Ammons-Ball-Larus 97 §4]), each with its paths sorted by
//     number, and the partial activations that never reached a path end
//     [DESIGN 6]; the modules of the process (decision 81), whose tags
//     make the records' function ids global (Fid, FidTag, FidLocal);
//   - Parse and ReadFile, the reader, and Write, WriteFile and
//     MarshalBinary, the canonical writer, byte-for-byte what the C runtime
//     writes;
//   - CheckModule (CheckAgainst for the executable), the check of a
//     module's functions against its metadata (function, path, block and
//     call-site counts), and CheckModules, that of every module in one
//     pass;
//   - Merge (several runs, per module), FoldThreads (all threads into one tree) and Flat
//     (per function and path, every context summed);
//   - WriteCHeader, the format's constants for the runtime, generated from
//     the Go ones so that there is one definition of the format.
//
// The format is specified in docs/profile-format.md.
//
// # What it trusts
//
// Nothing in the file. Every read goes through a bounds-checked cursor
// with a sticky error (after debug/dwarf's buf); every count is checked
// against the bytes left before anything is allocated for it, so a varint
// claiming 2^60 records costs nothing; every index must point backwards
// (parents) or into the thread (partials); the totals of every metric must
// fit in 64 bits. Parse returns a *FormatError naming the offset and one
// sentinel (ErrBadMagic, ErrVersion, ErrTruncated, ErrChecksum,
// ErrCorrupt), never a half-read profile, and never panics (FuzzParse).
//
// Function indices, path numbers, blocks and call sites mean something
// only with each module's metadata, which the file does not carry: a
// caller that has a module's file runs CheckModule, trusting the FuncInfo table it
// passes. FoldThreads and Flat assume a valid profile (as Parse and Merge
// return); Merge and Write check theirs.
package cct
