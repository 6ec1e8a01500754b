package audit_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
	"github.com/blpp/blpp/runtime/audit"
	"github.com/blpp/blpp/runtime/internal/build"
)

// TestObjectCurrent rebuilds the auditor and compares it with the
// committed object.
func TestObjectCurrent(t *testing.T) {
	fixture.RequireTool(t, "gcc", "gcc")
	b, err := audit.Build(".", "gcc", false)
	if errors.Is(err, build.ErrCompilerVersion) && os.Getenv("BLPP_REQUIRE_TOOLS") == "" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, audit.Object()) {
		t.Fatal("blpp_audit.so is stale: run go generate ./runtime/audit")
	}
}

// TestRedirect: a program that dlopen's a library by its absolute path
// loads the copy the map names, and a library the map does not name is
// handed to the map's blpp command, which is given the next module tag
// skipping the tags in use, and whose printed path is loaded instead. The
// program handles SIGCHLD, as ps does (it aborts on any signal it did not
// expect): the blpp command's process must not signal it.
func TestRedirect(t *testing.T) {
	libbTag := int(rewriter.DefaultModuleTag("libb.so"))
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	loader := "/lib64/ld-linux-x86-64.so.2"
	if _, err := os.Stat(loader); err != nil {
		t.Skip("no x86-64 dynamic loader at", loader)
	}
	dir := t.TempDir()
	cc := func(out string, args ...string) {
		t.Helper()
		if b, err := exec.Command(gcc, append(args, "-o", filepath.Join(dir, out))...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", args, err, b)
		}
	}
	src := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lib := func(word string) string {
		return src("lib_"+word+".c", `const char *which(void) { return "`+word+`"; }`)
	}
	cc("liba.so", "-shared", "-fPIC", lib("a"))
	cc("liba-copy.so", "-shared", "-fPIC", lib("acopy"))
	cc("libb.so", "-shared", "-fPIC", lib("b"))
	cc("libb-copy.so", "-shared", "-fPIC", lib("bcopy"))
	cc("main", src("main.c", `#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
static void chld(int sig) { (void)sig; write(1, "SIGCHLD\n", 8); _exit(9); }
int main(int argc, char **argv) {
	signal(SIGCHLD, chld);
	for (int i = 1; i < argc; i++) {
		void *h = dlopen(argv[i], RTLD_NOW);
		if (!h) { printf("%s\n", dlerror()); return 1; }
		printf("%s\n", ((const char *(*)(void))dlsym(h, "which"))());
	}
	return 0;
}`), "-ldl")
	// The blpp stand-in: checks its arguments, prints libb's copy.
	script := src("fake-blpp", `#!/bin/sh
[ "$1" = rewrite-module ] && [ "$2" = --module-tag ] && [ "$3" = `+strconv.Itoa(libbTag%2047+2)+` ] && [ "$4" = "`+filepath.Join(dir, "libb.so")+`" ] || exit 3
echo "`+filepath.Join(dir, "libb-copy.so")+`"
`)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	obj, err := audit.Install(filepath.Join(dir, "aud"), audit.Map{
		Blpp:    []string{script, "rewrite-module"},
		Used:    []int{libbTag, libbTag%2047 + 1},
		Objects: map[string]string{filepath.Join(dir, "liba.so"): filepath.Join(dir, "liba-copy.so")},
	})
	if err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(dir, "main")
	out, err := exec.Command(loader, "--audit", obj, "--argv0", main, main, filepath.Join(dir, "liba.so"), filepath.Join(dir, "libb.so")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "acopy\nbcopy"; got != want {
		t.Errorf("the program loaded %q, want %q", got, want)
	}
}
