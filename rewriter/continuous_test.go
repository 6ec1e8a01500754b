package rewriter_test

// Continuous mode (decision 94): the profile file is the runtime's
// memory from the start, so a process killed by SIGKILL leaves a profile.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/meta"
	"github.com/blpp/blpp/report"
	"github.com/blpp/blpp/rewriter"
)

// continuousModes are the modes continuous mode runs in: a flow-only
// image needs no slot counters (they live in the thread blocks, which
// stay private memory); with tsc each path's words in the file include
// the address of its latency entry (decision 93), which lives outside it.
var continuousModes = []struct {
	name string
	opts rewriter.Options
}{
	{"context", rewriter.Options{}},
	{"flow-only", rewriter.Options{NoContext: true, NoSlots: true}},
	{"context+tsc", rewriter.Options{Metrics: []rewriter.Metric{tscMetric}}},
}

// TestContinuousKilled kills testdata/livekill.c with SIGKILL at random
// moments (three per way it runs: one thread, three threads, a fork) and
// reads the live profile each process leaves. It must be valid, and its
// counts consistent at their last update: every call a counted path made
// reached its callee's record, and a callee's record has at most one
// more call per activation of its caller in flight (whose path through
// the call was not counted yet); in flight are at most as many
// activations per thread as the program nests.
func TestContinuousKilled(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	for _, c := range []fixture.Config{procGccO2PIE, procGccO2Stat} {
		for _, m := range continuousModes {
			t.Run(c.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				rnd := rand.New(rand.NewSource(seed))
				dir := t.TempDir()
				orig := fixture.Build(t, "livekill.c", c)
				inst := rewriteWith(t, orig, filepath.Join(dir, "livekill.blpp"), m.opts)
				tab, f, err := report.LoadMeta(inst)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				for _, how := range []string{"one", "threads", "fork"} {
					for k := 0; k < 3; k++ {
						what := fmt.Sprintf("livekill %s %s %s kill %d", how, c, m.name, k)
						profDir := filepath.Join(dir, fmt.Sprintf("%s.%d", how, k))
						if err := os.Mkdir(profDir, 0o755); err != nil {
							t.Fatal(err)
						}
						procs := 1
						if how == "fork" {
							procs = 2
						}
						killAfter(t, what, inst, []string{how}, "BLPP_PROFILE="+filepath.Join(profDir, "live.%p%c"), profDir, procs,
							time.Duration(20+rnd.Intn(300))*time.Millisecond)
						names := dirNames(t, profDir)
						if len(names) != procs {
							t.Fatalf("%s: profiles %q, want %d", what, names, procs)
						}
						for _, n := range names {
							prof, live, err := cct.ReadFileLive(filepath.Join(profDir, n))
							if err != nil {
								t.Fatalf("%s: %v", what, err)
							}
							if live == nil || !report.IsLive(prof) {
								t.Fatalf("%s: %s is not a live profile", what, n)
							}
							if strconv.FormatUint(prof.PID, 10) != n[len("live."):] {
								t.Errorf("%s: %s holds pid %d", what, n, prof.PID)
							}
							checkLive(t, what+" "+n, tab, prof, m.opts.NoContext)
						}
					}
				}
			})
		}
	}
}

// killAfter starts prog in a process group of its own, waits until
// procs files are in dir and then d more, and kills the group with
// SIGKILL.
func killAfter(t *testing.T, what, prog string, args []string, env, dir string, procs int, d time.Duration) {
	t.Helper()
	var o, e bytes.Buffer
	var cmd *exec.Cmd
	for try := 0; ; try++ {
		cmd = exec.Command(prog, args...)
		cmd.Env = append(os.Environ(), env)
		cmd.Stdout, cmd.Stderr = &o, &e
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err := cmd.Start()
		if err == nil {
			break
		}
		// A parallel test's fork may still hold the just-written
		// executable open (ETXTBSY), as in startProc.
		if !errors.Is(err, syscall.ETXTBSY) || try >= 20 {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The processes are live once their files have taken the profile's
	// name, which they do with a whole header: a process killed between
	// making its file and writing the header (a fork child makes its own
	// at its first count) leaves only its temporary file. Until then the
	// directory is read as often as it can be, and a file under a
	// profile's name must start with the magic every time.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n, bad := liveFiles(t, dir)
		if bad != "" {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
			t.Fatalf("%s: %s", what, bad)
		}
		if n >= procs {
			break
		}
		time.Sleep(100 * time.Microsecond)
	}
	time.Sleep(d)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	err := cmd.Wait()
	if code, sig := status(t, what, err); sig != syscall.SIGKILL {
		t.Fatalf("%s: ended with status %d, signal %v, before the kill\nstdout:\n%s\nstderr:\n%s", what, code, sig, o.Bytes(), e.Bytes())
	}
}

// liveFiles counts the files in dir under a profile's name (not a
// temporary "<name>.tmp.<pid>"), and says which one, if any, does not
// start with a live profile's magic, which the runtime writes last in
// the header (live_init) before the file takes its name (cont_publish).
func liveFiles(t *testing.T, dir string) (n int, bad string) {
	for _, name := range dirNames(t, dir) {
		if strings.Contains(name, ".tmp.") {
			continue
		}
		b := make([]byte, len(cct.LiveMagic))
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		k, _ := io.ReadFull(f, b)
		f.Close()
		if k < len(b) || !cct.IsLive(b) {
			return n, fmt.Sprintf("%s is under the profile's name with %q for a header", name, b[:k])
		}
		n++
	}
	return n, ""
}

// liveOwn are livekill's own functions, whose counts checkLive checks
// (the C library's start-up code, instrumented in a static binary, runs
// partly before the runtime counts exactly, decision 37).
var liveOwn = map[string]bool{"main": true, "worker": true, "helper": true, "rec": true, "many": true, "twice": true}

// checkLive checks the counts of livekill's own functions in a live
// profile for consistency (see TestContinuousKilled).
func checkLive(t *testing.T, what string, tab *meta.Table, prof *cct.Profile, flowOnly bool) {
	t.Helper()
	const maxDepth = 10 // main, worker, twice or rec (5 deep), helper
	expand := func(fid uint32, id uint64) *meta.Expansion {
		e, err := tab.ExpandPath(fid, id)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return e
	}
	for ti := range prof.Threads {
		th := &prof.Threads[ti]
		if len(th.Records) == 0 {
			continue
		}
		// In flight per record: calls less the paths and partials that
		// ended activations.
		inflight := make([]int64, len(th.Records))
		var total int64
		own := func(r cct.Record) bool { return int(r.Func) < len(tab.Funcs) && liveOwn[tab.Funcs[r.Func].Name] }
		for ri, r := range th.Records {
			if !own(r) {
				continue
			}
			inflight[ri] = int64(r.Calls)
			for _, pa := range r.Paths {
				if expand(r.Func, pa.ID).Ends {
					inflight[ri] -= int64(pa.Count)
				}
			}
			for _, q := range th.Partials {
				if q.Record == ri {
					inflight[ri] -= int64(q.Count)
				}
			}
			for _, q := range th.Prefixes {
				if q.Record == ri {
					inflight[ri] += int64(q.Count)
				}
			}
			if inflight[ri] < 0 {
				t.Errorf("%s: thread %d: %s has %d more ends than calls", what, th.TID, tab.Funcs[r.Func].Name, -inflight[ri])
			}
			total += inflight[ri]
		}
		if total > maxDepth {
			t.Errorf("%s: thread %d has %d activations in flight", what, th.TID, total)
		}
		if flowOnly {
			continue
		}
		// Calls: those the counted paths of a record made at each call
		// site, against those its children (and the folded calls)
		// received there.
		type key struct {
			rec  int
			site uint32
		}
		made, got := map[key]int64{}, map[key]int64{}
		siteBlock := func(fid uint32, site uint32) int {
			fn := &tab.Funcs[fid]
			addr := fn.CallSites[site-1]
			for b, blk := range fn.Blocks {
				if blk.Addr <= addr && addr < blk.End {
					return b
				}
			}
			t.Fatalf("%s: %s: call site %d at %#x in no block", what, fn.Name, site, addr)
			return -1
		}
		// A fork child's prefixes are paths its parent began: the calls
		// on them were the parent's.
		prefixes := make([][]cct.Partial, len(th.Records))
		for _, q := range th.Prefixes {
			if q.Record >= 0 {
				prefixes[q.Record] = append(prefixes[q.Record], q)
			}
		}
		for ri, r := range th.Records {
			if !own(r) {
				continue
			}
			for s := range tab.Funcs[r.Func].CallSites {
				k, b := key{ri, uint32(s + 1)}, siteBlock(r.Func, uint32(s+1))
				for _, pa := range r.Paths {
					for _, pb := range expand(r.Func, pa.ID).Blocks {
						if pb == b {
							made[k] += int64(pa.Count)
						}
					}
				}
				for _, q := range prefixes[ri] {
					e, err := tab.ExpandPartial(r.Func, q.Block, q.Reg)
					if err != nil || e == nil {
						t.Fatalf("%s: %s: fork prefix at block %d: %v", what, tab.Funcs[r.Func].Name, q.Block, err)
					}
					for _, pb := range e.Blocks {
						if pb == b {
							made[k] -= int64(q.Count)
						}
					}
				}
			}
		}
		foldedInto := make([]int64, len(th.Records))
		for _, fc := range th.Folded {
			foldedInto[fc.To] += int64(fc.Count)
			got[key{fc.From, fc.CallSite}] += int64(fc.Count)
		}
		for ri, r := range th.Records {
			if r.Parent >= 0 && r.CallSite != 0 {
				got[key{r.Parent, r.CallSite}] += int64(r.Calls) - foldedInto[ri]
			}
		}
		for k, n := range made {
			g, ok := got[k]
			if !ok {
				continue // a call to uninstrumented code (a PLT stub): no record receives it
			}
			if g < n || g-n > inflight[k.rec] {
				r := th.Records[k.rec]
				t.Errorf("%s: thread %d: %s (record %d, %d in flight) made %d calls at call site %d by its counted paths; its callees got %d",
					what, th.TID, tab.Funcs[r.Func].Name, k.rec, inflight[k.rec], n, k.site, g)
			}
		}
	}
}

// TestContinuousExact runs fork.c, threads.c and crash.c (dying by
// SIGSEGV) in continuous mode to their end: the runtime's memory is the
// live file, a fork child's its own (made when the child first touches
// it), and the profile written at the exit (or the fatal signal) over
// it must be the ordinary one, with callgrind's counts.
func TestContinuousExact(t *testing.T) {
	fixture.RequireTool(t, "valgrind", "valgrind")
	for _, c := range []fixture.Config{procGccO2PIE, procGccO2Stat} {
		for _, m := range continuousModes {
			t.Run(c.String()+"/"+m.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				for _, src := range []string{"fork.c", "threads.c", "crash.c"} {
					what := src + " " + c.String() + " " + m.name + " continuous"
					orig := fixture.Build(t, src, c)
					inst := rewriteWith(t, orig, filepath.Join(dir, src+".blpp"), m.opts)
					var args []string
					check := countCheck{ownOnly: c.Static}
					switch src {
					case "fork.c":
						check.own = []string{"work", "child_work", "parent_work", "step"}
					case "threads.c":
						check.own = []string{"main", "worker", "mix", "classify", "step", "idle"}
					case "crash.c":
						args = []string{"segv"}
						check.own = []string{"work", "helper"}
						check.ended = map[string]uint64{"segv": 1}
					}
					want := runProc(t, orig, args)
					profDir := filepath.Join(dir, src+".prof")
					if err := os.Mkdir(profDir, 0o755); err != nil {
						t.Fatal(err)
					}
					got := runProc(t, inst, args, "BLPP_PROFILE="+filepath.Join(profDir, "prof.%p%c"))
					sameBehaviour(t, what, want, got)
					var prof *cct.Profile
					if src == "fork.c" {
						parent, child := forkProfiles(t, what, profDir, "prof.", got.pid)
						if child.Stats["fork_child"] != 1 {
							t.Errorf("%s: the child's profile has fork_child %d", what, child.Stats["fork_child"])
						}
						var err error
						if prof, err = cct.Merge(parent, child); err != nil {
							t.Fatalf("%s: merge: %v", what, err)
						}
					} else {
						var live *cct.Live
						var err error
						prof, live, err = cct.ReadFileLive(filepath.Join(profDir, "prof."+strconv.Itoa(got.pid)))
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						if live != nil {
							t.Fatalf("%s: a live file was left, not the profile", what)
						}
					}
					compareCounts(t, what, inst, prof, callgrindOf(t, what, orig, args, want), check)
				}
			})
		}
	}
}
