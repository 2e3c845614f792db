package handlers

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// Options are the parts of a Live set that are not grants.
type Options struct {
	// Resolver resolves net.fetch hosts; nil means net.DefaultResolver.
	Resolver Resolver
	// LLM answers llm.call instead of the OpenAIChat provider Grants.LLMURL
	// names (tests, other providers); nil means that provider.
	LLM Provider
	// Now is the clock of time.now; nil means time.Now.
	Now func() time.Time
	// OwnData are axpool's own files and directories (the database, the
	// scripts, the libraries, credentials, the executable…) that --fs-root
	// must not contain: programs could read or change them.
	OwnData []OwnPath
}

// OwnPath is a file or directory of axpool's own (Options.OwnData): What
// names it in the refusal ("the --db file"), Path locates it.
type OwnPath struct {
	What, Path string
}

// Live is the live handler set (docs/capabilities.md): real effects under
// the operator's grants, each run's handler bound to its policy, seed and
// memory. It is safe for concurrent use; Close releases the file root.
type Live struct {
	grants Grants
	net    *fetcher
	files  *files
	db     *database
	llm    Provider
	now    func() time.Time
}

// NewLive checks the grants and returns the live set: --fs-root must be a
// directory that neither contains nor lies inside /proc or /sys and
// contains none of opts.OwnData (checkFSRoot), --db a SQLite file that
// opens (created unless DBReadOnly),
// --llm-url an http(s) URL with a --llm-model, every --allow-net entry a
// host pattern (ParseHostPattern). Errors name the flag.
func NewLive(g Grants, opts Options) (*Live, error) {
	g.AllowNet = slices.Clone(g.AllowNet)
	g.AllowPrivateNet = slices.Clone(g.AllowPrivateNet)
	l := &Live{grants: g, now: opts.Now}
	if l.now == nil {
		l.now = time.Now
	}
	for i, p := range g.AllowNet {
		norm, err := ParseHostPattern(p)
		if err != nil {
			return nil, fmt.Errorf("--allow-net: %v", err)
		}
		l.grants.AllowNet[i] = norm
	}
	l.net = newFetcher(&l.grants, opts.Resolver)
	if g.FSRoot != "" {
		root, err := os.OpenRoot(g.FSRoot)
		if err != nil {
			return nil, fmt.Errorf("--fs-root: %v", err)
		}
		if err := checkFSRoot(g.FSRoot, opts.OwnData); err != nil {
			root.Close()
			return nil, err
		}
		l.files = &files{root: root}
	}
	if g.DB != "" {
		l.db = &database{path: g.DB, readOnly: g.DBReadOnly}
		c, err := l.db.open(1 << 20)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("--db %s: %v", g.DB, err)
		}
		c.Close()
	}
	switch {
	case opts.LLM != nil:
		l.llm = opts.LLM
		l.grants.llmProvider = true
	case g.LLMURL != "":
		endpoint, err := ChatCompletionsURL(g.LLMURL)
		if err != nil {
			l.Close()
			return nil, err
		}
		if g.LLMModel == "" {
			l.Close()
			return nil, errors.New("--llm-url needs --llm-model")
		}
		l.llm = NewOpenAIChat(endpoint, g.LLMModel, g.LLMKey)
	}
	return l, nil
}

// ChatCompletionsURL returns the chat completions endpoint --llm-url
// names: the URL itself when its path ends in /chat/completions, else the
// API's base URL (what every OpenAI-compatible client takes:
// https://api.openai.com/v1, http://localhost:11434/v1) with
// /chat/completions appended to its path; the query is kept. Errors: not
// an http(s) URL with a host.
func ChatCompletionsURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--llm-url %q: want an http(s) URL: the API's base URL (https://api.openai.com/v1) or its chat completions endpoint", s)
	}
	if p := strings.TrimSuffix(u.Path, "/"); !strings.HasSuffix(p, "/chat/completions") {
		u.Path = p + "/chat/completions"
		u.RawPath = ""
	}
	return u.String(), nil
}

// LLMEndpoint returns the URL llm.call posts to ("" when it is not granted
// through --llm-url): what `axpool worker` logs at start.
func (l *Live) LLMEndpoint() string {
	if p, ok := l.llm.(*OpenAIChat); ok {
		return p.URL
	}
	return ""
}

// Kind implements vm.HandlerSet: vm.HandlersLive.
func (l *Live) Kind() vm.HandlerKind { return vm.HandlersLive }

// ForRun implements vm.HandlerSet: a handler bound to run's policy (its
// net_policy), seed and memory limit; done closes the run's database
// connection, if it opened one.
func (l *Live) ForRun(run vm.RunInfo) (vm.Handler, func()) {
	r := &liveRun{set: l, info: run}
	mem := run.MaxMemory
	if mem <= 0 {
		mem = vm.DefaultMaxMemory
	}
	r.quota.left = mem
	return r, r.close
}

// Close releases the file root. Runs must have finished.
func (l *Live) Close() error {
	if l.files != nil {
		return l.files.root.Close()
	}
	return nil
}

// Granted reports, for each capability, the flag that would grant it
// ("" when granted): what `axpool worker` logs at start.
func (l *Live) Granted(c policy.Capability) (granted bool, flag string) {
	f := l.grants.grantFlag(c)
	return f == "", f
}

// liveRun is the handler of one run.
type liveRun struct {
	set    *Live
	info   vm.RunInfo
	rng    *rand.Rand
	conn   *dbConn
	quota  writeQuota // what fs.write may still write (files.write)
	linked bool       // quota.parent has been looked up
}

// Call implements vm.Handler.
func (r *liveRun) Call(ctx context.Context, e vm.Effect, args []vm.Value) (vm.Value, error) {
	c := e.Capability()
	if flag := r.set.grants.grantFlag(c); flag != "" {
		return vm.Value{}, notGranted(c, flag)
	}
	left, ok := vm.MemoryLeft(ctx)
	if !ok {
		left = vm.DefaultMaxMemory / 2
	}
	if !r.linked {
		// A named script's run, nested in a tool_call of another run, also
		// takes its writes from the calling run's quota.
		r.quota.parent, _ = ctx.Value(writeQuotaKey{}).(*writeQuota)
		r.linked = true
	}
	switch e {
	case vm.EHTTPGet:
		return r.set.net.fetch(ctx, request{method: "GET", url: args[0].AsString(), net: r.info.Policy.EffectiveNet()})
	case vm.EHTTPRequest:
		return r.set.net.fetch(ctx, request{method: args[0].AsString(), url: args[1].AsString(), body: args[2].AsString(), net: r.info.Policy.EffectiveNet()})
	case vm.EFsRead:
		return r.set.files.read(left, args[0].AsString())
	case vm.EFsWrite:
		return r.set.files.write(&r.quota, args[0].AsString(), args[1].AsString())
	case vm.EDbQuery:
		if r.conn == nil {
			c, err := r.set.db.open(r.info.MaxMemory)
			if err != nil {
				return vm.Value{}, dbRefusal(err)
			}
			r.conn = c
		}
		return r.set.db.query(ctx, r.conn, left, args[0].AsString())
	case vm.ELlmComplete:
		return complete(ctx, r.set.llm, left, args[0].AsString())
	case vm.EToolCall:
		return callTool(context.WithValue(ctx, writeQuotaKey{}, &r.quota), left, args[0].AsString(), args[1])
	case vm.EAsk:
		return ask(ctx, args[0].AsString())
	case vm.ENowMs:
		return vm.Int(r.set.now().UnixMilli()), nil
	case vm.ERandomInt:
		lo, hi := args[0].AsInt(), args[1].AsInt()
		if lo > hi {
			return vm.Value{}, fmt.Errorf("random_int: empty range [%d, %d]", lo, hi)
		}
		return vm.Int(randomInt(r.rand(), lo, hi)), nil
	case vm.ERandomFloat:
		return vm.Float(r.rand().Float64()), nil
	}
	return vm.MockHandler{}.Call(ctx, e, args) // step_input, ui_render: in-VM
}

// rand is the run's generator: PCG seeded with RunInfo.Seed, created at
// the first random call.
func (r *liveRun) rand() *rand.Rand {
	if r.rng == nil {
		r.rng = rand.New(rand.NewPCG(r.info.Seed, seedStream))
	}
	return r.rng
}

// seedStream is the PCG stream (its second seed word) of every run: the
// run's seed alone decides its random values.
const seedStream = 0x6178706f6f6c // "axpool"

// randomInt is a uniform integer in [lo, hi] (the whole int64 range
// included).
func randomInt(g *rand.Rand, lo, hi int64) int64 {
	span := uint64(hi) - uint64(lo)
	if span == ^uint64(0) {
		return int64(g.Uint64())
	}
	return int64(uint64(lo) + g.Uint64N(span+1))
}

func (r *liveRun) close() {
	if r.conn != nil {
		r.conn.Close()
		r.conn = nil
	}
}

// mockSet is the mock handler set.
type mockSet struct{}

// Mock returns the mock handler set: every capability answered with the
// reference's deterministic values (vm.MockHandler); results say
// "handlers":"mock".
func Mock() vm.HandlerSet { return mockSet{} }

func (mockSet) Kind() vm.HandlerKind { return vm.HandlersMock }

func (mockSet) ForRun(vm.RunInfo) (vm.Handler, func()) { return vm.MockHandler{}, func() {} }
