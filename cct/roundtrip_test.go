package cct

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/golden"
)

// TestRoundTrip: Parse inverts Write on random valid profiles, and Write
// is canonical (writing the parsed profile gives the same bytes).
func TestRoundTrip(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 1))
		p := randProfile(rng)
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatalf("seed %d: Write: %v", seed, err)
		}
		q, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("seed %d: Parse: %v", seed, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("seed %d: round trip differs:\nwrote %+v\nread  %+v", seed, p, q)
		}
		again, err := q.MarshalBinary()
		if err != nil || !bytes.Equal(again, buf.Bytes()) {
			t.Fatalf("seed %d: second write differs (%v)", seed, err)
		}
	}
}

// TestGolden: the writer produces exactly the hand-written bytes of
// testdata/small.hex, and testdata/small.prof holds them.
func TestGolden(t *testing.T) {
	want := readHex(t, "testdata/small.hex")
	got, err := smallProfile().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("writer output differs from testdata/small.hex:\ngot  % x\nwant % x", got, want)
	}
	if golden.Updating() {
		if err := os.WriteFile("testdata/small.prof", got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile("testdata/small.prof")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, want) {
		t.Fatalf("testdata/small.prof is stale (go test -run TestGolden -update)")
	}
	p, err := ReadFile("testdata/small.prof")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, smallProfile()) {
		t.Fatalf("parsed %+v", p)
	}
}

// TestChecksumIsFNV1a: our FNV-1a is the standard one.
func TestChecksumIsFNV1a(t *testing.T) {
	data := readHex(t, "testdata/small.hex")
	h := fnv.New64a()
	h.Write(data)
	if got := fnv1a(FNVOffset64, data); got != h.Sum64() {
		t.Fatalf("fnv1a = %#x, hash/fnv = %#x", got, h.Sum64())
	}
}

// TestPaddedVarints: a reader accepts varints longer than needed (up to
// ten bytes), which lets a writer reserve a length and patch it later.
func TestPaddedVarints(t *testing.T) {
	tid5 := []byte{0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00} // 5 in ten bytes
	thread := rawFile{}.raw(tid5...).uv(0).uv(0)
	data := rawHeader()
	data = data.u8(TagThread).raw(0x80|byte(len(thread)), 0x80, 0x00) // padded length
	data = append(data, thread...)
	p, err := Parse(data.trailer())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Threads) != 1 || p.Threads[0].TID != 5 {
		t.Fatalf("threads %+v", p.Threads)
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "blpp.out")
	p := smallProfile()
	if err := p.WriteFile(name); err != nil {
		t.Fatal(err)
	}
	q, err := ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p, q) {
		t.Fatal("WriteFile/ReadFile round trip differs")
	}
	// An invalid profile writes nothing, not even a temporary file.
	p.Metrics = nil
	if err := p.WriteFile(filepath.Join(dir, "bad.out")); err == nil {
		t.Fatal("invalid profile written")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("directory holds %v", names)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Flags(0).String(), "0"},
		{(FlagFlowOnly | FlagDumpSignal).String(), "flow-only|dump-signal"},
		{(FlagFatalSignal | 0x100).String(), "fatal-signal|0x100"},
		{MetricReal.String(), "real"},
		{MetricFallback.String(), "fallback"},
		{MetricUnavailable.String(), "unavailable"},
		{MetricKind(9).String(), "MetricKind(9)"},
		{fmt.Sprint(&FormatError{Off: 16, Msg: "x", Err: ErrCorrupt}), "corrupt profile at offset 16 (0x10): x"},
		{fmt.Sprint(&ModelError{Thread: 1, Record: 2, Path: -1, Partial: -1, Msg: "y", Err: ErrInvalid}), "cct: thread 1 record 2: y"},
		{fmt.Sprint(&ModelError{Thread: -1, Record: -1, Path: -1, Partial: -1, Msg: "z", Err: ErrInvalid}), "cct: z"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
