package report

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
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
// is 0 are left out. Lines come in tree order: by the root's name (byte
// order), a stack before the longer ones it begins, and those by their
// next name, and so on (flamegraph.pl sorts its input itself).
//
// The stacks are merged in a tree of names rather than by their joined
// text, and each line is written as it is reached: a whole-process
// profile has millions of contexts tens of frames deep, whose lines
// together are gigabytes (decision 139).
func ExportFolded(w io.Writer, m *Model, opts ExportOptions) error {
	stacks := m.Stacks()
	// nameOf interns each function's folded name.
	var names []string
	nameIDs := map[string]int32{}
	fnName := map[FuncID]int32{}
	nameOf := func(id FuncID) int32 {
		if k, ok := fnName[id]; ok {
			return k
		}
		n := foldedName(m.DisplayName(m.FuncName(id)))
		k, ok := nameIDs[n]
		if !ok {
			k = int32(len(names))
			names = append(names, n)
			nameIDs[n] = k
		}
		fnName[id] = k
		return k
	}
	// The tree: node 0 is above the roots; a node is a name under its
	// parent node, and a stack's node is its leaf's name under its
	// parent stack's node (parents come first).
	type tnode struct {
		parent, name int32
		value        uint64
		kids         []int32
	}
	tree := []tnode{{parent: -1, name: -1}}
	child := map[uint64]int32{}
	at := make([]int32, len(stacks))
	for i := range stacks {
		st := &stacks[i]
		v, err := m.StackValue(st, opts.Metric)
		if err != nil {
			return err
		}
		up := int32(0)
		if st.Parent >= 0 {
			up = at[st.Parent]
		}
		name := nameOf(st.Leaf.Func)
		key := uint64(up)<<32 | uint64(uint32(name))
		n, ok := child[key]
		if !ok {
			n = int32(len(tree))
			tree = append(tree, tnode{parent: up, name: name})
			tree[up].kids = append(tree[up].kids, n)
			child[key] = n
		}
		at[i] = n
		tree[n].value = satAdd(tree[n].value, v)
	}
	child, at = nil, nil
	bw := bufio.NewWriter(w)
	// Depth first, children by name; line holds the names down to n.
	var line []byte
	var walk func(n int32)
	walk = func(n int32) {
		kids := tree[n].kids
		slices.SortFunc(kids, func(a, b int32) int { return strings.Compare(names[tree[a].name], names[tree[b].name]) })
		for _, k := range kids {
			l := len(line)
			if l > 0 {
				line = append(line, ';')
			}
			line = append(line, names[tree[k].name]...)
			if v := tree[k].value; v > 0 {
				bw.Write(line)
				bw.WriteByte(' ')
				bw.Write(strconv.AppendUint(nil, v, 10))
				bw.WriteByte('\n')
			}
			walk(k)
			line = line[:l]
		}
	}
	walk(0)
	return bw.Flush()
}

// foldedName keeps a name from breaking the format: ';' separates
// frames, a line is one stack. Spaces stay, as in demangled C++ names
// ("foo(int, char)"): the value is after the line's last space, which
// is how flamegraph.pl and stackcollapse-perf.pl's output read.
func foldedName(s string) string {
	return strings.NewReplacer(";", ":", "\n", "_").Replace(s)
}
