package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// `axpool run FILE`: compile and run a program locally with the engine of
// boruna_run (tools.Call), the grants of `axpool mcp` and no queue.

var runFlags struct {
	json           bool
	maxSteps       int64
	policy         string
	maxWallMs      int64
	maxMemoryMB    int64
	maxOutputBytes int64
	trace          bool
	libsDir        string
	seed           int64
	grants         node.Grants
}

var runCmd = &cobra.Command{
	Use:   "run FILE",
	Short: "Compile and run an .ax program (its main) under a policy and limits",
	Long: `Compile and run an .ax program locally, as boruna_run does.

Without --json: prints the result (compact JSON), then each ui_output value,
then "steps: N", and exits 0; the program's debug output (__builtin_debug,
__builtin_debug_msg; at most 64 KiB) goes to stderr. A compile error prints "FILE:LINE:COL: E00N msg"
lines on stderr, a runtime error "FILE:LINE:COL: runtime error: msg" followed,
when the error happened in a called function, by its call stack (outermost
first, "FILE:LINE:COL: in FUNC" per frame, the middle of a stack deeper than
32 frames elided); both exit 1.

With --json: prints exactly the JSON object boruna_run returns (pretty) and
exits 0 on success, 1 on failure. Usage errors exit 2.

Capabilities run with the live handlers and the grants of axpool mcp
(docs/capabilities.md), like deno run: time.now and random always, the
others only with --allow-net HOST[:PORT],…, --fs-root DIR, --db FILE or
--llm-url URL --llm-model MODEL (key from AXPOOL_LLM_API_KEY);
--handlers mock gives the reference's deterministic values instead (the
--json result says "handlers":"mock"). A live --json result carries
its random_seed; --seed N runs with that seed again. Output is masked
like a server's answers (docs/tools.md §4).

The limit flags are boruna_run's max_steps and limits.* (docs/tools.md §2),
and 0 is a real limit, not "none": --max-steps 0 stops the program at its
first instruction, --max-wall-ms 0 at the first clock check after 1 ms,
--max-output-bytes 0 lets no output fit; --max-memory-mb must be at least 1.
(The --max-* flags of axpool mcp, serve and worker are operator
ceilings instead, where 0 means no ceiling.)`,
	Args: oneFile,
	RunE: runRun,
}

func init() {
	f := runCmd.Flags()
	f.BoolVar(&runFlags.json, "json", false, "print the boruna_run response object")
	f.Int64Var(&runFlags.maxSteps, "max-steps", tools.DefaultMaxSteps, "maximum executed VM instructions (0 = the program stops at its first instruction)")
	f.StringVar(&runFlags.policy, "policy", "allow-all", `capability policy: "allow-all", "deny-all" or a policy file`)
	f.Int64Var(&runFlags.maxWallMs, "max-wall-ms", 0, "wall-clock limit in ms (default none; 0 = stop at the first clock check after 1 ms)")
	f.Int64Var(&runFlags.maxMemoryMB, "max-memory-mb", tools.DefaultMemoryMB, "memory limit in MB, at least 1")
	f.Int64Var(&runFlags.maxOutputBytes, "max-output-bytes", 0, fmt.Sprintf("limit on the JSON size of result plus ui_output (default %d, the largest response the queue carries; 0 = no output fits, every run fails)", tools.DefaultMaxResponseBytes))
	f.BoolVar(&runFlags.trace, "trace", false, "record the first 500 executed instructions (stderr without --json)")
	f.Int64Var(&runFlags.seed, "seed", 0, "seed of random_int and random_float with the live handlers (boruna_run's seed: the random_seed of a --json result gives its values again; default a fresh seed)")
	libsData.register(f, &runFlags.libsDir, libsDirUsage)
	registerGrants(f, &runFlags.grants, vm.HandlersLive)
	rootCmd.AddCommand(runCmd)
}

func runRun(cmd *cobra.Command, argv []string) error {
	path := argv[0]
	flags := cmd.Flags()
	for _, name := range []string{"max-steps", "max-wall-ms", "max-memory-mb", "max-output-bytes", "seed"} {
		if v, _ := flags.GetInt64(name); v < 0 {
			return printFail(cmd, exitUsage, "axpool run: --%s must not be negative", name)
		}
	}
	// The one limit whose 0 is not a limit (boruna_run refuses
	// limits.max_memory_mb < 1): name the flag, not the tool argument.
	if runFlags.maxMemoryMB < 1 {
		return printFail(cmd, exitUsage, "axpool run: --max-memory-mb must be at least 1")
	}
	if err := checkLocalGrants(cmd, "axpool run", &runFlags.grants); err != nil {
		return err
	}
	if err := resolveDataDirs(cmd, nil, &runFlags.libsDir, nil); err != nil {
		return err
	}
	src, err := ReadSourceFile(path)
	if err != nil {
		return err
	}
	set, closeSet, err := localHandlers(cmd, "axpool run", &runFlags.grants, runFlags.libsDir)
	if err != nil {
		return err
	}
	defer closeSet()
	env := &tools.Env{LibsDir: runFlags.libsDir, DefaultMemoryMB: tools.DefaultMemoryMB, Handlers: set}
	if resp := tools.InvalidUTF8(env, src); resp != nil {
		return reportRun(cmd.OutOrStdout(), cmd.ErrOrStderr(), path, resp)
	}

	args := wire.NewObject().Set("source", string(src))
	switch runFlags.policy {
	case "allow-all", "deny-all":
		args.Set("policy", runFlags.policy)
	default:
		// At most policy.MaxFileBytes (tools.MaxPolicyBytes), without a BOM.
		data, err := policy.ReadFile(runFlags.policy)
		if err != nil {
			return reportPolicyFileError(cmd, err)
		}
		if !json.Valid(data) {
			_, perr := policy.Parse(data)
			return reportPolicyFileError(cmd, perr)
		}
		args.Set("policy", json.RawMessage(data))
	}
	if flags.Changed("max-steps") {
		args.Set("max_steps", runFlags.maxSteps)
	}
	limits := wire.NewObject()
	if flags.Changed("max-wall-ms") {
		limits.Set("max_wall_ms", runFlags.maxWallMs)
	}
	if flags.Changed("max-memory-mb") {
		limits.Set("max_memory_mb", runFlags.maxMemoryMB)
	}
	if flags.Changed("max-output-bytes") {
		limits.Set("max_output_bytes", runFlags.maxOutputBytes)
	}
	if limits.Len() > 0 {
		args.Set("limits", limits)
	}
	if runFlags.trace {
		args.Set("trace", true)
	}
	if flags.Changed("seed") {
		args.Set("seed", runFlags.seed)
	}
	raw, err := args.MarshalJSON()
	if err != nil {
		return fail(exitFail, "error: %v", err)
	}

	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	resp := tools.Call(ctx, env, "boruna_run", raw, nil)
	return reportRun(cmd.OutOrStdout(), cmd.ErrOrStderr(), path, resp)
}

// reportPolicyFileError reports a policy file that cannot be read, is over
// policy.MaxFileBytes or is not JSON (exit 1), as boruna_run would report
// the policy in --json mode.
func reportPolicyFileError(cmd *cobra.Command, err error) error {
	if runFlags.json {
		resp := tools.PolicyFailure(err)
		if b, perr := resp.Pretty(); perr == nil {
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
		}
		return silentExit(exitFail)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "error: %v\n", err)
	return silentExit(exitFail)
}

// reportRun prints a boruna_run response — its JSON with --json, else its
// text (tools.WriteRunText) — masked (mask.FromEnviron), and returns the
// exit status.
func reportRun(stdout, stderr io.Writer, path string, resp *wire.Object) error {
	masker := mask.FromEnviron()
	if runFlags.json {
		b, err := resp.Pretty()
		if err != nil {
			return fail(exitFail, "error: %v", err)
		}
		if masked := masker.JSON(b); !bytes.Equal(masked, b) { // compact
			var out bytes.Buffer
			if err := json.Indent(&out, masked, "", "  "); err != nil {
				return fail(exitFail, "error: %v", err)
			}
			b = out.Bytes()
		}
		fmt.Fprintln(stdout, string(b))
	} else {
		tools.WriteRunText(masker.Writer(stdout), masker.Writer(stderr), path, runFlags.libsDir, resp)
	}
	if success, _ := resp.Get("success"); success != true {
		return silentExit(exitFail)
	}
	return nil
}
