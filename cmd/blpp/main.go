// This file dispatches the verbs: it parses the command line, runs the
// subcommand and reports its error (the package doc is in doc.go).

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// usageError is a mistake in the command line (exit status 2, like any
// other refusal).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// command is one verb.
type command struct {
	name    string
	summary string
	usage   string
	run     func(c *ctx, args []string) error
	// hidden commands are for blpp's own use (the run auditor's
	// rewrite-module) and left out of the usage text.
	hidden bool
	// streams says the command's standard output is written as its work
	// goes (blpp run and demo, beside a program's own output), so it is
	// not buffered as the others' is.
	streams bool
}

// ctx carries the streams a command writes to, so tests can run main
// in-process.
type ctx struct {
	stdout, stderr io.Writer
	// cmd is the running command.
	cmd *command
	// fs is the flag set of the running command.
	fs *pflag.FlagSet
}

var commands []*command

func register(c *command) { commands = append(commands, c) }

func main() {
	stop := startProfiling()
	status := run(os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(status)
}

// run executes one blpp command line and returns the exit status: 0 on
// success, 2 on any error (bad usage, unreadable or refused input).
func run(args []string, stdout, stderr io.Writer) (status int) {
	defer func() {
		// The packages return errors for bad input; a panic here is a bug
		// in blpp. Say so in one line rather than print a stack.
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "blpp: internal error: %v (please report this with the input file)\n", r)
			status = 2
		}
	}()
	sort.Slice(commands, func(i, j int) bool { return commands[i].name < commands[j].name })
	if len(args) > 0 && (args[0] == "--version" || args[0] == "version") {
		writeVersion(stdout)
		return 0
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 && args[0] == "help" {
			// blpp help CMD is blpp CMD --help: usage, summary and flags.
			if find(args[1]) == nil {
				fmt.Fprintf(stderr, "blpp: unknown command %q (run 'blpp help' for the list)\n", args[1])
				return 2
			}
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		printUsage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c := find(args[0])
	if c == nil {
		fmt.Fprintf(stderr, "blpp: unknown command %q (run 'blpp help' for the list)\n", args[0])
		return 2
	}
	x := &ctx{stdout: stdout, stderr: stderr, cmd: c}
	var bw *bufio.Writer
	if !c.streams {
		// A whole-process profile's views run to hundreds of thousands
		// of lines, each its own write unbuffered.
		bw = bufio.NewWriterSize(stdout, 64<<10)
		x.stdout = bw
	}
	err := c.run(x, args[1:])
	if bw != nil {
		if ferr := bw.Flush(); err == nil && ferr != nil {
			err = fmt.Errorf("writing the output: %w", ferr)
		}
	}
	if err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code // blpp run: the program's own exit status
		}
		fmt.Fprintf(stderr, "blpp %s: %v\n", c.name, oneLine(err))
		return 2
	}
	return 0
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

func find(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: blpp COMMAND [flags] [args]")
	fmt.Fprintln(w, "\nblpp is a Ball-Larus path profiler for x86-64 Linux executables.")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands {
		if c.hidden {
			continue
		}
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nrun 'blpp help COMMAND' (or 'blpp COMMAND --help') for a command's flags,")
	fmt.Fprintln(w, "'blpp --version' for the version.")
}

// newFlags makes the running command's flag set; errors are returned, not
// printed.
func (c *ctx) newFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet(c.cmd.name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.SetInterspersed(true)
	c.fs = fs
	return fs
}

// parse parses flags; --help prints the command's usage to stdout.
func (c *ctx) parse(fs *pflag.FlagSet, args []string) error {
	cmd := c.cmd
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return &usageError{err.Error()}
	}
	if *help {
		fmt.Fprintf(c.stdout, "usage: blpp %s %s\n\n%s\n\nflags:\n%s", cmd.name, cmd.usage, cmd.summary, fs.FlagUsages())
		return pflag.ErrHelp
	}
	return nil
}
