package runtime_test

import (
	"fmt"
	"path/filepath"
	"testing"
)

// The harness's ENTER, EXIT and BACKEDGE always call the stubs' C halves,
// so the STATS stub_entries, stub_exits and stub_backedges of a run are
// the program's own numbers: its entries, exits and backedges. Each
// thread keeps them in its own block and the writer sums the blocks
// (decision 152); these runs check the sums where blocks come and go:
// threads that end (and whose blocks are taken again), a signal handler
// that interrupts the stubs, and fork children, which count only their
// own.

// wantStubStats sets m's stub statistics from its model: every entry and
// every path end took a stub; backedges of the path ends were backedges.
func wantStubStats(m *model, backedges uint64) {
	var entries, ends uint64
	for _, n := range m.calls {
		entries += n
	}
	for _, p := range m.paths {
		for _, n := range p {
			ends += n
		}
	}
	m.stats["stub_entries"] = entries
	m.stats["stub_exits"] = ends - backedges
	m.stats["stub_backedges"] = backedges
}

func TestStubStatsThreads(t *testing.T) {
	m := threadsModel()
	m.stats["threads"] = 5
	wantStubStats(m, 0)
	m.expect(t, varNoPIE, 0, "threads")
}

func TestStubStatsDeadThreads(t *testing.T) {
	exe, prof, r := run(t, varNoPIE, "dead-threads")
	wantExit(t, r, 0)
	p := readProfile(t, prof, exe, r.pid, 0)
	blocks := p.Stats["threads"]
	m := newModel()
	for i := 0; i < 10; i++ {
		m.enter(fWorker)
	}
	m.count(fWorker, 1) // the other nine left through pthread_exit
	m.partials[partial{fWorker, 1}] = 11 - blocks
	m.stats["threads"] = blocks
	wantStubStats(m, 0)
	m.check(t, p)
}

func TestStubStatsSignals(t *testing.T) {
	const n = 300000
	exe, prof, r := run(t, varNoPIE, "signals", fmt.Sprint(n))
	wantExit(t, r, 0)
	var handled int
	if _, err := fmt.Sscanf(r.stdout, "handled %d", &handled); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	m := newModel()
	for i := 0; i < n; i++ {
		m.f(i)
		if i%64 == 0 {
			m.rec(2)
		}
	}
	for i := 0; i < handled; i++ {
		m.f(1)
	}
	wantStubStats(m, 0)
	m.check(t, readProfile(t, prof, exe, r.pid, 0))
}

func TestStubStatsFork(t *testing.T) {
	exe := harness(t, varNoPIE)
	for _, mode := range []string{"fork", "fork-thread"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			r := runHarness(t, exe, dir, []string{"BLPP_PROFILE=prof.%p"}, mode)
			wantExit(t, r, 0)
			child := childPID(t, r)
			pm, cm := newModel(), newModel()
			pm.fRange(0, 10)
			cm.fRange(100, 105)
			cm.stats["fork_child"] = 1
			var backedges uint64
			if mode == "fork" {
				for i := 0; i < 7; i++ {
					pm.f(1)
				}
				cm.loop(3)
				backedges = 3
				cm.stats["threads"] = 1
			} else {
				cm.stats["threads"] = 2
			}
			wantStubStats(pm, 0)
			wantStubStats(cm, backedges)
			pm.check(t, readProfile(t, filepath.Join(dir, fmt.Sprintf("prof.%d", r.pid)), exe, r.pid, 0))
			cm.check(t, readProfile(t, filepath.Join(dir, fmt.Sprintf("prof.%d", child)), exe, child, 0))
		})
	}
}
