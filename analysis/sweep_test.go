package analysis_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
)

// sweepDirs are searched for ELF files by TestSweep.
var sweepDirs = []string{"/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu"}

// elfFiles lists the regular files under dirs that start with the ELF
// magic, each once (symlinks resolved).
func elfFiles(t testing.TB, dirs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, d := range dirs {
		filepath.WalkDir(d, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if de.Type()&fs.ModeSymlink != 0 {
				return nil
			}
			if !de.Type().IsRegular() {
				return nil
			}
			real, err := filepath.EvalSymlinks(path)
			if err != nil || seen[real] {
				return nil
			}
			f, err := os.Open(real)
			if err != nil {
				return nil
			}
			var magic [4]byte
			_, err = f.Read(magic[:])
			f.Close()
			if err == nil && bytes.Equal(magic[:], []byte("\x7fELF")) {
				seen[real] = true
				out = append(out, real)
			}
			return nil
		})
	}
	sort.Strings(out)
	return out
}

// clearRefusal reports whether err is one of the refusals blpp promises:
// a named sentinel with detail.
func clearRefusal(err error) bool {
	for _, s := range []error{cfg.ErrNotELF, cfg.ErrNotX86_64, cfg.ErrUnsupported, cfg.ErrMalformed} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// TestSweep runs the whole static analysis over every ELF file of the
// machine's system directories: no panic, no error but a clear refusal,
// and it logs the share of functions that can be instrumented (PLT stubs
// excluded), overall and for the worst files.
func TestSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("sweep over system binaries skipped under -short")
	}
	files := elfFiles(t, sweepDirs)
	if len(files) == 0 {
		t.Skip("no ELF files found under", sweepDirs)
	}
	type result struct {
		path        string
		funcs, inst int
		reasons     map[string]int
		err         error
		panicked    any
	}
	results := make([]result, len(files))
	var wg sync.WaitGroup
	next := make(chan int, len(files))
	for i := range files {
		next <- i
	}
	close(next)
	start := time.Now()
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				r := &results[i]
				r.path = files[i]
				func() {
					defer func() { r.panicked = recover() }()
					b, err := cfg.Open(files[i])
					if err != nil {
						r.err = err
						return
					}
					res := analysis.Run(b, analysis.Options{Workers: 1})
					r.reasons = map[string]int{}
					for _, f := range res.Funcs {
						if f.Func.PLT {
							continue
						}
						r.funcs++
						if f.Instrumentable() {
							r.inst++
						} else {
							r.reasons[f.Reason()]++
						}
					}
				}()
			}
		}()
	}
	wg.Wait()
	var funcs, inst, refused, analysed int
	reasons := map[string]int{}
	for _, r := range results {
		switch {
		case r.panicked != nil:
			t.Errorf("%s: panic: %v", r.path, r.panicked)
		case r.err != nil:
			refused++
			if !clearRefusal(r.err) {
				t.Errorf("%s: error that is not a clear refusal: %v", r.path, r.err)
			}
		default:
			analysed++
			funcs += r.funcs
			inst += r.inst
			for k, v := range r.reasons {
				reasons[k] += v
			}
		}
	}
	sort.Slice(results, func(i, j int) bool {
		return share(results[i].inst, results[i].funcs) < share(results[j].inst, results[j].funcs)
	})
	for _, r := range results[:min(15, len(results))] {
		if r.err == nil && r.panicked == nil && r.funcs > 0 {
			t.Logf("low share: %s %d/%d (%.1f%%) %v", r.path, r.inst, r.funcs, 100*share(r.inst, r.funcs), r.reasons)
		}
	}
	t.Logf("sweep: %d ELF files in %v: %d analysed, %d refused; %d functions, %d instrumentable (%.2f%%); not instrumentable by reason: %v",
		len(files), time.Since(start).Round(time.Millisecond), analysed, refused, funcs, inst, 100*share(inst, funcs), reasons)
	fmt.Fprintf(os.Stderr, "sweep: %d/%d functions instrumentable (%.2f%%)\n", inst, funcs, 100*share(inst, funcs))
}

func share(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}
