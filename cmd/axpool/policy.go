package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/policy"
)

// `axpool policy validate [--json] FILE` and `axpool policy show FILE`
// (docs/tools.md §3, reference §5.5). Exit status: 0 valid, 2 validation
// error (also the usage-error code), 1 the file cannot be read.

var policyCmd = &cobra.Command{
	Use:   "policy",
	Short: "Validate and inspect capability policy files",
}

var policyValidateJSON bool

var policyValidateCmd = &cobra.Command{
	Use:   "validate [--json] FILE",
	Short: "Strictly validate a policy file (exit 0 valid, 2 invalid, 1 unreadable)",
	Long: `Strictly validate a policy file, as a CI gate.

On success prints "OK: FILE" and exits 0. A validation error prints
"error: policy.<kind>: ..." on stderr and exits 2; a file that cannot be
read prints "error: policy.io_error: ..." and exits 1.

With --json, prints {"ok":true} or {"errors":[{"error_kind":...,"message":...}],"ok":false}
on stdout (nothing on stderr), with the same exit codes.`,
	Args: oneFile,
	RunE: func(cmd *cobra.Command, args []string) error {
		path := args[0]
		_, err := policy.LoadFile(path)
		if policyValidateJSON {
			out := map[string]any{"ok": err == nil}
			var ve *policy.ValidationError
			if errors.As(err, &ve) {
				out["errors"] = []map[string]any{ve.Details()}
			}
			b, werr := jsonenc.Marshal(out) // map keys encode sorted
			if werr == nil {
				_, werr = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
			}
			if werr != nil {
				return fail(exitFail, "error: %v", werr)
			}
			if err != nil {
				return silentExit(policyExitCode(err))
			}
			return nil
		}
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "error: %s\n", err)
			return silentExit(policyExitCode(err))
		}
		fmt.Fprintf(cmd.OutOrStdout(), "OK: %s\n", path)
		return nil
	},
}

var policyShowCmd = &cobra.Command{
	Use:   "show FILE",
	Short: "Validate a policy file and print the effective policy",
	Args:  oneFile,
	RunE: func(cmd *cobra.Command, args []string) error {
		p, err := policy.LoadFile(args[0])
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "error: %s\n", err)
			return silentExit(policyExitCode(err))
		}
		fmt.Fprint(cmd.OutOrStdout(), policy.Show(p))
		return nil
	},
}

// policyExitCode maps a LoadFile error to the exit status: 1 for I/O
// errors, 2 for validation errors.
func policyExitCode(err error) int {
	var ve *policy.ValidationError
	if errors.As(err, &ve) && ve.Kind == policy.KindIOError {
		return exitFail
	}
	return exitUsage
}

func init() {
	policyValidateCmd.Flags().BoolVar(&policyValidateJSON, "json", false, "print a machine-readable JSON verdict on stdout")
	policyCmd.AddCommand(policyValidateCmd, policyShowCmd)
	rootCmd.AddCommand(policyCmd)
}
