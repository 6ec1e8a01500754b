//go:build !blppfault

package rewriter

// faultInjection is false: see fault_on.go.
const faultInjection = false

func fault(string) bool { return false }
