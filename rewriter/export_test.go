package rewriter

// ForceIBT returns opts with the code that keeps IBT emitted whatever the
// input's note says (decision 95): tests check its invariant on Debian's
// binaries, whose code is CET-ready but whose notes do not say so.
func ForceIBT(opts Options) Options {
	opts.forceIBT = true
	return opts
}

// ForceRelease returns opts with the layout dropping each function's
// analysis as it goes (releaseSize), as for the largest libraries.
func ForceRelease(opts Options) Options {
	opts.forceRelease = true
	return opts
}

// HasThunk reports whether uses of a GOT slot holding the function of
// this name go to a thunk (thunk.go): the address map's copies of such
// uses are direct calls and jumps, and lea of the thunk.
func HasThunk(name string) bool { return thunkKindOfName(name) != thunkNone }

// FailEmit returns opts with the code generation of the function of
// this name failing, so that the layout is redone without it.
func FailEmit(opts Options, name string) Options {
	opts.failEmit = name
	return opts
}
