package outfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write writes data to path with permissions perm.
func Write(path string, data []byte, perm os.FileMode) error {
	return Stream(path, perm, func(w io.Writer) error {
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	})
}

// Stream writes path with permissions perm through write, which writes
// the contents in order: a regular file (or a new one) through a
// temporary file beside it, renamed over it once whole, so that a
// failure never leaves a partial path; a path that is not a regular file
// (a FIFO, a device) in place. write's error is returned as it is.
func Stream(path string, perm os.FileMode, write func(w io.Writer) error) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	} else if err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	return viaTemp(path, perm, func(f *os.File) error { return write(f) })
}

// ErrNotRegular: WriteWith was asked to write a path that exists and is
// not a regular file (a device, a FIFO), where a file cannot be written
// at any offset; Write writes there.
var ErrNotRegular = errors.New("not a regular file")

// WriteWith writes the file at path with permissions perm through
// write, which is given a new empty file to write into, at any offsets
// (WriteAt). As with Write, the file is a temporary one beside path,
// renamed over it once write and the closing succeed, so that a failure
// never leaves a partial path; write's error is returned as it is.
func WriteWith(path string, perm os.FileMode, write func(f *os.File) error) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	} else if err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return viaTemp(path, perm, write)
}

// viaTemp has write fill a temporary file beside path, then gives it
// perm and renames it to path.
func viaTemp(path string, perm os.FileMode, write func(f *os.File) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		done = true
		return err
	}
	done = true
	return nil
}
