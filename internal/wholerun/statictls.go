package wholerun

import (
	"debug/elf"
	"fmt"
)

// Static TLS under an auditor (decision 124). A library whose DT_FLAGS
// say DF_STATIC_TLS (initial-exec TLS: librustc_driver, 23 KiB of it)
// gets its TLS block in the static TLS area of every thread. With an
// LD_AUDIT module in the process, glibc's loader places such a block of
// a library loaded at start-up in the area's surplus, which
// glibc.rtld.optional_static_tls sizes (512 bytes by default), and
// refuses the library when it does not fit: "cannot allocate memory in
// static TLS block", with any auditor at all. So blpp run raises the
// tunable by what the program's start-up libraries need, and the auditor
// hands the program its own GLIBC_TUNABLES back.

// defaultOptionalStaticTLS is glibc's default glibc.rtld.optional_static_tls.
const defaultOptionalStaticTLS = 512

// smallStaticTLS is the static TLS the default surplus is left to serve
// (libc.so.6's own 144 bytes): below it no tunable is set.
const smallStaticTLS = 256

// TunableStaticTLS is the GLIBC_TUNABLES item that sizes the surplus.
const TunableStaticTLS = "glibc.rtld.optional_static_tls="

// staticTLS is the optional static TLS the libraries need under an
// auditor, in bytes: 0 when the default serves.
func staticTLS(libs []Lib) uint64 {
	var sum uint64
	for _, l := range libs {
		sum += libStaticTLS(l.Path)
	}
	if sum <= smallStaticTLS {
		return 0
	}
	return defaultOptionalStaticTLS + sum
}

// libStaticTLS is the static TLS the library at path takes, aligned: 0
// unless its DT_FLAGS hold DF_STATIC_TLS (or it cannot be read: the
// loader will say what is wrong with it).
func libStaticTLS(path string) uint64 {
	f, err := elf.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	flags, err := f.DynValue(elf.DT_FLAGS)
	if err != nil || len(flags) == 0 || flags[0]&uint64(elf.DF_STATIC_TLS) == 0 {
		return 0
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_TLS {
			a := max(p.Align, 1)
			return (p.Memsz+a-1)/a*a + a
		}
	}
	return 0
}

// tunables is the GLIBC_TUNABLES value that adds the surplus to the
// program's own value v ("" for none).
func (wp *Process) tunables(v string) string {
	t := fmt.Sprintf("%s%d", TunableStaticTLS, wp.StaticTLS)
	if v == "" {
		return t
	}
	return v + ":" + t
}
