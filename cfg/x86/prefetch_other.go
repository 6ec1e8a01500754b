//go:build !amd64

package x86

import "unsafe"

// prefetch does nothing where there is no amd64 assembly for it.
func prefetch(p unsafe.Pointer) {}
