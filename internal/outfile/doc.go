// Package outfile writes the files blpp produces (rewritten binaries,
// profiles, exports) so that no reader ever sees a partial one: the data
// goes to a temporary file in the same directory, which is renamed into
// place [DESIGN 11]. A path that names something other than a regular
// file (/dev/null, a FIFO, /dev/stdout) is written in place instead:
// renaming over it would replace the device, which as root destroys
// /dev/null for the whole machine.
//
// What it trusts: the file system's rename to replace a regular file in
// one step. When the write, chmod or rename fails, the target is left as
// it was and the temporary file removed; a device or FIFO written in
// place may have taken part of the data.
package outfile
