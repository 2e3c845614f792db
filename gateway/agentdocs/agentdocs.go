// Package agentdocs is what axpool hands an agent to learn the language
// (docs/tools.md §7 "agent docs"): every page of docs/, every file of
// examples/, the surface of each standard library and the policy schema,
// embedded in the binary, as resources with axpool:// URIs, plus the
// prompt write_ax_program. Relative links inside served markdown are
// rewritten to the axpool:// URI of the resource they name. The gateway
// registers them on its MCP server; this package knows nothing of MCP.
//
// Imports: docs, examples, libs and tools.
package agentdocs

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/axpool/axpool/docs"
	"github.com/axpool/axpool/examples"
	"github.com/axpool/axpool/libs"
	"github.com/axpool/axpool/tools"
)

// URIs of the agent docs.
const (
	// LanguageDocURI is the .ax language guide (docs/language.md).
	LanguageDocURI = "axpool://docs/language"
	// ExamplesURIPrefix + a slash path under examples/ is an example
	// ("axpool://examples/hello.ax").
	ExamplesURIPrefix = "axpool://examples/"
	// DocsURIPrefix + a page name is a page of docs/ ("axpool://docs/tools").
	DocsURIPrefix = "axpool://docs/"
	// LibsURIPrefix + a library directory name is the public surface of a
	// standard library ("axpool://libs/std-json"; tools.LibrarySurface).
	LibsURIPrefix = "axpool://libs/"
	// LibsTemplate is the resource template of the standard libraries'
	// surfaces: LibsURIPrefix + "{" + LibsTemplateVar + "}".
	LibsTemplate = LibsURIPrefix + "{" + LibsTemplateVar + "}"
	// LibsTemplateVar is LibsTemplate's one variable: a library directory
	// name ("std-json").
	LibsTemplateVar = "lib"
	// PolicySchemaURI is policy/policy.schema.json, the JSON Schema of the
	// object form of a policy, which the tools' policy parameters name.
	PolicySchemaURI = tools.PolicySchemaURI
	// ResultSchemaURIPrefix prefixes the full result schema of each tool
	// ("axpool://schemas/results/boruna_run"), which its compact
	// outputSchema names (tools.OutputSchema).
	ResultSchemaURIPrefix = tools.ResultSchemaURIPrefix
)

// The prompt that hands an agent the language guide and a task.
const (
	// WriteProgramPrompt is its name.
	WriteProgramPrompt = "write_ax_program"
	// WriteProgramTitle is its title.
	WriteProgramTitle = "Write an .ax program"
	// WriteProgramDescription is its description.
	WriteProgramDescription = "Hands you the .ax language guide (" + LanguageDocURI + ") and a task, to write a program for boruna_run."
	// WriteProgramTaskArg is its one argument, required: the task.
	WriteProgramTaskArg = "task"
	// WriteProgramTaskDescription is the description of the task argument.
	WriteProgramTaskDescription = "What the program should do, e.g. \"sum the squares of 1..100\"."
)

// WriteProgramTasks are the sample tasks completion/complete offers for
// the task argument of WriteProgramPrompt: things an .ax program can do,
// each naming what it needs (a library, a capability).
var WriteProgramTasks = []string{
	"sum the squares of 1..100",
	"count the words of a text and print the five most frequent",
	"parse a list of numbers from a string and print their mean",
	"read a JSON document with json_parse and total the numbers of a list in it",
	"build a JSON object with std-json and print it",
	"validate the fields of a record with std-validation",
	"spawn two actors that exchange messages",
	"fetch a URL and report its status (needs net.fetch)",
	"ask an LLM to summarise a text (needs llm.call)",
	"wait for a second with sleep_ms and print the time (needs time.now)",
}

// Resource is one agent doc: a resource whose contents are text fixed in
// the binary.
type Resource struct {
	URI         string // axpool://… (the constants above)
	Name        string // the page name, library directory or example path
	Title       string // "" for none (only the pages of docs/ have one)
	Description string
	MIMEType    string // text/markdown, application/json or text/plain
	Text        string
}

// docPage is one page of docs/ served as axpool://docs/<name>.
type docPage struct {
	name, title, description string
}

// docPages are the pages served, in list order: every *.md of docs/ (the
// gateway's TestAgentDocsStdio checks that none is missing).
var docPages = []docPage{
	{"language", "The .ax language", "The .ax language guide: syntax, types, built-ins, capabilities, imports, errors and limits. Read it before writing a program."},
	{"tools", "The MCP tools", "The contract of the boruna_* tools: envelope, parameters, results, error_kind and outcome values, progress, cancellation, tasks."},
	{"policy", "Capability policies", "The policy argument of boruna_run: shorthands, the object form, rules, budgets, net_policy, validation errors."},
	{"capabilities", "Live capabilities", "What each capability does with real effects, and which server flag grants it (--allow-net, --fs-root, --db, --llm-url)."},
	{"workflow", "workflow.json", "The workflow definition that boruna_workflow_validate checks."},
	{"scripts", "Named scripts", "Named scripts: .ax files of a scripts directory served as typed MCP tools."},
	{"code-mode", "Code mode", "Upstream MCP servers (--upstreams): their file and secrets, connections, boruna_tool_search, how programs' tool calls travel."},
	{"operations", "Running axpool", "Commands, flags, modes (single node, fleet), limits and exit codes of the axpool binary."},
	{"architecture", "Architecture", "For people changing axpool: packages, processes, the job path."},
}

// Resources returns the agent docs in list order: the pages of docs/, the
// standard libraries, the policy schema, the examples. Errors: an embedded
// file is missing or a library's surface cannot be rendered (a broken
// build).
func Resources() ([]Resource, error) {
	var res []Resource
	for _, p := range docPages {
		text, err := fs.ReadFile(docs.FS, p.name+".md")
		if err != nil {
			return nil, fmt.Errorf("agentdocs: embedded docs/%s.md: %w", p.name, err)
		}
		res = append(res, Resource{URI: DocsURIPrefix + p.name, Name: p.name, Title: p.title,
			Description: p.description, MIMEType: "text/markdown", Text: servedLinks("docs/"+p.name+".md", string(text))})
	}
	lib, err := libResources()
	if err != nil {
		return nil, err
	}
	res = append(res, lib...)
	res = append(res, Resource{URI: PolicySchemaURI, Name: "policy.schema.json",
		Description: "The JSON Schema (Draft 2020-12) of the object form of a policy (axpool://docs/policy).",
		MIMEType:    "application/json", Text: string(tools.PolicySchemaJSON())})
	for _, name := range tools.Names() {
		res = append(res, Resource{URI: ResultSchemaURIPrefix + name, Name: name + ".result.schema.json",
			Description: "The full JSON Schema of " + name + "'s result object: every success and failure shape and field (its outputSchema is the compact form).",
			MIMEType:    "application/schema+json", Text: string(tools.ResultSchema(name))})
	}
	ex, err := exampleResources()
	if err != nil {
		return nil, err
	}
	return append(res, ex...), nil
}

// libResources returns one resource per embedded standard library: its
// public surface (tools.LibrarySurface), described by the first line of
// its leading comment.
func libResources() ([]Resource, error) {
	dirs, err := fs.Glob(libs.FS, "std-*")
	if err != nil {
		return nil, err
	}
	var out []Resource
	for _, dir := range dirs {
		src, err := fs.ReadFile(libs.FS, dir+"/src/core.ax")
		if err != nil {
			return nil, fmt.Errorf("agentdocs: embedded libs/%s: %w", dir, err)
		}
		man, err := fs.ReadFile(libs.FS, dir+"/package.ax.json")
		if err != nil {
			return nil, fmt.Errorf("agentdocs: embedded libs/%s: %w", dir, err)
		}
		text, err := tools.LibrarySurface(dir, src, man)
		if err != nil {
			return nil, fmt.Errorf("agentdocs: embedded libs/%s: %w", dir, err)
		}
		first, _, _ := strings.Cut(string(src), "\n")
		desc := "Standard library " + dir + " (import \"" + dir + "\"): its records and functions with their types and docs."
		if what, ok := strings.CutPrefix(first, "// "+dir+": "); ok {
			desc = "Standard library " + dir + " (import \"" + dir + "\"): " + strings.TrimSuffix(what, ".") +
				". Its records and functions with their types and docs."
		}
		out = append(out, Resource{URI: LibsURIPrefix + dir, Name: dir, Description: desc, MIMEType: "text/markdown", Text: text})
	}
	return out, nil
}

// mdLink finds the target of a markdown link: ](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// servedURI maps a slash path of the repository to the URI of the
// resource that serves it, "" when none does.
func servedURI(p string) string {
	switch {
	case p == "policy/policy.schema.json":
		return PolicySchemaURI
	case strings.HasPrefix(p, "docs/") && strings.HasSuffix(p, ".md") && !strings.Contains(p[len("docs/"):], "/"):
		name := strings.TrimSuffix(p[len("docs/"):], ".md")
		for _, d := range docPages {
			if d.name == name {
				return DocsURIPrefix + name
			}
		}
	case strings.HasPrefix(p, "examples/"):
		rel := p[len("examples/"):]
		if b, err := fs.Stat(examples.FS, rel); err == nil && !b.IsDir() {
			return ExamplesURIPrefix + rel
		}
	}
	return ""
}

// servedLinks rewrites each relative link of the markdown file (slash
// path file in the repository) to the URI of the resource serving its
// target, keeping the #anchor; links to a web address, anchors alone and
// targets no resource serves stay as written (the gateway's
// TestAgentDocsStdio checks that there are none of the last kind).
func servedLinks(file, text string) string {
	return mdLink.ReplaceAllStringFunc(text, func(m string) string {
		target := m[2 : len(m)-1]
		p, anchor, _ := strings.Cut(target, "#")
		if p == "" || strings.Contains(p, "://") || strings.HasPrefix(p, "mailto:") {
			return m
		}
		uri := servedURI(path.Clean(path.Join(path.Dir(file), p)))
		if uri == "" {
			return m
		}
		if anchor != "" {
			uri += "#" + anchor
		}
		return "](" + uri + ")"
	})
}

// readmeRow is a row of examples/README.md's table: | [path](path) | what it shows |.
var readmeRow = regexp.MustCompile(`^\| \[([^\]]+)\]\([^)]+\) \| (.+) \|$`)

// exampleResources returns one resource per embedded example file, by
// path; an example listed in examples/README.md has its row as
// description.
func exampleResources() ([]Resource, error) {
	readme, err := fs.ReadFile(examples.FS, "README.md")
	if err != nil {
		return nil, fmt.Errorf("agentdocs: embedded examples/README.md: %w", err)
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
		return nil, fmt.Errorf("agentdocs: embedded examples: %w", err)
	}
	sort.Strings(paths)
	var out []Resource
	for _, p := range paths {
		text, err := fs.ReadFile(examples.FS, p)
		if err != nil {
			return nil, fmt.Errorf("agentdocs: embedded examples/%s: %w", p, err)
		}
		if path.Ext(p) == ".md" {
			text = []byte(servedLinks("examples/"+p, string(text)))
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
		out = append(out, Resource{URI: ExamplesURIPrefix + p, Name: p, Description: desc, MIMEType: mimeOf(p), Text: string(text)})
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

// WriteProgramAnswer is the answer to prompts/get of write_ax_program:
// Description, then two user messages — Guide as an embedded resource,
// then Task's text.
type WriteProgramAnswer struct {
	Description string
	Guide       Resource // the language guide (URI, MIMEType and Text set)
	Task        string   // the task with how to check the program
}

// WriteProgram answers write_ax_program for task: the language guide,
// then the task with how to check the program. Errors: a missing or blank
// task.
func WriteProgram(task string) (*WriteProgramAnswer, error) {
	task = strings.TrimSpace(task)
	if task == "" {
		return nil, fmt.Errorf("prompt %s: argument \"task\" is required (what the program should do)", WriteProgramPrompt)
	}
	guide, err := fs.ReadFile(docs.FS, "language.md")
	if err != nil {
		return nil, err
	}
	return &WriteProgramAnswer{
		Description: "Write an .ax program for a task, with the language guide",
		Guide:       Resource{URI: LanguageDocURI, MIMEType: "text/markdown", Text: servedLinks("docs/language.md", string(guide))},
		Task: "Above is the guide to the .ax language. Write an .ax program with `fn main()` that does this:\n\n" + task + "\n\n" +
			"Check it with the boruna_check tool and fix every error it reports, then run it with boruna_run " +
			"(policy \"deny-all\" unless it needs capabilities) and show the result. " +
			"Examples are the resources " + ExamplesURIPrefix + "…; " + ExamplesURIPrefix + "README.md lists them. " +
			"Each standard library's records and functions, with their types and docs, are the resource " + LibsURIPrefix + "<lib> (e.g. " + LibsURIPrefix + "std-json).",
	}, nil
}
