package analysis_test

import (
	"os"
	"testing"

	"github.com/blpp/blpp/analysis"
	"github.com/blpp/blpp/cfg"
)

// BenchmarkAnalyzePython analyses the largest common binary on these
// machines, python3, end to end (load, discovery, CFGs, loops, liveness,
// numbering) and reports text MB/s and functions/s.
func BenchmarkAnalyzePython(b *testing.B) {
	const path = "/usr/bin/python3.11"
	data, err := os.ReadFile(path)
	if err != nil {
		b.Skip("python3.11 not installed (Debian package python3.11)")
	}
	var textSize uint64
	var funcs int
	for i := 0; i < b.N; i++ {
		bin, err := cfg.Load(data)
		if err != nil {
			b.Fatal(err)
		}
		r := analysis.Run(bin, analysis.Options{})
		funcs = len(r.Funcs)
		textSize = 0
		for _, s := range bin.Sections() {
			if s.Exec {
				textSize += s.Size
			}
		}
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(float64(textSize)/1e6/sec, "textMB/s")
	b.ReportMetric(float64(funcs)/sec, "funcs/s")
}
