package main

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter/addrmap"
)

func init() {
	register(&command{name: "map", summary: "where each original instruction of the instrumented functions was copied to",
		usage: "PROG.blpp [--format text|json] [--func REGEX]", run: runMap})
}

// mapDoc is `blpp map --format json` (docs/formats.md, "blpp map").
type mapDoc struct {
	Binary    string    `json:"binary"`
	Functions []mapFunc `json:"functions"`
}

type mapFunc struct {
	Name         string    `json:"name"`
	Entry        string    `json:"entry"`
	Instructions []mapInst `json:"instructions"`
}

type mapInst struct {
	Addr   string   `json:"addr"`
	Copies []string `json:"copies"`
	Joins  []string `json:"joins,omitempty"`
}

func runMap(c *ctx, args []string) error {
	fs := c.newFlags()
	format := fs.String("format", "text", "output format: text or json")
	re := fs.String("func", "", "only functions whose name matches this regular expression")
	if err := c.parse(fs, args); err != nil {
		return err
	}
	path, err := oneArg(fs.Args(), "PROG.blpp")
	if err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return &usageError{fmt.Sprintf("--format %q: want text or json", *format)}
	}
	match, err := nameFilter(*re)
	if err != nil {
		return err
	}
	tab, f, err := report.LoadMeta(path)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := addrmap.FromELF(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// The map lists the instrumented functions in the metadata's order.
	doc := mapDoc{Binary: path, Functions: []mapFunc{}}
	k := 0
	for _, mf := range tab.Funcs {
		if !mf.Instrumented {
			continue
		}
		if k >= len(m.Funcs) || m.Funcs[k].Entry != mf.Entry {
			return fmt.Errorf("%s: the address map does not match the metadata at %s (%#x)", path, mf.Name, mf.Entry)
		}
		af := m.Funcs[k]
		k++
		if !match(mf.Name) {
			continue
		}
		df := mapFunc{Name: mf.Name, Entry: mapHex(mf.Entry), Instructions: []mapInst{}}
		for _, in := range af.Insts {
			di := mapInst{Addr: mapHex(in.Addr)}
			for _, cp := range in.Copies {
				di.Copies = append(di.Copies, mapHex(cp))
			}
			for _, j := range in.Joins {
				di.Joins = append(di.Joins, mapHex(j))
			}
			df.Instructions = append(df.Instructions, di)
		}
		doc.Functions = append(doc.Functions, df)
	}
	if k != len(m.Funcs) {
		return fmt.Errorf("%s: the address map has %d functions, the metadata %d instrumented ones", path, len(m.Funcs), k)
	}
	if *format == "json" {
		enc := json.NewEncoder(c.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return writeMapText(c.stdout, doc)
}

func writeMapText(w io.Writer, doc mapDoc) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range doc.Functions {
		fmt.Fprintf(tw, "%s (entry %s): %d instructions\n", f.Name, f.Entry, len(f.Instructions))
		for _, in := range f.Instructions {
			fmt.Fprintf(tw, "  %s\t->", in.Addr)
			for _, cp := range in.Copies {
				fmt.Fprintf(tw, " %s", cp)
			}
			if len(in.Joins) > 0 {
				fmt.Fprintf(tw, "  (left out, joining at %s)", strings.Join(in.Joins, " "))
			}
			fmt.Fprintln(tw)
		}
	}
	return tw.Flush()
}

func mapHex(a uint64) string { return fmt.Sprintf("%#x", a) }

// nameFilter compiles --func (empty: every name matches).
func nameFilter(re string) (func(string) bool, error) {
	if re == "" {
		return func(string) bool { return true }, nil
	}
	rx, err := regexp.Compile(re)
	if err != nil {
		return nil, &usageError{fmt.Sprintf("--func: %v", err)}
	}
	return rx.MatchString, nil
}
