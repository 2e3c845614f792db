package node

import (
	"errors"
	"fmt"
	"io"
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

// Grants are the live-capability settings of `axpool mcp`, `serve`,
// `worker`, `run` and `script run` as their flags give them (docs/capabilities.md):
// which handler set runs programs (Handlers: "live" or "mock") and what
// the operator grants it. The grants sit with the workers; a single-node
// node checks them at start and passes them to its worker processes
// (Args); `axpool run` and `axpool script run` build their handler set
// themselves (LocalHandlers).
type Grants struct {
	// Handlers is "live" or "mock".
	Handlers string
	// AllowPrivateNet are the CIDRs of --allow-private-net, as given.
	AllowPrivateNet []string
	// Grants holds the other grants; its AllowPrivateNet and LLMKey are
	// set by HandlerSet (the key from LLMKeyEnv).
	handlers.Grants
}

// Check checks the grants as the flags give them, without opening
// anything (a usage error): the handler kind, that mock handlers get no
// grant, the grants that need a companion, each --allow-net host pattern
// (handlers.ParseHostPattern: "*." and ".com" are refused) and
// --allow-private-net range, and --llm-url's form. Errors name the flag:
// "--allow-net: \"*.\": a wildcard needs a domain: …".
func (g *Grants) Check() error {
	switch vm.HandlerKind(g.Handlers) {
	case vm.HandlersLive:
	case vm.HandlersMock:
		if f := g.FirstFlag(); f != "" {
			return fmt.Errorf("--%s has no effect with --handlers mock", f)
		}
	default:
		return fmt.Errorf("--handlers %q: want live or mock", g.Handlers)
	}
	switch {
	case g.FSReadOnly && g.FSRoot == "":
		return errors.New("--fs-read-only needs --fs-root")
	case g.DBReadOnly && g.DB == "":
		return errors.New("--db-read-only needs --db")
	case g.LLMModel != "" && g.LLMURL == "":
		return errors.New("--llm-model needs --llm-url")
	case g.LLMURL != "" && g.LLMModel == "":
		return errors.New("--llm-url needs --llm-model")
	}
	for _, h := range g.AllowNet {
		if _, err := handlers.ParseHostPattern(h); err != nil {
			return fmt.Errorf("--allow-net: %v", err)
		}
	}
	if _, err := g.handlerGrants(""); err != nil {
		return err
	}
	if g.LLMURL != "" {
		if _, err := handlers.ChatCompletionsURL(g.LLMURL); err != nil {
			return err
		}
	}
	return nil
}

// FirstFlag returns the name (without dashes) of the first grant flag g
// sets, in the order of the flags' help, or "" when it sets none.
func (g *Grants) FirstFlag() string {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"allow-net", len(g.AllowNet) > 0}, {"allow-private-net", len(g.AllowPrivateNet) > 0},
		{"fs-root", g.FSRoot != ""}, {"fs-read-only", g.FSReadOnly},
		{"db", g.DB != ""}, {"db-read-only", g.DBReadOnly},
		{"llm-url", g.LLMURL != ""}, {"llm-model", g.LLMModel != ""},
	} {
		if f.set {
			return f.name
		}
	}
	return ""
}

// Warnings returns what the operator must hear at start about grants that
// pass Check: an --allow-private-net range wider than any private range
// (0.0.0.0/0, ::/0; handlers.PrivateNetWarning).
func (g *Grants) Warnings() []string {
	var out []string
	for _, s := range g.AllowPrivateNet {
		if p, err := handlers.ParsePrivateNet(s); err == nil {
			if w := handlers.PrivateNetWarning(p); w != "" {
				out = append(out, w)
			}
		}
	}
	return out
}

// logWarnings logs g's Warnings.
func (g *Grants) logWarnings(log *slog.Logger) {
	for _, w := range g.Warnings() {
		log.Warn(w)
	}
}

// handlerGrants converts g to handlers.Grants with the LLM key llmKey.
// Errors: an --allow-private-net value that is not a CIDR.
func (g *Grants) handlerGrants(llmKey string) (handlers.Grants, error) {
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
		out.LLMKey = llmKey
	}
	return out, nil
}

// HandlerSet builds the handler set g names: the mock set, or the live
// set with the grants and the LLM key llmKey (handlers.NewLive checks
// them: --fs-root a directory that holds neither /proc nor own, --db a
// SQLite file, …). close releases it.
func (g *Grants) HandlerSet(llmKey string, own []handlers.OwnPath) (set vm.HandlerSet, close func(), err error) {
	if vm.HandlerKind(g.Handlers) == vm.HandlersMock {
		return handlers.Mock(), func() {}, nil
	}
	gr, err := g.handlerGrants(llmKey)
	if err != nil {
		return nil, nil, err
	}
	l, err := handlers.NewLive(gr, handlers.Options{OwnData: own})
	if err != nil {
		return nil, nil, err
	}
	return l, func() { l.Close() }, nil
}

// LocalHandlers is the handler set of a run in this process (`axpool
// run`, `axpool script run`): g's, checked by Check first, with the LLM key of this process's
// environment; --fs-root must not hold /proc, libsDir, the --db file or
// the executable (ownData). Each of g's Warnings is written to warn, as
// "warning: …" lines. close releases the set.
func (g *Grants) LocalHandlers(libsDir string, warn io.Writer) (set vm.HandlerSet, close func(), err error) {
	for _, w := range g.Warnings() {
		fmt.Fprintln(warn, "warning: "+w)
	}
	return g.HandlerSet(os.Getenv(LLMKeyEnv), ownData(g.DB, libsDir, "", "", ""))
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
