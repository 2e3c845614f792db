// Command axpool is the one binary of axpool: the MCP gateway (`mcp`,
// `serve`), the worker process (`worker`), and the developer commands
// (`run`, `compile`, `ast`, `disasm`, `check`, `repair`, `policy`, …).
//
// Exit status: 0 on success, 1 when the program or operation failed,
// 2 on usage errors. Subcommands live in their own files and register
// themselves on rootCmd in an init function.
//
// Imports: compiler, compiler/syntax, gateway, handlers, internal/jsonenc,
// internal/version, libs, policy, queue, scripts, templates, tools,
// tools/framework, tools/repair, tools/template, tools/workflow, vm, wire
// and worker.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
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

func main() {
	os.Exit(run(os.Args[1:]))
}

// run executes the command line args and returns the exit status.
func run(args []string) int {
	rootCmd.SetArgs(args)
	err := rootCmd.Execute()
	if err == nil {
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
