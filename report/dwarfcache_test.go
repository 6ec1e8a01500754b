package report

import (
	"debug/elf"
	"os"
	"path/filepath"
	"testing"
)

// TestDWARFCache: the DWARF of a file with compressed debug sections is
// kept decompressed under the cache directory; read back, and after the
// file is damaged (refused and made again), it gives every address the
// rows and frames f.DWARF gives.
func TestDWARFCache(t *testing.T) {
	exe := buildUnits(t, "gcc", []string{"-O2", "-g", "-gz"})
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		t.Fatal(err)
	}
	want := readWhole(d)
	text := f.Section(".text")
	same := func(what string, di *DebugInfo) {
		t.Helper()
		if di == nil {
			t.Fatalf("%s: no DWARF", what)
		}
		for a := text.Addr; a < text.Addr+text.Size; a++ {
			lr, lok := di.LineAt(a)
			wr, wok := want.LineAt(a)
			if lr != wr || lok != wok || framesString(di.Frames(a)) != framesString(want.Frames(a)) {
				t.Fatalf("%s: %#x: %+v %s, want %+v %s", what, a, lr, framesString(di.Frames(a)), wr, framesString(want.Frames(a)))
			}
		}
	}
	dir := t.TempDir()
	same("first read", newDebugInfoCached(f, dir))
	files, _ := filepath.Glob(filepath.Join(dir, "*.dwarf"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v, want one file", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeDWARFCache(b); err != nil {
		t.Fatalf("the cache file does not decode: %v", err)
	}
	same("from the cache", newDebugInfoCached(f, dir))
	b[len(b)/2] ^= 0x40
	if _, err := decodeDWARFCache(b); err == nil {
		t.Fatal("a damaged cache file decodes")
	}
	if err := os.WriteFile(files[0], b, 0o644); err != nil {
		t.Fatal(err)
	}
	same("after damage", newDebugInfoCached(f, dir))
	if b2, _ := os.ReadFile(files[0]); len(b2) != len(b) || string(b2) == string(b) {
		t.Error("the damaged cache file was not made again")
	}
}

// FuzzDWARFCache: a cache file is refused or decodes into sections that
// lie within it; never a panic.
func FuzzDWARFCache(f *testing.F) {
	f.Add(encodeDWARFCache(map[string][]byte{".debug_info": {1, 2, 3}, ".debug_abbrev": {0}}))
	f.Add([]byte(dwarfCacheMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		secs, err := decodeDWARFCache(b)
		if err != nil {
			return
		}
		n := 0
		for _, v := range secs {
			n += len(v)
		}
		if n > len(b) {
			t.Fatalf("%d bytes of sections from %d", n, len(b))
		}
		if d, err := dwarfFrom(secs); err == nil {
			debugInfoOf(d).Rows(0, ^uint64(0))
		}
	})
}
