package meta

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/blpp/blpp/pathnum"
)

func sample() *Table {
	return &Table{OrigBuildID: []byte{1, 2, 3}, Funcs: []Func{
		{Name: "f", Entry: 0x1000, Size: 32, Instrumented: true,
			Blocks:    []Block{{0x1000, 0x1008, 3, 0}, {0x1008, 0x1010, 2, 1}, {0x1010, 0x1020, 4, 0}},
			Edges:     []Edge{{0, 1, 0, false, false}, {1, 1, 1, false, false}, {1, 2, 0, false, false}, {2, -1, 5, false, false}},
			NumPaths:  4,
			CallSites: []uint64{0x1004}},
		{Name: "g", Entry: 0x2000, Size: 3, Reason: "too short"},
	}, Patched: []Patch{{0x1000, []byte{0x55, 0x48, 0x89, 0xe5, 0x90}}}, PatchedKnown: true}
}

func TestRoundTrip(t *testing.T) {
	want := sample()
	got, err := Decode(Encode(want))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
	}
	n, err := got.Funcs[0].Numbering(got.MaxPaths)
	if err != nil {
		t.Fatal(err)
	}
	if n.NumPaths != 4 {
		t.Fatalf("NumPaths = %d, want 4", n.NumPaths)
	}
}

// TestEncodeWithID checks that splicing the ID into the encoding made
// with an empty one gives what encoding the identified table gives, with
// build-ids and MaxPaths of every length class.
func TestEncodeWithID(t *testing.T) {
	for _, tc := range []struct {
		id  []byte
		max uint64
	}{{nil, 0}, {[]byte{1, 2, 3}, 1 << 40}, {make([]byte, 200), 127}, {make([]byte, 20), 128}} {
		tab := sample()
		tab.OrigBuildID, tab.MaxPaths = tc.id, tc.max
		got := tab.EncodeWithID()
		if len(tab.InstrID) != 20 {
			t.Fatalf("InstrID has %d bytes", len(tab.InstrID))
		}
		if want := Encode(tab); !reflect.DeepEqual(got, want) {
			t.Fatalf("build-id %d bytes, MaxPaths %d: EncodeWithID differs from Encode", len(tc.id), tc.max)
		}
		id := tab.InstrID
		tab.InstrID = []byte("stale")
		tab.ComputeInstrID()
		if !reflect.DeepEqual(tab.InstrID, id) {
			t.Fatalf("ComputeInstrID depends on the old ID")
		}
	}
}

func TestDecodeRefusesEveryTruncation(t *testing.T) {
	data := Encode(sample())
	for i := 0; i < len(data); i++ {
		if _, err := Decode(data[:i]); err == nil {
			t.Fatalf("truncation at %d accepted", i)
		}
	}
	if _, err := Decode([]byte("not meta at all")); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("got %v, want ErrBadMagic", err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(sample()))
	f.Fuzz(func(t *testing.T, data []byte) {
		if some, err := DecodeSome(data, func(i uint32) bool { return i%2 == 0 }); err == nil {
			for i := range some.Funcs {
				if some.Funcs[i].Instrumented {
					some.Funcs[i].Numbering(some.MaxPaths) // must not panic
				}
			}
		}
		tab, err := Decode(data)
		if err != nil {
			return
		}
		for i := range tab.Funcs {
			if tab.Funcs[i].Instrumented {
				tab.Funcs[i].Numbering(tab.MaxPaths) // must not panic
			}
		}
		if _, err := Decode(Encode(tab)); err != nil {
			t.Fatalf("re-encoding a decoded table fails: %v", err)
		}
	})
}

// TestOrigCode: the patched bytes are restored wherever a read range
// overlaps them, and a version 2 table (no patched bytes recorded) says
// it cannot restore a range over an entry.
func TestOrigCode(t *testing.T) {
	tab := sample()
	tab.Patched = append(tab.Patched, Patch{0x1010, []byte{1, 2, 3, 4, 5}})
	file := func() []byte { // the instrumented file's bytes at 0x0ffe..0x1016
		b := make([]byte, 0x18)
		for i := range b {
			b[i] = 0xee
		}
		return b
	}
	got, ok := tab.OrigCode(0x0ffe, file())
	want := []byte{0xee, 0xee, 0x55, 0x48, 0x89, 0xe5, 0x90, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 1, 2, 3, 4, 5, 0xee}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("OrigCode(0x0ffe) = %x, %v; want %x, true", got, ok, want)
	}
	if got, ok := tab.OrigCode(0x1003, file()[:3]); !ok || !reflect.DeepEqual(got, []byte{0xe5, 0x90, 0xee}) {
		t.Errorf("OrigCode(0x1003, 3 bytes) = %x, %v", got, ok)
	}

	// Version 2: the same table without the patch list.
	old := sample()
	old.Patched, old.PatchedKnown = nil, false
	data := encodeAs(old, 0, false) // no lengths before version 5
	data = data[:len(data)-1]       // the empty patch list
	data[len(Magic)] = 2
	dec, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(dec, old) {
		t.Fatalf("version 2:\n got %+v\nwant %+v", dec, old)
	}
	if _, ok := dec.OrigCode(0x1003, file()[:2]); ok {
		t.Error("a version 2 table restores bytes inside an entry jump")
	}
	if _, ok := dec.OrigCode(0x1005, file()[:4]); !ok {
		t.Error("a version 2 table refuses bytes after the entry jump")
	}
}

// TestDecodeRefusesBadPatches: overlapping or empty patches are corrupt.
func TestDecodeRefusesBadPatches(t *testing.T) {
	for _, ps := range [][]Patch{
		{{0x1000, []byte{1, 2}}, {0x1001, []byte{3}}},
		{{0x1000, nil}},
		{{^uint64(0), []byte{1, 2}}},
	} {
		tab := sample()
		tab.Patched = ps
		if _, err := Decode(Encode(tab)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("patches %v: got %v, want ErrCorrupt", ps, err)
		}
	}
}

// TestEncodedFuncs: functions encoded apart (EncodeFunc, Table.Encoded)
// make the same table as the same functions given whole.
func TestEncodedFuncs(t *testing.T) {
	whole := sample()
	apart := *whole
	apart.Funcs = nil
	for i := range whole.Funcs {
		if i < len(whole.Funcs)-1 {
			apart.Encoded = append(apart.Encoded, EncodeFunc(&whole.Funcs[i]))
		} else {
			apart.Funcs = whole.Funcs[i:]
		}
	}
	if a, w := apart.EncodeWithID(), whole.EncodeWithID(); !bytes.Equal(a, w) || !bytes.Equal(apart.InstrID, whole.InstrID) {
		t.Fatal("functions encoded apart make another table")
	}
}

// TestRoundTripDispatch: the Dispatch bit survives encoding, and
// renumbering from the table honours it (the numbering differs without
// it: the dispatch jump's edges would be DAG edges).
func TestRoundTripDispatch(t *testing.T) {
	tab := &Table{Funcs: []Func{{Name: "d", Entry: 0x1000, Size: 32, Instrumented: true,
		Blocks: []Block{{0x1000, 0x1004, 1, 0}, {0x1004, 0x1008, 1, 0}, {0x1008, 0x100c, 1, 0}, {0x100c, 0x1010, 1, 0}},
		Edges: []Edge{{0, 1, 2, false, true}, {0, 2, 2, false, true}, {1, 3, 0, false, false}, {2, 3, 0, false, false},
			{3, -1, 5, false, false}}}}}
	for _, dispatch := range []bool{true, false} {
		f := &tab.Funcs[0]
		f.Edges[0].Dispatch, f.Edges[1].Dispatch = dispatch, dispatch
		f.NumPaths = 0
		g := &pathnum.Graph{NumNodes: 5, Entry: 0, Exit: 4}
		for _, e := range f.Edges {
			to := int(e.To)
			if to < 0 {
				to = 4
			}
			g.Edges = append(g.Edges, pathnum.Edge{From: int(e.From), To: to, Weight: 1, Dispatch: e.Dispatch})
		}
		n, err := pathnum.Number(g, pathnum.Options{})
		if err != nil {
			t.Fatal(err)
		}
		f.NumPaths = n.NumPaths
		got, err := Decode(Encode(tab))
		if err != nil {
			t.Fatal(err)
		}
		if d := got.Funcs[0].Edges[1].Dispatch; d != dispatch {
			t.Fatalf("Dispatch %v came back %v", dispatch, d)
		}
		if _, err := got.Funcs[0].Numbering(got.MaxPaths); err != nil {
			t.Fatalf("dispatch %v: %v", dispatch, err)
		}
	}
}

// TestDecodeSome: the functions asked for decode as Decode decodes them;
// the others keep their heads and are Skipped, and Numbering refuses
// them; a graph whose length is wrong is refused where it is decoded.
func TestDecodeSome(t *testing.T) {
	want := sample()
	h := want.Funcs[0]
	h.Name, h.Entry = "h", 0x3000
	want.Funcs = append(want.Funcs, h)
	data := Encode(want)
	for _, fn := range []uint32{0, 2} {
		got, err := DecodeSome(data, func(i uint32) bool { return i == fn })
		if err != nil {
			t.Fatal(err)
		}
		for i := range want.Funcs {
			w, g := want.Funcs[i], got.Funcs[i]
			if i != int(fn) && w.Instrumented {
				if !g.Skipped || g.Name != w.Name || g.Entry != w.Entry || g.Size != w.Size || len(g.Blocks)+len(g.Edges)+len(g.CallSites) != 0 || g.NumPaths != 0 {
					t.Errorf("asked for %d: function %d = %+v, want it skipped", fn, i, g)
				}
				if _, err := g.Numbering(got.MaxPaths); err == nil {
					t.Errorf("asked for %d: function %d, skipped, numbered", fn, i)
				}
				continue
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("asked for %d: function %d = %+v, want %+v", fn, i, g, w)
			}
		}
	}
	// f's graph is one byte longer than its length says: the length
	// byte follows f's instrumented flag (1) after its name and address.
	at := bytes.Index(data, []byte{1, 'f', 0x80, 0x20, 32, 1})
	if at < 0 {
		t.Fatalf("f's head not found in %x", data)
	}
	for _, d := range []int{-1, 1} {
		bad := append([]byte(nil), data...)
		bad[at+6] = byte(int(bad[at+6]) + d)
		if _, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("a graph's length off by %d: %v", d, err)
		}
	}
}
