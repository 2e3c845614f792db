package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/tools/framework"
	"github.com/axpool/axpool/vm"
)

// `axpool app validate` and `axpool app test`: the App protocol
// (boruna_validate_app, boruna_framework_test; framework package).
// Exit status: 0 success (a valid App / every cycle passed), 1 compile
// error, protocol violation or failed cycle, 2 usage.

var appCmd = &cobra.Command{
	Use:   "app",
	Short: "Validate and test framework Apps (init / update / view)",
}

var appFlags struct {
	libsDir      string
	json         bool
	messages     string
	messagesFile string
}

var appValidateCmd = &cobra.Command{
	Use:   "validate FILE [--json] [--libs-dir D]",
	Short: "Check that an .ax file follows the App protocol",
	Long: `Compile FILE and check the App protocol: init() with no parameters,
update(state, msg) and view(state) pure and with consistent types, an
optional pure policies().

Without --json: prints "FILE: valid App (…)" and exits 0, or one
"FILE:LINE:COL: message" line per problem (compile errors included) on
stderr and exits 1. With --json: prints the boruna_validate_app response;
the exit status is 0 only for a valid App.`,
	Args: oneFile,
	RunE: runAppValidate,
}

var appTestCmd = &cobra.Command{
	Use:   "test FILE [--messages a:1,b] [--messages-file F] [--json] [--libs-dir D]",
	Short: "Drive an App through a list of messages",
	Long: `Compile FILE, run init() and policies(), then send each message
("tag:payload" or "tag") through update() and view(), checking each
cycle's effects against policies().

--messages takes a comma-separated list; --messages-file a file with one
message per line (empty lines skipped); messages from both are sent, the
--messages ones first. Without --json: prints the initial state, then for
each message its state, effect count and UI tree (brief encoding), and
exits 0; a failing cycle is reported on stderr with exit status 1.
With --json: prints the boruna_framework_test response.`,
	Args: oneFile,
	RunE: runAppTest,
}

func init() {
	for _, c := range []*cobra.Command{appValidateCmd, appTestCmd} {
		libsData.register(c.Flags(), &appFlags.libsDir, libsDirUsage)
		c.Flags().BoolVar(&appFlags.json, "json", false, "print the tool's JSON response")
	}
	appTestCmd.Flags().StringVar(&appFlags.messages, "messages", "", "comma-separated messages, e.g. increment:1,reset")
	appTestCmd.Flags().StringVar(&appFlags.messagesFile, "messages-file", "", "file with one message per line")
	appCmd.AddCommand(appValidateCmd, appTestCmd)
	rootCmd.AddCommand(appCmd)
}

// appSource reads an App's source file and resolves --libs-dir.
func appSource(cmd *cobra.Command, path string) (src []byte, libs string, err error) {
	if src, err = ReadSourceFile(path); err == nil {
		err = resolveDataDirs(cmd, nil, &appFlags.libsDir, nil)
	}
	return src, appFlags.libsDir, err
}

func runAppValidate(cmd *cobra.Command, argv []string) error {
	path := argv[0]
	src, libs, err := appSource(cmd, path)
	if err != nil {
		return err
	}
	if appFlags.json {
		out := framework.ValidateAppTool(string(src), libs)
		if err := printEnvelope(cmd, out); err != nil {
			return err
		}
		if valid, _ := out.Get("valid"); valid != true {
			return silentExit(exitFail)
		}
		return nil
	}
	prog, _, errs := framework.Compile(src, path, libs)
	if errs != nil {
		printCompileErrors(cmd.ErrOrStderr(), errs)
		return silentExit(exitFail)
	}
	p := framework.Check(prog)
	if !p.Valid() {
		for _, pr := range p.Problems {
			if pr.Line > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s:%d:%d: %s\n", path, pr.Line, pr.Col, pr.Message)
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", path, pr.Message)
			}
		}
		return silentExit(exitFail)
	}
	policies := "no policies()"
	if p.HasPolicies {
		policies = "with policies()"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: valid App (state %s, message %s, %s)\n", path, p.StateType, p.MessageType, policies)
	return nil
}

func runAppTest(cmd *cobra.Command, argv []string) error {
	path := argv[0]
	msgs, err := appMessages(appFlags.messages, appFlags.messagesFile)
	if err != nil {
		return err
	}
	src, libs, err := appSource(cmd, path)
	if err != nil {
		return err
	}
	ctx := cmd.Context() // never nil under rootCmd.Execute
	if appFlags.json {
		return printEnvelope(cmd, framework.FrameworkTest(ctx, string(src), msgs, framework.Options{LibsDir: libs}))
	}
	if len(msgs) > framework.MaxCycles {
		return fail(exitUsage, "error: too many messages: %d (at most %d)", len(msgs), framework.MaxCycles)
	}
	prog, mod, errs := framework.Compile(src, path, libs)
	stderr, stdout := cmd.ErrOrStderr(), cmd.OutOrStdout()
	if errs != nil {
		printCompileErrors(stderr, errs)
		return silentExit(exitFail)
	}
	p := framework.Check(prog)
	if !p.Valid() {
		for _, pr := range p.Problems {
			fmt.Fprintf(stderr, "%s: %s\n", path, pr.Message)
		}
		return silentExit(exitFail)
	}
	rt, err := framework.NewRuntime(ctx, mod, p, vm.Limits{})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
		return silentExit(exitFail)
	}
	fmt.Fprintf(stdout, "init: %s\n", vm.EncodeBrief(rt.State()))
	for i, m := range msgs {
		c, err := rt.Send(ctx, framework.ParseMessage(m))
		if err != nil {
			fmt.Fprintf(stderr, "%s: cycle %d (%q) failed: %v\n", path, i+1, m, err)
			return silentExit(exitFail)
		}
		fmt.Fprintf(stdout, "> %s\n  state: %s\n  effects: %d\n  ui: %s\n", m, vm.EncodeBrief(c.State), len(c.Effects), vm.EncodeBrief(c.UI))
		if len(c.Unknown) > 0 {
			fmt.Fprintf(stdout, "  unknown effects: %s\n", strings.Join(c.Unknown, ", "))
		}
	}
	fmt.Fprintf(stdout, "%d cycles passed\n", rt.Cycles())
	return nil
}

// appMessages collects the messages of `axpool app test`: the
// comma-separated --messages first, then the lines of --messages-file.
func appMessages(list, file string) ([]string, error) {
	var out []string
	if list != "" {
		out = append(out, strings.Split(list, ",")...)
	}
	if file != "" {
		b, err := limitread.FileNamed(file, "messages file", MaxMessagesFileBytes)
		if err != nil {
			return nil, fail(exitUsage, "error: --messages-file: %v", err)
		}
		out = append(out, framework.MessageLines(b)...)
	}
	return out, nil
}

func printCompileErrors(w io.Writer, errs compiler.ErrorList) {
	for _, e := range errs {
		if !e.IsWarning() {
			fmt.Fprintln(w, e.Error())
		}
	}
}
