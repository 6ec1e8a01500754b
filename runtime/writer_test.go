package runtime_test

import (
	"os"
	osexec "os/exec"
	"testing"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestWriterStreams: the profile goes to its file as it is made, so the
// writer's buffers never hold the file (decision 136), and neither do
// they hold a thread's records, which make most of it: they go to the
// file one by one, the section's length and their number put in place
// after them (decision 142). foldchain.c in context mode makes some
// 25,000 records; the writer_bytes statistic (what its buffers held at
// once, after each thread's section) must stay well below the file's
// size. A writer that gathers the whole file before writing it holds
// about twice the file; one that gathers a thread's records, about the
// file.
func TestWriterStreams(t *testing.T) {
	orig := fixture.Build(t, "foldchain.c", fixture.Config{CC: "gcc", Opt: "-O2", PIE: true})
	inst, prof := rewriteInDir(t, orig)
	cmd := osexec.Command(inst, "hot")
	cmd.Env = append(cleanEnv(), "BLPP_PROFILE="+prof)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("foldchain: %v\n%s", err, b)
	}
	st, err := os.Stat(prof)
	if err != nil {
		t.Fatal(err)
	}
	p, err := cct.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	held, size := p.Stats["writer_bytes"], uint64(st.Size())
	t.Logf("profile %d bytes, %d records; the writer held %d bytes at most (%.2fx)", size, p.Stats[cct.StatRecords], held, float64(held)/float64(size))
	if size < 256<<10 {
		t.Fatalf("profile of %d bytes: too small to tell", size)
	}
	if held == 0 || held > size/4 {
		t.Errorf("the writer held %d bytes for a profile of %d: it keeps the thread's records in memory", held, size)
	}
}
