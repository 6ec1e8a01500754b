package cfg

import (
	"debug/elf"
	"sort"
	"sync"

	"github.com/blpp/blpp/cfg/ehframe"
)

// Frame state from .eh_frame at a given instruction, for telling an
// indirect jump that leaves the procedure (its frame torn down, the return
// address at the top of the stack) from one that stays inside it.

// frameIndex holds the FDEs of .eh_frame and, once asked for, their rows.
type frameIndex struct {
	once    sync.Once
	entries []*ehframe.Entry // sorted by Begin
	mu      sync.Mutex
	rows    map[*ehframe.Entry][]ehframe.Row
}

// DWARF register numbers of x86-64 [SysV x86-64 ABI 3.6.2, Figure 3.36].
const (
	dwarfRSP = 7
	dwarfRA  = 16
)

// returnAtTop reports whether, just before the instruction at addr, the
// unwind rules say the frame is gone: the CFA is %rsp+8 and the return
// address is at CFA-8, the state at a function's entry, which is also
// the state of a tail call. known is false when no FDE covers addr or its
// rules cannot be read.
func (b *Binary) returnAtTop(addr uint64) (atTop, known bool) {
	fi := &b.frames
	fi.once.Do(func() {
		if b.File == nil {
			return
		}
		s := b.File.Section(".eh_frame")
		if s == nil || s.Type == elf.SHT_NOBITS {
			return
		}
		d, err := b.sectionData(s)
		if err != nil {
			return
		}
		fr, err := ehframe.ParseFrame(d, s.Addr, b.ehOpts)
		if err != nil {
			return
		}
		for _, e := range fr.Entries {
			if e.End > e.Begin {
				fi.entries = append(fi.entries, e)
			}
		}
		fi.rows = make(map[*ehframe.Entry][]ehframe.Row)
	})
	i := sort.Search(len(fi.entries), func(i int) bool { return fi.entries[i].Begin > addr }) - 1
	if i < 0 || addr >= fi.entries[i].End {
		return false, false
	}
	e := fi.entries[i]
	fi.mu.Lock()
	rows, ok := fi.rows[e]
	if !ok {
		var err error
		rows, err = e.Rows()
		if err != nil {
			rows = nil
		}
		fi.rows[e] = rows
	}
	fi.mu.Unlock()
	j := sort.Search(len(rows), func(j int) bool { return rows[j].Addr > addr }) - 1
	if j < 0 {
		return false, false
	}
	st := rows[j].State
	if st.CFA.Expr != nil || st.CFA.Reg != dwarfRSP {
		return false, true
	}
	ra, ok := st.Rule(dwarfRA)
	return st.CFA.Off == 8 && ok && ra.Kind == ehframe.Offset && ra.Off == -8, true
}
