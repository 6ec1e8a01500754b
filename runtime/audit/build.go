package audit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/blpp/blpp/runtime/internal/build"
)

// CFlags build the auditor: freestanding, position-independent, no build
// note (the object must be reproducible), nothing exported but la_*.
// It is built for CET (endbr64 at the la_* functions ld.so calls through
// pointers, the IBT and SHSTK bits in its property note), so that loading
// it does not turn CET off in a program that keeps it (decision 95).
var CFlags = []string{"-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-shared", "-nostdlib", "-fPIC",
	"-ffreestanding", "-fno-builtin", "-fvisibility=hidden", "-fno-stack-protector", "-fcf-protection=full",
	"-fno-asynchronous-unwind-tables", "-Wl,--build-id=none", "-Wl,-z,norelro", "-Wl,--hash-style=gnu"}

// Build compiles dir/blpp_audit.c with cc (gcc when empty), which must be
// the runtime's pinned compiler unless anyVersion.
func Build(dir, cc string, anyVersion bool) ([]byte, error) {
	if cc == "" {
		cc = "gcc"
	}
	ver, err := build.CompilerVersion(cc)
	if err != nil {
		return nil, err
	}
	if ver != build.GCCVersion && !anyVersion {
		return nil, fmt.Errorf("%w: %s is %s, the auditor is built with gcc %s", build.ErrCompilerVersion, cc, ver, build.GCCVersion)
	}
	tmp, err := os.MkdirTemp("", "blpp-audit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	src, err := os.ReadFile(filepath.Join(dir, "blpp_audit.c"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "blpp_audit.c"), src, 0o644); err != nil {
		return nil, err
	}
	args := append(append([]string{}, CFlags...), "-o", ObjectName, "blpp_audit.c")
	cmd := exec.Command(cc, args...)
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s %v: %w\n%s", cc, args, err, out)
	}
	return os.ReadFile(filepath.Join(tmp, ObjectName))
}
