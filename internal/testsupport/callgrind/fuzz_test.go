package callgrind

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse. The parser must never panic
// (a recovered panic surfaces as errInternal), a syntax error must name a
// line, and a successful parse must hold only executed instructions.
func FuzzParse(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte("positions: instr\nevents: Ir\nob=/bin/prog\n0x10 1\n+2 3\ncalls=1 -2\n* 5\njcnd=1/2 *\n+1\n"))
	f.Add([]byte("events: Ir\npositions: instr line\nob=(1) /bin/prog\nfn=(1)\n"))
	f.Add([]byte("version: 1\npart: 1\npositions: instr\nevents: Ir\nob=/bin/prog\n0x10 1\ntotals: 1\npart: 2\n0x10 1\n"))
	r := rand.New(rand.NewPCG(1, 2))
	for range 4 {
		f.Add([]byte(writeParts(genParts(r), true, true)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(bytes.NewReader(data), mainObj)
		if errors.Is(err, errInternal) {
			t.Fatal(err)
		}
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) && pe.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		if p.Object != mainObj {
			t.Fatalf("Object = %q", p.Object)
		}
		for a, n := range p.Exec {
			if n == 0 {
				t.Fatalf("Exec[%#x] = 0", a)
			}
		}
		for k, n := range p.Calls {
			if n == 0 {
				t.Fatalf("Calls[%v] = 0", k)
			}
		}
	})
}
