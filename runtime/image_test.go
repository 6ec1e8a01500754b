package runtime_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/runtime"
	"github.com/blpp/blpp/runtime/internal/build"
)

func TestLoad(t *testing.T) {
	img, err := runtime.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Text) == 0 || len(img.Data) == 0 {
		t.Fatalf("empty image: text %d bytes, data %d bytes", len(img.Text), len(img.Data))
	}
	if img.DataOff%runtime.PageSize != 0 || img.DataOff < uint64(len(img.Text)) {
		t.Errorf("DataOff %#x: not page aligned after %d text bytes", img.DataOff, len(img.Text))
	}
	for _, s := range []string{runtime.SymStart, runtime.SymFini, runtime.SymEnter, runtime.SymExit, runtime.SymBackedge} {
		if off := img.Symbols[s]; off >= uint64(len(img.Text)) {
			t.Errorf("%s at %#x is not in the text", s, off)
		}
	}
	c, err := img.Config()
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.Config{Magic: runtime.ConfigMagic, DumpSignal: runtime.DefaultDumpSignal, Flags: runtime.ConfigFlagFlowOnly}
	if c != want {
		t.Errorf("default config %+v, want %+v", c, want)
	}
	c.NFuncs = 7
	if err := img.SetConfig(c); err != nil {
		t.Fatal(err)
	}
	if c2, _ := img.Config(); c2.NFuncs != 7 {
		t.Errorf("SetConfig did not stick: %+v", c2)
	}
	// Each Load returns its own copy.
	img2, _ := runtime.Load()
	if c3, _ := img2.Config(); c3.NFuncs != 0 {
		t.Error("Load returned shared Data")
	}
	if err := build.Check(runtime.ImageELF()); err != nil {
		t.Errorf("committed image: %v", err)
	}
}

// TestImageCurrent rebuilds the runtime image and its headers and fails
// when the committed files differ (run `go generate ./runtime`).
func TestImageCurrent(t *testing.T) {
	headers, err := build.Headers()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range headers {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run go generate ./runtime", name)
		}
	}
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	ver, err := build.CompilerVersion(gcc)
	if err != nil {
		t.Fatal(err)
	}
	if ver != build.GCCVersion {
		msg := "gcc is " + ver + ", the committed image is built with gcc " + build.GCCVersion + " (Debian package gcc-12): cannot check it"
		if os.Getenv(fixture.EnvRequireTools) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	img, err := build.Build(build.Options{Dir: ".", CC: gcc})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(img, runtime.ImageELF()) {
		t.Errorf("blpp_rt.elf is stale (%d bytes rebuilt, %d committed): run go generate ./runtime", len(img), len(runtime.ImageELF()))
	}
}

// TestBuildInputs checks that the build's lists of hand-written files
// (build.Sources, build.Includes) name every blpp_* C, assembly, header
// and linker-script file here, and every file they include: a part of the
// unity build missing from the lists would escape TestImageCurrent (or
// break the build in its temporary directory).
func TestBuildInputs(t *testing.T) {
	listed := map[string]bool{build.LayoutHeader: true, build.FormatHeader: true}
	for _, name := range append(append([]string{}, build.Sources...), build.Includes...) {
		if listed[name] {
			t.Errorf("%s is listed twice (or is a generated header)", name)
		}
		listed[name] = true
	}
	for _, pat := range []string{"blpp_*.c", "blpp_*.h", "blpp_*.S", "blpp_*.ld"} {
		names, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if !listed[name] {
				t.Errorf("%s is not in build.Sources or build.Includes", name)
			}
		}
	}
	include := regexp.MustCompile(`(?m)^\s*#\s*include\s+"([^"]+)"`)
	for _, name := range append(append([]string{}, build.Sources...), build.Includes...) {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range include.FindAllSubmatch(src, -1) {
			if !listed[string(m[1])] {
				t.Errorf("%s includes %s, which the build does not list", name, m[1])
			}
		}
	}
}

// TestCheckRefuses makes sure the build's checks catch what they are for:
// an absolute address in data and an undefined symbol.
func TestCheckRefuses(t *testing.T) {
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	dir := t.TempDir()
	src := dir + "/bad.c"
	if err := os.WriteFile(src, []byte("extern int g(void);\nint x;\nint *p = &x;\nint f(void) { return g() + *p; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	obj := dir + "/bad.o"
	args := append(append([]string{}, build.CFlags...), "-c", "-o", obj, src)
	if out, err := exec(gcc, args...); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	data, err := os.ReadFile(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := build.CheckObject(data); err == nil {
		t.Error("CheckObject accepted an initialised pointer")
	} else {
		t.Logf("refused as expected: %v", err)
	}
	// A relocatable object is not an image.
	if err := build.Check(data); err == nil {
		t.Error("Check accepted an object file")
	}
	if err := build.Check([]byte("not elf")); err == nil {
		t.Error("Check accepted garbage")
	}
	if _, err := runtime.Decode([]byte("junk")); !errors.Is(err, runtime.ErrImage) {
		t.Errorf("Decode(junk) = %v, want ErrImage", err)
	}
}
