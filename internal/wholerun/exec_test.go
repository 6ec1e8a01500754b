package wholerun

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/rewriter"
)

// selfView is what testdata/selfview.c printed.
type selfView struct {
	argv0, exe, pagesz string
	env                []string
	child              string
}

func parseSelfView(t *testing.T, out []byte) selfView {
	t.Helper()
	var v selfView
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		switch k, val, _ := strings.Cut(l, "="); {
		case strings.HasPrefix(l, "env "):
			v.env = append(v.env, strings.TrimPrefix(l, "env "))
		case k == "argv0":
			v.argv0 = val
		case k == "exe":
			v.exe = val
		case k == "pagesz":
			v.pagesz = val
		case strings.HasPrefix(l, "child: "):
			v.child = strings.TrimPrefix(l, "child: ")
		}
	}
	return v
}

// TestCommandSelfView: a program started by Command sees the environment
// it was given, entry for entry and in order (the auditor took out what
// made the loader use it, an odd and an even number of entries), finds
// the auxiliary vector by walking past the environment, has its own name
// as /proc/self/exe in a mirror of its installation, and can run itself
// again through /proc/self/exe (decision 105).
func TestCommandSelfView(t *testing.T) {
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	dir := t.TempDir()
	app := filepath.Join(dir, "app")
	for _, d := range []string{"bin", "share"} {
		if err := os.MkdirAll(filepath.Join(app, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	prog := filepath.Join(app, "bin", "selfview")
	if out, err := exec.Command(gcc, "-O1", "-o", prog, filepath.Join("testdata", "selfview.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(app, "share", "marker"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, inst, wp := copyProcess(t, dir, prog)
	defer wp.Close()
	// The same content in another place shares the copy, not the mirror.
	other := filepath.Join(dir, "other", "bin", "selfview")
	if err := os.MkdirAll(filepath.Dir(other), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(prog); err != nil || os.WriteFile(other, b, 0o755) != nil {
		t.Fatal(err)
	}
	if inst2, err := c.Module(other, rewriter.Options{}, "m"); err != nil || inst2 != inst {
		t.Fatalf("copy of the same content elsewhere: %s %v, want %s", inst2, err, inst)
	}
	m1, err1 := wp.Mirror(inst, prog)
	m2, err2 := wp.Mirror(inst, other)
	if err1 != nil || err2 != nil || m1 == m2 {
		t.Fatalf("mirrors of one copy for two places: %s %v, %s %v", m1, err1, m2, err2)
	}
	for _, tc := range []struct {
		name string
		env  []string
	}{
		{"own", []string{"A=1", "PATH=/usr/bin:/bin", "B=two words"}},
		{"library path", []string{"A=1", "LD_LIBRARY_PATH=/nonexistent", "B=2"}},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{}, tc.env...)
			cmd, err := wp.Command(inst, prog, "my-name", nil, env)
			if err != nil {
				t.Fatal(err)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v", err)
			}
			v := parseSelfView(t, out)
			want := slices.Clone(env)
			got := slices.Clone(v.env)
			if !strings.Contains(strings.Join(env, "\n"), "LD_") {
				// The order is kept too.
				if !slices.Equal(got, want) {
					t.Errorf("environment %q, want %q", got, want)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("environment %q, want %q", v.env, env)
			}
			if v.argv0 != "my-name" {
				t.Errorf("argv[0] %q", v.argv0)
			}
			if v.pagesz != "4096" && v.pagesz != "16384" && v.pagesz != "65536" {
				t.Errorf("page size from the auxiliary vector past the environment: %q", v.pagesz)
			}
			if filepath.Base(v.exe) != "selfview" || filepath.Base(filepath.Dir(v.exe)) != "bin" {
				t.Errorf("/proc/self/exe %q: want .../bin/selfview", v.exe)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(filepath.Dir(v.exe)), "share", "marker")); err != nil {
				t.Errorf("the installation is not found from /proc/self/exe: %v", err)
			}
			if o := Origin(v.exe); o != prog {
				t.Errorf("Origin(%s) = %q, want %s", v.exe, o, prog)
			}
			// Through a shell script that runs it (as valgrind's wrapper
			// does): the auditor leaves the shell alone (its environment
			// still names the auditor), so the program still gets its
			// environment back.
			wrap := exec.Command("/bin/sh", "-c", `export -p | grep -q LD_AUDIT= || echo shell-lost-the-auditor; exec "$@"`, "sh", cmd.Path)
			wrap.Env = cmd.Env
			out, err = wrap.Output()
			if err != nil {
				t.Fatal(err)
			}
			// The shell orders the environment its own way and adds PWD.
			wv := parseSelfView(t, out)
			wenv := slices.DeleteFunc(slices.Clone(wv.env), func(e string) bool { return strings.HasPrefix(e, "PWD=") })
			slices.Sort(wenv)
			if !slices.Equal(wenv, got) || wv.exe != v.exe || strings.Contains(string(out), "shell-lost") {
				t.Errorf("through a shell: exe %q, environment %q; directly: %q, %q", wv.exe, wv.env, v.exe, v.env)
			}
			// Itself again, through /proc/self/exe, with the environment
			// it inherits.
			again, err := wp.Command(inst, prog, "my-name", []string{"again"}, env)
			if err != nil {
				t.Fatal(err)
			}
			out, err = again.Output()
			if err != nil {
				t.Fatal(err)
			}
			cv := parseSelfView(t, out)
			if cv.child != "0" || cv.exe != v.exe || !slices.Equal(cv.env, v.env) {
				t.Errorf("run again through /proc/self/exe: status %s, exe %q, environment %q; first run: exe %q, environment %q", cv.child, cv.exe, cv.env, v.exe, v.env)
			}
		})
	}
}

// copyProcess sets up a run of prog without its libraries whose copy is
// the program itself (what is checked is how it runs), with its cache
// under dir.
func copyProcess(t *testing.T, dir, prog string) (*Cache, string, *Process) {
	t.Helper()
	loader, err := Interpreter(prog)
	if err != nil || loader == "" {
		t.Fatalf("%s: no dynamic loader (%v)", prog, err)
	}
	c := &Cache{Root: filepath.Join(dir, "cache"), Rewrite: copyRewrite}
	inst, err := c.Module(prog, rewriter.Options{}, "m")
	if err != nil {
		t.Fatal(err)
	}
	wp, err := c.Prepare(Setup{Loader: loader, Prog: prog, NoLibs: true})
	if err != nil {
		t.Fatal(err)
	}
	return c, inst, wp
}
