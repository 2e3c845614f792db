package node

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker/handlers"
)

// LLMKeyEnv names the environment variable that holds the LLM API key of
// --llm-url (never a flag: other local users can read a command line).
const LLMKeyEnv = "AXPOOL_LLM_API_KEY"

// Grants are the live-capability settings of `axpool mcp`, `serve` and
// `worker` as their flags give them (docs/capabilities.md): which handler
// set runs programs (Handlers: "live" or "mock") and what the operator
// grants it. The grants sit with the workers; a single-node node checks
// them at start and passes them to its worker processes (Args).
type Grants struct {
	// Handlers is "live" or "mock".
	Handlers string
	// AllowPrivateNet are the CIDRs of --allow-private-net, as given.
	AllowPrivateNet []string
	// Grants holds the other grants; its AllowPrivateNet and LLMKey are
	// set by HandlerSet (the key from LLMKeyEnv).
	handlers.Grants
}

// handlerGrants converts g to handlers.Grants, reading the LLM key from
// the environment. Errors: an --allow-private-net value that is not a
// CIDR.
func (g *Grants) handlerGrants() (handlers.Grants, error) {
	out := g.Grants
	out.AllowPrivateNet = nil
	for _, s := range g.AllowPrivateNet {
		p, err := handlers.ParsePrivateNet(s)
		if err != nil {
			return out, fmt.Errorf("--allow-private-net: %v", err)
		}
		out.AllowPrivateNet = append(out.AllowPrivateNet, p)
	}
	if g.LLMURL != "" {
		out.LLMKey = os.Getenv(LLMKeyEnv)
	}
	return out, nil
}

// HandlerSet builds the handler set g names: the mock set, or the live
// set with the grants (handlers.NewLive checks them: --fs-root a
// directory, --db a SQLite file, …). close releases it.
func (g *Grants) HandlerSet() (set vm.HandlerSet, close func(), err error) {
	if vm.HandlerKind(g.Handlers) == vm.HandlersMock {
		return handlers.Mock(), func() {}, nil
	}
	gr, err := g.handlerGrants()
	if err != nil {
		return nil, nil, err
	}
	l, err := handlers.NewLive(gr, handlers.Options{})
	if err != nil {
		return nil, nil, err
	}
	return l, func() { l.Close() }, nil
}

// Live reports whether g selects live handlers.
func (g *Grants) Live() bool { return vm.HandlerKind(g.Handlers) == vm.HandlersLive }

// Args returns g as a worker's command line (the LLM key travels in the
// environment, which worker processes inherit).
func (g *Grants) Args() []string {
	args := []string{"--handlers", g.Handlers}
	if len(g.AllowNet) > 0 {
		args = append(args, "--allow-net", strings.Join(g.AllowNet, ","))
	}
	if len(g.AllowPrivateNet) > 0 {
		args = append(args, "--allow-private-net", strings.Join(g.AllowPrivateNet, ","))
	}
	if g.FSRoot != "" {
		args = append(args, "--fs-root", g.FSRoot)
	}
	if g.FSReadOnly {
		args = append(args, "--fs-read-only")
	}
	if g.DB != "" {
		args = append(args, "--db", g.DB)
	}
	if g.DBReadOnly {
		args = append(args, "--db-read-only")
	}
	if g.LLMURL != "" {
		args = append(args, "--llm-url", g.LLMURL, "--llm-model", g.LLMModel)
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
	attrs := []any{"handlers", set.Kind(), "granted", strings.Join(granted, ","), "not_granted", strings.Join(not, ", ")}
	if ep := l.LLMEndpoint(); ep != "" {
		attrs = append(attrs, "llm_endpoint", ep)
	}
	log.Info("capability handlers", attrs...)
}
