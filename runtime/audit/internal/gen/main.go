// Command gen rebuilds blpp_audit.so in the current directory (go generate
// ./runtime/audit).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/blpp/blpp/runtime/audit"
)

func main() {
	cc := flag.String("cc", "gcc", "C compiler")
	anyVersion := flag.Bool("any-version", false, "accept another gcc than the pinned one")
	flag.Parse()
	b, err := audit.Build(".", *cc, *anyVersion)
	if err == nil {
		err = os.WriteFile(audit.ObjectName, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
