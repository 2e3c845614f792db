package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker/handlers"
)

// LLMKeyEnv names the environment variable that holds the LLM API key of
// --llm-url (never a flag: other local users can read a command line).
const LLMKeyEnv = "AXPOOL_LLM_API_KEY"

// grantFlags are the live-capability flags of `axpool mcp`, `serve` and
// `worker` (docs/capabilities.md): which handler set runs programs and
// what the operator grants it. The grants sit with the workers; a
// single-node gateway checks them at start and passes them to its worker
// processes (args).
type grantFlags struct {
	handlers        string
	allowNet        []string
	allowPrivateNet []string
	fsRoot          string
	fsReadOnly      bool
	db              string
	dbReadOnly      bool
	llmURL          string
	llmModel        string
}

// register adds the grant flags to fs.
func (g *grantFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.handlers, "handlers", string(vm.HandlersLive), "capability handlers: live (real effects, each capability only if granted: --allow-net, --fs-root, --db, --llm-url) or mock (the reference's deterministic values; results say \"handlers\":\"mock\")")
	fs.StringSliceVar(&g.allowNet, "allow-net", nil, "grant net.fetch to these hosts (`HOST`[,HOST…]; *.example.com for subdomains, * for any public host; repeatable)")
	fs.StringSliceVar(&g.allowPrivateNet, "allow-private-net", nil, "let net.fetch reach these non-public addresses (`CIDR`[,CIDR…], e.g. 127.0.0.1/32; repeatable)")
	fs.StringVar(&g.fsRoot, "fs-root", "", "grant fs.read and fs.write inside this `DIR` (paths resolve inside it only)")
	fs.BoolVar(&g.fsReadOnly, "fs-read-only", false, "with --fs-root: grant fs.read only")
	fs.StringVar(&g.db, "db", "", "grant db.query on this SQLite `FILE` (created if missing, unless --db-read-only)")
	fs.BoolVar(&g.dbReadOnly, "db-read-only", false, "with --db: refuse every statement that writes")
	fs.StringVar(&g.llmURL, "llm-url", "", "grant llm.call through this OpenAI-compatible chat completions `URL` (key from "+LLMKeyEnv+")")
	fs.StringVar(&g.llmModel, "llm-model", "", "the `MODEL` llm.call asks --llm-url for")
}

// grantFlagNames are the flags that grant something (all but --handlers).
var grantFlagNames = []string{"allow-net", "allow-private-net", "fs-root", "fs-read-only", "db", "db-read-only", "llm-url", "llm-model"}

// check validates the flags without opening anything: the handler kind,
// the grants that need a companion, and that mock handlers get no grants.
func (g *grantFlags) check(fs *pflag.FlagSet) error {
	switch vm.HandlerKind(g.handlers) {
	case vm.HandlersLive:
	case vm.HandlersMock:
		for _, name := range grantFlagNames {
			if fs.Changed(name) {
				return fmt.Errorf("--%s has no effect with --handlers mock", name)
			}
		}
	default:
		return fmt.Errorf("--handlers %q: want live or mock", g.handlers)
	}
	switch {
	case g.fsReadOnly && g.fsRoot == "":
		return errors.New("--fs-read-only needs --fs-root")
	case g.dbReadOnly && g.db == "":
		return errors.New("--db-read-only needs --db")
	case g.llmModel != "" && g.llmURL == "":
		return errors.New("--llm-model needs --llm-url")
	}
	return nil
}

// grants converts the flags (after check) to handlers.Grants, reading the
// LLM key from the environment.
func (g *grantFlags) grants() (handlers.Grants, error) {
	out := handlers.Grants{
		AllowNet: g.allowNet, FSRoot: g.fsRoot, FSReadOnly: g.fsReadOnly,
		DB: g.db, DBReadOnly: g.dbReadOnly, LLMURL: g.llmURL, LLMModel: g.llmModel,
	}
	for _, s := range g.allowPrivateNet {
		p, err := handlers.ParsePrivateNet(s)
		if err != nil {
			return out, fmt.Errorf("--allow-private-net: %v", err)
		}
		out.AllowPrivateNet = append(out.AllowPrivateNet, p)
	}
	if g.llmURL != "" {
		out.LLMKey = os.Getenv(LLMKeyEnv)
	}
	return out, nil
}

// handlerSet builds the handler set the flags name (after check): the mock
// set, or the live set with the grants (handlers.NewLive checks them:
// --fs-root a directory, --db a SQLite file, …). close releases it.
func (g *grantFlags) handlerSet() (set vm.HandlerSet, close func(), err error) {
	if vm.HandlerKind(g.handlers) == vm.HandlersMock {
		return handlers.Mock(), func() {}, nil
	}
	gr, err := g.grants()
	if err != nil {
		return nil, nil, err
	}
	l, err := handlers.NewLive(gr, handlers.Options{})
	if err != nil {
		return nil, nil, err
	}
	return l, func() { l.Close() }, nil
}

// live reports whether the flags select live handlers.
func (g *grantFlags) live() bool { return vm.HandlerKind(g.handlers) == vm.HandlersLive }

// args returns the flags as a worker's command line (the LLM key travels
// in the environment, which worker processes inherit).
func (g *grantFlags) args() []string {
	args := []string{"--handlers", g.handlers}
	if len(g.allowNet) > 0 {
		args = append(args, "--allow-net", strings.Join(g.allowNet, ","))
	}
	if len(g.allowPrivateNet) > 0 {
		args = append(args, "--allow-private-net", strings.Join(g.allowPrivateNet, ","))
	}
	if g.fsRoot != "" {
		args = append(args, "--fs-root", g.fsRoot)
	}
	if g.fsReadOnly {
		args = append(args, "--fs-read-only")
	}
	if g.db != "" {
		args = append(args, "--db", g.db)
	}
	if g.dbReadOnly {
		args = append(args, "--db-read-only")
	}
	if g.llmURL != "" {
		args = append(args, "--llm-url", g.llmURL, "--llm-model", g.llmModel)
	}
	return args
}

// grantedBy returns what boruna_capability_list reports of set's grants
// (tools.Env.Granted): the live set's Granted, which reads the grants
// only and so stays valid once the set is closed; nil for the mock set.
func grantedBy(set vm.HandlerSet) func(policy.Capability) (bool, string) {
	if l, ok := set.(*handlers.Live); ok {
		return l.Granted
	}
	return nil
}

// logGrants logs, once at start, which capabilities the set performs.
func logGrants(log *slog.Logger, set vm.HandlerSet) {
	l, ok := set.(*handlers.Live)
	if !ok {
		log.Info("capability handlers", "handlers", set.Kind())
		return
	}
	var granted, not []string
	for _, c := range []policy.Capability{policy.NetFetch, policy.FsRead, policy.FsWrite, policy.DbQuery, policy.LlmCall} {
		if ok, flag := l.Granted(c); ok {
			granted = append(granted, c.String())
		} else {
			not = append(not, c.String()+" ("+flag+")")
		}
	}
	log.Info("capability handlers", "handlers", set.Kind(), "granted", strings.Join(granted, ","), "not_granted", strings.Join(not, ", "))
}
