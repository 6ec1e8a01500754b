package elfdyn

import (
	"debug/elf"
	"encoding/binary"
	"reflect"
	"testing"
)

func table(words ...uint64) []byte {
	d := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(d[8*i:], w)
	}
	return d
}

func TestEntries(t *testing.T) {
	soname, fini, flags1 := uint64(elf.DT_SONAME), uint64(elf.DT_FINI), uint64(elf.DT_FLAGS_1)
	tests := []struct {
		name       string
		d          []byte
		want       []Entry
		terminated bool
	}{
		{"empty", nil, nil, false},
		{"only the terminator", table(0, 0), nil, true},
		{"two entries", table(soname, 5, fini, 0x1000, 0, 0),
			[]Entry{{elf.DT_SONAME, 5}, {elf.DT_FINI, 0x1000}}, true},
		{"entries after the terminator are ignored", table(fini, 1, 0, 0, soname, 2),
			[]Entry{{elf.DT_FINI, 1}}, true},
		{"no terminator", table(flags1, 8), []Entry{{elf.DT_FLAGS_1, 8}}, false},
		{"a partial last entry is ignored", append(table(fini, 1), 1, 2, 3), []Entry{{elf.DT_FINI, 1}}, false},
	}
	for _, tc := range tests {
		es, term := Entries(tc.d)
		if !reflect.DeepEqual(es, tc.want) || term != tc.terminated {
			t.Errorf("%s: %v, %v; want %v, %v", tc.name, es, term, tc.want, tc.terminated)
		}
	}
	d := table(uint64(elf.DT_FINI), 7, uint64(elf.DT_FINI), 9, 0, 0, uint64(elf.DT_SONAME), 1)
	if v, ok := Lookup(d, elf.DT_FINI); v != 7 || !ok {
		t.Errorf("Lookup DT_FINI = %d, %v; want the first, 7", v, ok)
	}
	if _, ok := Lookup(d, elf.DT_SONAME); ok {
		t.Error("Lookup found an entry after the terminator")
	}
}
