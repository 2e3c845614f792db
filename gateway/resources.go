package gateway

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/docs"
	"github.com/axpool/axpool/examples"
)

// Agent docs (docs/tools.md §7 "agent docs"): the pages of docs/ an agent
// needs and every file of examples/, embedded in the binary and served as
// MCP resources, plus the prompt write_ax_program.

// URIs of the agent docs.
const (
	// LanguageDocURI is the .ax language guide (docs/language.md).
	LanguageDocURI = "axpool://docs/language"
	// ExamplesURIPrefix + a slash path under examples/ is an example
	// ("axpool://examples/hello.ax").
	ExamplesURIPrefix = "axpool://examples/"
)

// WriteProgramPrompt is the name of the prompt that hands an agent the
// language guide and a task.
const WriteProgramPrompt = "write_ax_program"

// docPage is one page of docs/ served as axpool://docs/<name>.
type docPage struct {
	name, title, description string
}

// docPages are the pages served, in list order.
var docPages = []docPage{
	{"language", "The .ax language", "The .ax language guide: syntax, types, built-ins, capabilities, imports, errors and limits. Read it before writing a program."},
	{"tools", "The MCP tools", "The contract of the boruna_* tools: envelope, parameters, results, error_kind and outcome values, progress, cancellation, tasks."},
	{"policy", "Capability policies", "The policy argument of boruna_run: shorthands, the object form, rules, budgets, net_policy, validation errors."},
	{"workflow", "workflow.json", "The workflow definition that boruna_workflow_validate checks."},
}

// addAgentDocs registers the resources and the prompt on s.
func addAgentDocs(s *server.MCPServer) error {
	var res []server.ServerResource
	for _, p := range docPages {
		text, err := fs.ReadFile(docs.FS, p.name+".md")
		if err != nil {
			return fmt.Errorf("gateway: embedded docs/%s.md: %w", p.name, err)
		}
		res = append(res, textResource(mcp.NewResource("axpool://docs/"+p.name, p.name,
			mcp.WithResourceDescription(p.description), mcp.WithMIMEType("text/markdown")), p.title, string(text)))
	}
	ex, err := exampleResources()
	if err != nil {
		return err
	}
	s.AddResources(append(res, ex...)...)
	s.AddPrompt(mcp.NewPrompt(WriteProgramPrompt,
		mcp.WithPromptTitle("Write an .ax program"),
		mcp.WithPromptDescription("Hands you the .ax language guide ("+LanguageDocURI+") and a task, to write a program for boruna_run."),
		mcp.WithArgument("task", mcp.RequiredArgument(),
			mcp.ArgumentDescription("What the program should do, e.g. \"sum the squares of 1..100\".")),
	), writeProgram)
	return nil
}

// textResource is a resource whose contents are text, fixed at start.
func textResource(r mcp.Resource, title, text string) server.ServerResource {
	r.Title = title
	contents := []mcp.ResourceContents{mcp.TextResourceContents{URI: r.URI, MIMEType: r.MIMEType, Text: text}}
	return server.ServerResource{Resource: r, Handler: func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return contents, nil
	}}
}

// readmeRow is a row of examples/README.md's table: | [path](path) | what it shows |.
var readmeRow = regexp.MustCompile(`^\| \[([^\]]+)\]\([^)]+\) \| (.+) \|$`)

// exampleResources returns one resource per embedded example file, by
// path; an example listed in examples/README.md has its row as
// description.
func exampleResources() ([]server.ServerResource, error) {
	readme, err := fs.ReadFile(examples.FS, "README.md")
	if err != nil {
		return nil, fmt.Errorf("gateway: embedded examples/README.md: %w", err)
	}
	shows := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		if m := readmeRow.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			shows[m[1]] = m[2]
		}
	}
	var paths []string
	err = fs.WalkDir(examples.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("gateway: embedded examples: %w", err)
	}
	sort.Strings(paths)
	var out []server.ServerResource
	for _, p := range paths {
		text, err := fs.ReadFile(examples.FS, p)
		if err != nil {
			return nil, fmt.Errorf("gateway: embedded examples/%s: %w", p, err)
		}
		desc := "Example: " + p
		switch ext := path.Ext(p); {
		case shows[p] != "":
			desc = "Example: " + shows[p]
		case p == "README.md":
			desc = "The list of examples and how each is run."
		case ext == ".out":
			desc = "What the example " + strings.TrimSuffix(p, ext) + " prints: stdout, then stderr, then [exit status N] when not 0."
		}
		out = append(out, textResource(mcp.NewResource(ExamplesURIPrefix+p, p,
			mcp.WithResourceDescription(desc), mcp.WithMIMEType(mimeOf(p))), "", string(text)))
	}
	return out, nil
}

// mimeOf is the MIME type of an example file.
func mimeOf(p string) string {
	switch path.Ext(p) {
	case ".md":
		return "text/markdown"
	case ".json":
		return "application/json"
	}
	return "text/plain"
}

// writeProgram answers prompts/get of write_ax_program: the language
// guide as an embedded resource, then the task with how to check the
// program. A missing or blank task is an error (JSON-RPC -32603 from
// mcp-go).
func writeProgram(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	task := strings.TrimSpace(req.Params.Arguments["task"])
	if task == "" {
		return nil, fmt.Errorf("prompt %s: argument \"task\" is required (what the program should do)", WriteProgramPrompt)
	}
	guide, err := fs.ReadFile(docs.FS, "language.md")
	if err != nil {
		return nil, err
	}
	return &mcp.GetPromptResult{
		Description: "Write an .ax program for a task, with the language guide",
		Messages: []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewEmbeddedResource(mcp.TextResourceContents{
				URI: LanguageDocURI, MIMEType: "text/markdown", Text: string(guide)})),
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(
				"Above is the guide to the .ax language. Write an .ax program with `fn main()` that does this:\n\n"+task+"\n\n"+
					"Check it with the boruna_check tool and fix every error it reports, then run it with boruna_run "+
					"(policy \"deny-all\" unless it needs capabilities) and show the result. "+
					"Examples are the resources "+ExamplesURIPrefix+"…; "+ExamplesURIPrefix+"README.md lists them.")),
		},
	}, nil
}
