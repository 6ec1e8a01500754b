// Package build compiles the blpp runtime into the image that package
// runtime embeds (blpp_rt.elf), and checks that the image can be copied
// into any executable as it is: no relocation of any kind, no undefined
// symbol, no section but text, rodata, data and bss [DESIGN 9].
//
// The bytes of the image depend on the compiler, so the committed image is
// built with one pinned compiler, GCCVersion (Debian's gcc 12, the one CI
// installs). Build refuses another version unless told otherwise; the
// staleness test skips under another version (and fails under
// BLPP_REQUIRE_TOOLS=1). Upgrading the compiler means rebuilding the image
// (go generate ./runtime) and bumping GCCVersion in the same change.
package build

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/blpp/blpp/cct"
	"github.com/blpp/blpp/runtime"
)

// GCCVersion is the `gcc -dumpfullversion` of the compiler that builds
// the committed image.
const GCCVersion = "12.2.0"

// CFlags are the pinned flags for both C and assembly sources. They make
// freestanding, position-independent code that never touches vector
// registers and needs no loader. The unwind tables are not loaded with
// the image: the rewriter adds their FDEs to the instrumented file's own
// .eh_frame, so debuggers and profilers unwind out of the runtime
// (decision 159).
var CFlags = []string{
	"-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
	"-ffreestanding", "-fno-builtin", "-nostdlib",
	"-fno-stack-protector", "-fasynchronous-unwind-tables", "-fno-exceptions",
	"-mgeneral-regs-only", "-fPIC", "-fvisibility=hidden", "-fcf-protection=full",
	"-fno-jump-tables", "-fno-plt",
}

// LinkFlags link the objects with the linker script into a non-PIE static
// file, without build-id or other notes.
var LinkFlags = []string{
	"-nostdlib", "-nostartfiles", "-static", "-no-pie",
	"-Wl,--build-id=none", "-Wl,-z,noexecstack", "-Wl,-z,norelro", "-Wl,-T," + LinkerScript,
}

// Sources are the runtime's hand-written sources, relative to the runtime
// directory, LinkerScript the script among them, and Includes the
// hand-written files they include: blpp_rt.c is a unity build of the
// parts listed here (in its own order), so the runtime stays one object.
// Every one is an input of Build, so TestImageCurrent notices a change in
// any of them; TestBuildInputs checks that the lists name every
// hand-written blpp_* file of the directory and every file the sources
// include.
var (
	Sources  = []string{"blpp_rt.c", "blpp_stubs.S", LinkerScript}
	Includes = []string{
		"blpp_pmu.h", "blpp_sys.h", "blpp_state.c", "blpp_thread.c", "blpp_metrics.c", "blpp_htab.c", "blpp_cct.c",
		"blpp_partial.c", "blpp_live.c", "blpp_enter.c", "blpp_dark.c", "blpp_resume.c", "blpp_context.c", "blpp_obuf.c", "blpp_latency.c", "blpp_pfile.c", "blpp_writer.c", "blpp_sample.c", "blpp_signal.c", "blpp_start.c", "blpp_follow.c",
	}
	LinkerScript = "blpp_rt.ld"
)

// Generated header names.
const (
	LayoutHeader = "blpp_layout.h"
	FormatHeader = "blpp_format.h"
)

// ImageName is the file name of the committed image.
const ImageName = "blpp_rt.elf"

// ErrCompilerVersion means the C compiler is not the pinned one.
var ErrCompilerVersion = errors.New("C compiler version differs from the pinned one")

// Headers returns the generated headers by file name: the table layout
// (package runtime) and the profile format (package cct).
func Headers() (map[string][]byte, error) {
	var layout, format bytes.Buffer
	if err := runtime.WriteLayoutHeader(&layout); err != nil {
		return nil, err
	}
	if err := cct.WriteCHeader(&format); err != nil {
		return nil, fmt.Errorf("format header: %w", err)
	}
	return map[string][]byte{LayoutHeader: layout.Bytes(), FormatHeader: format.Bytes()}, nil
}

// Options control Build.
type Options struct {
	Dir string // directory holding Sources
	CC  string // compiler command; "gcc" when empty
	// AnyVersion accepts a compiler other than GCCVersion. The image
	// then works but differs from the committed one.
	AnyVersion bool
}

// CompilerVersion returns `cc -dumpfullversion`.
func CompilerVersion(cc string) (string, error) {
	out, err := command(cc, "-dumpfullversion").Output()
	if err != nil {
		return "", fmt.Errorf("%s -dumpfullversion: %w", cc, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Build compiles and links the runtime from the sources in opts.Dir and
// freshly generated headers, in a temporary directory, checks the result
// (Check) and returns the image's bytes. Sources are compiled under
// relative names from that directory, so the image does not depend on
// where the module lives.
func Build(opts Options) ([]byte, error) {
	cc := opts.CC
	if cc == "" {
		cc = "gcc"
	}
	ver, err := CompilerVersion(cc)
	if err != nil {
		return nil, err
	}
	if ver != GCCVersion && !opts.AnyVersion {
		return nil, fmt.Errorf("%w: %s is %s, the image is built with gcc %s", ErrCompilerVersion, cc, ver, GCCVersion)
	}
	headers, err := Headers()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "blpp-rt-build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, name := range append(append([]string{}, Sources...), Includes...) {
		b, err := os.ReadFile(filepath.Join(opts.Dir, name))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	for name, b := range headers {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			return nil, err
		}
	}
	sig, err := runtimeSig(opts.Dir, headers)
	if err != nil {
		return nil, err
	}
	var objs []string
	for _, src := range Sources {
		if src == LinkerScript {
			continue
		}
		obj := strings.TrimSuffix(src, filepath.Ext(src)) + ".o"
		args := append(append([]string{}, CFlags...), fmt.Sprintf("-DBLPP_RUNTIME_SIG=%#xull", sig), "-c", "-o", obj, src)
		if err := run(tmp, cc, args...); err != nil {
			return nil, fmt.Errorf("compile %s: %w", src, err)
		}
		data, err := os.ReadFile(filepath.Join(tmp, obj))
		if err != nil {
			return nil, err
		}
		if err := CheckObject(data); err != nil {
			return nil, fmt.Errorf("%s: %w", obj, err)
		}
		objs = append(objs, obj)
	}
	args := append(append(append([]string{}, LinkFlags...), "-o", ImageName), objs...)
	if err := run(tmp, cc, args...); err != nil {
		return nil, fmt.Errorf("link: %w", err)
	}
	img, err := os.ReadFile(filepath.Join(tmp, ImageName))
	if err != nil {
		return nil, err
	}
	if err := Check(img); err != nil {
		return nil, err
	}
	return img, nil
}

func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

func run(dir, name string, args ...string) error {
	cmd := command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// pcRelative lists the relocation types an object may use: each is
// resolved by the static link to a distance inside the image, which stays
// right wherever the image is placed.
var pcRelative = map[elf.R_X86_64]bool{
	elf.R_X86_64_PC32:  true,
	elf.R_X86_64_PLT32: true,
	elf.R_X86_64_PC64:  true,
}

// CheckObject refuses an object file with a relocation that is not
// PC-relative: an absolute address (an initialised pointer, an absolute
// jump table) would be wrong once the image moves, and a GOT reference
// needs a loader.
func CheckObject(data []byte) error {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return err
	}
	syms, _ := f.Symbols()
	for _, s := range f.Sections {
		if s.Type == elf.SHT_REL {
			return fmt.Errorf("section %s: REL relocations", s.Name)
		}
		if s.Type != elf.SHT_RELA {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return err
		}
		for i := 0; i+24 <= len(b); i += 24 {
			info := f.ByteOrder.Uint64(b[i+8:])
			typ := elf.R_X86_64(elf.R_TYPE64(info))
			if pcRelative[typ] {
				continue
			}
			sym := fmt.Sprintf("symbol %d", elf.R_SYM64(info))
			if n := int(elf.R_SYM64(info)); n >= 1 && n <= len(syms) {
				sym = syms[n-1].Name
				if sym == "" {
					sym = fmt.Sprintf("section symbol %d", syms[n-1].Section)
				}
			}
			return fmt.Errorf("%s+%#x: %v against %s is not PC-relative (an absolute address or GOT entry in the runtime)",
				s.Name, f.ByteOrder.Uint64(b[i:]), typ, sym)
		}
	}
	return nil
}

// allowedSections are the only allocated sections a linked image may
// have: .eh_frame lies in the text segment but is not copied with it
// (runtime.Decode keeps it apart, as Image.Frame).
var allowedSections = map[string]bool{".text": true, ".rodata": true, ".eh_frame": true, ".data": true, ".bss": true}

// Check verifies a linked image: an x86-64 executable without dynamic
// segment or interpreter, with no relocation section, no undefined
// symbol, only the allowed sections, and decodable by runtime.Decode.
func Check(img []byte) error {
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return fmt.Errorf("image: %w", err)
	}
	if f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC {
		return fmt.Errorf("image: %v %v, want an x86-64 executable", f.Machine, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_DYNAMIC || p.Type == elf.PT_INTERP {
			return fmt.Errorf("image: has a %v segment", p.Type)
		}
	}
	for _, s := range f.Sections {
		switch s.Type {
		case elf.SHT_REL, elf.SHT_RELA, elf.SHT_DYNAMIC, elf.SHT_DYNSYM:
			return fmt.Errorf("image: section %s (%v): the image must need no relocation", s.Name, s.Type)
		}
		if s.Flags&elf.SHF_ALLOC != 0 && !allowedSections[s.Name] {
			return fmt.Errorf("image: unexpected section %s", s.Name)
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		return fmt.Errorf("image: symbols: %w", err)
	}
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF && s.Name != "" {
			return fmt.Errorf("image: undefined symbol %s", s.Name)
		}
	}
	if _, err := runtime.Decode(img); err != nil {
		return fmt.Errorf("image: %w", err)
	}
	return nil
}

// runtimeSig is FNV-1a 64 of every input of the image (sources, includes,
// generated headers, by name and content). The image carries it as
// BLPP_RUNTIME_SIG: the copies of the runtime in the modules of one
// process must be the same runtime to share its state (decision 81), and
// they check it when a module starts.
func runtimeSig(dir string, headers map[string][]byte) (uint64, error) {
	h := fnv.New64a()
	names := append(append([]string{}, Sources...), Includes...)
	sort.Strings(names)
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0, err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(b))
		h.Write(b)
	}
	hn := make([]string, 0, len(headers))
	for name := range headers {
		hn = append(hn, name)
	}
	sort.Strings(hn)
	for _, name := range hn {
		fmt.Fprintf(h, "%s\x00%d\x00", name, len(headers[name]))
		h.Write(headers[name])
	}
	return h.Sum64(), nil
}
