package rewriter

import (
	"testing"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/runtime"
)

// TestLeaveExecveKind: the blpp_leave kind the code pushes before an
// execve system call is the one the runtime follows an exec on (decision
// 167); the other kinds are plain numbers the runtime reads as 1 to 3.
func TestLeaveExecveKind(t *testing.T) {
	if int(cfg.LeaveExecve) != runtime.LeaveExecve {
		t.Errorf("cfg.LeaveExecve = %d, runtime.LeaveExecve = %d", cfg.LeaveExecve, runtime.LeaveExecve)
	}
	if cfg.LeaveExit != 1 || cfg.LeaveExec != 2 || cfg.LeaveDaemon != 3 {
		t.Errorf("leave kinds %d %d %d, want 1 2 3 (runtime/blpp_start.c)", cfg.LeaveExit, cfg.LeaveExec, cfg.LeaveDaemon)
	}
}
