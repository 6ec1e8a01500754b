package main

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/report"
)

// TestLoadMetaMapped: LoadMeta, which decodes the metadata from a mapping
// of the file, gives the table that decoding the section's bytes gives;
// a section that claims to run past the file's end is refused with an
// error (the mapping's size check), not a fault.
func TestLoadMetaMapped(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "loops.c", gccO2PIE)
	inst := filepath.Join(dir, "loops.blpp")
	mustBlpp(t, "rewrite", exe, "-o", inst)
	got, f, err := report.LoadMeta(inst)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	ef, err := elf.Open(inst)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	s := ef.Section(meta.SectionName)
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	want, err := meta.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) || len(got.Funcs) == 0 {
		t.Errorf("LoadMeta's table differs from Decode of the section's bytes (%d and %d functions)", len(got.Funcs), len(want.Funcs))
	}
	whole, err := os.ReadFile(inst)
	if err != nil {
		t.Fatal(err)
	}
	idx := -1
	for i, sec := range ef.Sections {
		if sec == s {
			idx = i
		}
	}
	// Elf64_Shdr.sh_size, at 32 in the section's header.
	shoff := binary.LittleEndian.Uint64(whole[0x28:])
	size := shoff + uint64(idx)*64 + 32
	binary.LittleEndian.PutUint64(whole[size:], uint64(len(whole))-s.Offset+1<<20)
	long := filepath.Join(dir, "long.blpp")
	if err := os.WriteFile(long, whole, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := report.LoadMeta(long); err == nil || !strings.Contains(err.Error(), "long.blpp") {
		t.Errorf("LoadMeta of a %s past the file's end: %v", meta.SectionName, err)
	} else {
		t.Logf("%v", err)
	}
}
