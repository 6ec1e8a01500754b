package runtime

import (
	"bytes"
	"debug/elf"
	_ "embed" // the runtime image
	"errors"
	"fmt"
	"sort"
	"strings"
)

//go:embed blpp_rt.elf
var imageELF []byte

// ImageELF returns a copy of the committed runtime image, the ELF file
// that Load decodes.
func ImageELF() []byte { return bytes.Clone(imageELF) }

// Symbols every image defines (Image.Symbols keys).
const (
	SymStart     = "blpp_start"       // new process entry point (e_entry)
	SymFini      = "blpp_fini"        // SysV function: run orig_fini, write the profile
	SymModInit   = "blpp_module_init" // SysV function (argc, argv, envp): a shared object's DT_INIT hook
	SymConfig    = "blpp_config"      // the Config struct, in Data
	SymEnter     = "blpp_enter"       // stub: function entry
	SymExit      = "blpp_exit"        // stub: path end at an exit (return, tail call, no-return call)
	SymBackedge  = "blpp_backedge"    // stub: path end at a backedge, restart
	SymLatWord   = "blpp_lat_word"    // stub: a tsc path end's latency word without an entry (decision 148)
	SymTailExit  = "blpp_tail_exit"   // stub: path end before a direct tail jump to an instrumented function
	SymSetjmpRet = "blpp_setjmp_ret"  // stub: the edge after a call that returns twice
	SymForkChild = "blpp_fork_child"  // stub: in a fork child, after fork() returned 0
	SymLeaf      = "blpp_leaf"        // stub: a one-path flow-only leaf starts (no shadow frame)
	SymLeave     = "blpp_leave"       // stub: before _exit, exit_group or an exec (decision 59)
	SymDark      = "blpp_dark"        // stub: an uninstrumented function was entered (decision 70)
	// Signal actions the program sets (decision 94): the stub that takes
	// the place of an rt_sigaction system call, and the functions that
	// take the place of an uninstrumented C library's sigaction and of
	// signal and its kin (the library's function in %r11).
	SymSysSigaction  = "blpp_sys_sigaction"
	SymLibcSigaction = "blpp_libc_sigaction"
	SymLibcSignal    = "blpp_libc_signal"
	// SymVforkChild is the stub called in a vfork child, after vfork()
	// returned 0, with the arguments of SymForkChild (decision 94).
	SymVforkChild = "blpp_vfork_child"
	// SymLibcClone and SymLibcClone3 take the place of the C library's
	// clone wrappers, clone(fn, stack, flags, arg, ...) and glibc's
	// __clone3(args, size, fn, arg), called with the function in %r11
	// (decision 101).
	SymLibcClone  = "blpp_libc_clone"
	SymLibcClone3 = "blpp_libc_clone3"
	// The C library's user-context functions, called with the function
	// in %r11 (decision 122): swapcontext, setcontext, getcontext and
	// makecontext.
	SymLibcSwapcontext = "blpp_libc_swapcontext"
	SymLibcSetcontext  = "blpp_libc_setcontext"
	SymLibcGetcontext  = "blpp_libc_getcontext"
	SymLibcMakecontext = "blpp_libc_makecontext"
	// SymForkSys is the stub called right after a system call that
	// makes a process or thread (decision 101):
	//	lea -128(%rsp),%rsp; push $nr; push $site; push $fid;
	//	call blpp_fork_sys; lea 152(%rsp),%rsp
	SymForkSys = "blpp_fork_sys"
	// SymFastSlots is a data word that is 0 until the runtime is ready
	// (the main thread's block is set up): inline instrumentation tests it
	// before it touches %gs and calls a stub while it is 0.
	SymFastSlots = "blpp_fast_slots"
	// SymSigreturn is the restorer of the runtime's signal actions, the
	// bytes of glibc's __restore_rt, with no FDE (blpp_stubs.S).
	SymSigreturn = "blpp_sigreturn"
)

var requiredSymbols = []string{SymStart, SymFini, SymModInit, SymConfig, SymEnter, SymExit, SymBackedge, SymLatWord, SymTailExit, SymSetjmpRet, SymForkChild, SymLeaf, SymLeave, SymDark, SymFastSlots, SymSysSigaction, SymLibcSigaction, SymLibcSignal, SymVforkChild, SymLibcClone, SymLibcClone3, SymLibcSwapcontext, SymLibcSetcontext, SymLibcGetcontext, SymLibcMakecontext, SymForkSys}

// PageSize is the alignment the image needs: it must be placed at a
// page-aligned address T, its text at T and its data at T+DataOff.
const PageSize = 4096

// Image is the runtime, ready to be placed in an instrumented binary.
type Image struct {
	Text    []byte // RX bytes (text and rodata), placed at some page-aligned address T
	Data    []byte // RW initialised bytes, placed at T + DataOff
	DataOff uint64 // distance from the image start to Data (page aligned)
	BSSSize uint64 // zero-filled bytes right after Data
	// Symbols holds the offsets from the image start of every blpp_*
	// function and object: at least the Sym* constants.
	Symbols map[string]uint64
	// Frame is the image's .eh_frame, linked at FrameAddr from the image
	// start, after Text: the unwind tables of the runtime's C and its
	// stubs. It is not part of Text; the rewriter moves its FDEs into
	// the instrumented file's .eh_frame. Empty in an image without one.
	Frame     []byte
	FrameAddr uint64
}

// ErrImage marks a runtime image that Load cannot use; it means the
// committed blpp_rt.elf is broken (rebuild it with go generate).
var ErrImage = errors.New("bad runtime image")

// Load decodes the embedded runtime image. Each call returns fresh
// slices, so the caller may patch Data (PutConfig) freely.
// ImageBytes returns the embedded runtime object as built (callers must
// not modify it): a cache of rewritten binaries keys on it.
func ImageBytes() []byte { return imageELF }

func Load() (*Image, error) {
	img, err := Decode(imageELF)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	return img, nil
}

// Decode turns a linked runtime ELF (as internal/build makes it) into an
// Image. Load decodes the embedded one.
func Decode(data []byte) (*Image, error) {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrImage, err)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrImage, fmt.Sprintf(format, args...))
	}
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return nil, bad("not an x86-64 ELF64 file")
	}
	var text, rodata, frame, dataSec, bss *elf.Section
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		switch s.Name {
		case ".text":
			text = s
		case ".rodata":
			rodata = s
		case ".eh_frame":
			frame = s
		case ".data":
			dataSec = s
		case ".bss":
			bss = s
		default:
			return nil, bad("unexpected section %s", s.Name)
		}
	}
	if text == nil || text.Addr != 0 || dataSec == nil {
		return nil, bad("no .text at address 0 or no .data")
	}
	textEnd := text.Addr + text.Size
	if rodata != nil {
		if rodata.Addr < textEnd {
			return nil, bad(".rodata overlaps .text")
		}
		textEnd = rodata.Addr + rodata.Size
	}
	if dataSec.Addr%PageSize != 0 || dataSec.Addr < textEnd {
		return nil, bad(".data at %#x is not page aligned after the text", dataSec.Addr)
	}
	img := &Image{DataOff: dataSec.Addr, Symbols: map[string]uint64{}}
	if frame != nil {
		if frame.Addr < textEnd || frame.Addr+frame.Size > dataSec.Addr {
			return nil, bad(".eh_frame at %#x is not between the text and the data", frame.Addr)
		}
		if img.Frame, err = frame.Data(); err != nil || uint64(len(img.Frame)) != frame.Size {
			return nil, bad("reading .eh_frame: %v", err)
		}
		img.FrameAddr = frame.Addr
	}
	img.Text = make([]byte, textEnd)
	for _, s := range []*elf.Section{text, rodata} {
		if s == nil {
			continue
		}
		b, err := s.Data()
		if err != nil || uint64(len(b)) != s.Size {
			return nil, bad("reading %s: %v", s.Name, err)
		}
		copy(img.Text[s.Addr:], b)
	}
	if img.Data, err = dataSec.Data(); err != nil || uint64(len(img.Data)) != dataSec.Size {
		return nil, bad("reading .data: %v", err)
	}
	dataEnd := dataSec.Addr + dataSec.Size
	if bss != nil {
		if bss.Addr < dataEnd {
			return nil, bad(".bss overlaps .data")
		}
		img.BSSSize = bss.Addr + bss.Size - dataEnd
	}
	syms, err := f.Symbols()
	if err != nil {
		return nil, bad("symbols: %v", err)
	}
	for _, s := range syms {
		typ := elf.ST_TYPE(s.Info)
		if !strings.HasPrefix(s.Name, "blpp_") || (typ != elf.STT_FUNC && typ != elf.STT_OBJECT && typ != elf.STT_NOTYPE) {
			continue
		}
		if s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE {
			continue
		}
		img.Symbols[s.Name] = s.Value
	}
	var missing []string
	for _, name := range requiredSymbols {
		if _, ok := img.Symbols[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, bad("missing symbols %s", strings.Join(missing, ", "))
	}
	off := img.Symbols[SymConfig]
	if off < img.DataOff || off+ConfigSize > dataEnd {
		return nil, bad("%s at %#x is not inside .data", SymConfig, off)
	}
	return img, nil
}

// configBytes returns the Data bytes of blpp_config.
func (im *Image) configBytes() ([]byte, error) {
	off, ok := im.Symbols[SymConfig]
	if !ok || off < im.DataOff || off-im.DataOff+ConfigSize > uint64(len(im.Data)) {
		return nil, fmt.Errorf("runtime: %w: %s is not inside Data", ErrImage, SymConfig)
	}
	return im.Data[off-im.DataOff:][:ConfigSize], nil
}

// Config returns the configuration currently in Data: for a fresh image,
// the defaults (magic, DefaultDumpSignal, flow-only).
func (im *Image) Config() (Config, error) {
	b, err := im.configBytes()
	if err != nil {
		return Config{}, err
	}
	return ParseConfig(b)
}

// SetConfig writes c into Data (see PutConfig).
func (im *Image) SetConfig(c Config) error {
	b, err := im.configBytes()
	if err != nil {
		return err
	}
	PutConfig(b, c)
	return nil
}
