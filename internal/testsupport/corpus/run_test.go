package corpus_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// outcome is what one run of a program did.
type outcome struct {
	Stdout, Stderr []byte
	Code           int            // exit status; -1 when killed by a signal
	Signal         syscall.Signal // 0 unless killed by a signal
	TimedOut       bool
	Dur            time.Duration
	Err            error // the program could not be started
}

func (o outcome) status() string {
	switch {
	case o.Err != nil:
		return "not started: " + o.Err.Error()
	case o.TimedOut:
		return "timed out"
	case o.Signal != 0:
		return "killed by " + o.Signal.String()
	}
	return fmt.Sprintf("exit %d", o.Code)
}

// runSpec says how to run a program once.
type runSpec struct {
	Bin     string   // the file executed
	Argv0   string   // argv[0]: the original's path for both copies, since programs read their name
	Args    []string // without argv[0]
	Dir     string
	Env     []string // added to os.Environ; later entries win
	Stdin   []byte   // nil: /dev/null
	Timeout time.Duration
}

// run runs s in its own process group and kills the group at the timeout.
func run(s runSpec) outcome {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeout)
	defer cancel()
	var o outcome
	for try := 0; ; try++ {
		cmd := exec.CommandContext(ctx, s.Bin, s.Args...)
		cmd.Args[0] = s.Argv0
		cmd.Dir = s.Dir
		cmd.Env = append(os.Environ(), s.Env...)
		if s.Stdin != nil {
			cmd.Stdin = bytes.NewReader(s.Stdin)
		}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 2 * time.Second
		start := time.Now()
		err := cmd.Run()
		o = outcome{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Dur: time.Since(start)}
		var ee *exec.ExitError
		switch {
		case ctx.Err() == context.DeadlineExceeded:
			o.TimedOut = true
		case err == nil:
		case errors.As(err, &ee):
			o.Code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				o.Signal = ws.Signal()
			}
		case errors.Is(err, syscall.ETXTBSY) && try < 20:
			// The binary was just written and another test's fork still
			// holds it open for writing: wait for that child's exec.
			time.Sleep(50 * time.Millisecond)
			continue
		default:
			o.Err = err
		}
		return o
	}
}

// snapshot reads every file under dir: relative path → content ("dir" and
// "-> target" mark directories and symbolic links). skip names files left
// out.
func snapshot(dir string, skip map[string]bool) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." || skip[rel] {
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + l
		case d.IsDir():
			out[rel+"/"] = "dir"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		default:
			out[rel] = "special " + d.Type().String()
		}
		return nil
	})
	return out, err
}

// diffSnapshots describes how two snapshots differ, empty when equal.
func diffSnapshots(want, got map[string]string) []string {
	var out []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("file %s: written by the original only", k))
		case g != w:
			out = append(out, fmt.Sprintf("file %s: differs (%d bytes vs %d)%s", k, len(w), len(g), firstDiff([]byte(w), []byte(g))))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("file %s: written by the rewritten copy only", k))
		}
	}
	sort.Strings(out)
	return out
}

// compareOutcomes describes how the rewritten copy's run differs from the
// original's (output, error output, exit status), empty when they agree.
func compareOutcomes(want, got outcome) []string {
	var out []string
	if want.status() != got.status() {
		out = append(out, fmt.Sprintf("status: original %s, rewritten %s%s", want.status(), got.status(), stderrTail(got.Stderr)))
	}
	if !bytes.Equal(want.Stdout, got.Stdout) {
		out = append(out, fmt.Sprintf("stdout differs (%d bytes vs %d)%s", len(want.Stdout), len(got.Stdout), firstDiff(want.Stdout, got.Stdout)))
	}
	if !bytes.Equal(want.Stderr, got.Stderr) {
		out = append(out, fmt.Sprintf("stderr differs (%d bytes vs %d)%s", len(want.Stderr), len(got.Stderr), firstDiff(want.Stderr, got.Stderr)))
	}
	return out
}

// firstDiff quotes both sides around the first differing byte.
func firstDiff(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(0, i-20)
	clip := func(s []byte) string {
		hi := min(len(s), i+40)
		if lo >= hi {
			return `""`
		}
		return fmt.Sprintf("%q", s[lo:hi])
	}
	return fmt.Sprintf(" at byte %d: original %s, rewritten %s", i, clip(a), clip(b))
}

func stderrTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if len(s) > 300 {
		s = "..." + s[len(s)-300:]
	}
	return fmt.Sprintf(" (stderr: %q)", s)
}

// writeReport writes a result table to $BLPP_CORPUS_REPORT/name when set.
func writeReport(name, text string) error {
	dir := os.Getenv("BLPP_CORPUS_REPORT")
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
}
