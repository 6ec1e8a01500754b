package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"blpp/report"
	"blpp/rewriter"
	"blpp/runtime"
)

func init() {
	register(&command{name: "run", summary: "rewrite a program (cached), run it with the same arguments and I/O, report its hot paths",
		usage: "[-o REPORT] [--top N] [--profile FILE] [--no-context] [--metrics LIST] [--shadow-frames N] -- PROG [ARGS...]", run: runRun})
}

// exitError carries the program's exit status out of runRun.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// cachedRewrite rewrites prog into the user cache, keyed by the SHA-256 of
// its bytes, the runtime image and the mode, and returns the instrumented
// binary's path.
func cachedRewrite(prog string, mode modeFlags) (string, error) {
	data, err := os.ReadFile(prog)
	if err != nil {
		return "", err
	}
	var opts rewriter.Options
	if err := mode.apply(&opts); err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(data)
	h.Write(runtime.ImageBytes())
	h.Write([]byte(mode.key()))
	sum := h.Sum(nil)[:12]
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "blpp", "rewrite")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, hex.EncodeToString(sum)+"-"+filepath.Base(prog))
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if _, err := rewriteFile(prog, out, opts); err != nil {
		return "", err
	}
	return out, nil
}

func runRun(c *ctx, args []string) error {
	fs := c.newFlags()
	reportPath := fs.StringP("output", "o", "", "write the report to this file instead of stderr")
	top := fs.Int("top", 10, "number of hottest paths to show")
	profile := fs.String("profile", "", "keep the profile in this file (default: a temporary file, or $BLPP_PROFILE)")
	mode := addModeFlags(fs)
	fs.SetInterspersed(false)
	if err := c.parse(fs, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return &usageError{"want -- PROG [ARGS...]"}
	}
	prog, err := exec.LookPath(rest[0])
	if err != nil {
		return err
	}
	inst, err := cachedRewrite(prog, mode)
	if err != nil {
		return err
	}
	profPath := *profile
	if profPath == "" {
		profPath = os.Getenv("BLPP_PROFILE")
	}
	keep := profPath != ""
	if !keep {
		d, err := os.MkdirTemp("", "blpp-run-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		profPath = filepath.Join(d, "blpp.out")
	}
	p := exec.Command(inst, rest[1:]...)
	p.Args[0] = rest[0]
	p.Stdin, p.Stdout, p.Stderr = os.Stdin, c.stdout, c.stderr
	p.Env = append(os.Environ(), "BLPP_PROFILE="+profPath)
	// Signals meant for the program (^C) reach it through the process
	// group; blpp waits for it rather than dying first.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Reset(syscall.SIGINT, syscall.SIGQUIT)
	runErr := p.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(runErr, &ee) {
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if runErr != nil {
		return runErr
	}
	if err := writeRunReport(c, inst, profPath, *reportPath, *top); err != nil {
		fmt.Fprintf(c.stderr, "blpp run: %v\n", err)
	}
	if code != 0 {
		return &exitError{code}
	}
	return nil
}

func writeRunReport(c *ctx, inst, profPath, out string, top int) error {
	var w io.Writer = c.stderr
	if out != "" {
		fh, err := os.Create(out)
		if err != nil {
			return err
		}
		defer fh.Close()
		w = fh
	}
	return writeRunReportTo(w, inst, profPath, top)
}

func writeRunReportTo(w io.Writer, inst, profPath string, top int) error {
	prof, err := readProfiles([]string{profPath})
	if err != nil {
		return err
	}
	tab, f, err := report.LoadMeta(inst)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, m := range report.RuntimeWarnings(prof.Stats) {
		fmt.Fprintf(w, "blpp: warning: %s\n", m)
	}
	m, err := report.NewModel(inst, tab, prof, f)
	if err != nil {
		return err
	}
	return report.PathsText(w, m, report.ViewOptions{Top: top})
}
