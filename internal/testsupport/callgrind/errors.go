package callgrind

import (
	"errors"
	"fmt"
)

var (
	// ErrSyntax is wrapped by every *ParseError: the input breaks the
	// callgrind format.
	ErrSyntax = errors.New("callgrind: malformed profile")
	// ErrNoInstr means a cost line carries no instruction address: the
	// profile was written without --dump-instr=yes, so it holds per-line
	// costs that cannot be mapped to instructions.
	ErrNoInstr = errors.New("callgrind: profile has no instr positions (run callgrind with --dump-instr=yes)")
	// ErrNoIr means the events: header does not list Ir, the event whose
	// per-instruction value is the execution count.
	ErrNoIr = errors.New("callgrind: profile has no Ir event")
	// ErrNoValgrind means the valgrind executable was not found.
	ErrNoValgrind = errors.New("callgrind: valgrind not found (install the Debian package \"valgrind\")")
	// ErrNoProfile means a run produced no callgrind output that mentions
	// the program's own object.
	ErrNoProfile = errors.New("callgrind: no profile of the program's object")
	// ErrTimeout means Options.Timeout expired before the program ended.
	ErrTimeout = errors.New("callgrind: run timed out")
	// ErrBias means the load address of a position-independent executable
	// under valgrind could not be established consistently.
	ErrBias = errors.New("callgrind: inconsistent load bias")

	// errInternal marks a panic caught at the Parse boundary: a bug in this
	// package, never a property of the input. FuzzParse fails on it.
	errInternal = errors.New("callgrind: internal error in the parser")
)

// ParseError locates a problem in a callgrind output file. Line counts from
// 1; File is empty when the input came from a reader without a name. It
// unwraps to Err, which is ErrSyntax, ErrNoInstr or ErrNoIr.
type ParseError struct {
	File string
	Line int
	Msg  string // lowercase fragment, e.g. `"calls=" on line 7 is not followed by its cost line`
	Err  error
}

func (e *ParseError) Error() string {
	where := "line " + fmt.Sprint(e.Line)
	if e.File != "" {
		where = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Msg == "" {
		return fmt.Sprintf("%v: %s", e.Err, where)
	}
	return fmt.Sprintf("%v: %s: %s", e.Err, where, e.Msg)
}

// Unwrap lets errors.Is(err, ErrSyntax) and friends hold.
func (e *ParseError) Unwrap() error { return e.Err }
