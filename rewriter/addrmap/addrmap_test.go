package addrmap

import (
	"bytes"
	"errors"
	"math/rand"
	"reflect"
	"testing"
)

func sample() *Map {
	var r Recorder
	// Out of order, one duplicate, one instruction with two copies, one
	// below the entry (a .cold fragment laid out first).
	r.Add(0x1004, 0x9010)
	r.Add(0x1000, 0x9000)
	r.Add(0x1004, 0x9400)
	r.Add(0x0ff0, 0x9800)
	r.Add(0x1000, 0x9000)
	r.AddJoin(0x1004, 0x9420)
	r.AddJoin(0x1004, 0x9420)
	return &Map{Funcs: []Func{r.Func(0x1000), {Entry: 0x2000, Insts: []Inst{{Addr: 0x2000, Copies: []uint64{0x8000}}}}}}
}

func TestRecorder(t *testing.T) {
	got := sample().Funcs[0]
	want := Func{Entry: 0x1000, Insts: []Inst{{Addr: 0x0ff0, Copies: []uint64{0x9800}}, {Addr: 0x1000, Copies: []uint64{0x9000}},
		{Addr: 0x1004, Copies: []uint64{0x9010, 0x9400}, Joins: []uint64{0x9420}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	m := sample()
	if c := m.Lookup(0x1004); !reflect.DeepEqual(c, []uint64{0x9010, 0x9400}) {
		t.Fatalf("Lookup(0x1004) = %#x", c)
	}
	if c := m.Lookup(0x1002); c != nil {
		t.Fatalf("Lookup(0x1002) = %#x, want nil", c)
	}
	if len(m.Index()) != 4 {
		t.Fatalf("Index has %d instructions, want 4", len(m.Index()))
	}
}

func TestRoundTrip(t *testing.T) {
	for _, want := range []*Map{sample(), {Funcs: []Func{}}} {
		got, err := Decode(Encode(want))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	data := Encode(sample())
	for i := 0; i < len(data); i++ {
		if _, err := Decode(data[:i]); err == nil {
			t.Fatalf("truncation at %d accepted", i)
		}
	}
	if _, err := Decode(append(data, 0)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("trailing byte: got %v, want ErrCorrupt", err)
	}
	if _, err := Decode([]byte("not a map at all")); !errors.Is(err, ErrBadMagic) {
		t.Fatalf("got %v, want ErrBadMagic", err)
	}
	v2 := append([]byte(nil), data...)
	v2[len(Magic)] = 2
	if _, err := Decode(v2); !errors.Is(err, ErrVersion) {
		t.Fatalf("got %v, want ErrVersion", err)
	}
	bad := []*Map{
		{Funcs: []Func{{Entry: 1, Insts: []Inst{{Addr: 1}}}}},                                                      // no copy
		{Funcs: []Func{{Entry: 1, Insts: []Inst{{Addr: 2, Copies: []uint64{5}}, {Addr: 2, Copies: []uint64{6}}}}}}, // repeated instruction
		{Funcs: []Func{{Entry: 1, Insts: []Inst{{Addr: 2, Copies: []uint64{5, 5}}}}}},                              // repeated copy
		{Funcs: []Func{{Entry: 1, Insts: []Inst{{Addr: 2, Copies: []uint64{5}, Joins: []uint64{7, 7}}}}}},          // repeated join
	}
	for i, m := range bad {
		if _, err := Decode(Encode(m)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("bad map %d: got %v, want ErrCorrupt", i, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(Encode(sample()))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			return
		}
		again, err := Decode(Encode(m))
		if err != nil {
			t.Fatalf("re-encoding a decoded map fails: %v", err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encoding changes the map")
		}
	})
}

// TestCodeIsAdd: the encoding of functions made apart (Recorder.Code),
// moved (Code.Shift) and added in order (AddCode) is byte for byte the
// encoding of the same functions recorded where they end up and added
// whole (Recorder.Func, Add): random copies, duplicates, joins with and
// without an instruction, functions without copies.
func TestCodeIsAdd(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	for round := 0; round < 200; round++ {
		nf := 1 + rnd.Intn(6)
		whole, apart := NewEncoder(nf), NewEncoder(nf)
		for f := 0; f < nf; f++ {
			entry := uint64(0x1000 + rnd.Intn(0x100))
			shift := rnd.Intn(1<<20) - 1<<19
			var at, moved Recorder // copies where emitted, and where they land
			for i := rnd.Intn(12); i > 0; i-- {
				orig := entry + uint64(rnd.Intn(24)) - 4
				cp := uint64(0x800000 + rnd.Intn(1<<16))
				at.Add(orig, cp)
				moved.Add(orig, cp+uint64(shift))
				if rnd.Intn(4) == 0 {
					at.Add(orig, cp) // a duplicate
					moved.Add(orig, cp+uint64(shift))
				}
				if rnd.Intn(3) == 0 {
					j := orig
					if rnd.Intn(3) == 0 {
						j += 100 // no such instruction
					}
					jc := uint64(0x800000 + rnd.Intn(1<<16))
					for k := 1 + rnd.Intn(2); k > 0; k-- { // sometimes twice
						at.AddJoin(j, jc)
						moved.AddJoin(j, jc+uint64(shift))
					}
				}
			}
			fn := moved.Func(entry)
			whole.Add(&fn)
			c := at.Code(entry)
			c.Shift(shift)
			apart.AddCode(&c)
		}
		if !bytes.Equal(whole.Bytes(), apart.Bytes()) {
			t.Fatalf("round %d: apart\n% x\nwhole\n% x", round, apart.Bytes(), whole.Bytes())
		}
	}
}
