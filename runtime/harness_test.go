package runtime_test

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/internal/testsupport/fixture"
	"github.com/blpp/blpp/runtime"
	"github.com/blpp/blpp/runtime/internal/build"
)

// The harness (testdata/harness.c) is linked with the runtime's sources
// and patched here the way the rewriter patches an instrumented binary.

// harnessFuncs is the function table patched into the harness; the ids are
// the F_* constants of harness.c. hash selects the runtime's hash table
// (counters_vaddr 0) instead of a dense array.
var harnessFuncs = []struct {
	name     string
	numPaths uint64
	hash     bool
}{
	{"f", 4, false},
	{"loop", 8, false},
	{"rec", 4, false},
	{"worker", 2, false},
	{"big", 1 << 40, true},
	{"A", 4, false},
	{"B", 4, false},
	{"C", 4, false},
	{"D", 8, false},
	{"main_like", 4, false},
	{"crash", 4, false},
	{"regs", 2, false},
	{"ifunc", 2, false},
	{"g_exit", 2, false},
	{"wide", 128, false},
	{"P", 4, false},
	{"Q", 1, false},
}

const (
	fBasic = iota
	fLoop
	fRec
	fWorker
	fBig
	fA
	fB
	fC
	fD
	fMain
	fCrash
	fRegs
	fIfunc
	fG
	fWide
	fP
	fQ
)

// variant is one way of building the harness.
type variant struct {
	name    string
	flags   []string // compile and link flags of the harness
	static  bool
	rtFlags []string // extra flags for the runtime's sources
	context bool     // patched for calling contexts (else flow-only)
}

var (
	varNoPIE  = variant{name: "nopie", flags: []string{"-fno-pie", "-no-pie"}}
	varPIE    = variant{name: "pie", flags: []string{"-fPIE", "-pie"}}
	varStatic = variant{name: "static", flags: []string{"-fno-pie", "-no-pie", "-static", "-DHARNESS_STATIC"}, static: true}
	// varSmallShadow has room for 64 shadow frames per thread.
	varSmallShadow = variant{name: "smallshadow", flags: []string{"-fno-pie", "-no-pie"}, rtFlags: []string{"-DBLPP_SHADOW_FRAMES=64"}}
)

var (
	buildDir     string
	buildDirOnce sync.Once
	harnessMu    sync.Mutex
	harnesses    = map[string]*harnessBuild{}
)

type harnessBuild struct {
	once sync.Once
	path string
	err  error
}

// TestMain removes the harness builds afterwards, unless
// BLPP_KEEP_HARNESS=1 asks to keep them for debugging.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		if os.Getenv("BLPP_KEEP_HARNESS") == "1" {
			fmt.Fprintln(os.Stderr, "harness builds kept in", buildDir)
		} else {
			os.RemoveAll(buildDir)
		}
	}
	os.Exit(code)
}

func exec(name string, args ...string) ([]byte, error) {
	cmd := osexec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd.CombinedOutput()
}

// harness returns the path of the harness built as v, building it once
// per test process.
func harness(t *testing.T, v variant) string {
	t.Helper()
	gcc := fixture.RequireTool(t, "gcc", "gcc")
	if v.static {
		out, err := exec(gcc, "-print-file-name=libc.a")
		if p := strings.TrimSpace(string(out)); err != nil || !filepath.IsAbs(p) {
			if os.Getenv(fixture.EnvRequireTools) == "1" {
				t.Fatal("no libc.a for a static harness (Debian package libc6-dev)")
			}
			t.Skip("no libc.a for a static harness (install the Debian package libc6-dev)")
		}
	}
	buildDirOnce.Do(func() {
		d, err := os.MkdirTemp("", "blpp-rt-test-")
		if err == nil {
			buildDir = d
		}
	})
	if buildDir == "" {
		t.Fatal("no temporary directory")
	}
	harnessMu.Lock()
	hb := harnesses[v.name]
	if hb == nil {
		hb = &harnessBuild{}
		harnesses[v.name] = hb
	}
	harnessMu.Unlock()
	hb.once.Do(func() { hb.path, hb.err = buildHarness(gcc, v) })
	if hb.err != nil {
		t.Fatalf("build harness (%s): %v", v.name, hb.err)
	}
	return hb.path
}

func buildHarness(gcc string, v variant) (string, error) {
	rtDir, err := filepath.Abs(".")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(buildDir, v.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	// compile compiles src into dir and returns the object's path.
	compile := func(dir, src string, flags ...string) (string, error) {
		obj := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), filepath.Ext(src))+".o")
		args := append(append([]string{"-I", rtDir}, flags...), "-c", "-o", obj, src)
		if out, err := exec(gcc, args...); err != nil {
			return "", fmt.Errorf("%s: %v\n%s", src, err, out)
		}
		return obj, nil
	}
	objs, err := runtimeObjects(v.rtFlags, func(dir string) ([]string, error) {
		// The runtime exactly as the image build compiles it (the
		// parts blpp_rt.c includes come from rtDir, beside it).
		var objs []string
		for _, src := range build.Sources {
			if src == build.LinkerScript {
				continue
			}
			obj, err := compile(dir, filepath.Join(rtDir, src), append(append([]string{}, build.CFlags...), v.rtFlags...)...)
			if err != nil {
				return nil, err
			}
			objs = append(objs, obj)
		}
		return objs, nil
	})
	if err != nil {
		return "", err
	}
	hflags := append([]string{"-O2", "-g", "-pthread", "-Wall"}, v.flags...)
	for _, c := range []struct {
		src   string
		flags []string
	}{
		{"harness.c", hflags},
		{"regs.S", v.flags},
	} {
		obj, err := compile(dir, filepath.Join(rtDir, "testdata", c.src), c.flags...)
		if err != nil {
			return "", err
		}
		objs = append(objs, obj)
	}
	exe := filepath.Join(dir, "harness")
	link := append(append([]string{"-pthread", "-Wl,-e,blpp_start", "-Wl,--build-id"}, v.flags...), "-o", exe)
	if !v.static {
		link = append(link, "-Wl,-fini=blpp_fini")
	}
	link = append(link, objs...)
	if out, err := exec(gcc, link...); err != nil {
		return "", fmt.Errorf("link: %v\n%s", err, out)
	}
	if err := patchHarness(exe, v); err != nil {
		return "", fmt.Errorf("patch: %w", err)
	}
	return exe, nil
}

var (
	rtObjMu sync.Mutex
	rtObjs  = map[string][]string{} // by runtime flags
)

// runtimeObjects compiles the runtime's sources once per set of extra
// flags (they are position independent, so every variant links them).
func runtimeObjects(flags []string, compile func(dir string) ([]string, error)) ([]string, error) {
	key := strings.Join(flags, " ")
	rtObjMu.Lock()
	defer rtObjMu.Unlock()
	if objs, ok := rtObjs[key]; ok {
		return append([]string{}, objs...), nil
	}
	dir, err := os.MkdirTemp(buildDir, "rt-")
	if err != nil {
		return nil, err
	}
	objs, err := compile(dir)
	if err != nil {
		return nil, err
	}
	rtObjs[key] = objs
	return append([]string{}, objs...), nil
}

// patchHarness fills blpp_config and the function table in the linked
// harness, with link-time addresses, as the rewriter would.
func patchHarness(exe string, v variant) error {
	data, err := os.ReadFile(exe)
	if err != nil {
		return err
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return err
	}
	syms, err := f.Symbols()
	if err != nil {
		return err
	}
	addr := map[string]uint64{}
	for _, s := range syms {
		addr[s.Name] = s.Value
	}
	for _, n := range []string{"blpp_config", "harness_funcs", "harness_counters", "_start"} {
		if addr[n] == 0 {
			return fmt.Errorf("no symbol %s", n)
		}
	}
	fileOff := func(a uint64) (uint64, error) {
		for _, s := range f.Sections {
			if s.Type != elf.SHT_NOBITS && s.Flags&elf.SHF_ALLOC != 0 && a >= s.Addr && a < s.Addr+s.Size {
				return s.Offset + a - s.Addr, nil
			}
		}
		return 0, fmt.Errorf("address %#x is not in the file", a)
	}
	idAddr, id, err := buildIDNote(f)
	if err != nil {
		return err
	}
	cfg := runtime.Config{
		SelfVaddr:    addr["blpp_config"],
		OrigEntry:    addr["_start"],
		OrigFini:     addr["_fini"],
		FuncsVaddr:   addr["harness_funcs"],
		NFuncs:       uint64(len(harnessFuncs)),
		BuildIDVaddr: idAddr,
		BuildIDLen:   uint64(len(id)),
		DumpSignal:   runtime.DefaultDumpSignal,
		Flags:        runtime.ConfigFlagFlowOnly,
	}
	if v.static {
		cfg.OrigFini = 0 // the hook is in .fini_array; _fini runs anyway
	}
	if v.context {
		cfg.Flags = 0
	}
	off, err := fileOff(cfg.SelfVaddr)
	if err != nil {
		return err
	}
	runtime.PutConfig(data[off:], cfg)
	off, err = fileOff(cfg.FuncsVaddr)
	if err != nil {
		return err
	}
	for i, hf := range harnessFuncs {
		fn := runtime.Func{NumPaths: hf.numPaths}
		if hf.hash {
			fn.Hashed = 1
		}
		runtime.PutFunc(data[off+uint64(i*runtime.FuncSize):], fn)
	}
	return os.WriteFile(exe, data, 0o755)
}

// buildIDNote returns the address and the bytes of f's build-id (the
// descriptor of its .note.gnu.build-id).
func buildIDNote(f *elf.File) (addr uint64, id []byte, err error) {
	note := f.Section(".note.gnu.build-id")
	if note == nil {
		return 0, nil, fmt.Errorf("no build-id note")
	}
	nb, err := note.Data()
	if err != nil || len(nb) < 16 {
		return 0, nil, fmt.Errorf("build-id note: %v", err)
	}
	namesz := binary.LittleEndian.Uint32(nb)
	descsz := binary.LittleEndian.Uint32(nb[4:])
	off := 12 + (uint64(namesz)+3)&^3
	if off+uint64(descsz) > uint64(len(nb)) {
		return 0, nil, fmt.Errorf("build-id note: descriptor beyond its %d bytes", len(nb))
	}
	return note.Addr + off, nb[off : off+uint64(descsz)], nil
}

// buildID returns the build-id bytes of exe.
func buildID(t *testing.T, exe string) []byte {
	f, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, id, err := buildIDNote(f)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// result is one run of the harness.
type result struct {
	stdout, stderr string
	status         syscall.WaitStatus
	pid            int
}

// run builds the harness as v and runs it with args in a new directory,
// BLPP_PROFILE naming the file "prof" there; it returns the harness, the
// profile's name and the run.
func run(t *testing.T, v variant, args ...string) (exe, prof string, r result) {
	t.Helper()
	exe = harness(t, v)
	dir := t.TempDir()
	prof = filepath.Join(dir, "prof")
	return exe, prof, runHarness(t, exe, dir, []string{"BLPP_PROFILE=" + prof}, args...)
}

// expect runs the harness as v with args (see run), wants exit status
// code and checks the profile (flags 0) against m; it returns the run.
func (m *model) expect(t *testing.T, v variant, code int, args ...string) result {
	t.Helper()
	exe, prof, r := run(t, v, args...)
	wantExit(t, r, code)
	m.check(t, readProfile(t, prof, exe, r.pid, 0))
	return r
}

func runHarness(t *testing.T, exe string, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := osexec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*osexec.ExitError); err != nil && !ok {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{out.String(), errb.String(), cmd.ProcessState.Sys().(syscall.WaitStatus), cmd.ProcessState.Pid()}
}

// cleanEnv is the test's environment without BLPP_ variables.
func cleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "BLPP_PROFILE=") && !strings.HasPrefix(e, "BLPP_QUIET=") {
			env = append(env, e)
		}
	}
	return env
}

// model is what a run must have counted: per function its activations and
// path counts, the partial activations, and some statistics.
type model struct {
	calls    map[int]uint64
	paths    map[int]map[uint64]uint64
	partials map[partial]uint64
	stats    map[string]uint64
}

type partial struct {
	fn  int
	reg int64
}

func newModel() *model {
	return &model{calls: map[int]uint64{}, paths: map[int]map[uint64]uint64{}, partials: map[partial]uint64{}, stats: map[string]uint64{}}
}

func (m *model) enter(fn int) { m.calls[fn]++ }
func (m *model) count(fn int, path uint64) {
	if m.paths[fn] == nil {
		m.paths[fn] = map[uint64]uint64{}
	}
	m.paths[fn][path]++
}

// The harness's functions, as the runtime must count them.
func (m *model) f(i int) { m.enter(fBasic); m.count(fBasic, uint64(i&3)) }
func (m *model) loop(n int) {
	m.enter(fLoop)
	for i := 0; i < n; i++ {
		r := uint64(i & 1)
		if i > 0 {
			r += 2
		}
		m.count(fLoop, r+4)
	}
	if n == 0 {
		m.count(fLoop, 0)
	} else {
		m.count(fLoop, 2)
	}
}
func (m *model) rec(n int) {
	m.enter(fRec)
	if n > 0 {
		m.rec(n - 1)
		m.count(fRec, 3)
	} else {
		m.count(fRec, 0)
	}
}
func (m *model) big(id uint64) { m.enter(fBig); m.count(fBig, id) }

// fRange is f(i) for i in [from, to).
func (m *model) fRange(from, to int) {
	for i := from; i < to; i++ {
		m.f(i)
	}
}

// ifunc is the IRELATIVE resolver of the static harness, which runs
// before libc sets the thread pointer, under the runtime's stand-in.
func (m *model) ifunc() { m.enter(fIfunc); m.count(fIfunc, 1) }

func (m *model) basic(n int) {
	m.fRange(0, n)
	m.loop(0)
	m.loop(5)
	m.loop(6)
	for i := 0; i < 5; i++ {
		m.rec(10)
	}
	for i := uint64(0); i < 3000; i++ {
		m.big(i * 1000003 % 5000)
	}
	m.enter(fBasic) // badpath: path 100 of a 4-path function
	m.stats["bad_paths"]++
}

// check compares profile p with the model exactly: the same functions,
// activations, paths and partials, summed over threads (each thread has
// its own records).
func (m *model) check(t *testing.T, p *cct.Profile) {
	t.Helper()
	if len(p.Threads) == 0 {
		t.Fatalf("no THREAD section")
	}
	if n := p.Stats["threads"]; n != uint64(len(p.Threads)) {
		t.Errorf("%d THREAD sections, stats say %d threads", len(p.Threads), n)
	}
	th := p.FoldThreads().Threads[0]
	gotCalls := map[int]uint64{}
	gotPaths := map[int]map[uint64]uint64{}
	for _, r := range th.Records {
		if r.Parent != -1 || r.CallSite != 0 {
			t.Errorf("record of function %d has parent %d call site %d in a flow-only profile", r.Func, r.Parent, r.CallSite)
		}
		if _, dup := gotCalls[int(r.Func)]; dup {
			t.Errorf("two records of function %d", r.Func)
		}
		gotCalls[int(r.Func)] = r.Calls
		for _, path := range r.Paths {
			if gotPaths[int(r.Func)] == nil {
				gotPaths[int(r.Func)] = map[uint64]uint64{}
			}
			gotPaths[int(r.Func)][path.ID] = path.Count
		}
	}
	for fn := range m.paths {
		if _, ok := m.calls[fn]; !ok {
			m.calls[fn] = 0
		}
	}
	for fn, c := range m.calls {
		if gotCalls[fn] != c {
			t.Errorf("%s: %d activations, want %d", harnessFuncs[fn].name, gotCalls[fn], c)
		}
	}
	for fn, c := range gotCalls {
		if _, ok := m.calls[fn]; !ok {
			t.Errorf("%s: unexpected record (%d activations, paths %v)", harnessFuncs[fn].name, c, gotPaths[fn])
		}
	}
	for fn := range m.calls {
		want := m.paths[fn]
		if want == nil {
			want = map[uint64]uint64{}
		}
		got := gotPaths[fn]
		if got == nil {
			got = map[uint64]uint64{}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: paths %s, want %s", harnessFuncs[fn].name, fmtPaths(got), fmtPaths(want))
		}
	}
	gotPart := map[partial]uint64{}
	for _, q := range th.Partials {
		if q.Record == -1 || q.Block != runtime.BlockUnknown {
			t.Errorf("partial %+v: want a record and block unknown", q)
		}
		gotPart[partial{int(q.Func), q.Reg}] += q.Count
	}
	if !reflect.DeepEqual(gotPart, m.partials) {
		t.Errorf("partials %v, want %v", gotPart, m.partials)
	}
	for k, v := range m.stats {
		if p.Stats[k] != v {
			t.Errorf("stat %s = %d, want %d", k, p.Stats[k], v)
		}
	}
	for _, k := range []string{"bad_funcs", "dropped_counts", "dropped_partials", "exit_mismatch", "shadow_overflow"} {
		if _, set := m.stats[k]; !set && p.Stats[k] != 0 {
			t.Errorf("stat %s = %d, want 0", k, p.Stats[k])
		}
	}
}

func fmtPaths(m map[uint64]uint64) string {
	ids := make([]uint64, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	if len(ids) > 12 {
		return fmt.Sprintf("{%d paths, first %d:%d}", len(ids), ids[0], m[ids[0]])
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d:%d", id, m[id])
	}
	b.WriteByte('}')
	return b.String()
}

// readProfile parses a profile file and checks what every profile must
// satisfy: valid, canonical (the bytes cct's writer would produce),
// flow-only, written by pid, with the harness's build-id.
func readProfile(t *testing.T, name, exe string, pid int, flags cct.Flags) *cct.Profile {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("profile: %v", err)
	}
	p, err := cct.Parse(data)
	if err != nil {
		t.Fatalf("profile %s: %v", name, err)
	}
	again, err := p.MarshalBinary()
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	if !bytes.Equal(again, data) {
		t.Errorf("profile %s is not in canonical form (cct writes %d bytes, the runtime wrote %d)", name, len(again), len(data))
	}
	if p.Flags != flags|cct.FlagFlowOnly {
		t.Errorf("flags %v, want %v", p.Flags, flags|cct.FlagFlowOnly)
	}
	if pid != 0 && p.PID != uint64(pid) {
		t.Errorf("pid %d, want %d", p.PID, pid)
	}
	if id := buildID(t, exe); !bytes.Equal(p.BuildID, id) {
		t.Errorf("build-id %x, want %x", p.BuildID, id)
	}
	if d := time.Since(time.Unix(0, int64(p.TimeNS))); d < -time.Minute || d > 10*time.Minute {
		t.Errorf("time %v is not now", time.Unix(0, int64(p.TimeNS)))
	}
	if len(p.Metrics) != 1 || p.Metrics[0].Name != cct.FreqMetric {
		t.Errorf("metrics %v, want freq only", p.Metrics)
	}
	return p
}

func wantExit(t *testing.T, r result, code int) {
	t.Helper()
	if !r.status.Exited() || r.status.ExitStatus() != code {
		t.Errorf("status %v, want exit %d; stdout %q stderr %q", describe(r.status), code, r.stdout, r.stderr)
	}
}

func wantSignal(t *testing.T, r result, sig syscall.Signal) {
	t.Helper()
	if !r.status.Signaled() || r.status.Signal() != sig {
		t.Errorf("status %v, want killed by %v; stdout %q stderr %q", describe(r.status), sig, r.stdout, r.stderr)
	}
}

func describe(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "killed by " + ws.Signal().String()
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}
