// Command axpool is the one binary of axpool: the MCP gateway (`mcp`,
// `serve`), the worker process (`worker`), the batch runner (`batch`), and
// the developer commands (`run`, `compile`, `ast`, `disasm`, `check`,
// `repair`, `policy`, …).
//
// Exit status: 0 on success, 1 when the program or operation failed,
// 2 on usage errors. Subcommands live in their own files and register
// themselves on rootCmd in an init function.
//
// Imports: compiler, compiler/syntax, gateway, gateway/batch,
// gateway/dispatch, gateway/upstream, internal/datadir, internal/jsonenc,
// internal/limitread, internal/mask, internal/node, internal/spell,
// internal/version, libs, policy, queue, scripts, templates, tools,
// tools/framework, tools/repair, tools/template, tools/workflow, vm, wire,
// worker and worker/handlers.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/internal/spell"
)

// Exit codes shared by every subcommand.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// exitError carries an exit status out of a command. If msg is non-empty it
// is printed to stderr as is.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// fail returns an error that makes axpool exit with code, printing msg.
func fail(code int, format string, args ...any) error {
	return &exitError{code: code, msg: fmt.Sprintf(format, args...)}
}

// silentExit returns an error that makes axpool exit with code without
// printing anything more (the command already reported).
func silentExit(code int) error { return &exitError{code: code} }

// positional returns the Args validator of a command that takes from min
// to max positional arguments (max < 0: any number from min); what names
// them for the message ("one FILE argument"). A wrong count is a usage
// error (exit 2) said on stderr: `axpool run: want one FILE argument, got
// 0 (see axpool run --help)`, or, for a command that takes none, `axpool
// mcp: unexpected argument "x" (it takes none; see axpool mcp --help)`.
func positional(min, max int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if n := len(args); n >= min && (max < 0 || n <= max) {
			return nil
		}
		name := cmd.CommandPath()
		if max == 0 {
			return printFail(cmd, exitUsage, "%s: unexpected argument %q (it takes none; see %s --help)", name, args[0], name)
		}
		return printFail(cmd, exitUsage, "%s: want %s, got %d (see %s --help)", name, what, len(args), name)
	}
}

// noArgs is the Args validator of a command without positional arguments.
var noArgs = positional(0, 0, "")

// oneFile is the Args validator of a command that takes one FILE.
var oneFile = positional(1, 1, "one FILE argument")

// libsDirUsage is the help text of every --libs-dir flag. It must not use
// backticks: pflag shows a back-quoted word of a usage string as the
// flag's value placeholder ("--libs-dir import "std-x"").
const libsDirUsage = `directory that import "std-x" resolves against`

// templatesDirUsage is the help text of every --templates-dir flag.
const templatesDirUsage = "directory holding the App templates"

var rootCmd = &cobra.Command{
	Use:           "axpool",
	Short:         "Sandboxed worker pool for .ax programs, exposed to AI agents over MCP",
	SilenceUsage:  true,
	SilenceErrors: true,
}

func init() {
	rootCmd.SetFlagErrorFunc(suggestFlag)
}

// suggestFlag adds to an unknown flag's error the command's flag it most
// likely means (internal/spell: the rule of every "did you mean"):
// `axpool: unknown flag: --concurency (did you mean --concurrency?)`.
// Subcommands inherit it from the root command.
func suggestFlag(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return err
	}
	name := ne.GetSpecifiedName() // one letter for a shorthand: no suggestion
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	if near, ok := spell.Nearest(name, names); ok {
		return fmt.Errorf("%w (did you mean --%s?)", err, near)
	}
	return err
}

func main() {
	os.Exit(run(os.Args[1:]))
}

// commandLine are the arguments of the command line being run (without the
// program name): what `axpool worker` runs its supervised engine process
// with (worker.go).
var commandLine []string

// stdoutWriter is the standard output of the commands (cobra's
// OutOrStdout) when run has none set: it keeps the first write error.
type stdoutWriter struct {
	w   io.Writer
	err error
}

func (s *stdoutWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if err != nil && s.err == nil {
		s.err = err
	}
	return n, err
}

// run executes the command line args and returns the exit status. A
// command that succeeded but could not write its standard output (a full
// disk, /dev/full) fails, exit status 1: `axpool run: write standard
// output: no space left on device`, where it exited 0 with its output
// lost.
func run(args []string) int {
	commandLine = args
	rootCmd.SetArgs(args)
	name := "axpool"
	if c, _, err := rootCmd.Find(args); err == nil {
		name = c.CommandPath()
	}
	defer setPipeWait(name)()
	var stdout *stdoutWriter
	if rootCmd.OutOrStdout() == os.Stdout {
		stdout = &stdoutWriter{w: os.Stdout}
		rootCmd.SetOut(stdout)
		defer rootCmd.SetOut(nil)
	}
	cmd, err := rootCmd.ExecuteC()
	if err == nil {
		if stdout != nil && stdout.err != nil {
			fmt.Fprintf(os.Stderr, "%s: write standard output: %v\n", cmd.CommandPath(), unwrapPathError(stdout.err))
			return exitFail
		}
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(os.Stderr, ee.msg)
		}
		return ee.code
	}
	// Anything else comes from cobra's argument/flag parsing: a usage error.
	fmt.Fprintf(os.Stderr, "axpool: %v\n", err)
	return exitUsage
}

// setPipeWait makes every file the command name reads through limitread
// say on stderr, when it is a named pipe that nothing has opened for
// writing after limitread.PipeWaitAfter, what it waits for: `axpool run:
// prog.ax is a named pipe: waiting for a writer to open it`, where the
// command hung silently. It returns the function that unsets it.
func setPipeWait(name string) (unset func()) {
	limitread.PipeWait = func(path string) {
		fmt.Fprintf(os.Stderr, "%s: %s is a named pipe: waiting for a writer to open it\n", name, path)
	}
	return func() { limitread.PipeWait = nil }
}

// unwrapPathError drops the "write /dev/stdout: " of an *os.PathError.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
