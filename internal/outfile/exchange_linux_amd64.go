package outfile

import (
	"syscall"
	"unsafe"
)

// exchange swaps the files at paths a and b in one step (renameat2
// with RENAME_EXCHANGE [rename(2)]).
func exchange(a, b string) error {
	pa, err := syscall.BytePtrFromString(a)
	if err != nil {
		return err
	}
	pb, err := syscall.BytePtrFromString(b)
	if err != nil {
		return err
	}
	const (
		sysRenameat2   = 316 // x86-64; package syscall lacks it
		renameExchange = 2   // RENAME_EXCHANGE, linux/fs.h
	)
	cwd := -100 // AT_FDCWD
	_, _, errno := syscall.Syscall6(sysRenameat2, uintptr(cwd), uintptr(unsafe.Pointer(pa)),
		uintptr(cwd), uintptr(unsafe.Pointer(pb)), renameExchange, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
