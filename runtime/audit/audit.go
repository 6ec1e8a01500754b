// Package audit holds the rtld auditor that `blpp run` gives the dynamic
// loader (ld.so --audit, rtld-audit(7)) so that a program loads the
// instrumented copy of every shared object it opens: the ones it needs
// (DT_NEEDED) and the ones it dlopen's, by name or by absolute path
// (decision 82). blpp_audit.c is freestanding C built by `go generate
// ./runtime/audit` into blpp_audit.so, which is committed and embedded;
// TestObjectCurrent rebuilds it and fails when it is stale.
//
// The auditor reads the file MapName in its own directory (Map): the
// objects already rewritten, original path → copy; for any other object
// the loader finds by path, it runs Map.Blpp with `--module-tag N PATH`
// (N: the tag the file's base name hashes to, or the next free one),
// which must print the copy's path.
package audit

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

//go:embed blpp_audit.so
var object []byte

// Names of the auditor's files in its directory.
const (
	ObjectName = "blpp_audit.so"
	MapName    = "map"
)

// Object returns the auditor's shared object.
func Object() []byte { return append([]byte(nil), object...) }

// Map is what the auditor reads.
type Map struct {
	// Blpp is the command (absolute path first) that rewrites an object
	// the map does not list; empty: such objects run as they are.
	Blpp []string
	// Used are the module tags taken. The auditor gives an object it
	// has rewritten the tag its file name hashes to (as
	// rewriter.DefaultModuleTag does), or the next one not used.
	Used []int
	// Objects maps an original file path to the path the loader is to
	// open for it: its instrumented copy's link in a mirror of its place
	// (decision 109), or itself. A bare name a program asks for is
	// answered from the entry of DIR/lib/NAME, DIR the auditor's own.
	Objects map[string]string
}

// Install writes the auditor and m into dir and returns the auditor's
// path, for ld.so's --audit.
func Install(dir string, m Map) (string, error) {
	var b strings.Builder
	if len(m.Blpp) > 0 {
		if !filepath.IsAbs(m.Blpp[0]) {
			return "", fmt.Errorf("audit map: blpp path %q is not absolute", m.Blpp[0])
		}
		b.WriteString("blpp")
		for _, a := range m.Blpp {
			if strings.ContainsAny(a, "\t\n") {
				return "", fmt.Errorf("audit map: argument %q has a tab or newline", a)
			}
			b.WriteString("\t" + a)
		}
		b.WriteString("\n")
	}
	if len(m.Used) > 0 {
		b.WriteString("used\t")
		for i, u := range m.Used {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprint(&b, u)
		}
		b.WriteString("\n")
	}
	for orig, cp := range m.Objects {
		if !filepath.IsAbs(orig) || !filepath.IsAbs(cp) || strings.ContainsAny(orig+cp, "\t\n") {
			return "", fmt.Errorf("audit map: bad entry %q -> %q", orig, cp)
		}
		fmt.Fprintf(&b, "%s\t%s\n", orig, cp)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	obj := filepath.Join(dir, ObjectName)
	if err := writeAtomic(obj, object, 0o755); err != nil {
		return "", err
	}
	if err := writeAtomic(filepath.Join(dir, MapName), []byte(b.String()), 0o644); err != nil {
		return "", err
	}
	return obj, nil
}

func writeAtomic(name string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
