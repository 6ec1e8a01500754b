package main

import (
	"fmt"
	"io"
	"strings"
)

// ctxMemoryLimitKB is issue 27's memory target for context mode, beside
// 1.5 times the native peak: 20 MB.
const ctxMemoryLimitKB = 20 << 10

// writeReal prints what only the real suite measures: the commands run,
// peak memory per variant against the context-mode target, and the cost
// of starting and exiting.
func (r *report) writeReal(w io.Writer, others []variant) {
	// Native CPU times beside the commands: on a loaded machine wall
	// times overstate how long a workload is.
	fmt.Fprintln(w, "\ncommands (scripts in cmd/blpp-bench/testdata/real, generated inputs by real.go), native CPU time:")
	width := 0
	for _, wl := range r.Workloads {
		width = max(width, len(wl.Command))
	}
	for _, wl := range r.Workloads {
		fmt.Fprintf(w, "  %-*s  %5.0f ms\n", width, wl.Command, wl.variant(native).MedianCPUMS)
	}

	if r.Workloads[0].variant(native).MaxRSSKB > 0 {
		head := []string{"peak RSS", "native"}
		for _, v := range others {
			head = append(head, v.String())
		}
		rows := [][]string{head}
		hasCtx := r.Workloads[0].variant(ctx) != nil
		if hasCtx {
			rows[0] = append(rows[0], "ctx target", "")
		}
		for _, wl := range r.Workloads {
			base := wl.variant(native).MaxRSSKB
			row := []string{wl.Name, fmtMB(base)}
			for _, v := range others {
				vr := wl.variant(v)
				if vr == nil {
					row = append(row, "-")
					continue
				}
				row = append(row, fmt.Sprintf("%s (%s)", fmtMB(vr.MaxRSSKB), fmtRatio(vr.RSS)))
			}
			if hasCtx {
				limit := base*3/2 + ctxMemoryLimitKB
				verdict := "met"
				if wl.variant(ctx).MaxRSSKB > limit {
					verdict = "over"
				}
				row = append(row, "≤ "+fmtMB(limit), verdict)
			}
			rows = append(rows, row)
		}
		fmt.Fprintln(w)
		printRows(w, rows, false)
		fmt.Fprintln(w, "peak RSS: maximum resident set (ru_maxrss from wait4, through GNU time) of the warm-up runs; ctx target: 1.5 × native + 20 MB (issue 27)")
	}

	if len(r.Startup) > 0 {
		head := []string{"start-up + exit", "native"}
		for _, v := range others {
			if r.Startup[0].variant(v) != nil {
				head = append(head, v.String())
			}
		}
		rows := [][]string{head}
		for _, wl := range r.Startup {
			base := wl.variant(native).MedianWallMS
			row := []string{wl.Command, fmt.Sprintf("%.2f ms", base)}
			for _, v := range others {
				if vr := wl.variant(v); vr != nil {
					row = append(row, fmt.Sprintf("%+.2f ms (%s)", vr.MedianWallMS-base, fmtRatio(vr.Wall)))
				}
			}
			rows = append(rows, row)
		}
		fmt.Fprintln(w)
		printRows(w, rows, false)
		fmt.Fprintf(w, "start-up + exit: median wall time of %d runs of a command that does nothing; blpp variants as the difference from native (ratio)\n", len(r.Startup[0].variant(native).WallMS))
	}

	fmt.Fprintln(w, "\nshare: of the instructions the native executable executes (callgrind, --share-scale; PLT stubs aside), those in functions blpp instruments.")
	fmt.Fprintln(w, "Only the executable is rewritten, as blpp rewrite does: shared libraries (libc, libstdc++, ...) run uninstrumented and their time is in every variant alike.")
	if r.Workloads[0].DynamicShare < 0 {
		fmt.Fprintln(w, "(share not measured: --share-scale 0 or no valgrind)")
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(w, "skipped: %s\n", strings.Join(r.Skipped, "; "))
	}
}

// fmtMB prints kilobytes as megabytes.
func fmtMB(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }
