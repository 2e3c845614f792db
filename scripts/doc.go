// Package scripts exposes a directory of named .ax scripts as typed MCP
// tools (docs/scripts.md; the model is Rune, whose tasks become MCP tools).
//
// It owns:
//   - the catalogue (catalogue.go): Load reads DIR/**/*.ax, maps each path
//     to a tool name ("ops/deploy.ax" → "ops__deploy"), compiles the file,
//     reads the comment block above `fn main` (directives.go: the
//     description and the `//!` directives), derives the input schema from
//     main's parameter types (types.go, the one table of parameter kinds),
//     derives the annotations from the declared capabilities, reads the
//     sidecar NAME.policy.json and reports every author mistake as a static
//     Diagnostic `file:line:col: message`. A reload (Options.Previous)
//     compiles only the files whose content changed;
//   - the one argument checker of MCP calls and `axpool script run`
//     (args.go: Script.CheckArgs and its messages);
//   - the script job (run.go): Script.NewJob carries the source and its
//     digest as loaded; Execute, on the worker, compiles it, converts the
//     checked JSON arguments to typed .ax values and calls main through
//     tools.RunMain under declared capabilities ∩ sidecar ∩ operator
//     ceiling;
//   - the call (call.go): Caller is shared by the gateway and `axpool
//     script run`: the destructive grant, the checks, the job, the failure
//     hook (fix_suggestion), and the context script's text;
//   - the command line (cli.go): a call's arguments from key=value pairs
//     and the catalogue as JSON; and the watch of a scripts directory for
//     hot reload (watch.go, fsnotify).
//
// scripts compiles scripts and reads main's types (compiler,
// compiler/syntax for positions), suggests names (internal/spell), clips
// quoted values (internal/text), converts parameter types and arguments
// through the one table of typed values (tools/typed), and runs script
// jobs through the tool engine (tools, tools/toolwire, vm); it knows
// nothing of NATS or MCP.
//
// Imports: compiler, compiler/syntax, internal/limitread, internal/spell, internal/text,
// policy, tools, tools/toolwire, tools/typed, vm and wire.
package scripts
