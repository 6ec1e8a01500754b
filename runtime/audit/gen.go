package audit

// Rebuild blpp_audit.so from blpp_audit.c with the pinned gcc.
//go:generate go run ./internal/gen
