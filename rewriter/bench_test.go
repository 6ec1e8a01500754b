package rewriter_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/rewriter"
)

// BenchmarkRewrite rewrites large binaries present on Debian machines
// end to end (load, analysis, code generation, tables, ELF output) and
// reports input MB/s. libLLVM is left out: one rewrite takes tens of
// seconds and gigabytes (time it with blpp rewrite and /usr/bin/time).
func BenchmarkRewrite(b *testing.B) {
	for _, path := range []string{"/usr/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/bin/python3.11"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		b.Run(filepath.Base(path), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := rewriter.Rewrite(data, rewriter.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/1e6*float64(b.N)/b.Elapsed().Seconds(), "MB/s")
		})
	}
}
