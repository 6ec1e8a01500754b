package pathnum

import (
	"errors"
	"strconv"
)

var (
	// ErrInvalidGraph is wrapped by every *GraphError: the input Graph
	// cannot be numbered as given.
	ErrInvalidGraph = errors.New("pathnum: invalid graph")
	// ErrPathLimit means the overflow policy could not bring the number of
	// paths down to Options.MaxPaths.
	ErrPathLimit = errors.New("pathnum: path count exceeds limit")
	// ErrIncrementRange means a node potential or an edge increment does
	// not fit in int64.
	ErrIncrementRange = errors.New("pathnum: increment out of int64 range")
	// ErrPathRange means a path number is not below NumPaths.
	ErrPathRange = errors.New("pathnum: path number out of range")
	// ErrInvalidPath means a step list is not an ENTRY→EXIT path of the DAG,
	// or no prefix matches a (node, register) pair.
	ErrInvalidPath = errors.New("pathnum: not a path of the DAG")
)

// GraphError says what is wrong with an input Graph and where. Node and Edge
// are -1 when they do not apply. It unwraps to ErrInvalidGraph.
type GraphError struct {
	Node   int    // offending node, or -1
	Edge   int    // offending input edge index, or -1
	Reason string // lowercase sentence fragment, e.g. "not reachable from entry"
}

func (e *GraphError) Error() string {
	s := ErrInvalidGraph.Error()
	if e.Edge >= 0 {
		s += ": edge " + strconv.Itoa(e.Edge)
	}
	if e.Node >= 0 {
		s += ": node " + strconv.Itoa(e.Node)
	}
	return s + ": " + e.Reason
}

// Unwrap lets errors.Is(err, ErrInvalidGraph) hold.
func (e *GraphError) Unwrap() error { return ErrInvalidGraph }

func nodeError(v int, reason string) error {
	return &GraphError{Node: v, Edge: -1, Reason: reason}
}

func edgeError(i int, reason string) error {
	return &GraphError{Node: -1, Edge: i, Reason: reason}
}

func graphError(reason string) error {
	return &GraphError{Node: -1, Edge: -1, Reason: reason}
}
