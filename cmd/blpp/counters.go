package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/blpp/blpp/counters"
)

func init() {
	register(&command{name: "counters", summary: "which hardware metrics this machine can record per path, and what replaces the others",
		usage: "[--json]", run: runCounters})
}

// counterJSON is one metric of `blpp counters --json`: the metric
// (counters.Spec), what counters.Probe found, and Status, the text column
// of the table.
type counterJSON struct {
	Name      string `json:"name"`
	Desc      string `json:"desc"`
	Event     string `json:"event"`  // "rdtsc" or "<perf type> <config>"
	Type      uint32 `json:"type"`   // perf_event_attr.type (0 for tsc)
	Config    uint64 `json:"config"` // perf_event_attr.config (0 for tsc)
	TSC       bool   `json:"tsc"`
	ProbeOnly bool   `json:"probe_only"` // read(2) only: not accepted by --metrics
	Works     bool   `json:"works"`
	Rdpmc     bool   `json:"rdpmc"`
	Fallback  string `json:"fallback"` // "tsc" or ""
	Reason    string `json:"reason"`
	Sample    uint64 `json:"sample"` // count after a short busy loop, when works
	Status    string `json:"status"`
}

func runCounters(c *ctx, args []string) error {
	fs := c.newFlags()
	asJSON := fs.Bool("json", false, "write JSON: one object per metric")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return &usageError{fmt.Sprintf("takes no arguments, got %d", fs.NArg())}
	}
	var rows []counterJSON
	for _, s := range counters.All() {
		st := counters.Probe(s)
		rows = append(rows, counterJSON{
			Name: s.Name, Desc: s.Desc, Event: s.Event(), Type: s.Type, Config: s.Config,
			TSC: s.TSC, ProbeOnly: s.ProbeOnly(),
			Works: st.Works, Rdpmc: st.ViaRdpmc, Fallback: st.Fallback, Reason: st.Reason, Sample: st.Sample,
			Status: st.Describe(s),
		})
	}
	if *asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Metrics []counterJSON `json:"metrics"`
		}{rows})
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "metric\tevent\tstatus")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.Event, r.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "\nfreq, the path frequency, needs no counter; a profile records at most %d metrics besides it, and none of the read-only ones.\n", counters.MaxMetrics)
	return nil
}
