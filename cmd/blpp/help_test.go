package main

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// helpFlag is one flag as a command's --help lists it.
type helpFlag struct {
	long, short string
	value       bool // takes a value (the list names its type)
	desc        string
}

var (
	helpLine  = regexp.MustCompile(`^\s+(?:-([a-zA-Z]), )?--([a-z][a-z-]*)(?: ([a-zA-Z]+))?\s{2,}(.*)$`)
	usageFlag = regexp.MustCompile(`(?:^|[\s\[|])(--[a-z][a-z-]*|-[a-zA-Z])\b`)
)

// helpFlags parses the flag list of a --help text.
func helpFlags(t *testing.T, text string) []helpFlag {
	var out []helpFlag
	in := false
	for _, l := range strings.Split(text, "\n") {
		if l == "flags:" {
			in = true
			continue
		}
		if !in {
			continue
		}
		m := helpLine.FindStringSubmatch(l)
		if m == nil {
			if strings.TrimSpace(l) != "" && len(out) > 0 && strings.HasPrefix(l, "      ") {
				out[len(out)-1].desc += " " + strings.TrimSpace(l)
			}
			continue
		}
		out = append(out, helpFlag{long: m[2], short: m[1], value: m[3] != "", desc: m[4]})
	}
	return out
}

// TestHelpConformance runs every command's --help (and blpp help CMD,
// which must print the same) and requires the usage line and the flag
// list to agree, every listed flag to be accepted, and every flag that
// says it is required to be refused by name when missing.
func TestHelpConformance(t *testing.T) {
	// run sorts the command list: iterate over a copy.
	cmds := append([]*command(nil), commands...)
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		if c.hidden {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			h := blpp(c.name, "--help")
			if h.code != 0 || !strings.HasPrefix(h.stdout, "usage: blpp "+c.name) {
				t.Fatalf("blpp %s --help: exit %d, stdout %.200q, stderr %.200q", c.name, h.code, h.stdout, h.stderr)
			}
			if h2 := blpp("help", c.name); h2.stdout != h.stdout {
				t.Errorf("blpp help %s differs from blpp %s --help", c.name, c.name)
			}
			usage := strings.SplitN(h.stdout, "\n", 2)[0]
			inUsage := map[string]bool{}
			for _, m := range usageFlag.FindAllStringSubmatch(usage, -1) {
				inUsage[m[1]] = true
			}
			flags := helpFlags(t, h.stdout)
			listed := map[string]bool{}
			for _, f := range flags {
				listed["--"+f.long] = true
				if f.short != "" {
					listed["-"+f.short] = true
				}
				if f.long == "help" {
					continue
				}
				if !inUsage["--"+f.long] && (f.short == "" || !inUsage["-"+f.short]) {
					t.Errorf("--%s is listed but not in the usage line %q", f.long, usage)
				}
				// Accepted: whatever else goes wrong, not as an unknown flag.
				args := []string{c.name, "--" + f.long}
				if f.value {
					// A path that can be nothing else's: --keep
					// and -o values are written to.
					args = append(args, filepath.Join(t.TempDir(), "x"))
				}
				if o := blpp(args...); strings.Contains(o.stderr, "unknown flag") || strings.Contains(o.stderr, "unknown shorthand") {
					t.Errorf("blpp %q: %s", args, strings.TrimSpace(o.stderr))
				}
				if strings.Contains(f.desc, "(required)") {
					o := blpp(c.name, "operand")
					if o.code != 2 || !strings.Contains(o.stderr, f.long) && (f.short == "" || !strings.Contains(o.stderr, "-"+f.short)) {
						t.Errorf("--%s says it is required; blpp %s without it: exit %d, %q", f.long, c.name, o.code, o.stderr)
					}
				}
			}
			for fl := range inUsage {
				if !listed[fl] {
					t.Errorf("the usage line names %s, which is no flag of %s", fl, c.name)
				}
			}
		})
	}
}
