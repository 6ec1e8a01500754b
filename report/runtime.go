package report

import (
	"fmt"
	"sort"

	"github.com/blpp/blpp/cct"
)

// runtimeLosses are the runtime statistics (cct.Profile.Stats) that say
// some execution was counted less exactly than the rest of the profile:
// not at all, or without its calling context. Each maps to a sentence
// for a count of them.
var runtimeLosses = map[string]string{
	"bad_funcs":          "%d runtime calls named a function the binary's table does not have; they were not counted",
	"bad_paths":          "%d path executions had a path number outside their function's paths and were not counted",
	"contexts_untracked": "%d user contexts (makecontext, swapcontext) had no room in the runtime's table and switch without their own thread block: the activations of their stacks may be taken for each other's (decision 122)",
	"dropped_counts":     "%d path executions were not counted: a hash table could not grow (the runtime's memory reached its limit)",
	"dropped_partials":   "%d unfinished activations (left by longjmp, an exception or the end of the run) were not recorded: the blocks they ran are missing from the counts",
	"dropped_records":    "%d calling contexts were not made (the runtime's memory reached its limit): their paths count without their context",
	"no_record":          "%d path executions ran in an activation that had no calling-context record: they count in their function's root context",
	"shadow_overflow":    "%d calls went deeper than the runtime's shadow stack (see rewrite --shadow-frames): their paths count without their context, and the paths of the callers they returned to lost the blocks before the call",
	"exit_mismatch":      "%d returns did not match the innermost activation the runtime knew of: the contexts around them may be wrong",
	"latency_dropped":    "%d path executions are in no latency distribution: their thread had no room left for more paths' distributions (decision 93); their counts and sums are exact",
	"vm_exits":           "%d child processes made in this process's memory (vfork, posix_spawn) exited without an exec: what they ran is counted in no profile (decision 101); this process's counts are exact",
}

// RuntimeWarnings returns one sentence for each runtime statistic of a
// profile that reports a loss of exactness, in a fixed order; none for a
// profile counted exactly. `blpp report` prints them on stderr, so a
// reader never takes such a profile's counts for exact ones.
func RuntimeWarnings(stats map[string]uint64) []string {
	var keys []string
	for k := range runtimeLosses {
		if stats[k] != 0 {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf(runtimeLosses[k], stats[k])+" ("+k+")")
	}
	return out
}

// EndNotes returns a sentence for each way a profile's flags say it
// ended other than the program's exit: a fatal signal, the dump signal,
// an exec. The counts are exact either way; what the profile covers is
// not the whole run, and a reader should know which part it is. `blpp
// report` prints them on stderr, `blpp run` after the program's output.
func EndNotes(flags cct.Flags) []string {
	var out []string
	if flags&cct.FlagFatalSignal != 0 {
		out = append(out, "a fatal signal ended the program: the profile counts what ran until then, the activations live at the signal as partial paths (the newest at an unknown block)")
	}
	if flags&cct.FlagDumpSignal != 0 {
		out = append(out, "written on the dump signal while the program ran on: the profile counts what ran until then")
	}
	if flags&cct.FlagExec != 0 {
		out = append(out, "the program replaced itself with another program (exec): the profile counts it up to the exec; blpp run follows an exec that instrumented code makes and gives the new program a profile of its own, reported after this one (not with --no-follow; with --libs none, only the program's calls of execve and its own system calls: the C library's other exec functions are not instrumented)")
	}
	return out
}
