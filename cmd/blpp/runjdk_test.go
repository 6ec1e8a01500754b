package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/internal/wholerun"
)

// TestRunJDK (decision 109): the JVM, which finds JAVA_HOME and its
// modules from the path libjvm.so was loaded from (dlopen'ed by the
// launcher, rewritten through the auditor), starts under `blpp run` with
// every library instrumented: `java -version` and a small class print
// and exit as they do alone, and the profile's libjvm.so leads back to the
// original (wholerun.Origin) and is read by the report.
func TestRunJDK(t *testing.T) {
	javaPath := fixture.RequireTool(t, "java", "openjdk-17-jre-headless")
	java, err := filepath.EvalSymlinks(javaPath)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Dir(filepath.Dir(java))
	jvm := filepath.Join(home, "lib", "server", "libjvm.so")
	if _, err := os.Stat(jvm); err != nil {
		t.Skipf("%s: not a JDK's layout (%v)", java, err)
	}
	t.Run("version", func(t *testing.T) {
		dir := t.TempDir()
		want := runProc(t, dir, nil, nil, java, "-version")
		got, prof := blppRun(t, dir, nil, nil, java, "-version")
		sameBehaviour(t, "blpp run java -version", want, got)
		p, err := readProfiles([]string{prof})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range p.Modules {
			if filepath.Base(e.Path) == "libjvm.so" {
				found = true
				if o := wholerun.Origin(e.Path); o != jvm {
					t.Errorf("the profile's libjvm.so %s: Origin %q, want %s", e.Path, o, jvm)
				}
			}
		}
		if !found {
			t.Errorf("no libjvm.so among the profile's modules: %+v", p.Modules)
		}
		processModel(t, prof)
	})
	t.Run("class", func(t *testing.T) {
		javac := filepath.Join(home, "bin", "javac")
		if _, err := os.Stat(javac); err != nil {
			fixture.RequireTool(t, "javac", "openjdk-17-jdk-headless")
			javac = "javac"
		}
		dir := t.TempDir()
		src := filepath.Join(dir, "Hello.java")
		if err := os.WriteFile(src, []byte(`public class Hello {
	public static void main(String[] args) {
		long s = 0;
		for (int i = 0; i < 100000; i++)
			s += (long) i * i % 7;
		System.out.println("sum " + s + " " + String.join(",", args));
		System.err.println("to stderr");
		System.exit(3);
	}
}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(javac, "-d", dir, src).CombinedOutput(); err != nil {
			t.Fatalf("javac: %v\n%s", err, out)
		}
		args := []string{"-Xshare:auto", "-cp", dir, "Hello", "a", "b"}
		want := runProc(t, dir, nil, nil, java, args...)
		if want.code != 3 || want.stdout != "sum 199999 a,b\n" {
			t.Fatalf("Hello alone: %+v", want)
		}
		got, _ := blppRun(t, dir, nil, nil, java, args...)
		sameBehaviour(t, "blpp run java Hello", want, got)
	})
}
