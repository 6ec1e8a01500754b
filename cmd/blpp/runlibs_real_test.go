package main

import (
	"testing"
)

// TestRunLibPrograms (issue 25, acceptance 2): the real programs of
// TestWholeProcessShare (sharePrograms: work in libbz2, liblzma with two
// threads, libz, libc's regex, libsqlite3, libjq, python3's _decimal, a
// C++ program throwing through libstdc++) behave under `blpp run`, the
// command itself in a process of its own, exactly as alone: stdout,
// stderr and exit status. TestWholeProcessShare measures their share.
func TestRunLibPrograms(t *testing.T) {
	for _, p := range sharePrograms(t) {
		t.Run(p.name, func(t *testing.T) {
			dir := t.TempDir()
			want := runProc(t, dir, nil, p.stdin, p.argv[0], p.argv[1:]...)
			got, _ := blppRun(t, dir, p.stdin, nil, p.argv[0], p.argv[1:]...)
			sameBehaviour(t, "blpp run "+p.name, want, got)
		})
	}
}
