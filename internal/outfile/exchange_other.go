//go:build !(linux && amd64)

package outfile

import "errors"

// exchange is not done here: replace renames.
func exchange(a, b string) error { return errors.ErrUnsupported }
