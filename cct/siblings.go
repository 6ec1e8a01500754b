package cct

import (
	"cmp"
	"fmt"
	"slices"
)

// secondSibling finds the first record, in list order, that repeats an
// earlier one's context: the same function at the same call site under
// the same parent (roots: the same function). It returns its index and
// what is wrong, or "" when every context has one record.
//
// A whole-process profile has millions of records per thread; a map of
// every context was most of the reader's time and a tenth of its memory.
// Here the records are put in order of parent by counting (parents are
// indices, -1 for roots), and only the children of one parent are
// compared with each other: linear in the records but for parents with
// many children, whose lists are sorted.
func secondSibling(recs []Record) (int, string) {
	n := len(recs)
	if n < 2 {
		return 0, ""
	}
	// start[p+1] .. start[p+2] will be the children of parent p, in list
	// order. A parent out of range is the record check's to refuse:
	// such records are left out here.
	start := make([]int32, n+2)
	for i := range recs {
		if p := recs[i].Parent; p >= -1 && p < n {
			start[p+2]++
		}
	}
	for k := 1; k < len(start); k++ {
		start[k] += start[k-1]
	}
	kids := make([]int32, start[n+1])
	next := start[:n+1]
	for i := range recs {
		if p := recs[i].Parent; p >= -1 && p < n {
			kids[next[p+1]] = int32(i)
			next[p+1]++
		}
	}
	// next[p+1] is now where p's children end; they start where p-1's
	// end (or at 0).
	first := n
	var lo int32
	for p := -1; p < n; p++ {
		hi := next[p+1]
		if j := firstRepeat(recs, kids[lo:hi]); j < first {
			first = j
		}
		lo = hi
	}
	if first == n {
		return 0, ""
	}
	r := &recs[first]
	if r.Parent == -1 {
		return first, fmt.Sprintf("second record of function %d", r.Func)
	}
	return first, fmt.Sprintf("second record of function %d at call site %d under parent %d", r.Func, r.CallSite, r.Parent)
}

// firstRepeat returns the smallest index among ids (records of one
// parent, in increasing order) whose function and call site an earlier
// one of them has, or len(recs).
func firstRepeat(recs []Record, ids []int32) int {
	first := len(recs)
	if len(ids) <= 16 {
		for a := 1; a < len(ids); a++ {
			ra := &recs[ids[a]]
			for _, b := range ids[:a] {
				if rb := &recs[b]; rb.Func == ra.Func && rb.CallSite == ra.CallSite {
					return int(ids[a]) // ids increase: the first repeat
				}
			}
		}
		return first
	}
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b int32) int {
		ra, rb := &recs[a], &recs[b]
		return cmp.Or(cmp.Compare(ra.Func, rb.Func), cmp.Compare(ra.CallSite, rb.CallSite), cmp.Compare(a, b))
	})
	for k := 1; k < len(sorted); k++ {
		ra, rb := &recs[sorted[k-1]], &recs[sorted[k]]
		if ra.Func == rb.Func && ra.CallSite == rb.CallSite && int(sorted[k]) < first {
			first = int(sorted[k])
		}
	}
	return first
}
