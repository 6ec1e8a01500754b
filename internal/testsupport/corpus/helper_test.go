package corpus_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blpp/blpp/internal/hugeheap"
	"github.com/blpp/blpp/internal/outfile"
	"github.com/blpp/blpp/rewriter"
)

// The rewriter runs in a child process (this test binary again, told so
// by the environment): a panic in one of its worker goroutines would end
// the whole test binary, and with it every other program's result.
const (
	envRewriteIn   = "BLPP_CORPUS_REWRITE_IN"
	envRewriteOut  = "BLPP_CORPUS_REWRITE_OUT"
	envRewriteOpts = "BLPP_CORPUS_REWRITE_OPTS"
)

// rewriteOpts are the rewriter options a child process is given: those
// a whole-process run sets (decision 81).
type rewriteOpts struct {
	ModuleTag uint64 `json:"module_tag"`
	NoSlots   bool   `json:"no_slots"`
}

// rewriteReply is what the child process reports on stdout.
type rewriteReply struct {
	Summary *rewriter.Summary `json:"summary"`
	Refused bool              `json:"refused"` // Err is one of refusals
	Err     string            `json:"err"`
}

func TestMain(m *testing.M) {
	if in := os.Getenv(envRewriteIn); in != "" {
		os.Exit(rewriteChild(in, os.Getenv(envRewriteOut), os.Getenv(envRewriteOpts)))
	}
	if len(os.Args) > 1 && os.Args[1] == rewriteModuleCmd {
		// The sweep's rtld auditor asks for an object a program dlopen's
		// (go test's own arguments all start with -test.).
		os.Exit(rewriteModule(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func rewriteChild(in, out, optsJSON string) int {
	var rep rewriteReply
	var ro rewriteOpts
	if optsJSON != "" {
		if err := json.Unmarshal([]byte(optsJSON), &ro); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", envRewriteOpts, err)
			return 2
		}
	}
	rewriter.LimitMemory()
	data, err := os.ReadFile(in)
	defer hugeheap.Start(rewriter.HeapFor(uint64(len(data))))()
	if err == nil {
		var bin []byte
		bin, rep.Summary, err = rewriter.Rewrite(data, rewriter.Options{ModuleTag: ro.ModuleTag, NoSlots: ro.NoSlots})
		if err == nil {
			err = outfile.Write(out, bin, 0o755) // whole or not at all: the module cache keeps it
		}
	}
	if err != nil {
		rep.Err = err.Error()
		for _, r := range refusals {
			if errors.Is(err, r) {
				rep.Refused = true
			}
		}
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// rewriteFile rewrites the executable at in into out in a child process.
// A crash of the rewriter (a panic, in any goroutine) is an error naming
// the panic; refused reports a clear refusal (refusals).
func rewriteFile(in, out string) (sum *rewriter.Summary, refused bool, err error) {
	return rewriteFileWith(in, out, rewriteOpts{})
}

// rewriteFileWith is rewriteFile with options.
func rewriteFileWith(in, out string, ro rewriteOpts) (sum *rewriter.Summary, refused bool, err error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, false, err
	}
	optsJSON, err := json.Marshal(ro)
	if err != nil {
		return nil, false, err
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRewriteIn+"="+in, envRewriteOut+"="+out, envRewriteOpts+"="+string(optsJSON))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep rewriteReply
	if jerr := json.Unmarshal([]byte(stdout.String()), &rep); jerr != nil || runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.Index(msg, "\n\ngoroutine "); i >= 0 {
			// The panic line and the top frame are enough.
			rest := strings.SplitN(msg[i+2:], "\n", 4)
			msg = msg[:i] + " in " + strings.Join(rest[1:min(3, len(rest))], " ")
		}
		return nil, false, fmt.Errorf("rewriter crashed (%v): %s", runErr, msg)
	}
	if rep.Err != "" {
		return rep.Summary, rep.Refused, errors.New(rep.Err)
	}
	return rep.Summary, false, nil
}
