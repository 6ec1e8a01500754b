package main

// blpp --version: what was built (module version, commit, Go) and which
// file formats it writes, so a bug report says which blpp made a file.

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/meta"
)

// writeVersion prints blpp's version line and the format versions.
func writeVersion(w io.Writer) {
	version, commit := "(devel)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		var rev, modified, when string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			case "vcs.time":
				when = s.Value
			}
		}
		if rev != "" {
			commit = "commit " + rev
			if modified == "true" {
				commit += " with local changes"
			}
			if when != "" {
				commit += ", " + when
			}
		}
	}
	if commit == "" {
		// go run and -buildvcs=false stamp no commit.
		commit = "commit unknown (built without version control information)"
	}
	fmt.Fprintf(w, "blpp %s, %s, %s %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "writes profile format %d, metadata format %d\n", cct.Version, meta.Version)
}
