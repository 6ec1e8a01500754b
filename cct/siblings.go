package cct

import (
	"cmp"
	"fmt"
	"math/bits"
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
// compared with each other: linear in the records. Each child's function
// and call site are copied beside it in that order, so that the
// comparisons read one array from start to end instead of records all
// over the list.
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
	keys := make([]uint64, len(kids)) // kids' familyKey
	next := start[:n+1]
	for i := range recs {
		r := &recs[i]
		if p := r.Parent; p >= -1 && p < n {
			k := next[p+1]
			kids[k], keys[k] = int32(i), familyKey(r)
			next[p+1]++
		}
	}
	// next[p+1] is now where p's children end; they start where p-1's
	// end (or at 0).
	first := n
	var seen keySet
	var lo int32
	for p := -1; p < n; p++ {
		hi := next[p+1]
		if j := firstRepeat(keys[lo:hi], kids[lo:hi], &seen); j >= 0 && j < first {
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

// familyKey is what tells r from its siblings: function and call site.
func familyKey(r *Record) uint64 { return uint64(r.Func)<<32 | uint64(r.CallSite) }

// firstRepeat returns the smallest of ids (records of one parent, in
// increasing order) whose key (keys[k] is that of ids[k]) an earlier one
// of them has, or -1. Since ids increase, that is the first key met
// again in list order.
func firstRepeat(keys []uint64, ids []int32, seen *keySet) int {
	if len(keys) <= 16 {
		for a := 1; a < len(keys); a++ {
			for _, k := range keys[:a] {
				if k == keys[a] {
					return int(ids[a])
				}
			}
		}
		return -1
	}
	seen.reset(len(keys))
	// A hostile file can choose keys that all hash alike: past a
	// budget of probes the family is sorted instead, so the check stays
	// within n log n whatever the keys.
	budget := 8 * len(keys)
	for a := range keys {
		added, probes := seen.add(keys, int32(a))
		if budget -= probes; budget < 0 {
			return firstRepeatSorted(keys, ids)
		}
		if !added {
			return int(ids[a])
		}
	}
	return -1
}

// firstRepeatSorted is firstRepeat by sorting the family's positions by
// key (and position): the smallest position that repeats an earlier
// key, as an index of ids, or -1.
func firstRepeatSorted(keys []uint64, ids []int32) int {
	pos := make([]int32, len(keys))
	for i := range pos {
		pos[i] = int32(i)
	}
	slices.SortFunc(pos, func(a, b int32) int { return cmp.Or(cmp.Compare(keys[a], keys[b]), cmp.Compare(a, b)) })
	first := -1
	for k := 1; k < len(pos); k++ {
		if keys[pos[k-1]] == keys[pos[k]] && (first < 0 || pos[k] < int32(first)) {
			first = int(pos[k])
		}
	}
	if first < 0 {
		return -1
	}
	return int(ids[first])
}

// keySet is a set of keys of one family of siblings, held as their
// positions in its keys slice: an open-addressing hash table, reused
// (cleared) from one family to the next.
type keySet struct {
	slots []int32 // position+1 of a key; 0 for an empty slot
	shift uint    // 64 - log2(len(slots))
}

// reset empties the set and makes room for n keys, the table at most
// half full.
func (s *keySet) reset(n int) {
	lg := bits.Len(uint(2*n - 1)) // 2^lg ≥ 2n
	size := 1 << lg
	if cap(s.slots) < size {
		s.slots = make([]int32, size)
	} else {
		s.slots = s.slots[:size]
		clear(s.slots)
	}
	s.shift = uint(64 - lg)
}

// add adds keys[a] and says whether it was new (false when a key equal
// to it was added before) and how many slots it probed.
func (s *keySet) add(keys []uint64, a int32) (bool, int) {
	k := keys[a]
	mask := len(s.slots) - 1
	// Fibonacci hashing: the top bits of the product spread keys that
	// differ in low bits (call sites) and in high bits (functions).
	h := int((k * 0x9e3779b97f4a7c15) >> s.shift)
	for probes := 1; ; probes++ {
		slot := s.slots[h]
		if slot == 0 {
			s.slots[h] = a + 1
			return true, probes
		}
		if keys[slot-1] == k {
			return false, probes
		}
		h = (h + 1) & mask
	}
}
