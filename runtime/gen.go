package runtime

// Regenerate blpp_layout.h, blpp_format.h and blpp_rt.elf. Needs gcc
// (pinned version: see internal/build.GCCVersion).
//go:generate go run ./internal/gen
