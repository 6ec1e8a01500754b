// Command genheader writes the C header of the blpp profile format, the
// constants of package cct, for the runtime:
//
//	go run blpp/cct/internal/genheader -o blpp_format.h
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"blpp/cct"
)

func main() {
	out := flag.String("o", "", "output file (default: standard output)")
	flag.Parse()
	var b bytes.Buffer
	if err := cct.WriteCHeader(&b); err != nil {
		fmt.Fprintln(os.Stderr, "genheader:", err)
		os.Exit(1)
	}
	if *out == "" {
		os.Stdout.Write(b.Bytes())
		return
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genheader:", err)
		os.Exit(1)
	}
}
