package main

// The stats and cfg JSON schemas, and the stats text against its JSON:
// the shared checkers of the CLI tests (main_test.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/report"
)

// acceptedProblem checks the output of a command that accepted a
// corrupted binary: no crash report, nothing on stderr, a complete document.
func acceptedProblem(args []string, o outcome) string {
	if p := crashProblem(o.stderr); p != "" {
		return p
	}
	if o.stderr != "" {
		return fmt.Sprintf("exit status 0 with stderr %q", o.stderr)
	}
	var errs []string
	if args[0] == "stats" {
		_, errs = statsSchemaErrors([]byte(o.stdout))
	} else {
		_, errs = cfgSchemaErrors([]byte(o.stdout))
	}
	if len(errs) > 0 {
		return "exit status 0 but the output is not a complete document: " + strings.Join(errs, "; ")
	}
	return ""
}

// JSON schema checks. The documents are decoded into map[string]any with
// json.Number, so a renamed or retyped field shows up here rather than as
// a zero value in a Go struct.

type jsonKind int

const (
	jString jsonKind = iota
	jInt
	jBool
	jArray
	jObject
	jIntOrNull
)

func (k jsonKind) String() string {
	return [...]string{"string", "integer", "boolean", "array", "object", "integer or null"}[k]
}

func hasKind(v any, k jsonKind) bool {
	switch k {
	case jString:
		_, ok := v.(string)
		return ok
	case jInt:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil {
			_, err = strconv.ParseUint(n.String(), 10, 64)
		}
		return err == nil
	case jBool:
		_, ok := v.(bool)
		return ok
	case jArray:
		_, ok := v.([]any)
		return ok
	case jObject:
		_, ok := v.(map[string]any)
		return ok
	case jIntOrNull:
		return v == nil || hasKind(v, jInt)
	}
	return false
}

// checkKeys appends to errs one message per key of want missing from obj
// or of the wrong type.
func checkKeys(errs *[]string, where string, obj map[string]any, want map[string]jsonKind) {
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, ok := obj[k]
		if !ok {
			*errs = append(*errs, fmt.Sprintf("%s: no key %q", where, k))
		} else if !hasKind(v, want[k]) {
			*errs = append(*errs, fmt.Sprintf("%s: %q is %T %v, want %v", where, k, v, v, want[k]))
		}
	}
}

func decodeObject(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the JSON document")
	}
	return doc, nil
}

// decodeChecked decodes one JSON object and checks its top-level keys.
func decodeChecked(data []byte, keys map[string]jsonKind) (map[string]any, []string) {
	doc, err := decodeObject(data)
	if err != nil {
		return nil, []string{fmt.Sprintf("not one JSON object: %v", err)}
	}
	var errs []string
	checkKeys(&errs, "document", doc, keys)
	return doc, errs
}

// checkObjects checks that every element of arr (the array name) is an
// object with keys, and calls each, when set, with those that are.
func checkObjects(errs *[]string, name string, arr []any, keys map[string]jsonKind, each func(i int, where string, obj map[string]any)) {
	for i, v := range arr {
		where := fmt.Sprintf("%s[%d]", name, i)
		obj, ok := v.(map[string]any)
		if !ok {
			*errs = append(*errs, fmt.Sprintf("%s is %T, want object", where, v))
			continue
		}
		n := len(*errs)
		checkKeys(errs, where, obj, keys)
		if len(*errs) == n && each != nil {
			each(i, where, obj)
		}
	}
}

func num(v any) int64 {
	n, _ := v.(json.Number).Int64()
	return n
}

var hexAddr = regexp.MustCompile(`^0x[0-9a-f]+$`)

var statsFuncKeys = map[string]jsonKind{
	"name": jString, "entry": jString, "size": jInt, "blocks": jInt, "edges": jInt,
	"loops": jInt, "paths": jIntOrNull, "instrumentable": jBool, "reason": jString,
}

// statsSchemaErrors decodes a `blpp stats --json` document and lists every
// way it departs from the documented schema.
func statsSchemaErrors(data []byte) (map[string]any, []string) {
	doc, errs := decodeChecked(data, map[string]jsonKind{"binary": jString, "functions": jArray, "summary": jObject})
	if len(errs) > 0 {
		return doc, errs
	}
	funcs := doc["functions"].([]any)
	instrumentable := 0
	checkObjects(&errs, "functions", funcs, statsFuncKeys, func(_ int, where string, f map[string]any) {
		where = fmt.Sprintf("%s (%s)", where, f["name"])
		if f["name"] == "" {
			errs = append(errs, where+": empty name")
		}
		if !hexAddr.MatchString(f["entry"].(string)) {
			errs = append(errs, fmt.Sprintf("%s: entry %q is not 0x-prefixed lower-case hex", where, f["entry"]))
		}
		for _, k := range []string{"size", "blocks", "edges", "loops", "paths"} {
			if f[k] != nil && num(f[k]) < 0 {
				errs = append(errs, fmt.Sprintf("%s: %s is negative", where, k))
			}
		}
		ins, reason := f["instrumentable"].(bool), f["reason"].(string)
		if ins {
			instrumentable++
		}
		if ins != (reason == "") {
			errs = append(errs, fmt.Sprintf("%s: instrumentable %v with reason %q (want a reason exactly when not instrumentable)", where, ins, reason))
		}
		if ins && num(f["blocks"]) == 0 {
			errs = append(errs, where+": instrumentable without blocks")
		}
		if f["paths"] != nil && num(f["paths"]) < 1 {
			errs = append(errs, fmt.Sprintf("%s: %v paths", where, f["paths"]))
		}
	})
	sum := doc["summary"].(map[string]any)
	n := len(errs)
	checkKeys(&errs, "summary", sum, map[string]jsonKind{"functions": jInt, "instrumentable": jInt})
	if len(errs) == n {
		if got := num(sum["instrumentable"]); got != int64(instrumentable) {
			errs = append(errs, fmt.Sprintf("summary: instrumentable %d, but %d functions are", got, instrumentable))
		}
		if got := num(sum["functions"]); got > int64(len(funcs)) || got < num(sum["instrumentable"]) {
			errs = append(errs, fmt.Sprintf("summary: %d functions, with %d listed and %d instrumentable", got, len(funcs), num(sum["instrumentable"])))
		}
	}
	return doc, errs
}

var (
	cfgFuncKeys = map[string]jsonKind{
		"name": jString, "entry": jString, "size": jInt, "instrumentable": jBool, "reason": jString,
		"paths": jIntOrNull, "blocks": jArray, "edges": jArray, "loops": jArray, "jump_tables": jArray, "calls": jArray,
	}
	cfgBlockKeys = map[string]jsonKind{"id": jInt, "addr": jString, "end": jString, "insts": jInt, "loop_depth": jInt}
	cfgEdgeKeys  = map[string]jsonKind{"id": jInt, "from": jInt, "to": jInt, "kind": jString, "backedge": jBool, "val": jInt, "inc": jInt}
	cfgLoopKeys  = map[string]jsonKind{"header": jInt, "blocks": jArray, "backedges": jArray, "parent": jInt, "depth": jInt, "irreducible": jBool}
	cfgTableKeys = map[string]jsonKind{"jump": jString, "table": jString, "entries": jInt, "targets": jArray}
)

// cfgSchemaErrors checks a `blpp cfg --format json` document against the
// fields the CFG model documents, and decodes it.
func cfgSchemaErrors(data []byte) (*cfgDoc, []string) {
	doc, errs := decodeChecked(data, map[string]jsonKind{"binary": jString, "functions": jArray})
	if len(errs) > 0 {
		return nil, errs
	}
	checkObjects(&errs, "functions", doc["functions"].([]any), cfgFuncKeys, func(_ int, where string, f map[string]any) {
		for _, part := range []struct {
			key  string
			want map[string]jsonKind
		}{{"blocks", cfgBlockKeys}, {"edges", cfgEdgeKeys}, {"loops", cfgLoopKeys}, {"jump_tables", cfgTableKeys}} {
			checkObjects(&errs, fmt.Sprintf("%s (%s).%s", where, f["name"], part.key), f[part.key].([]any), part.want, nil)
		}
	})
	if len(errs) > 0 {
		return nil, errs
	}
	var d cfgDoc
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, []string{err.Error()}
	}
	return &d, nil
}

// The CFG document as this test reads it, once cfgSchemaErrors has checked
// its fields against the schema the test states (cfgFuncKeys and the
// rest): the report's own types.
type (
	cfgDoc   = report.CFGDoc
	cfgFunc  = report.CFGFunc
	cfgBlock = report.CFGBlock
	cfgEdge  = report.CFGEdge
	cfgLoop  = report.CFGLoop
	cfgTable = report.CFGTable
)

// mustRun runs a command line that must succeed.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	o := blpp(args...)
	if o.code != 0 || o.stderr != "" || crashProblem(o.stderr) != "" {
		t.Fatalf("blpp %q: %s", args, o)
	}
	return o.stdout
}

func cfgJSON(t *testing.T, args ...string) *cfgDoc {
	t.Helper()
	out := mustRun(t, append([]string{"cfg", "--format", "json"}, args...)...)
	d, errs := cfgSchemaErrors([]byte(out))
	if len(errs) > 0 {
		t.Fatalf("blpp cfg --format json %q:\n%s", args, strings.Join(errs, "\n"))
	}
	return d
}

// cfgFuncNamed returns the function of d with that name.
func cfgFuncNamed(t *testing.T, d *cfgDoc, name string) *cfgFunc {
	t.Helper()
	for i := range d.Functions {
		if d.Functions[i].Name == name {
			return &d.Functions[i]
		}
	}
	t.Fatalf("%s: no function %s in the cfg output", d.Binary, name)
	return nil
}

func TestStatsJSONSchema(t *testing.T) {
	tests := []struct {
		src string
		cfg fixture.Config
	}{
		{"switch.c", gccO2PIE},
		{"loops.c", gccO0},
		{"cold.c", gccO2},
		{"irreducible.c", clangO2PI},
	}
	for _, tt := range tests {
		t.Run(tt.src+"/"+tt.cfg.String(), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			doc, errs := statsSchemaErrors([]byte(mustRun(t, "stats", "--json", bin)))
			for _, e := range errs {
				t.Error(e)
			}
			if len(errs) > 0 {
				return
			}
			if doc["binary"] != bin {
				t.Errorf("binary = %q, want %q", doc["binary"], bin)
			}
			funcs := doc["functions"].([]any)
			if len(funcs) == 0 {
				t.Fatal("no functions")
			}
			// Procedures come in address order, and with the default
			// path limit every instrumentable one has a path count.
			var last int64 = -1
			for _, fv := range funcs {
				f := fv.(map[string]any)
				entry, _ := strconv.ParseInt(strings.TrimPrefix(f["entry"].(string), "0x"), 16, 64)
				if entry < last {
					t.Errorf("%s at %#x listed after %#x", f["name"], entry, last)
				}
				last = entry
				if f["instrumentable"].(bool) && f["paths"] == nil {
					t.Errorf("%s: instrumentable but paths is null without a path limit", f["name"])
				}
			}
		})
	}
}

// statsRow is one line of the `blpp stats` table.
type statsRow struct{ entry, size, blocks, edges, loops, paths, status, name string }

var statsSummaryRE = regexp.MustCompile(`^(.+): (\d+) functions, (\d+) instrumentable \((\d+\.\d)%\), (\d+) blocks, (\d+) edges, (\d+) loops`)

// parseStatsText splits the stats text into table rows and the summary
// line.
func parseStatsText(t *testing.T, out string) ([]statsRow, []string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "entry") {
		t.Fatalf("stats output has no table header:\n%s", out)
	}
	var rows []statsRow
	i := 1
	for ; i < len(lines) && lines[i] != ""; i++ {
		f := strings.Fields(lines[i])
		if len(f) < 8 {
			t.Fatalf("short stats row %q", lines[i])
		}
		status := f[6]
		rest := f[7:]
		if status == "no:" {
			// The reason takes words up to the function name, the last
			// field.
			status = "no: " + strings.Join(f[7:len(f)-1], " ")
			rest = f[len(f)-1:]
		}
		rows = append(rows, statsRow{f[0], f[1], f[2], f[3], f[4], f[5], status, strings.Join(rest, " ")})
	}
	if i+1 >= len(lines) {
		t.Fatalf("stats output has no summary line:\n%s", out)
	}
	m := statsSummaryRE.FindStringSubmatch(lines[i+1])
	if m == nil {
		t.Fatalf("summary line %q does not match %s", lines[i+1], statsSummaryRE)
	}
	return rows, m
}

// TestStatsText checks the table and summary line against the JSON of the
// same binary, with and without a path limit.
func TestStatsText(t *testing.T) {
	tests := []struct {
		src      string
		cfg      fixture.Config
		maxPaths string
	}{
		{"switch.c", gccO2PIE, ""},
		{"loops.c", gccO2PIE, ""},
		{"loops.c", gccO2PIE, "8"},
		{"switch.c", gccO2PIE, "2"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/max-paths=%s", tt.src, tt.cfg, tt.maxPaths), func(t *testing.T) {
			bin := fixture.Build(t, tt.src, tt.cfg)
			var extra []string
			if tt.maxPaths != "" {
				extra = []string{"--max-paths", tt.maxPaths}
			}
			doc, errs := statsSchemaErrors([]byte(mustRun(t, append([]string{"stats", "--json", bin}, extra...)...)))
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
			text := mustRun(t, append([]string{"stats", bin}, extra...)...)
			rows, sum := parseStatsText(t, text)
			funcs := doc["functions"].([]any)
			if len(rows) != len(funcs) {
				t.Fatalf("%d table rows, %d JSON functions", len(rows), len(funcs))
			}
			for i, r := range rows {
				f := funcs[i].(map[string]any)
				want := statsRow{f["entry"].(string), fmt.Sprint(f["size"]), fmt.Sprint(f["blocks"]), fmt.Sprint(f["edges"]),
					fmt.Sprint(f["loops"]), "", "yes", f["name"].(string)}
				if !f["instrumentable"].(bool) {
					want.status = "no: " + f["reason"].(string)
				}
				switch {
				case f["paths"] != nil:
					want.paths = fmt.Sprint(f["paths"])
				case r.paths == "overflow":
					want.paths = "overflow"
				default:
					want.paths = "-"
				}
				if r != want {
					t.Errorf("row %d = %+v, JSON says %+v", i, r, want)
				}
			}
			s := doc["summary"].(map[string]any)
			share := 0.0
			if num(s["functions"]) > 0 {
				share = 100 * float64(num(s["instrumentable"])) / float64(num(s["functions"]))
			}
			if sum[1] != bin || sum[2] != fmt.Sprint(s["functions"]) || sum[3] != fmt.Sprint(s["instrumentable"]) ||
				sum[4] != fmt.Sprintf("%.1f", share) {
				t.Errorf("summary line %q disagrees with JSON summary %v", sum[0], s)
			}
		})
	}
}

// TestMaxPathsOverflow forces path overflow with --max-paths 2: a function
// with more than 2 paths gets "paths": null, the others keep their count,
// and the text table says "overflow" for the former.
func TestMaxPathsOverflow(t *testing.T) {
	for _, src := range []string{"switch.c", "loops.c"} {
		t.Run(src, func(t *testing.T) {
			bin := fixture.Build(t, src, gccO2PIE)
			base, errs := statsSchemaErrors([]byte(mustRun(t, "stats", "--json", bin)))
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
			limited, errs := statsSchemaErrors([]byte(mustRun(t, "stats", "--json", "--max-paths", "2", bin)))
			if len(errs) > 0 {
				t.Fatal(strings.Join(errs, "\n"))
			}
			rows, _ := parseStatsText(t, mustRun(t, "stats", "--max-paths", "2", bin))
			bf, lf := base["functions"].([]any), limited["functions"].([]any)
			if len(bf) != len(lf) || len(rows) != len(lf) {
				t.Fatalf("%d functions without a limit, %d with --max-paths 2, %d table rows", len(bf), len(lf), len(rows))
			}
			over, kept := 0, 0
			for i := range bf {
				b, l := bf[i].(map[string]any), lf[i].(map[string]any)
				if b["name"] != l["name"] {
					t.Fatalf("function %d is %s without a limit, %s with one", i, b["name"], l["name"])
				}
				if b["paths"] == nil {
					if l["paths"] != nil {
						t.Errorf("%s: paths %v under --max-paths 2, null without a limit", l["name"], l["paths"])
					}
					continue
				}
				switch n := num(b["paths"]); {
				case n > 2:
					over++
					if l["paths"] != nil {
						t.Errorf("%s: %d paths without a limit, %v under --max-paths 2 (want null)", l["name"], n, l["paths"])
					}
					if rows[i].paths != "overflow" {
						t.Errorf("%s: %d paths, over --max-paths 2, but the table shows %q in the paths column, want \"overflow\" (status %q)",
							l["name"], n, rows[i].paths, rows[i].status)
					}
				default:
					kept++
					if !hasKind(l["paths"], jInt) || num(l["paths"]) != n {
						t.Errorf("%s: %d paths without a limit, %v under --max-paths 2 (want the same number)", l["name"], n, l["paths"])
					}
				}
			}
			if over == 0 || kept == 0 {
				t.Errorf("%d functions over the limit, %d under: the fixture does not exercise both", over, kept)
			}
		})
	}
}

var (
	cfgHeaderRE = regexp.MustCompile(`^function (\S+) at (0x[0-9a-f]+), (\d+) bytes: (\d+) blocks, (\d+) edges, (\d+) loops, (\d+|overflow) paths$`)
	cfgBlockRE  = regexp.MustCompile(`^  B(\d+) +(0x[0-9a-f]+)-(0x[0-9a-f]+) +(\d+) +(\d+) *$`)
	cfgEdgeRE   = regexp.MustCompile(`^  B(\d+) -> (B\d+|EXIT) +([a-z-]+)(?: (0x[0-9a-f]+))?(?: \((backedge|broken)\))? +(\d+) +(.+?) +(live|dead) *$`)
	cfgBackRE   = regexp.MustCompile(`^end \+?(-?\d+), restart (-?\d+)$`)
	cfgLoopRE   = regexp.MustCompile(`^  loop (\d+): (loop|irreducible region), header B(\d+), depth (\d+), (top level|in loop \d+): (.*)$`)
	cfgTableRE  = regexp.MustCompile(`^  jump table at (0x[0-9a-f]+) for jmp (0x[0-9a-f]+): (\d+) (absolute|relative) entries$`)
)
