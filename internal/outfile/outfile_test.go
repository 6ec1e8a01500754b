package outfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestWriteRegular(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	if err := os.WriteFile(p, []byte("old contents, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil || string(got) != "new" {
		t.Fatalf("read %q, %v; want \"new\"", got, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%d files left in the directory, want 1 (no temporary file)", len(ents))
	}
}

// TestWriteFIFO: a FIFO is written through, and stays a FIFO.
func TestWriteFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	data := bytes.Repeat([]byte("profile "), 20000) // more than a pipe holds
	got := make(chan []byte)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	if err := Write(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// Checked before waiting: a FIFO renamed over never sees a writer,
	// and its reader would wait for ever.
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("%s is no longer a FIFO: %v, %v", p, fi.Mode(), err)
	}
	if b := <-got; !bytes.Equal(b, data) {
		t.Errorf("the reader got %d bytes, want %d", len(b), len(data))
	}
}

// TestWriteDevNull: /dev/null stays a character device.
func TestWriteDevNull(t *testing.T) {
	if err := Write(os.DevNull, []byte("discarded"), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(os.DevNull)
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("%s is no longer a character device: %v, %v", os.DevNull, fi.Mode(), err)
	}
}

func TestWriteDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, []byte("x"), 0o644); err == nil {
		t.Fatal("writing over a directory succeeded")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("%s is no longer a directory", dir)
	}
}

// TestWriteWith: the file write fills (at any offsets) replaces path in
// one step; a failing write leaves path as it was and no temporary file;
// a device is refused with ErrNotRegular, untouched.
func TestWriteWith(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteWith(p, 0o755, func(f *os.File) error {
		if _, err := f.WriteAt([]byte("tail"), 6); err != nil {
			return err
		}
		_, err := f.WriteAt([]byte("head"), 0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, []byte("head\x00\x00tail")) {
		t.Fatalf("read %q", got)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode %v, want 0755", fi.Mode().Perm())
	}
	boom := errors.New("boom")
	if err := WriteWith(p, 0o644, func(f *os.File) error {
		f.WriteAt([]byte("partial"), 0)
		return boom
	}); err != boom {
		t.Fatalf("error %v, want the write's own", err)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, []byte("head\x00\x00tail")) {
		t.Fatalf("after a failed write: %q", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries left in the directory", len(ents))
	}
	called := false
	if err := WriteWith(os.DevNull, 0o644, func(*os.File) error { called = true; return nil }); !errors.Is(err, ErrNotRegular) || called {
		t.Errorf("%s: error %v, write called %v; want ErrNotRegular, not called", os.DevNull, err, called)
	}
}

// TestStreamFailure: a write that fails after writing part of the
// contents leaves the old file as it was and no temporary file, and its
// error comes back as it is.
func TestStreamFailure(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Stream(p, 0o644, func(w io.Writer) error {
		if _, err := w.Write([]byte("half of the new")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want boom", err)
	}
	got, _ := os.ReadFile(p)
	ents, _ := os.ReadDir(dir)
	if string(got) != "old" || len(ents) != 1 {
		t.Errorf("after a failed Stream: %q, %d files; want \"old\" alone", got, len(ents))
	}
}
