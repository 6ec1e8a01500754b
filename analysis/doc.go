// Package analysis runs the whole static pipeline on a binary: procedure
// discovery and CFGs (package cfg), then Ball-Larus numbering of each
// graph (package pathnum). It is the one place that maps a cfg.Graph onto
// pathnum's abstract graph, so the CLI, the rewriter and reports agree on
// node and edge indices: node i is block i, node len(Blocks) is EXIT, and
// pathnum edge i is cfg edge i.
//
// What it trusts: packages cfg and pathnum, whose results it passes on
// unchanged; the binary itself is cfg's to distrust.
package analysis
