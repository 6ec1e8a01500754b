package wholerun

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// testRewriteModule is the command by which the auditor calls this test
// binary back (TestMain), as it calls `blpp rewrite-module`: the test
// binary stands for blpp.
const testRewriteModule = "wholerun-test-rewrite-module"

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == testRewriteModule {
		os.Exit(rewriteModuleMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// rewriteModuleMain answers `--cache-dir DIR --module-tag N LIB` as blpp
// rewrite-module does: the path the loader is to open, LIB's copy in its
// mirror (Cache.Library), the copy made by copyRewrite.
func rewriteModuleMain(args []string) int {
	req := ParseModuleRequest(args)
	dir, lib, tag := req.CacheDir, req.Lib, req.Tag
	c := &Cache{Root: dir, Rewrite: copyRewrite}
	p, err := c.Library(lib, rewriter.Options{ModuleTag: tag}, "m")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(p)
	return 0
}

// copyRewrite "instruments" in by copying it: the tests check how copies
// are found and run, not what they count.
func copyRewrite(in, out string, _ rewriter.Options) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	return os.WriteFile(out, b, 0o755)
}

// TestCommandLibSelfPath: a library that finds its installation from its
// own path (dladdr, three directories up, as libjvm.so finds JAVA_HOME)
// finds the original's, whether the program needs it (prepared before the
// run) or dlopen's it (rewritten on demand through the auditor); both run
// from the cache, and the profile's path leads back to the original
// (Origin). The same plugin opened again through a link is the same
// object, as without blpp, and another plugin whose path comes in the
// same buffer is another (decision 109).
func TestCommandLibSelfPath(t *testing.T) {
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	for _, d := range []string{"bin", "lib/sub", "lib/plug", "share"} {
		if err := os.MkdirAll(filepath.Join(app, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(app, "share", "marker"), []byte("found\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(app, "lib", "sub", "libselfpath.so")
	plug := filepath.Join(app, "lib", "plug", "libplug.so")
	plug2 := filepath.Join(app, "lib", "plug", "libplug2.so")
	prog := filepath.Join(app, "bin", "selflib")
	for _, b := range [][]string{
		{"-shared", "-fPIC", "-o", lib, "testdata/libselfpath.c"},
		{"-shared", "-fPIC", "-o", plug, "testdata/libselfpath.c"},
		{"-shared", "-fPIC", "-o", plug2, "testdata/libselfpath.c"},
		{"-o", prog, "testdata/selflib.c", "-L" + filepath.Dir(lib), "-lselfpath", "-Wl,-rpath,$ORIGIN/../lib/sub"},
	} {
		if out, err := exec.Command(gcc, append([]string{"-O1"}, b...)...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", b, err, out)
		}
	}
	alias := filepath.Join(app, "lib", "alias")
	if err := os.Symlink("plug", alias); err != nil {
		t.Fatal(err)
	}
	// The plugin, itself again through a link, another plugin.
	args := []string{plug, filepath.Join(alias, "libplug.so"), plug2}
	const handles = "handles: 1 1 3"
	native, err := exec.Command(prog, args...).CombinedOutput()
	if err != nil || strings.Count(string(native), "marker=found") != 4 || !strings.Contains(string(native), handles) {
		t.Fatalf("the fixture alone: %v\n%s", err, native)
	}
	loader, err := Interpreter(prog)
	if err != nil || loader == "" {
		t.Fatalf("%s: no dynamic loader (%v)", prog, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cache{Root: filepath.Join(dir, "cache"), Rewrite: copyRewrite}
	inst, err := c.Module(prog, rewriter.Options{}, "m")
	if err != nil {
		t.Fatal(err)
	}
	wp, err := c.Prepare(Setup{Loader: loader, Prog: prog, Mode: "m",
		Pick:  func(p string) bool { return strings.HasPrefix(p, app) },
		Blpp:  []string{self, testRewriteModule, "--cache-dir", c.Root},
		Extra: nil})
	if err != nil {
		t.Fatal(err)
	}
	defer wp.Close()
	cmd, err := wp.Command(inst, prog, prog, args, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("under the auditor: %v", err)
	}
	root, err := filepath.EvalSymlinks(c.Root)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"needed": lib, "libplug.so": plug, "libplug2.so": plug2}
	seen := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		who, rest, ok := strings.Cut(l, ": path=")
		if !ok {
			continue
		}
		seen[who]++
		path, marker, _ := strings.Cut(rest, " marker=")
		if marker != "found" {
			t.Errorf("%s: the installation is not found from %s (marker %q)", who, path, marker)
		}
		if !strings.HasPrefix(path, root+"/") {
			t.Errorf("%s: loaded from %s, not from the cache %s", who, path, root)
		}
		if o := Origin(path); o != want[who] {
			t.Errorf("%s: Origin(%s) = %q, want %s", who, path, o, want[who])
		}
	}
	if seen["needed"] != 1 || seen["libplug.so"] != 2 || seen["libplug2.so"] != 1 || !strings.Contains(string(out), handles) {
		t.Errorf("output:\n%s\nwant the needed library once, the plugin twice, the other plugin once, %q", out, handles)
	}
}

// TestLibMirror: a library's mirror holds the copy under the name the
// loader found, in its directory and two above it, each with links to the
// original's other entries (a large directory by the way down alone);
// racing makers share one mirror; Original leads a path through a mirror
// back to the original.
func TestLibMirror(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "prefix")
	sub := filepath.Join(prefix, "lib", "sub")
	big := filepath.Join(dir, "big")
	for _, d := range []string{sub, filepath.Join(prefix, "share"), big} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(sub, "libx.so.1.2"), filepath.Join(sub, "data"), filepath.Join(prefix, "lib", "libother.so"), filepath.Join(prefix, "share", "marker")} {
		if err := os.WriteFile(f, []byte(filepath.Base(f)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("libx.so.1.2", filepath.Join(sub, "libx.so.1")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= mirrorMax; i++ {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(sub, "libx.so.1.2"), filepath.Join(big, "libx.so.1")); err != nil {
		t.Fatal(err)
	}
	c := &Cache{Root: filepath.Join(dir, "cache"), Rewrite: copyRewrite}
	lib := filepath.Join(sub, "libx.so.1")
	cp, err := c.Module(lib, rewriter.Options{ModuleTag: 3}, "m")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]string, 6)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got[i], errs[i] = LibMirror(cp, lib)
		}(i)
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("racing mirrors: %q %v, first %q", got[i], errs[i], got[0])
		}
	}
	m := got[0]
	if filepath.Base(m) != "libx.so.1" || !sameFile(t, m, cp) {
		t.Errorf("mirror %s: want the copy %s under the name the loader found", m, cp)
	}
	for rel, want := range map[string]string{"data": "data", "../libother.so": "libother.so", "../../share/marker": "marker", "libx.so.1.2": "libx.so.1.2"} {
		if b, err := os.ReadFile(filepath.Join(filepath.Dir(m), rel)); err != nil || string(b) != want {
			t.Errorf("%s beside the mirror: %q %v, want the original's %q", rel, b, err, want)
		}
	}
	if o := Origin(m); o != lib {
		t.Errorf("Origin(%s) = %q, want %s", m, o, lib)
	}
	if o := c.Original(filepath.Join(filepath.Dir(m), "..", "libother.so")); o != filepath.Join(prefix, "lib", "libother.so") {
		t.Errorf("Original of a sibling through the mirror: %q", o)
	}
	if o := c.Original(m); o != m {
		t.Errorf("Original of the copy's own link: %q, want it unchanged", o)
	}
	if o := c.Original(lib); o != lib {
		t.Errorf("Original of a path outside the cache: %q", o)
	}
	// A large directory is mirrored by the way down alone.
	biglib := filepath.Join(big, "libx.so.1")
	bm, err := LibMirror(cp, biglib)
	if err != nil {
		t.Fatal(err)
	}
	if bm == m || !sameFile(t, bm, cp) {
		t.Errorf("mirror for another place %s (first %s)", bm, m)
	}
	if ents, err := os.ReadDir(filepath.Dir(bm)); err != nil || len(ents) != 1 {
		t.Errorf("mirror of a directory of %d entries holds %d (%v), want the copy alone", mirrorMax+2, len(ents), err)
	}
}

func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// TestLibMirrorOrigin: in a directory too large to mirror whole, the
// mirror still links what the library's $ORIGIN run path finds of its
// DT_NEEDED libraries (the library, or the way to it), so that the
// loader resolves them from the mirror as from the original: glibc's
// gconv/EUC-JP.so needs libJIS.so beside it, and iconv -t EUC-JP failed
// under blpp run (decision 121).
func TestLibMirrorOrigin(t *testing.T) {
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	dir := t.TempDir()
	big := filepath.Join(dir, "gconv")
	if err := os.MkdirAll(filepath.Join(big, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= mirrorMax; i++ {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("M%d.so", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := filepath.Join(dir, "x.c")
	if err := os.WriteFile(src, []byte("int x(void) { return 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plug := filepath.Join(big, "PLUG.so")
	for _, b := range [][]string{
		{"-shared", "-fPIC", "-o", filepath.Join(big, "libdep.so"), src, "-Wl,-soname,libdep.so"},
		{"-shared", "-fPIC", "-o", filepath.Join(big, "sub", "libsub.so"), src, "-Wl,-soname,libsub.so"},
		{"-shared", "-fPIC", "-o", plug, src, "-L" + big, "-L" + filepath.Join(big, "sub"), "-Wl,--no-as-needed", "-ldep", "-lsub",
			"-Wl,-rpath,$ORIGIN:${ORIGIN}/sub", "-Wl,--enable-new-dtags"},
	} {
		if out, err := exec.Command(gcc, b...).CombinedOutput(); err != nil {
			t.Fatalf("gcc %v: %v\n%s", b, err, out)
		}
	}
	c := &Cache{Root: filepath.Join(dir, "cache"), Rewrite: copyRewrite}
	cp, err := c.Module(plug, rewriter.Options{ModuleTag: 2}, "m")
	if err != nil {
		t.Fatal(err)
	}
	m, err := LibMirror(cp, plug)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Dir(m))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "PLUG.so libdep.so sub" {
		t.Errorf("mirror of a directory of %d entries holds %v, want the copy and what $ORIGIN finds", mirrorMax+4, names)
	}
	loader, err := Interpreter("/bin/sh")
	if err != nil || loader == "" {
		t.Skipf("no dynamic loader (%v)", err)
	}
	out, err := exec.Command(loader, "--list", m).CombinedOutput()
	if err != nil || strings.Contains(string(out), "not found") || !strings.Contains(string(out), "libdep.so =>") || !strings.Contains(string(out), "libsub.so =>") {
		t.Errorf("%s --list %s: %v\n%s", loader, m, err, out)
	}
}

// TestMirrorNamedSibling: in a directory too large to mirror whole, the
// mirror links the entries the program names in its data, so that a
// program that runs a sibling from its own directory (found through
// /proc/self/exe, as ocamlmktop.opt runs ocamlc) finds it (decision 170),
// and not the others.
func TestMirrorNamedSibling(t *testing.T) {
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(bin, "sibling")
	if out, err := exec.Command(gcc, "-O1", "-o", prog, filepath.Join("testdata", "sibling.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(bin, "blpp-sibling-tool"), []byte("#!/bin/sh\necho the sibling ran\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= mirrorMax; i++ {
		if err := os.WriteFile(filepath.Join(bin, fmt.Sprintf("f%d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, inst, wp := copyProcess(t, dir, prog)
	defer wp.Close()
	cmd, err := wp.Command(inst, prog, prog, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "the sibling ran\n" {
		t.Errorf("the program's run of its sibling: %q, %v", out, err)
	}
	ents, err := os.ReadDir(filepath.Dir(cmd.Path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"blpp-sibling-tool", "sibling"}) {
		t.Errorf("the mirror of a directory of %d entries holds %v, want the copy and the sibling it names", mirrorMax+3, names)
	}
}
