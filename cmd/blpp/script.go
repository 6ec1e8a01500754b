package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// maxScriptDepth bounds chains of scripts whose interpreter is itself a
// script, as the kernel does (it allows a few levels and then fails
// with ELOOP).
const maxScriptDepth = 4

// scriptLine is the most of a "#!" line the kernel reads (BINPRM_BUF_SIZE
// in Linux 5.1 and later); the rest of a longer line is ignored.
const scriptLine = 256

// followScript does for blpp run what execve does with a script: where
// prog (the path the program was found at) starts with "#!", the program
// that runs is the interpreter the line names, with the line's optional
// argument, then the script's path, then the script's own arguments
// [execve(2), "Interpreter scripts"]. argv is the command line as the
// user gave it (argv[0] the name they typed). It returns the program to
// instrument, its argv, and the interpreters followed (none for an ELF
// program). The interpreter is taken as written: the kernel does not
// search PATH for it.
func followScript(prog string, argv []string) (string, []string, []string, error) {
	var chain []string
	for depth := 0; ; depth++ {
		interp, arg, ok, err := scriptInterpreter(prog)
		if err != nil {
			return "", nil, nil, err
		}
		if !ok {
			return prog, argv, chain, nil
		}
		if depth == maxScriptDepth {
			return "", nil, nil, fmt.Errorf("%s: more than %d scripts run one another (%s)", argv[0], maxScriptDepth, strings.Join(chain, " -> "))
		}
		next := []string{interp}
		if filepath.Base(interp) == "env" && arg != "" && !strings.HasPrefix(arg, "-") && !strings.Contains(arg, "=") {
			// "#!/usr/bin/env NAME": env finds NAME in PATH and
			// execs it with argv[0] NAME. Profiling env itself would
			// tell the user nothing, so the program it starts is the
			// one instrumented.
			found, err := exec.LookPath(arg)
			if err != nil {
				return "", nil, nil, fmt.Errorf("%s: the interpreter its #! line asks env for: %w", prog, err)
			}
			next, interp, arg = []string{arg}, found, ""
		}
		if arg != "" {
			next = append(next, arg)
		}
		next = append(next, prog)
		argv = append(next, argv[1:]...)
		chain = append(chain, interp)
		prog = interp
	}
}

// scriptInterpreter reads the "#!" line of the file at path: the
// interpreter and its one optional argument (everything after the
// interpreter's name, trimmed, as Linux passes it). ok is false for a
// file that does not start with "#!".
func scriptInterpreter(path string) (interp, arg string, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", false, err
	}
	defer f.Close()
	buf := make([]byte, scriptLine)
	n, err := io.ReadFull(f, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return "", "", false, err
	}
	buf = buf[:n]
	if !bytes.HasPrefix(buf, []byte("#!")) {
		return "", "", false, nil
	}
	line := buf[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	s := strings.Trim(string(line), " \t")
	if s == "" {
		return "", "", false, fmt.Errorf("%s: a script whose #! line names no interpreter", path)
	}
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i], strings.Trim(s[i+1:], " \t"), true, nil
	}
	return s, "", true, nil
}
