package rewriter

import (
	"debug/elf"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"

	"github.com/blpp/blpp/cfg"
	"github.com/blpp/blpp/rewriter/elfw"
	"github.com/blpp/blpp/runtime"
)

// Errors for shared objects the rewriter refuses [decision 81].
var (
	ErrDynamicLinker = errors.New("the dynamic linker is never instrumented")
	ErrTooManyFuncs  = fmt.Errorf("more than %d functions: function ids have %d bits in a module", 1<<runtime.FidBits, runtime.FidBits)
	// ErrGoProgram refuses code built by the Go toolchain (decision 130): Go's runtime
	// walks its goroutines' stacks by the return addresses it finds
	// there, looked up in its own table of the original code (.gopclntab),
	// and dies on an address in relocated code ("fatal error: unknown
	// pc"); it also moves goroutine stacks and switches them between
	// threads, which no shadow stack follows.
	ErrGoProgram = errors.New("built by Go: Go's runtime unwinds its stacks through its table of the original code addresses, which a relocated copy breaks; blpp does not instrument Go code")
)

// goSections name sections only the Go linker writes; any one of them
// marks an object as Go's, stripped or not.
var goSections = []string{".gopclntab", ".go.buildinfo", ".note.go.buildid"}

// isGo reports whether the Go toolchain built b.
func isGo(b *cfg.Binary) bool {
	for _, name := range goSections {
		if b.File.Section(name) != nil {
			return true
		}
	}
	return false
}

// Module kinds, as Summary.Module names them.
const (
	ModuleExecutable = "executable"
	ModuleLibrary    = "shared library"
)

// module is what the rewriter knows of the object it instruments as a
// module of a process [decision 81]: an executable (tag 0) or a shared
// object (tags 1..runtime.MaxModuleTag).
type module struct {
	library bool
	soname  string
	tag     uint32
	cet     cetMode // what of CET the code keeps (cet.go)
}

// moduleOf classifies b and checks opts.ModuleTag. A library's tag 0
// means the default, DefaultModuleTag of its SONAME (of its build-id when
// it has none: a dlopen'ed plugin). The dynamic linker is refused: it
// runs before everything, the runtime's start included. libc.so.6 is
// instrumented like any library: its code that runs before any DT_INIT
// (IRELATIVE resolvers, called by ld.so while it relocates) starts the
// runtime from its first stub, as an executable's always did.
func moduleOf(b *cfg.Binary, opts Options) (module, error) {
	if opts.ModuleTag > runtime.MaxModuleTag {
		return module{}, fmt.Errorf("module tag %d: at most %d", opts.ModuleTag, runtime.MaxModuleTag)
	}
	m := module{library: b.Kind == cfg.KindShared}
	if b.Kind != cfg.KindExec {
		if s, err := b.File.DynString(elf.DT_SONAME); err == nil && len(s) > 0 {
			m.soname = s[0]
		}
	}
	// Both can run as programs, so check them whatever their kind.
	switch {
	case strings.HasPrefix(m.soname, "ld-linux"):
		return module{}, fmt.Errorf("%w (%s)", ErrDynamicLinker, m.soname)
	case isGo(b):
		return module{}, ErrGoProgram
	}
	if !m.library {
		if opts.ModuleTag != 0 {
			return module{}, fmt.Errorf("module tag %d: an executable's tag is 0", opts.ModuleTag)
		}
		return module{soname: m.soname}, nil
	}
	m.tag = uint32(opts.ModuleTag)
	if m.tag == 0 {
		key := m.soname
		if key == "" {
			key = string(b.BuildID)
		}
		m.tag = DefaultModuleTag(key)
	}
	return m, nil
}

// DefaultModuleTag is a library's tag when none is given: 1 + the 32-bit
// FNV-1a hash of its SONAME modulo runtime.MaxModuleTag, so a library
// rewritten on its own gets the same tag every time. Two libraries of one
// process may still clash (the runtime refuses the second at load);
// `blpp run` numbers them instead.
func DefaultModuleTag(soname string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(soname))
	return 1 + h.Sum32()%runtime.MaxModuleTag
}

// name is the module's kind for the summary.
func (m module) name() string {
	if m.library {
		return ModuleLibrary
	}
	return ModuleExecutable
}

// hooks says how the runtime starts and stops in the rewritten object.
// An executable starts at e_entry (blpp_start) and stops at the first
// .fini_array entry or DT_FINI (findFini). A library starts at DT_INIT
// (blpp_module_init, which runs the old DT_INIT) and stops at DT_FINI
// (blpp_fini, which runs the old DT_FINI first): the dynamic loader runs
// DT_FINI after the object's DT_FINI_ARRAY, at exit and at dlclose, so
// every destructor of the module is counted [decision 81].
type hooks struct {
	fini     *finiHook
	origInit uint64 // the library's old DT_INIT (0: none)
}

func (m module) hooks(in []byte, b *cfg.Binary) (*hooks, error) {
	if m.library {
		orig, _ := elfw.OrigFini(in)
		init, _ := elfw.OrigInit(in)
		return &hooks{fini: &finiHook{orig: orig, dtFini: true}, origInit: init}, nil
	}
	fini, err := findFini(b)
	if errors.Is(err, ErrNoExit) && !b.Static {
		// No .fini_array: take DT_FINI's place (elfw makes one from a
		// spare DT_NULL when there is none); blpp_fini calls the old
		// DT_FINI, if any.
		orig, _ := elfw.OrigFini(in)
		fini, err = &finiHook{orig: orig, dtFini: true}, nil
	}
	if err != nil {
		return nil, err
	}
	return &hooks{fini: fini}, nil
}
