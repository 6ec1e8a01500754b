package wholerun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// runDir makes the directory of one run (the auditor, its map and the
// library links) under Root/runs. Run directories left by runs that were
// killed are removed once they are a week old (a program that runs
// longer may still dlopen by name through its library links).
func (c *Cache) runDir() (string, error) {
	base := filepath.Join(c.Root, "runs")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	if ents, err := os.ReadDir(base); err == nil {
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
				os.RemoveAll(filepath.Join(base, e.Name()))
			}
		}
	}
	d, err := os.MkdirTemp(base, "")
	if err != nil {
		return "", err
	}
	// The auditor recognises its entries in the environment by its own
	// directory as /proc/self/maps names it: no symbolic links.
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	return d, nil
}

// Command runs inst, the instrumented copy of the program prog, as the
// program itself (decision 105): the kernel starts it, from a mirror of
// prog's directory (Mirror), so that /proc/self/exe and $ORIGIN lead to
// prog's installation; argv[0] is argv0; the environment is env (nil: this
// process's) with, at its end, the entries that have the loader use the
// auditor and the library links (LD_AUDIT, LD_LIBRARY_PATH) and a control
// entry by which the auditor takes them out again before the program
// starts, so that the program and its children see env. A variable of
// env that the loader reads (LD_LIBRARY_PATH, LD_AUDIT) keeps working:
// the library links come before its directories, the auditor after its
// objects.
func (wp *Process) Command(inst, prog, argv0 string, args, env []string) (*exec.Cmd, error) {
	exe, err := wp.Mirror(inst, prog)
	if err != nil {
		return nil, err
	}
	if env == nil {
		env = os.Environ()
	}
	cmd := exec.Command(exe, args...)
	cmd.Args[0] = argv0
	cmd.Env = wp.Environ(env, exe)
	return cmd, nil
}

// Environ returns env with the entries Command adds at its end for a run
// of the file exe (a Mirror path). env's own LD_LIBRARY_PATH and LD_AUDIT
// (the last of each, as the loader and getenv take them), and its
// GLIBC_TUNABLES where the libraries need more static TLS (StaticTLS),
// become the added ones, which the auditor turns back into env's values;
// every other entry
// keeps its place. The auditor acts only in a process that runs exe: a
// shell script in between (valgrind's wrapper) runs as it would without
// blpp and passes the entries on.
func (wp *Process) Environ(env []string, exe string) []string {
	base, added := wp.EnvAdded(env, exe)
	return append(base, added...)
}

// EnvAdded splits Environ(env, exe) into env without the variables
// Command sets and the entries that go after it, in order.
func (wp *Process) EnvAdded(env []string, exe string) (base, added []string) {
	out := make([]string, 0, len(env)+4)
	var lib, aud, tun *string
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		switch k {
		case "LD_LIBRARY_PATH":
			lib = &v
		case "LD_AUDIT":
			aud = &v
		case "GLIBC_TUNABLES":
			if wp.Auditor == "" || wp.StaticTLS == 0 {
				out = append(out, e)
				continue
			}
			tun = &v
		case "BLPP_AUDIT_ENV", "BLPP_AUDIT_PAD":
			// blpp's own, from a program that blpp run started: the
			// auditor reads only the last control entry.
		default:
			out = append(out, e)
		}
	}
	if wp.Auditor == "" {
		// No auditor (a static program): nothing to add or take out.
		if lib != nil {
			added = append(added, "LD_LIBRARY_PATH="+*lib)
		}
		if aud != nil {
			added = append(added, "LD_AUDIT="+*aud)
		}
		return out, added
	}
	// Kept entries (the program had the variable) first, then those the
	// auditor removes, padded so that the removed ones and the control
	// entry are an even number of slots (blpp_audit.c).
	var kept, gone []string
	var keptCodes, goneCodes string
	if lib != nil {
		kept, keptCodes = append(kept, "LD_LIBRARY_PATH="+wp.LibDir+":"+*lib), keptCodes+"l"
	} else {
		gone, goneCodes = append(gone, "LD_LIBRARY_PATH="+wp.LibDir), goneCodes+"L"
	}
	if aud != nil {
		kept, keptCodes = append(kept, "LD_AUDIT="+*aud+":"+wp.Auditor), keptCodes+"a"
	} else {
		gone, goneCodes = append(gone, "LD_AUDIT="+wp.Auditor), goneCodes+"A"
	}
	if wp.StaticTLS > 0 {
		if tun != nil {
			kept, keptCodes = append(kept, "GLIBC_TUNABLES="+wp.tunables(*tun)), keptCodes+"t"
		} else {
			gone, goneCodes = append(gone, "GLIBC_TUNABLES="+wp.tunables("")), goneCodes+"T"
		}
	}
	// The runtime's own entries: the profile's name and the run's
	// follow directory (decision 167), in an entry the auditor takes out
	// when the program's environment has none of that name; where it has
	// one, that entry is the runtime's (an environment holds one entry
	// per name: os/exec keeps the last).
	for _, v := range []struct{ name, value, code string }{{"BLPP_PROFILE", wp.Profile, "B"}, {"BLPP_FOLLOW", wp.Follow, "F"}} {
		if v.value == "" {
			continue
		}
		own := -1
		for i, e := range out {
			if strings.HasPrefix(e, v.name+"=") {
				own = i
			}
		}
		if own < 0 {
			gone, goneCodes = append(gone, v.name+"="+v.value), goneCodes+v.code
		} else {
			out[own] = v.name + "=" + v.value
		}
	}
	if (len(gone)+1)%2 != 0 {
		gone, goneCodes = append(gone, "BLPP_AUDIT_PAD="), goneCodes+"P"
	}
	added = append(append(kept, gone...), "BLPP_AUDIT_ENV="+keptCodes+goneCodes+":"+exe)
	return out, added
}
