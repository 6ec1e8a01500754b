package wholerun

import "strconv"

// ModuleRequest is what the auditor asks of the command it runs for a
// library it is about to load: `CMD rewrite-module --cache-dir DIR
// [--exclude-lib REGEX] --module-tag N [mode flags] LIB` (blpp run's
// auditor, decision 82). blpp parses it with its flag package; tests
// that stand in for blpp parse it with ParseModuleRequest.
type ModuleRequest struct {
	CacheDir   string
	ExcludeLib string // a regular expression, "" for none
	Tag        uint64 // the module tag; 0 when missing or malformed
	Lib        string // the library's path
}

// ParseModuleRequest reads the request's words after the command name.
// A word it does not know is taken as the library, so the last such word
// wins.
func ParseModuleRequest(args []string) ModuleRequest {
	var r ModuleRequest
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--cache-dir" && i+1 < len(args):
			i++
			r.CacheDir = args[i]
		case args[i] == "--exclude-lib" && i+1 < len(args):
			i++
			r.ExcludeLib = args[i]
		case args[i] == "--module-tag" && i+1 < len(args):
			i++
			r.Tag, _ = strconv.ParseUint(args[i], 10, 64)
		default:
			r.Lib = args[i]
		}
	}
	return r
}
