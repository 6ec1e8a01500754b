package rewriter

// vforkChild emits, after a call to vfork at call site site: when it
// returned 0 (the child), call the runtime (blpp_rt_vfork_child), which
// points the child's %gs away from its parent's thread block before the
// child runs any more instrumented code (decision 94). The child borrows
// its parent's memory until it execs or exits, and what it ran there
// would count in the parent's records and move the parent's shadow
// stack; where vfork is a fork (under valgrind) the child records its
// fork prefixes instead, as after fork. The flags after a call are
// undefined [SysV x86-64 ABI 3.2.1]; the caller checks that the code
// after it does not read them.
func (fg *funcGen) vforkChild(site int32) {
	fg.childCall(site, fg.g.stubs.VforkChild)
}
