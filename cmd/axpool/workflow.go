package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/tools/workflow"
)

// `axpool workflow validate FILE [--json]` (docs/tools.md §2
// "boruna_workflow_validate"). Exit status: 0 valid, 1 invalid or
// unreadable, 2 usage.

var workflowCmd = &cobra.Command{
	Use:   "workflow",
	Short: "Validate workflow.json DAG documents",
}

var workflowValidateJSON bool

var workflowValidateCmd = &cobra.Command{
	Use:   "validate FILE [--json]",
	Short: "Validate a workflow.json file and print its execution order (exit 0 valid, 1 invalid)",
	Long: `Validate a workflow.json file (workflow DAG schema 1.0).

A valid workflow prints "OK: NAME VERSION (N steps, M edges)" and its
execution order, and exits 0. An invalid one prints every problem on
stderr as "KIND: message" (or "parse_error: message" when the file is not a
workflow document) and exits 1; so does an unreadable file.

With --json, prints the boruna_workflow_validate response on stdout, with
the same exit codes.`,
	Args: oneFile,
	RunE: func(cmd *cobra.Command, args []string) error {
		data, err := limitread.FileNamed(args[0], "workflow", MaxWorkflowFileBytes)
		if err != nil {
			return fail(exitFail, "error: %v", err)
		}
		if workflowValidateJSON {
			return printEnvelope(cmd, workflow.ValidateTool(string(data)))
		}
		w, err := workflow.Parse(data)
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "parse_error: %v\n", err)
			return silentExit(exitFail)
		}
		if err := workflow.Validate(w); err != nil {
			var ve *workflow.ValidationError
			if !errors.As(err, &ve) {
				return fail(exitFail, "error: %v", err)
			}
			for _, is := range ve.Issues {
				fmt.Fprintln(cmd.ErrOrStderr(), is.String())
			}
			return silentExit(exitFail)
		}
		order, err := workflow.ExecutionOrder(w)
		if err != nil {
			return fail(exitFail, "error: %v", err)
		}
		stdout := cmd.OutOrStdout()
		fmt.Fprintf(stdout, "OK: %s %s (%d %s, %d %s)\n", w.Name, w.Version,
			len(w.Steps), workflowPlural(len(w.Steps), "step"), len(w.Edges), workflowPlural(len(w.Edges), "edge"))
		fmt.Fprintln(stdout, "execution order:")
		for i, id := range order {
			fmt.Fprintf(stdout, "  %d. %s\n", i+1, id)
		}
		return nil
	},
}

// workflowPlural returns word with an "s" unless n is 1.
func workflowPlural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func init() {
	workflowValidateCmd.Flags().BoolVar(&workflowValidateJSON, "json", false, "print the boruna_workflow_validate JSON response")
	workflowCmd.AddCommand(workflowValidateCmd)
	rootCmd.AddCommand(workflowCmd)
}
