package rewriter

import "github.com/blpp/blpp/cfg"

// User contexts (decision 122). makecontext, swapcontext, setcontext and
// getcontext switch a thread between stacks, and the runtime keeps a
// thread block per context (runtime/blpp_context.c), so it must see them
// called: they get thunks (thunk.go) to its replacements, and in the C
// library, where they are defined, they stay uninstrumented
// (cfg.ReasonContextSwitch) so that the thunks apply to them.

// contextName is the kind of thunk a user-context function of this name
// gets, thunkNone for any other name.
func contextName(name string) thunkKind {
	switch cfg.ContextFunc(name) {
	case "swapcontext":
		return thunkSwapcontext
	case "setcontext":
		return thunkSetcontext
	case "getcontext":
		return thunkGetcontext
	case "makecontext":
		return thunkMakecontext
	}
	return thunkNone
}
