package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/tools/repair"
	"github.com/axpool/axpool/wire"
)

// `axpool check FILE` and `axpool repair FILE`: the diagnostics and
// auto-repair engines of boruna_check / boruna_repair (package repair) on a
// file. Exit status: check — 1 when any error diagnostic is found, else 0;
// repair — 0 when the repaired source verifies (no error diagnostic), else
// 1; both — 1 for an unreadable file, 2 for usage errors.

var checkFlags struct {
	json    bool
	libsDir string
}

var repairFlags struct {
	strategy string
	patchID  string
	write    bool
	json     bool
	libsDir  string
}

func init() {
	checkCmd := &cobra.Command{
		Use:   "check FILE [--json]",
		Short: "Print the diagnostics of an .ax file with suggested fixes (exit 1 on errors)",
		Long: `Analyse an .ax file and print every diagnostic, one per line:

  [E003] FILE:LINE:COL: message
    fix(E003-rename-x): description [confidence: Medium]

Warnings read "[E009] FILE:LINE:COL: warning: message". With --json, prints
the boruna_check response. Exits 1 when any error diagnostic is found,
0 otherwise (warnings only, or nothing).`,
		Args: oneFile,
		RunE: runCheck,
	}
	checkCmd.Flags().BoolVar(&checkFlags.json, "json", false, "print the boruna_check JSON response")
	libsData.register(checkCmd.Flags(), &checkFlags.libsDir, libsDirUsage)

	repairCmd := &cobra.Command{
		Use:   "repair FILE [--strategy best|all] [--patch-id ID] [--write] [--json]",
		Short: "Apply the suggested fixes of an .ax file and re-check it (exit 0 when it verifies)",
		Long: `Apply the patches of an .ax file's diagnostics, re-check, and print the
repaired source on stdout (with --write, write it back to FILE instead,
only when something changed). A summary of applied and skipped patches
goes to stderr. With --json, prints the boruna_repair response instead.

--strategy best (default) applies each diagnostic's highest-confidence
patch, all applies every patch; --patch-id applies only the patches with
that id, whatever the strategy. Exits 0 when the repaired source has no
error diagnostic, 1 otherwise.`,
		Args: oneFile,
		RunE: runRepair,
	}
	repairCmd.Flags().StringVar(&repairFlags.strategy, "strategy", repair.StrategyBest, "patch selection: best or all")
	repairCmd.Flags().StringVar(&repairFlags.patchID, "patch-id", "", "apply only the patches with this id (e.g. E003-rename-x)")
	repairCmd.Flags().BoolVar(&repairFlags.write, "write", false, "write the repaired source back to FILE")
	repairCmd.Flags().BoolVar(&repairFlags.json, "json", false, "print the boruna_repair JSON response")
	libsData.register(repairCmd.Flags(), &repairFlags.libsDir, libsDirUsage)

	rootCmd.AddCommand(checkCmd, repairCmd)
}

func runCheck(cmd *cobra.Command, args []string) error {
	path := args[0]
	src, err := ReadSourceFile(path)
	if err != nil {
		return err
	}
	if err := resolveDataDirs(cmd, nil, &checkFlags.libsDir, nil); err != nil {
		return err
	}
	libs := checkFlags.libsDir
	ds := repair.Diagnose(src, compiler.Options{File: path, LibsDir: libs})
	stdout := cmd.OutOrStdout()
	if checkFlags.json {
		out := wire.Envelope(true).
			Set("file", path).
			Set("diagnostics_count", len(ds)).
			Set("diagnostics", repair.DiagnosticsJSON(ds, path, libs))
		if err := printJSON(stdout, out); err != nil {
			return err
		}
	} else {
		repair.WriteText(stdout, ds)
	}
	for i := range ds {
		if ds[i].IsError() {
			return silentExit(exitFail)
		}
	}
	return nil
}

func runRepair(cmd *cobra.Command, args []string) error {
	path := args[0]
	switch repairFlags.strategy {
	case repair.StrategyBest, repair.StrategyAll:
	default:
		return fail(exitUsage, "axpool: unknown strategy %q (expected best or all)", repairFlags.strategy)
	}
	src, err := ReadSourceFile(path)
	if err != nil {
		return err
	}
	if err := resolveDataDirs(cmd, nil, &repairFlags.libsDir, nil); err != nil {
		return err
	}
	res, err := repair.Repair(src, compiler.Options{File: path, LibsDir: repairFlags.libsDir}, repairFlags.strategy, repairFlags.patchID)
	if err != nil {
		return fail(exitUsage, "axpool: %v", err)
	}
	if repairFlags.write && res.RepairedSource != string(src) {
		if err := repair.WriteFile(path, []byte(res.RepairedSource)); err != nil {
			return fail(exitFail, "error: %v", err)
		}
	}
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if repairFlags.json {
		if err := printJSON(stdout, repair.RepairJSON(res)); err != nil {
			return err
		}
	} else {
		if !repairFlags.write {
			io.WriteString(stdout, res.RepairedSource)
		}
		for _, a := range res.Applied {
			fmt.Fprintf(stderr, "applied %s (%s): %s\n", a.PatchID, a.DiagnosticID, a.Description)
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(stderr, "skipped %s: %s\n", s.DiagnosticID, s.Reason)
		}
		verdict := "passed"
		if !res.VerifyPassed {
			verdict = "failed"
		}
		fmt.Fprintf(stderr, "verify %s: %d diagnostics before, %d after\n", verdict, res.DiagnosticsBefore, res.DiagnosticsAfter)
		if !res.VerifyPassed {
			repair.WriteText(stderr, res.After)
		}
	}
	if !res.VerifyPassed {
		return silentExit(exitFail)
	}
	return nil
}

// printJSON prints o with a 2-space indent and a final newline.
func printJSON(w io.Writer, o *wire.Object) error {
	text, err := o.Pretty()
	if err != nil {
		return fail(exitFail, "error: %v", err)
	}
	fmt.Fprintln(w, string(text))
	return nil
}
