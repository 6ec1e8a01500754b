package report

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// probeWriter encodes the two sections as LLVM does
// [llvm/MC/MCPseudoProbe.cpp], for the tests: each outlined function's
// first probe as an offset from its start (clang 16), or as an address
// (absFirst, LLVM before that); the rest as deltas.
type probeWriter struct {
	desc, probes bytes.Buffer
	absFirst     bool
	starts       map[uint64]uint64
	last         uint64
}

func (w *probeWriter) uleb(b *bytes.Buffer, v uint64) {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		b.WriteByte(c)
		if v == 0 {
			return
		}
	}
}

func (w *probeWriter) sleb(b *bytes.Buffer, v int64) {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		b.WriteByte(c)
		if done {
			return
		}
	}
}

func (w *probeWriter) addDesc(d ProbeDesc) {
	binary.Write(&w.desc, binary.LittleEndian, d.GUID)
	binary.Write(&w.desc, binary.LittleEndian, d.Hash)
	w.uleb(&w.desc, uint64(len(d.Name)))
	w.desc.WriteString(d.Name)
}

func (w *probeWriter) node(n *ProbeNode, inlinee bool) {
	b := &w.probes
	if inlinee {
		w.uleb(b, uint64(n.Site))
	} else if !w.absFirst {
		w.last = w.starts[n.GUID]
	}
	binary.Write(b, binary.LittleEndian, n.GUID)
	w.uleb(b, uint64(len(n.Probes)))
	w.uleb(b, uint64(len(n.Children)))
	for i, p := range n.Probes {
		w.uleb(b, uint64(p.Index))
		t := byte(p.Kind)
		if p.Disc != 0 {
			t |= probeAttrDisc << 4
		}
		if i == 0 && !inlinee && w.absFirst {
			b.WriteByte(t)
			binary.Write(b, binary.LittleEndian, p.Addr)
		} else {
			b.WriteByte(t | 0x80)
			w.sleb(b, int64(p.Addr-w.last))
		}
		if p.Disc != 0 {
			w.uleb(b, uint64(p.Disc))
		}
		w.last = p.Addr
	}
	for _, k := range n.Children {
		w.node(k, true)
	}
}

// probeTree is a forest for the tests: main with helper inlined at its
// call probe 3 and leaf inlined into helper at 2, probes going back and
// forth in address (deltas of both signs), one with a discriminator; and
// work, a function of its own further on.
func probeTree() (*PseudoProbes, map[uint64]uint64) {
	g := func(s string) uint64 { return ProbeGUID(s) }
	pp := &PseudoProbes{Desc: map[uint64]ProbeDesc{}}
	for i, name := range []string{"main", "helper", "leaf", "work"} {
		pp.Desc[g(name)] = ProbeDesc{GUID: g(name), Hash: uint64(1000 + i), Name: name}
	}
	leaf := &ProbeNode{GUID: g("leaf"), Site: 2, Probes: []Probe{{Addr: 0x1010, Index: 1}}}
	helper := &ProbeNode{GUID: g("helper"), Site: 3, Probes: []Probe{{Addr: 0x100c, Index: 1}, {Addr: 0x1010, Index: 2, Kind: ProbeDirectCall}},
		Children: []*ProbeNode{leaf}}
	main := &ProbeNode{GUID: g("main"), Probes: []Probe{{Addr: 0x1004, Index: 1}, {Addr: 0x1018, Index: 2, Disc: 7},
		{Addr: 0x1008, Index: 3, Kind: ProbeDirectCall}, {Addr: 0x1020, Index: 4, Kind: ProbeIndirectCall}}, Children: []*ProbeNode{helper}}
	work := &ProbeNode{GUID: g("work"), Probes: []Probe{{Addr: 0x1100, Index: 1}, {Addr: 0x1108, Index: 2}}}
	pp.Roots = []*ProbeNode{main, work}
	return pp, map[uint64]uint64{g("main"): 0x1000, g("work"): 0x1100}
}

func encodeProbeTree(pp *PseudoProbes, starts map[uint64]uint64, absFirst bool) (desc, probes []byte) {
	w := &probeWriter{absFirst: absFirst, starts: starts}
	guids := make([]uint64, 0, len(pp.Desc))
	for g := range pp.Desc {
		guids = append(guids, g)
	}
	sort.Slice(guids, func(i, j int) bool { return guids[i] < guids[j] })
	for _, g := range guids {
		w.addDesc(pp.Desc[g])
	}
	for _, n := range pp.Roots {
		w.node(n, false)
	}
	return w.desc.Bytes(), w.probes.Bytes()
}

// TestDecodePseudoProbes decodes both encodings of the first probe of a
// function, deltas of both signs, discriminators and nested inlinees.
func TestDecodePseudoProbes(t *testing.T) {
	want, starts := probeTree()
	for _, abs := range []bool{false, true} {
		desc, probes := encodeProbeTree(want, starts, abs)
		got, err := decodePseudoProbes(desc, probes, starts)
		if err != nil {
			t.Fatalf("absolute first probe %v: %v", abs, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("absolute first probe %v: decoded\n%s\nwant\n%s", abs, dumpProbes(got), dumpProbes(want))
		}
	}
	// Function starts count only until an address appears (LLVM's
	// decoder): with absolute first probes, a wrong start changes nothing.
	desc, probes := encodeProbeTree(want, starts, true)
	wrong := map[uint64]uint64{ProbeGUID("main"): 0x9000, ProbeGUID("work"): 0x9100}
	if got, err := decodePseudoProbes(desc, probes, wrong); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("absolute encoding with wrong starts: %v\n%s", err, dumpProbes(got))
	}
}

// TestDecodePseudoProbesRefusals: truncation anywhere, counts the section
// cannot hold, nesting past the limit and over-long LEB128 numbers are
// refused with a located ErrPseudoProbe, never a panic or a partial result.
func TestDecodePseudoProbesRefusals(t *testing.T) {
	pp, starts := probeTree()
	desc, probes := encodeProbeTree(pp, starts, false)
	for n := 0; n < len(probes); n++ {
		if got, err := decodePseudoProbes(desc, probes[:n], starts); n > 0 && err == nil {
			// A cut between two whole functions decodes; only main's
			// tree (all but work's) may come back then.
			if len(got.Roots) != 1 || got.Roots[0].GUID != ProbeGUID("main") {
				t.Errorf("cut at %d of %d: %d functions, no error", n, len(probes), len(got.Roots))
			}
		} else if err != nil && !errors.Is(err, ErrPseudoProbe) {
			t.Errorf("cut at %d: %v does not wrap ErrPseudoProbe", n, err)
		}
	}
	for n := 1; n < len(desc); n++ {
		// A cut between whole entries decodes fewer functions; any other
		// is refused.
		got, err := decodePseudoProbes(desc[:n], probes, starts)
		if err == nil && len(got.Desc) >= len(pp.Desc) {
			t.Errorf("descriptions cut at %d of %d: all %d decoded", n, len(desc), len(got.Desc))
		} else if err != nil && !errors.Is(err, ErrPseudoProbe) {
			t.Errorf("descriptions cut at %d: %v does not wrap ErrPseudoProbe", n, err)
		}
	}
	var deep bytes.Buffer
	for i := 0; i <= maxProbeDepth+1; i++ {
		if i > 0 {
			deep.WriteByte(1) // inline site
		}
		deep.Write(make([]byte, 8))  // GUID
		deep.Write([]byte{0, 1})     // no probes, one inlinee
		deep.Write(make([]byte, 64)) // room the counts check wants
	}
	bad := map[string][]byte{
		"probe count": append(make([]byte, 8), 0xff, 0xff, 0x03, 0),
		"deep":        deep.Bytes(),
		"long LEB128": append(make([]byte, 8), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
	}
	for name, b := range bad {
		_, err := decodePseudoProbes(nil, b, nil)
		var pe *probeError
		if !errors.As(err, &pe) || !errors.Is(err, ErrPseudoProbe) {
			t.Errorf("%s: %v, want a located ErrPseudoProbe", name, err)
		}
	}
}

func FuzzDecodePseudoProbes(f *testing.F) {
	pp, starts := probeTree()
	desc, probes := encodeProbeTree(pp, starts, false)
	f.Add(desc, probes)
	f.Add([]byte{}, []byte{0x80})
	f.Fuzz(func(t *testing.T, desc, probes []byte) {
		got, err := decodePseudoProbes(desc, probes, starts)
		if err == nil && got == nil {
			t.Fatal("no error and no result")
		}
	})
}

func dumpProbes(pp *PseudoProbes) string {
	if pp == nil {
		return "<nil>"
	}
	var b strings.Builder
	var walk func(n *ProbeNode, depth int)
	walk = func(n *ProbeNode, depth int) {
		fmt.Fprintf(&b, "%s%s @%d:", strings.Repeat(" ", depth), pp.Desc[n.GUID].Name, n.Site)
		for _, p := range n.Probes {
			fmt.Fprintf(&b, " %d/%v/%#x/%d", p.Index, p.Kind, p.Addr, p.Disc)
		}
		b.WriteByte('\n')
		for _, k := range n.Children {
			walk(k, depth+1)
		}
	}
	for _, n := range pp.Roots {
		walk(n, 0)
	}
	return b.String()
}

// TestPseudoProbesAgreeWithProfgen decodes the probes of tinyvm built with
// clang -fpseudo-probe-for-profiling and requires every one of them,
// address, function, index, kind and inline context, to be what
// llvm-profgen's own decoder prints.
func TestPseudoProbesAgreeWithProfgen(t *testing.T) {
	fixture.RequireTool(t, "clang-16", "clang-16")
	profgen := fixture.RequireTool(t, "llvm-profgen-16", "llvm-16")
	exe := fixture.Build(t, "pgo/tinyvm.c", fixture.Config{CC: "clang-16", Opt: "-O2", PIE: true,
		Extra: []string{"-fpseudo-probe-for-profiling", "-funique-internal-linkage-names"}})
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	starts := map[uint64]uint64{}
	syms, _ := f.Symbols()
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			starts[ProbeGUID(s.Name)] = s.Value
		}
	}
	pp, err := ReadPseudoProbes(f, starts)
	if err != nil || pp == nil {
		t.Fatalf("ReadPseudoProbes: %v, %v", pp, err)
	}
	var got []string
	var walk func(n *ProbeNode, ctx string)
	walk = func(n *ProbeNode, ctx string) {
		name := pp.Desc[n.GUID].Name
		for _, p := range n.Probes {
			got = append(got, fmt.Sprintf("%x %s %d %s %s", p.Addr, name, p.Index, profgenKind[p.Kind], ctx))
		}
		for _, k := range n.Children {
			c := name + ":" + strconv.Itoa(int(k.Site))
			if ctx != "" {
				c = ctx + " @ " + c
			}
			walk(k, c)
		}
	}
	for _, n := range pp.Roots {
		walk(n, "")
	}
	out, err := exec.Command(profgen, "--binary="+exe, "--show-disassembly-only", "--show-pseudo-probe",
		"--output="+filepath.Join(t.TempDir(), "unused.prof")).Output()
	if err != nil {
		t.Fatalf("llvm-profgen: %v\n%s", err, out)
	}
	var want []string
	probe := regexp.MustCompile(`^ \[Probe\]:\tFUNC: (\S+) Index: (\d+)  Type: (\w+)  (?:Inlined: @ (.*))?$`)
	insn := regexp.MustCompile(`^\s+([0-9a-f]+):\t`)
	var pending []string
	for _, l := range strings.Split(string(out), "\n") {
		if m := probe.FindStringSubmatch(l); m != nil {
			pending = append(pending, fmt.Sprintf("%s %s %s %s", m[1], m[2], m[3], m[4]))
		} else if m := insn.FindStringSubmatch(l); m != nil {
			for _, p := range pending {
				want = append(want, m[1]+" "+p)
			}
			pending = nil
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if len(want) < 100 {
		t.Fatalf("llvm-profgen printed %d probes; the fixture has more", len(want))
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%d probes decoded, llvm-profgen prints %d; first differences:\n%s", len(got), len(want), firstDiffs(got, want, 10))
	}
}

var profgenKind = map[ProbeKind]string{ProbeBlock: "Block", ProbeIndirectCall: "IndirectCall", ProbeDirectCall: "DirectCall"}

// firstDiffs lists up to n lines in one sorted list and not the other.
func firstDiffs(a, b []string, n int) string {
	var out []string
	i, j := 0, 0
	for (i < len(a) || j < len(b)) && len(out) < n {
		switch {
		case j >= len(b) || i < len(a) && a[i] < b[j]:
			out = append(out, "decoded only: "+a[i])
			i++
		case i >= len(a) || b[j] < a[i]:
			out = append(out, "profgen only: "+b[j])
			j++
		default:
			i, j = i+1, j+1
		}
	}
	return strings.Join(out, "\n")
}
