package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/vm"
)

// The live-capability flags of `axpool mcp`, `serve`, `worker`, `run` and
// `script run` (docs/capabilities.md): which handler set runs programs and
// what the operator grants it, into a node.Grants.

// registerGrants adds the grant flags to fs, bound to g; --handlers
// defaults to def (live, but mock for `axpool script run`).
func registerGrants(fs *pflag.FlagSet, g *node.Grants, def vm.HandlerKind) {
	fs.StringVar(&g.Handlers, "handlers", string(def), "capability handlers: live (real effects, each capability only if granted: --allow-net, --fs-root, --db, --llm-url) or mock (the reference's deterministic values; results say \"handlers\":\"mock\")")
	fs.StringSliceVar(&g.AllowNet, "allow-net", nil, "grant net.fetch to these hosts (`HOST`[:PORT][,…]; *.example.com for subdomains, * for any public host; HOST:PORT or [IPv6]:PORT for that port only; repeatable)")
	fs.StringSliceVar(&g.AllowPrivateNet, "allow-private-net", nil, "let net.fetch reach these non-public addresses (`CIDR`[,CIDR…], e.g. 127.0.0.1/32; repeatable)")
	fs.StringVar(&g.FSRoot, "fs-root", "", "grant fs.read and fs.write inside this `DIR` (paths resolve inside it only)")
	fs.BoolVar(&g.FSReadOnly, "fs-read-only", false, "with --fs-root: grant fs.read only")
	fs.StringVar(&g.DB, "db", "", "grant db.query on this SQLite `FILE` (created if missing, unless --db-read-only)")
	fs.BoolVar(&g.DBReadOnly, "db-read-only", false, "with --db: refuse every statement that writes")
	fs.StringVar(&g.LLMURL, "llm-url", "", "grant llm.call through this OpenAI-compatible API: its base `URL` (https://api.openai.com/v1) or its …/chat/completions endpoint (key from "+node.LLMKeyEnv+")")
	fs.StringVar(&g.LLMModel, "llm-model", "", "the `MODEL` llm.call asks --llm-url for")
}

// checkLocalGrants checks the grant flags of a command that runs in this
// process (`axpool run`, `axpool script run`; node.Grants.Check) and
// returns a usage error (exit 2) as "NAME: …". A grant given to a command
// whose default handlers are mock, without --handlers, says how to get
// live ones.
func checkLocalGrants(cmd *cobra.Command, name string, g *node.Grants) error {
	err := g.Check()
	if err == nil {
		return nil
	}
	if !g.Live() && !cmd.Flags().Changed("handlers") {
		return printFail(cmd, exitUsage, "%s: %v (mock is %s's default; add --handlers live)", name, err, name)
	}
	return printFail(cmd, exitUsage, "%s: %v", name, err)
}

// localHandlers builds the handler set of a run in this process from g,
// checked by checkLocalGrants (node.Grants.LocalHandlers: its warnings go
// to stderr); an error (an --fs-root holding /proc, …) exits 1 as
// "NAME: …". close releases the set.
func localHandlers(cmd *cobra.Command, name string, g *node.Grants, libsDir string) (set vm.HandlerSet, close func(), err error) {
	set, close, err = g.LocalHandlers(libsDir, cmd.ErrOrStderr())
	if err != nil {
		return nil, nil, printFail(cmd, exitFail, "%s: %v", name, err)
	}
	return set, close, nil
}
