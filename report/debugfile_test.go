package report

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func note(name string, typ uint32, desc []byte) []byte {
	var b []byte
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(desc)))
	b = binary.LittleEndian.AppendUint32(b, typ)
	b = append(b, name...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func TestParseBuildIDNote(t *testing.T) {
	id := []byte{0xde, 0xad, 0xbe, 0xef, 0x01}
	prop := note("GNU\x00", 5, make([]byte, 16)) // NT_GNU_PROPERTY_TYPE_0 first
	for _, tt := range []struct {
		name string
		d    []byte
		want []byte
	}{
		{"alone", note("GNU\x00", 3, id), id},
		{"after another note", append(append([]byte(nil), prop...), note("GNU\x00", 3, id)...), id},
		{"other owner", note("XYZ\x00", 3, id), nil},
		{"truncated descriptor", note("GNU\x00", 3, id)[:18], nil},
		{"huge sizes", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 3, 0, 0, 0}, nil},
		{"empty", nil, nil},
	} {
		if got := parseBuildIDNote(tt.d, binary.LittleEndian); !bytes.Equal(got, tt.want) {
			t.Errorf("%s: got %x, want %x", tt.name, got, tt.want)
		}
	}
}

func TestParseDebugLink(t *testing.T) {
	link := func(name string, crc uint32) []byte {
		b := append([]byte(name), 0)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return binary.LittleEndian.AppendUint32(b, crc)
	}
	for _, tt := range []struct {
		name     string
		d        []byte
		wantName string
		wantCRC  uint32
		ok       bool
	}{
		{"plain", link("prog.debug", 0x12345678), "prog.debug", 0x12345678, true},
		{"name fills 4 bytes", link("abc", 7), "abc", 7, true},
		{"no CRC", link("prog.debug", 1)[:12], "", 0, false},
		{"no NUL", []byte("prog.debug"), "", 0, false},
		{"empty name", link("", 1), "", 0, false},
		{"a path: refused", link("../../etc/x.debug", 1), "", 0, false},
		{"dot-dot", link("..", 1), "", 0, false},
	} {
		name, crc, ok := parseDebugLink(tt.d, binary.LittleEndian)
		if name != tt.wantName || crc != tt.wantCRC || ok != tt.ok {
			t.Errorf("%s: got (%q, %#x, %v), want (%q, %#x, %v)", tt.name, name, crc, ok, tt.wantName, tt.wantCRC, tt.ok)
		}
	}
}

// FuzzDebugSections feeds arbitrary section contents to both decoders:
// they must not panic, and what they return lies within the input.
func FuzzDebugSections(f *testing.F) {
	f.Add(note("GNU\x00", 3, []byte{1, 2, 3, 4}))
	f.Add([]byte("prog.debug\x00\x00\x01\x02\x03\x04"))
	f.Fuzz(func(t *testing.T, d []byte) {
		if id := parseBuildIDNote(d, binary.LittleEndian); len(id) > len(d) {
			t.Fatalf("build-id of %d bytes from %d", len(id), len(d))
		}
		if name, _, ok := parseDebugLink(d, binary.BigEndian); ok && (len(name) >= len(d) || bytes.ContainsRune([]byte(name), '/')) {
			t.Fatalf("debuglink name %q from %d bytes", name, len(d))
		}
	})
}
