package report

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// StackValue returns the value of metric (ExportOptions.Metric) for a
// stack, and whether the name is known.
func (m *Model) StackValue(st *ProfileStack, metric string) (uint64, error) {
	switch metric {
	case "", "insns":
		return st.Insns, nil
	case "count", "freq":
		return st.Count, nil
	case "calls":
		return st.Calls, nil
	}
	for i, mt := range m.Metrics[1:] {
		if mt.Name == metric {
			return st.Metrics[i], nil
		}
	}
	if m.Samples != nil && metric == m.Samples.Event {
		return st.Sampled, nil
	}
	return 0, fmt.Errorf("no metric %q in the profile (have %s)", metric, strings.Join(m.MetricNames(), ", "))
}

// MetricNames lists the values a stack carries.
func (m *Model) MetricNames() []string {
	out := []string{"insns", "count", "calls"}
	for _, mt := range m.Metrics[1:] {
		out = append(out, mt.Name)
	}
	if m.Samples != nil {
		out = append(out, m.Samples.Event)
	}
	return out
}

// ExportFolded writes one line per calling context in the folded-stack
// format of Brendan Gregg's flamegraph.pl: the function names root first,
// joined by ';', a space and the value (opts.Metric, instructions by
// default). Contexts with the same names are summed, contexts whose value
// is 0 are left out; lines are sorted.
func ExportFolded(w io.Writer, m *Model, opts ExportOptions) error {
	sums := map[string]uint64{}
	stacks := m.Stacks()
	for i := range stacks {
		st := &stacks[i]
		v, err := m.StackValue(st, opts.Metric)
		if err != nil {
			return err
		}
		if v == 0 {
			continue
		}
		names := make([]string, len(st.Frames))
		for j, fr := range st.Frames {
			names[len(st.Frames)-1-j] = foldedName(m.DisplayName(m.FuncName(fr.Func)))
		}
		k := strings.Join(names, ";")
		sums[k] = satAdd(sums[k], v)
	}
	keys := slices.Sorted(maps.Keys(sums))
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		fmt.Fprintf(bw, "%s %d\n", k, sums[k])
	}
	return bw.Flush()
}

// foldedName keeps a name from breaking the format: ';' separates
// frames, a line is one stack. Spaces stay, as in demangled C++ names
// ("foo(int, char)"): the value is after the line's last space, which
// is how flamegraph.pl and stackcollapse-perf.pl's output read.
func foldedName(s string) string {
	return strings.NewReplacer(";", ":", "\n", "_").Replace(s)
}
