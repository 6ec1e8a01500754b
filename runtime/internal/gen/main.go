// Command gen regenerates the runtime's generated files in the current
// directory (go generate ./runtime): the headers blpp_layout.h and
// blpp_format.h, and the image blpp_rt.elf built from the sources with the
// pinned compiler (see package blpp/runtime/internal/build).
//
//	go run ./internal/gen [-cc gcc] [-any-version]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/blpp/blpp/runtime/internal/build"
)

func main() {
	cc := flag.String("cc", "gcc", "C compiler")
	anyVersion := flag.Bool("any-version", false, "accept a compiler other than gcc "+build.GCCVersion+" (the image will differ from CI's)")
	flag.Parse()
	if err := generate(*cc, *anyVersion); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func generate(cc string, anyVersion bool) error {
	headers, err := build.Headers()
	if err != nil {
		return err
	}
	for name, b := range headers {
		if err := writeFile(name, b); err != nil {
			return err
		}
	}
	img, err := build.Build(build.Options{Dir: ".", CC: cc, AnyVersion: anyVersion})
	if err != nil {
		return err
	}
	return writeFile(build.ImageName, img)
}

// writeFile replaces name through a temporary file and a rename.
func writeFile(name string, b []byte) error {
	tmp, err := os.CreateTemp(".", filepath.Base(name)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), name)
}
