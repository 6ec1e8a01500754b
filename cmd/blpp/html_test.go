package main

import (
	"context"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/blpp/blpp/internal/testsupport/fixture"
)

// TestReportHTML writes the page of a real fixture's profile and checks
// it: well-formed (XHTML-style, read by encoding/xml), the hot functions
// named, the tree as <details>, a CFG picture per drawn function when dot
// is installed; then, when Chromium is there, that it loads headless
// without console errors and renders a screenshot.
func TestReportHTML(t *testing.T) {
	dir := t.TempDir()
	exe := fixture.Build(t, "loops.c", gccO2PIE)
	inst, prof, _ := profiled(t, dir, exe)
	page := filepath.Join(dir, "report.html")
	if out := mustBlpp(t, "report", prof, "--binary", inst, "--html", page); out != "" {
		t.Errorf("--html wrote to stdout: %q", out)
	}
	data, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	seen := map[string]int{}
	d := xml.NewDecoder(strings.NewReader(text))
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", page, err)
		}
		if s, ok := tok.(xml.StartElement); ok {
			seen[s.Name.Local]++
		}
	}
	if seen["html"] != 1 || seen["table"] < 3 || seen["details"] == 0 || seen["summary"] == 0 {
		t.Errorf("page structure: %v", seen)
	}
	hot := mustBlpp(t, "report", prof, "--binary", inst, "--view", "hot")
	for _, m := range regexp.MustCompile(`(?m)^ +1\. (\S+)  path`).FindAllStringSubmatch(hot, -1) {
		chain := strings.Split(m[1], "/")
		if leaf := chain[len(chain)-1]; !strings.Contains(text, "<code>"+leaf+"</code>") {
			t.Errorf("the page does not name the hottest path's function %s", leaf)
		}
	}
	for _, fn := range []string{"collatz", "main", "step"} {
		if !strings.Contains(text, fn) {
			t.Errorf("the page does not name %s", fn)
		}
	}
	if _, err := exec.LookPath("dot"); err == nil {
		if seen["svg"] == 0 || seen["svg"] != strings.Count(text, "<h3>") {
			t.Errorf("dot is installed, but %d SVG pictures for %d functions", seen["svg"], strings.Count(text, "<h3>"))
		}
	} else if seen["svg"] != 0 || !strings.Contains(text, "graphviz") {
		t.Errorf("without dot: %d SVG, and the page should say how to get them", seen["svg"])
	}

	t.Run("chromium", func(t *testing.T) {
		// Not under BLPP_REQUIRE_TOOLS: a browser is too heavy a
		// dependency for CI; the structure checks above stand alone.
		var browser string
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				browser = p
				break
			}
		}
		if browser == "" {
			t.Skip("chromium not found in PATH (install the Debian package \"chromium\") to check the page in a browser")
		}
		shot := filepath.Join(dir, "report.png")
		common := []string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--enable-logging=stderr", "--v=0",
			"--user-data-dir=" + filepath.Join(dir, "chromium-profile")}
		run := func(args ...string) (string, string) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, browser, append(common, args...)...)
			var out, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s %q: %v\n%s", browser, args, err, stderr.String())
			}
			return out.String(), stderr.String()
		}
		dom, stderr := run("--dump-dom", "file://"+page)
		if !strings.Contains(dom, "collatz") || !strings.Contains(dom, "<details") {
			t.Errorf("dumped DOM lacks the page's content:\n%.2000s", dom)
		}
		consoleError := regexp.MustCompile(`(?i)CONSOLE.*(error|uncaught)|Uncaught `)
		for _, l := range strings.Split(stderr, "\n") {
			if consoleError.MatchString(l) {
				t.Errorf("console error: %s", l)
			}
		}
		run("--screenshot="+shot, "--window-size=1280,2000", "file://"+page)
		if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
			t.Errorf("no screenshot: %v", err)
		}
	})
}
