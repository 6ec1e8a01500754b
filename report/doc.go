// Package report renders blpp's profiles for people and programs, in the
// manner of pprof: the profile laid over the metadata of the binary that
// wrote it is one validated model, and every view and export is one
// function (w io.Writer, model, options) error.
//
// # The model
//
// NewModel builds a Model from one profile (runs and threads merged by
// cct.Merge and cct.FoldThreads) and the metadata table (package meta)
// of the instrumented binary, with the DWARF and symbols of its ELF file
// or, when it has no DWARF, of its separate debug file (debugfile.go:
// build-id, .gnu_debuglink, --debug-dir, local debuginfod roots).
// It holds
//
//   - Modules: the instrumented objects of the process (the profile's
//     MODULES section, decision 81; the executable alone for a profile
//     without one), each with its metadata, per-function counts
//     (FuncProfile: block, edge and path counts, partial activations,
//     calls, instructions), DWARF and symbols, read from its own
//     instrumented file (ModelOptions.Libs, found by OpenModules). A
//     function is named by FuncID{Module, Func} everywhere in the model,
//     Func being its index in its module's metadata; the profile's global
//     ids are mapped through the module tags once, when the model is
//     built. With several modules, names are module!func (DisplayName,
//     RawName). FilterModules narrows the views (--module), ModuleView
//     gives one module's model for the exports written per module.
//   - Nodes: the calling contexts (CNode), threads merged, each with its
//     paths (CPath), exclusive and inclusive values per metric Column
//     (the profile's metrics and the derived insns).
//   - Stacks(): one per context, what the exporters write, built the
//     first time something reads them (decision 137): a tree of leaf
//     frames and parents, whose frames (StackFrames) and block counts
//     (StackBlocks) are made on demand (decision 139).
//
// Every path number and every partial path (stopping block, path
// register) is expanded to blocks, edges and instructions by
// meta.Table.ExpandPath and ExpandPartial, once per table; nothing in
// this package regenerates paths itself. DebugInfo is the one reader of
// DWARF lines and inline frames.
//
// # Views and exports
//
//	blpp report --view paths     PathsText
//	blpp report --format json    PathsJSON (Model.PathDoc; docs/formats.md)
//	blpp report --view tree      TreeText
//	blpp report --view callers   CallersText (Model.Callers)
//	blpp report --view flat      FlatText (Model.Flat)
//	blpp report --context C      ContextPathsText (Model.Match)
//	blpp report --view loops     LoopsText (FindLoops per function)
//	blpp report --view hot       HotText (MakeHotPaths)
//	blpp report --view procs     ProcsText (MakeProcs)
//	blpp report --view latency   LatencyText (MakeLatency: per hot path the
//	                             distribution of its time per execution)
//	blpp report --html           HTML (hot paths, latency, procedures, tree, CFGs)
//	blpp annotate                Annotate
//	blpp coverage                CoverageText, CoverageLcov (MakeCoverage)
//	blpp cfg --profile           CFGProfileDot
//	blpp diff                    DiffText (MakeDiff of two models)
//	blpp export --format pprof   ExportPprof (MakePprof)
//	  llvm-sample                ExportLLVMSample
//	  bolt-fdata                 ExportBoltFdata
//	  folded                     ExportFolded
//	  json                       PathsJSON
//
// Function names reach people through one function, DisplayName
// (names.go; Model.Names, the NameOptions of --no-demangle): C++ and
// Rust names demangled in every view above, folded stacks included. The
// JSON documents keep the symbol and add "demangled"; lcov, pprof, LLVM
// sample profiles and BOLT fdata keep the symbol, which their tools
// match on.
//
// The static views (no profile) read analysis results: StatsText,
// StatsJSON (blpp stats), CFGText, CFGJSON, CFGDot (blpp cfg).
//
// # What it trusts
//
// The profile must be valid (cct.Profile.CheckValid; the reader and
// Merge return only such profiles). NewModel checks it against the
// metadata and refuses, with an error naming what is wrong, a profile of
// another instrumented binary, function indices, call sites, path ids or
// partial blocks the metadata does not have, and instruction counts that
// overflow 64 bits. The metadata is trusted as meta.Decode returns it.
// DWARF is not: unreadable parts are skipped and the reports fall back
// to addresses. A separate debug file is used only when its build-id is
// the binary's (found by .gnu_debuglink: when its CRC-32 is the link's
// and it names no other build-id); a .gnu_debuglink name holding a '/' is
// ignored.
package report
