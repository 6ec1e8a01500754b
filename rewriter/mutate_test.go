package rewriter_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"math/rand"
	"os"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// mutateTargets are the sections whose bytes a mutation may change: the
// tables the rewriter parses (headers aside, which mutate picks too).
var mutateTargets = []string{".text", ".eh_frame", ".eh_frame_hdr", ".gcc_except_table", ".dynamic", ".dynsym", ".dynstr",
	".symtab", ".strtab", ".rela.dyn", ".rela.plt", ".init_array", ".fini_array", ".plt", ".plt.got", ".got", ".note.gnu.property", ".gnu.hash", ".gnu.version"}

// mutate returns a copy of in with one random change and what it was: a
// few bytes of a section, of the ELF header, of the program or section
// header table replaced by random or extreme values, or the file cut.
func mutate(r *rand.Rand, in []byte, f *elf.File) ([]byte, string) {
	out := bytes.Clone(in)
	extreme := func(b []byte) {
		switch r.Intn(4) {
		case 0:
			for i := range b {
				b[i] = 0xff
			}
		case 1:
			for i := range b {
				b[i] = 0
			}
		case 2:
			b[len(b)-1] ^= 0x80
		default:
			r.Read(b)
		}
	}
	span := func(off, size uint64, what string) ([]byte, string) {
		if size == 0 || off+size > uint64(len(out)) {
			return out, "nothing"
		}
		n := uint64(1 + r.Intn(8))
		if n > size {
			n = size
		}
		at := off + uint64(r.Int63n(int64(size-n+1)))
		extreme(out[at : at+n])
		return out, fmt.Sprintf("%s: %d bytes at file offset %#x", what, n, at)
	}
	switch k := r.Intn(10); {
	case k == 0:
		n := r.Intn(len(in))
		return out[:n], fmt.Sprintf("cut to %d bytes", n)
	case k == 1:
		return span(16, 48, "ELF header")
	case k == 2:
		phoff := f.ByteOrder.Uint64(in[32:])
		return span(phoff, uint64(len(f.Progs))*56, "program headers")
	case k == 3:
		shoff := f.ByteOrder.Uint64(in[40:])
		return span(shoff, uint64(len(f.Sections))*64, "section headers")
	default:
		var cands []*elf.Section
		for _, name := range mutateTargets {
			if s := f.Section(name); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
				cands = append(cands, s)
			}
		}
		s := cands[r.Intn(len(cands))]
		return span(s.Offset, s.Size, s.Name)
	}
}

// TestRewriteMutated rewrites randomly damaged copies of real executables
// (a C++ program that throws, with exception tables: g++ PIE and
// non-PIE, clang++; the short mode fewer): the rewriter must
// refuse with an error or write an ELF file that debug/elf reads, and
// never panic (DESIGN: bad input gets a clear error). Each failure names
// the seed, so it can be replayed; BLPP_MUTATE_ROUNDS=N runs N rounds
// a configuration.
func TestRewriteMutated(t *testing.T) {
	rounds := 150
	if testing.Short() {
		rounds = 40
	}
	if n, err := strconv.Atoi(os.Getenv("BLPP_MUTATE_ROUNDS")); err == nil && n > 0 {
		rounds = n // deeper runs by hand
	}
	for ci, c := range []fixture.Config{
		{CC: "g++", Opt: "-O2", PIE: true},
		{CC: "g++", Opt: "-O1"},
		{CC: "clang++", Opt: "-O2", PIE: true},
	} {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			in, err := os.ReadFile(fixture.Build(t, "cxx/throw.cpp", c))
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < rounds; i++ {
				seed := int64(ci*100000 + i)
				data, what := mutate(rand.New(rand.NewSource(seed)), in, f)
				out, err := rewriteNoPanic(data)
				if err != nil {
					t.Errorf("seed %d (%s): %v", seed, what, err)
					continue
				}
				if out != nil {
					if _, err := elf.NewFile(bytes.NewReader(out)); err != nil {
						t.Errorf("seed %d (%s): the output is no ELF file: %v", seed, what, err)
					}
				}
			}
		})
	}
}

// rewriteNoPanic rewrites data in both modes and turns a panic into an
// error naming it; a refusal is no error, and the output is nil then.
func rewriteNoPanic(data []byte) (out []byte, err error) {
	for _, opts := range []rewriter.Options{{}, {NoContext: true}} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic (NoContext %v): %v\n%s", opts.NoContext, r, debug.Stack())
				}
			}()
			o, _, rerr := rewriter.Rewrite(data, opts)
			if rerr == nil {
				out = o
			}
		}()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
