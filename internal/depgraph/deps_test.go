package depgraph

import (
	"bytes"
	"encoding/json"
	"go/build"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/axpool/axpool"

// allowed lists, for every package of the module (relative import paths),
// the module packages its non-test files may import. A package missing
// from the table fails the test. Tests may import more (the helpers
// internal/axtest, internal/golden, internal/mcptest, internal/pooltest,
// queue/queuetest).
var allowed = map[string][]string{
	// Leaves: the standard library only.
	"internal/arena":     nil,
	"internal/depgraph":  nil,
	"internal/jsonenc":   nil,
	"internal/limitread": nil,
	"internal/source":    nil,
	"internal/spell":     nil,
	"internal/text":      nil,
	"internal/mcptest":   nil,
	"internal/version":   nil,
	"libs":               nil,
	"templates":          nil,
	"docs":               nil,
	"examples":           nil,

	"wire":            {"internal/jsonenc"},
	"internal/golden": {"wire"},
	"internal/mask":   {"internal/jsonenc"},

	// The language: no NATS, no MCP, no wire.
	"policy":          {"internal/jsonenc", "internal/limitread", "internal/spell", "internal/text"},
	"vm":              {"internal/jsonenc", "internal/source", "internal/text", "policy"},
	"compiler/syntax": {"internal/arena", "internal/jsonenc", "internal/source", "internal/spell", "internal/text"},
	"compiler":        {"compiler/syntax", "internal/arena", "internal/spell", "internal/text", "policy", "vm"},

	// The tool engines.
	"tools/toolwire":  {"compiler", "internal/text", "policy", "vm", "wire"},
	"tools/typed":     {"compiler", "internal/spell", "internal/text", "vm", "wire"},
	"tools/workflow":  {"internal/text", "wire"},
	"tools/template":  {"compiler", "internal/limitread", "wire"},
	"tools/sealed":    {"compiler", "internal/text", "policy", "tools/toolwire", "vm", "wire"},
	"tools/framework": {"compiler", "compiler/syntax", "internal/text", "policy", "tools/toolwire", "vm", "wire"},
	"tools/repair":    {"compiler", "compiler/syntax", "internal/spell", "tools/toolwire", "vm", "wire"},
	"tools": {"compiler", "compiler/syntax", "internal/jsonenc", "internal/spell", "internal/text", "policy", "tools/framework",
		"tools/repair", "tools/sealed", "tools/template", "tools/toolwire", "tools/typed", "tools/workflow", "vm", "wire"},

	// Named scripts: compiled and checked here, run through the tool
	// engine on the workers.
	"scripts": {"compiler", "compiler/syntax", "internal/limitread", "internal/spell", "internal/text", "policy", "tools", "tools/toolwire", "tools/typed", "vm", "wire"},

	// The service: queue knows nothing of MCP or the tools; the gateway
	// never runs a VM (no compiler, no vm).
	"queue":           {"internal/jsonenc", "wire"},
	"queue/queuetest": {"queue"},
	// The worker is generic: it runs whatever its Executor does.
	"worker": {"internal/text", "queue", "wire"},
	// The executor of tool and script jobs, wired into the worker by cmd.
	"internal/engine": {"queue", "scripts", "tools", "vm", "wire", "worker"},
	// The data directories the binary embeds, and where a process finds them.
	"internal/datadir": {"libs", "templates"},
	// The assembly of a node (embedded NATS, queue, workers, gateway) for cmd.
	"internal/node": {"gateway", "gateway/dispatch", "gateway/upstream", "internal/engine", "internal/mask", "internal/version", "policy", "queue", "scripts", "tools", "vm", "worker", "worker/handlers"},
	// The one .ax test-case harness (imported by tests only).
	"internal/axtest": {"compiler", "policy", "vm"},
	// A real worker pool for tests (imported by tests only).
	"internal/pooltest": {"internal/engine", "queue", "queue/queuetest", "tools", "worker"},
	// The live capability handlers: worker side, never the gateway.
	"worker/handlers": {"internal/mask", "internal/text", "policy", "vm"},
	// The job client of the gateway and of axpool batch: no MCP.
	"gateway/dispatch": {"gateway/batch", "gateway/dispatch/fairshare", "internal/mask", "internal/text", "queue", "scripts", "tools", "wire"},
	"gateway":          {"gateway/agentdocs", "gateway/connlimit", "gateway/dispatch", "gateway/mcpver", "gateway/outbound", "gateway/tasks", "gateway/upstream", "internal/jsonenc", "internal/limitread", "internal/mask", "internal/text", "queue", "scripts", "tools", "wire"},
	// The HTTP server's connections: caps, the unauthenticated ones, the
	// file descriptors free.
	"gateway/connlimit": nil,
	// The upstream MCP servers of code mode: mcp-go clients, no NATS.
	"gateway/upstream": {"internal/mask", "internal/text"},
	// The byte budget of results being sent and their streamed writing: no MCP.
	"gateway/outbound": {"internal/jsonenc"},
	// What each request's protocol revision asks: MCP's wire, no axpool.
	"gateway/mcpver": {"internal/text"},
	// MCP tasks on the queue's durable store: no transport.
	"gateway/tasks": {"gateway/dispatch", "gateway/mcpver", "internal/text", "queue", "tools", "wire"},
	// Fair share of the queue between a gateway's callers: no queue, no MCP.
	"gateway/dispatch/fairshare": {"wire"},
	// The agent docs: embedded files and the libraries' surfaces, no MCP.
	"gateway/agentdocs": {"docs", "examples", "libs", "tools"},
	// batch runs calls through a function it is given: no queue, no MCP.
	"gateway/batch": {"internal/jsonenc", "internal/spell", "internal/text", "tools", "wire"},

	"cmd/axpool": {"compiler", "compiler/syntax", "gateway", "gateway/batch", "gateway/dispatch", "gateway/upstream", "internal/datadir", "internal/jsonenc", "internal/limitread", "internal/mask", "internal/node", "internal/spell", "internal/version", "libs", "policy", "queue", "scripts", "templates", "tools", "tools/framework", "tools/repair", "tools/template", "tools/workflow", "vm", "wire", "worker", "worker/handlers"},
}

// thirdParty lists the import path prefixes outside the standard library
// and the module that a package's non-test files may import; a package not
// listed may import none.
var thirdParty = map[string][]string{
	"vm":               {"golang.org/x/text/"},
	"tools":            {"github.com/santhosh-tekuri/jsonschema/", "golang.org/x/text/"},
	"queue":            {"github.com/google/uuid", "github.com/nats-io/", "golang.org/x/crypto/"},
	"queue/queuetest":  {"github.com/nats-io/"},
	"worker":           {"github.com/google/uuid", "github.com/prometheus/client_golang/"},
	"gateway/dispatch": {"github.com/google/uuid"},
	"gateway/outbound": {"github.com/google/uuid"},
	"gateway":          {"github.com/google/uuid", "github.com/mark3labs/mcp-go/", "github.com/prometheus/client_golang/"},
	"internal/mcptest": {"github.com/mark3labs/mcp-go/"},
	"gateway/mcpver":   {"github.com/mark3labs/mcp-go/"},
	"gateway/tasks":    {"github.com/google/uuid", "github.com/mark3labs/mcp-go/"},
	"gateway/upstream": {"github.com/mark3labs/mcp-go/"},
	"worker/handlers":  {"github.com/ncruces/go-sqlite3"},
	"scripts":          {"github.com/fsnotify/fsnotify"},
	"gateway/batch":    {"github.com/schollz/progressbar/", "golang.org/x/term"},
	"cmd/axpool":       {"github.com/spf13/"},
	"internal/node":    {"github.com/nats-io/", "github.com/prometheus/client_golang/"},
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

// listPackages returns every package of the module, as go list sees it.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(build.Default.GOROOT, "bin", "go")
	}
	cmd := exec.Command(goTool, "list", "-json", module+"/...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < len(allowed)/2 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

func rel(path string) string { return strings.TrimPrefix(path, module+"/") }

// TestImports: every package's module imports are in its row of allowed,
// its third-party imports match thirdParty, and every row names a package.
func TestImports(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		name := rel(p.ImportPath)
		seen[name] = true
		rule, ok := allowed[name]
		if !ok {
			t.Errorf("package %s has no row in allowed: add what it may import (and state it in its doc)", name)
			continue
		}
		for _, imp := range p.Imports {
			switch {
			case strings.HasPrefix(imp, module+"/"):
				if !slices.Contains(rule, rel(imp)) {
					t.Errorf("%s imports %s, which its rule does not allow (allowed: %s)", name, rel(imp), list(rule))
				}
			case strings.Contains(strings.Split(imp, "/")[0], "."):
				if !slices.ContainsFunc(thirdParty[name], func(prefix string) bool {
					return imp == strings.TrimSuffix(prefix, "/") || strings.HasPrefix(imp, prefix)
				}) {
					t.Errorf("%s imports third-party %s, which thirdParty does not allow", name, imp)
				}
			}
		}
	}
	for name := range allowed {
		if !seen[name] {
			t.Errorf("allowed has a row for %s, which go list does not know", name)
		}
	}
}

// TestDocsStateTheRule: each package's doc comment has an "Imports:"
// paragraph listing exactly its row of allowed ("Imports: nothing from the
// module." for an empty row).
func TestDocsStateTheRule(t *testing.T) {
	for _, p := range listPackages(t) {
		name := rel(p.ImportPath)
		rule, ok := allowed[name]
		if !ok {
			continue // TestImports reports it
		}
		doc := packageDoc(t, p)
		if doc == "" {
			t.Errorf("%s has no package doc comment", name)
			continue
		}
		stated, err := parseImports(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := slices.Sorted(slices.Values(rule))
		if !slices.Equal(stated, want) {
			t.Errorf("%s's doc states imports %s; its rule is %s", name, list(stated), list(want))
		}
	}
}

// packageDoc returns the package comment of p (from the first of its files
// that has one).
func packageDoc(t *testing.T, p pkg) string {
	t.Helper()
	for _, f := range p.GoFiles {
		af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			return af.Doc.Text()
		}
	}
	return ""
}

var importsPara = regexp.MustCompile(`(?s)(?:^|\n)Imports: (.*?)\.(?:\n|$)`)

// parseImports reads the "Imports:" paragraph of a package doc: "nothing
// from the module" or a list "a, b, c and d" (sorted on return).
func parseImports(doc string) ([]string, error) {
	m := importsPara.FindStringSubmatch(doc)
	if m == nil {
		return nil, errString(`doc has no "Imports: …." paragraph`)
	}
	text := strings.Join(strings.Fields(m[1]), " ")
	if text == "nothing from the module" {
		return []string{}, nil
	}
	var out []string
	for _, part := range strings.Split(strings.ReplaceAll(text, " and ", ", "), ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	slices.Sort(out)
	return out, nil
}

type errString string

func (e errString) Error() string { return string(e) }

func list(xs []string) string {
	if len(xs) == 0 {
		return "nothing from the module"
	}
	return strings.Join(xs, ", ")
}

// TestParseImports pins the paragraph grammar.
func TestParseImports(t *testing.T) {
	for doc, want := range map[string]string{
		"Package x does y.\n\nImports: nothing from the module.\n":      "",
		"Imports: wire, queue and\ntools/toolwire.\n\nMore.":            "queue tools/toolwire wire",
		"Intro.\nImports: a, b, c.":                                     "a b c",
		"Package p: every import is fine.\n\nImports: internal/text.\n": "internal/text",
	} {
		got, err := parseImports(doc)
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("parseImports(%q) = %v, %v; want %q", doc, got, err, want)
		}
	}
	if _, err := parseImports("Package p imports wire."); err == nil {
		t.Error("a doc without the paragraph was accepted")
	}
}
