package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// `axpool script list|check|run` (docs/scripts.md "CLI"): the scripts of a
// directory, their static diagnostics, and a local run through the same
// checker, envelope and policy rules as an MCP call, with no queue and
// the mock capability handlers, or with --handlers live the live ones
// under the grant flags of `axpool run`.

// scriptsDirUsage is the help text of every --scripts-dir flag.
const scriptsDirUsage = "directory of named .ax scripts, each exposed as a typed tool (docs/scripts.md)"

var scriptFlags struct {
	dir, libsDir      string
	json              bool
	argsJSON          string
	allowDestructive  []string
	maxSteps, maxWall int64
	grants            node.Grants
}

var scriptCmd = &cobra.Command{
	Use:   "script",
	Short: "List, check and run the named scripts of a directory",
	Long: `A scripts directory holds named .ax scripts; axpool mcp and axpool serve
with --scripts-dir DIR expose each as an MCP tool whose input schema comes
from the parameter types of its main (see docs/scripts.md).`,
}

var scriptListCmd = &cobra.Command{
	Use:   "list [--scripts-dir DIR] [--json]",
	Short: "List the scripts: name, description, parameters, annotations, and the files that failed to load",
	Args:  noArgs,
	RunE:  runScriptList,
}

var scriptCheckCmd = &cobra.Command{
	Use:   "check [--scripts-dir DIR]",
	Short: "Print every static problem of the scripts as file:line:col: message (exit 1 if any)",
	Args:  noArgs,
	RunE:  runScriptCheck,
}

var scriptRunCmd = &cobra.Command{
	Use:   "run NAME [key=value ...] [--args-json JSON]",
	Short: "Run a script locally with the checks and envelope of an MCP call",
	Long: `Run the script NAME locally (no queue), with the argument checker,
policy rules and result envelope of an MCP call.

Capabilities run with the mock handlers by default: deterministic values,
no effect (net.fetch answers {"mock": true, "url": …} without fetching);
stderr then says so when the script declares a capability other than
ui.render, and the --json envelope says "handlers": "mock". --handlers
live runs them for real with the grants of axpool run and axpool mcp
(docs/capabilities.md): time.now and random always, the others only with
--allow-net HOST[:PORT],…, --fs-root DIR, --db FILE or --llm-url URL
--llm-model MODEL (key from AXPOOL_LLM_API_KEY); an ungranted capability
fails the run with "capability denied: net.fetch (not granted by this
server; see --allow-net)".

Arguments are key=value pairs parsed by the parameter's type (replicas=2,
dry_run=true, tags=a,b; a record parameter takes JSON: target={"host":"h"}),
or one JSON object with --args-json (key=value pairs override its members).
A script with confirm runs only with --allow-destructive NAME.

Without --json: prints the result (a String as its text, anything else as
compact JSON), then each ui_output item, then "steps: N"; a failure prints
its message (and the failure hook's suggestion) on stderr and exits 1.
With --json: prints the envelope an MCP client would get. Invalid
arguments, an unknown script and a destructive script without its grant
exit 2. Secrets are masked as in MCP results.`,
	Args: positional(1, -1, "a script NAME argument, then key=value arguments"),
	RunE: runScriptRun,
}

func init() {
	for _, c := range []*cobra.Command{scriptListCmd, scriptCheckCmd, scriptRunCmd} {
		c.Flags().StringVar(&scriptFlags.dir, "scripts-dir", "scripts", scriptsDirUsage)
		libsData.register(c.Flags(), &scriptFlags.libsDir, libsDirUsage)
	}
	scriptListCmd.Flags().BoolVar(&scriptFlags.json, "json", false, "print the catalogue as JSON")
	f := scriptRunCmd.Flags()
	f.BoolVar(&scriptFlags.json, "json", false, "print the result envelope")
	f.StringVar(&scriptFlags.argsJSON, "args-json", "", "the arguments as one JSON object")
	f.StringSliceVar(&scriptFlags.allowDestructive, "allow-destructive", nil, "destructive (confirm) scripts allowed to run, by name (comma-separated or repeated)")
	f.Int64Var(&scriptFlags.maxSteps, "max-steps", 0, "lower the step limit (default 10000000)")
	f.Int64Var(&scriptFlags.maxWall, "max-wall-ms", 0, "lower the wall-clock limit in ms (default: the script's timeout_ms, else none)")
	registerGrants(f, &scriptFlags.grants, vm.HandlersMock)
	scriptCmd.AddCommand(scriptListCmd, scriptCheckCmd, scriptRunCmd)
	rootCmd.AddCommand(scriptCmd)
}

// loadScripts loads the --scripts-dir directory. A directory without a
// script (no tool, no context script, no file that failed) is said on
// stderr, and is not an error (docs/scripts.md "CLI").
func loadScripts(cmd *cobra.Command, name string) (*scripts.Catalogue, error) {
	if err := resolveDataDirs(cmd, nil, &scriptFlags.libsDir, nil); err != nil {
		return nil, err
	}
	c, err := scripts.Load(scriptFlags.dir, scripts.Options{LibsDir: scriptFlags.libsDir})
	if err != nil {
		return nil, printFail(cmd, exitFail, "%s: %v (set --scripts-dir)", name, err)
	}
	if len(c.Tools) == 0 && c.Context == nil && len(c.Failed) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: no scripts in %s (a scripts directory holds .ax files; set --scripts-dir)\n", name, scriptFlags.dir)
	}
	return c, nil
}

func runScriptCheck(cmd *cobra.Command, _ []string) error {
	c, err := loadScripts(cmd, "axpool script check")
	if err != nil {
		return err
	}
	for _, d := range c.Diagnostics {
		fmt.Fprintln(cmd.OutOrStdout(), d.String())
	}
	if len(c.Diagnostics) > 0 {
		return silentExit(exitFail)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "ok: %d tools%s\n", len(c.Tools), contextNote(c))
	return nil
}

func contextNote(c *scripts.Catalogue) string {
	if c.Context == nil {
		return ""
	}
	return fmt.Sprintf(", context script %s", c.Context.Name)
}

func runScriptList(cmd *cobra.Command, _ []string) error {
	c, err := loadScripts(cmd, "axpool script list")
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if scriptFlags.json {
		out := c.ListJSON()
		b, err := out.Pretty()
		if err != nil {
			return fail(exitFail, "error: %v", err)
		}
		fmt.Fprintln(w, string(b))
		return nil
	}
	for _, s := range c.Tools {
		var hints []string
		a := s.Annotations()
		for _, h := range []struct {
			name string
			on   bool
		}{{"read-only", a.ReadOnly}, {"destructive", a.Destructive}, {"idempotent", a.Idempotent}, {"open-world", a.OpenWorld}} {
			if h.on {
				hints = append(hints, h.name)
			}
		}
		fmt.Fprintf(w, "%s  [%s]\n", s.Name, strings.Join(hints, ", "))
		for _, line := range strings.Split(s.Description, "\n") {
			if line != "" {
				fmt.Fprintf(w, "    %s\n", line)
			}
		}
		for _, p := range s.Params {
			req := ""
			if !p.Required() {
				req = " (optional)"
			}
			desc := ""
			if p.Description != "" {
				desc = " - " + p.Description
			}
			fmt.Fprintf(w, "  %s: %s%s%s\n", p.Name, p.Type, req, desc)
		}
	}
	if c.Context != nil {
		fmt.Fprintf(w, "context script: %s\n", c.Context.Name)
	}
	if len(c.Failed) > 0 {
		fmt.Fprintf(w, "failed to load (%d):\n", len(c.Failed))
		for _, f := range c.Failed {
			for _, d := range f.Diagnostics {
				fmt.Fprintf(w, "  %s\n", d.String())
			}
		}
	}
	return nil
}

func runScriptRun(cmd *cobra.Command, argv []string) error {
	name := argv[0]
	if scriptFlags.maxSteps < 0 || scriptFlags.maxWall < 0 {
		return printFail(cmd, exitUsage, "axpool script run: --max-steps and --max-wall-ms must not be negative")
	}
	if err := checkLocalGrants(cmd, "axpool script run", &scriptFlags.grants); err != nil {
		return err
	}
	c, err := loadScripts(cmd, "axpool script run")
	if err != nil {
		return err
	}
	s, ok := c.Lookup(name)
	if !ok {
		msg := fmt.Sprintf("axpool script run: unknown script %q", name)
		if sug, ok := c.Suggest(name); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", sug)
		}
		for _, f := range c.Failed {
			if f.Name == name {
				msg += "; it failed to load (see axpool script check)"
			}
		}
		return printFail(cmd, exitUsage, "%s", msg)
	}
	args, err := scripts.CLIArgs(s, scriptFlags.argsJSON, argv[1:])
	if err != nil {
		return printFail(cmd, exitUsage, "axpool script run: %v", err)
	}
	allowed := map[string]bool{}
	for _, n := range scriptFlags.allowDestructive {
		allowed[strings.TrimSpace(n)] = true
	}
	set, closeSet, err := localHandlers(cmd, "axpool script run", &scriptFlags.grants, scriptFlags.libsDir)
	if err != nil {
		return err
	}
	defer closeSet()
	env := &tools.Env{LibsDir: scriptFlags.libsDir, DefaultMemoryMB: tools.DefaultMemoryMB, Handlers: set}
	caller := &scripts.Caller{
		Catalogue: c, Allowed: allowed, GrantHint: "run it with",
		Run: func(ctx context.Context, job json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
			if scriptFlags.maxSteps > 0 || scriptFlags.maxWall > 0 {
				var j scripts.Job
				if err := json.Unmarshal(job, &j); err != nil {
					return nil, err
				}
				j.MaxSteps, j.MaxWallMs = scriptFlags.maxSteps, scriptFlags.maxWall
				job = j.Marshal()
			}
			return scripts.Execute(ctx, env, job, progress).MarshalJSON()
		},
	}
	masker := mask.New(os.Environ())
	checked, refusal := caller.Check(s, args)
	if refusal != nil {
		b, _ := refusal.MarshalJSON()
		reportScript(cmd.OutOrStdout(), cmd.ErrOrStderr(), masker.JSON(b))
		return silentExit(exitUsage)
	}
	if !scriptFlags.grants.Live() {
		if caps := effectCaps(s); caps != "" {
			fmt.Fprintf(cmd.ErrOrStderr(), "axpool script run: mock capability handlers (the default): %s gave mock values, not real effects; --handlers live with its grant runs it for real (see axpool script run --help)\n", caps)
		}
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	out, err := caller.Call(ctx, s, checked, nil)
	if err != nil {
		return printFail(cmd, exitFail, "axpool script run: %v", err)
	}
	if !reportScript(cmd.OutOrStdout(), cmd.ErrOrStderr(), masker.JSON(out)) {
		return silentExit(exitFail)
	}
	return nil
}

// effectCaps lists the capabilities s declares whose mock handler differs
// from a live one (all but ui.render), comma-separated; "" for none.
func effectCaps(s *scripts.Script) string {
	var names []string
	for _, c := range s.Caps {
		if c != policy.UiRender {
			names = append(names, c.String())
		}
	}
	return strings.Join(names, ", ")
}

// reportScript prints a script's result: its JSON with --json, else its
// text (scripts.WriteResultText). It reports success.
func reportScript(stdout, stderr io.Writer, out []byte) bool {
	if scriptFlags.json {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, out, "", "  "); err != nil {
			fmt.Fprintf(stderr, "error: the result is not JSON: %v\n", err)
			return false
		}
		fmt.Fprintln(stdout, pretty.String())
		f, err := wire.Summarize(out)
		return err == nil && f.Success
	}
	return scripts.WriteResultText(stdout, stderr, out)
}
