package gateway

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/tools"
)

// checkAgentDocs reads the agent docs through c (docs/tools.md §7 "agent
// docs"): every page of docs/, every example and the policy schema is
// listed and reads back as the repository's file, byte for byte but for
// the targets of markdown links; every relative link of a served page
// names a listed resource; each standard library is listed with its
// surface; an unknown URI is an error; the prompt write_ax_program hands
// over the language guide and the task.
func checkAgentDocs(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]mcp.Resource{}
	served := map[string]string{} // URI → text
	for _, r := range list.Resources {
		listed[r.URI] = r
	}
	want := map[string]string{ // URI → file in the repository
		agentdocs.PolicySchemaURI: "policy/policy.schema.json",
	}
	for _, name := range tools.Names() {
		want[agentdocs.ResultSchemaURIPrefix+name] = "" // checked below
	}
	pages, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	if len(pages) < 8 {
		t.Fatalf("%d pages in docs/", len(pages))
	}
	for _, p := range pages {
		want[agentdocs.DocsURIPrefix+strings.TrimSuffix(filepath.Base(p), ".md")] = filepath.Join("docs", filepath.Base(p))
	}
	libDirs, _ := filepath.Glob(filepath.Join("..", "libs", "std-*"))
	if len(libDirs) != 15 {
		t.Fatalf("%d libraries", len(libDirs))
	}
	for _, d := range libDirs {
		want[agentdocs.LibsURIPrefix+filepath.Base(d)] = "" // the surface, checked below
	}
	err = filepath.WalkDir(filepath.Join("..", "examples"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".go") {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join("..", "examples"), p)
		want[agentdocs.ExamplesURIPrefix+filepath.ToSlash(rel)] = filepath.Join("examples", rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != len(want) {
		t.Errorf("%d resources listed, want %d (every page, library and example file, the policy schema, each tool's result schema)", len(listed), len(want))
	}
	for uri, file := range want {
		r, ok := listed[uri]
		if !ok {
			t.Errorf("%s is not listed", uri)
			continue
		}
		if r.Description == "" || r.MIMEType == "" {
			t.Errorf("%s: description %q, mimeType %q", uri, r.Description, r.MIMEType)
		}
		res, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err != nil {
			t.Errorf("read %s: %v", uri, err)
			continue
		}
		if len(res.Contents) != 1 {
			t.Fatalf("%s: %d contents", uri, len(res.Contents))
		}
		tc, ok := res.Contents[0].(mcp.TextResourceContents)
		if !ok || tc.URI != uri || tc.MIMEType != r.MIMEType {
			t.Errorf("%s: contents %T, uri %q, mime %q", uri, res.Contents[0], tc.URI, tc.MIMEType)
		}
		served[uri] = tc.Text
		if file == "" {
			continue
		}
		disk, err := os.ReadFile(filepath.Join("..", file))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := linkTargets.ReplaceAllString(tc.Text, "](…)"), linkTargets.ReplaceAllString(string(disk), "](…)"); got != want {
			t.Errorf("%s: contents differ from %s beyond link targets (%d bytes vs %d)", uri, file, len(tc.Text), len(disk))
		}
		if !strings.HasSuffix(file, ".md") && tc.Text != string(disk) {
			t.Errorf("%s: contents differ from %s", uri, file)
		}
	}
	// Each tool's full result schema, which its compact outputSchema names.
	for _, name := range tools.Names() {
		if got := served[agentdocs.ResultSchemaURIPrefix+name]; got != string(tools.ResultSchema(name)) {
			t.Errorf("%s: result schema resource is not tools.ResultSchema: %.100s", name, got)
		}
	}
	// Every relative link of a served page names a served resource.
	links := 0
	for uri, text := range served {
		if listed[uri].MIMEType != "text/markdown" {
			continue
		}
		for _, m := range linkTargets.FindAllStringSubmatch(text, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			links++
			switch {
			case target == "", strings.HasPrefix(target, "https://"), strings.HasPrefix(target, "http://"):
			case strings.HasPrefix(target, "axpool://"):
				if _, ok := listed[target]; !ok {
					t.Errorf("%s links to %s, which is not served", uri, m[1])
				}
			default:
				t.Errorf("%s links to %s, which names no resource", uri, m[1])
			}
		}
	}
	if links < 100 {
		t.Errorf("%d links in the served pages, want many more", links)
	}
	if !strings.Contains(served["axpool://docs/language"], "](axpool://docs/operations#libraries-and-templates)") {
		t.Error("language.md's link to operations.md#libraries-and-templates is not axpool://docs/operations#libraries-and-templates")
	}
	json := served[agentdocs.LibsURIPrefix+"std-json"]
	for _, want := range []string{
		"# std-json\n\nstd-json: builders for fragments of JSON text.\n",
		"Import it with `import \"std-json\"`. Manifest: JSON-flavoured data extraction and manipulation utilities.\n" +
			"Required capabilities (of the effects it describes, for an App's policies()): none.\n",
		"\n```ax\ntype JsonResult { ok: Bool, value: String, error: String }\n\nfn json_ok(value: String) -> JsonResult\n",
		"\n// json_string_field: \"key\": \"value\" (neither escaped).\nfn json_string_field(key: String, value: String) -> String\n",
	} {
		if !strings.Contains(json, want) {
			t.Errorf("%sstd-json lacks %q:\n%s", agentdocs.LibsURIPrefix, want, json)
		}
	}
	if strings.Contains(json, "fn main") {
		t.Errorf("%sstd-json lists the self-test main", agentdocs.LibsURIPrefix)
	}
	if d := listed[agentdocs.LibsURIPrefix+"std-json"].Description; d != `Standard library std-json (import "std-json"): builders for fragments of JSON text. Its records and functions with their types and docs.` {
		t.Errorf("std-json description = %q", d)
	}
	if r := listed[agentdocs.ExamplesURIPrefix+"hello.ax"]; !strings.HasPrefix(r.Description, "Example: functions, `let`") {
		t.Errorf("hello.ax description = %q (from examples/README.md)", r.Description)
	}
	if _, err := c.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: "axpool://docs/nope"}}); err == nil {
		t.Error("an unknown resource was read")
	}

	prompts, err := c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != agentdocs.WriteProgramPrompt ||
		len(prompts.Prompts[0].Arguments) != 1 || prompts.Prompts[0].Arguments[0].Name != "task" || !prompts.Prompts[0].Arguments[0].Required {
		t.Fatalf("prompts = %+v", prompts.Prompts)
	}
	var req mcp.GetPromptRequest
	req.Params.Name = agentdocs.WriteProgramPrompt
	req.Params.Arguments = map[string]string{"task": "sum the squares of 1..100"}
	got, err := c.GetPrompt(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	guide, _ := os.ReadFile(filepath.Join("..", "docs", "language.md"))
	if len(got.Messages) != 2 || got.Messages[0].Role != mcp.RoleUser {
		t.Fatalf("messages = %+v", got.Messages)
	}
	er, ok := got.Messages[0].Content.(mcp.EmbeddedResource)
	if !ok {
		t.Fatalf("first message is %T, want the embedded guide", got.Messages[0].Content)
	}
	if tc, ok := er.Resource.(mcp.TextResourceContents); !ok || tc.URI != agentdocs.LanguageDocURI || tc.Text != served[agentdocs.LanguageDocURI] || len(tc.Text) < len(guide) {
		t.Errorf("embedded guide: %T %v", er.Resource, ok)
	}
	text, _ := got.Messages[1].Content.(mcp.TextContent)
	if !strings.Contains(text.Text, "\n\nsum the squares of 1..100\n\n") || !strings.Contains(text.Text, "boruna_check") ||
		!strings.Contains(text.Text, "the resource axpool://libs/<lib> (e.g. axpool://libs/std-json)") {
		t.Errorf("task message = %q", text.Text)
	}
	req.Params.Arguments = map[string]string{"task": "  "}
	if _, err := c.GetPrompt(ctx, req); err == nil || !strings.Contains(err.Error(), `argument "task" is required`) {
		t.Errorf("blank task: %v", err)
	}
}

// linkTargets finds the target of a markdown link.
var linkTargets = regexp.MustCompile(`\]\(([^)\s]+)\)`)

func TestAgentDocsStdio(t *testing.T) {
	checkAgentDocs(t, stdioClient(t, sharedStack(t).gw))
}

func TestAgentDocsHTTP(t *testing.T) {
	url := httpServer(t, sharedStack(t).gw, HTTPConfig{})
	for _, legacy := range []bool{false, true} {
		checkAgentDocs(t, httpClient(t, url, legacy))
	}
}

// Every executing tool's description ends with the line naming the
// language guide, and the initialize instructions name it and the prompt.
func TestDescriptionsPointToLanguageGuide(t *testing.T) {
	c := stdioClient(t, sharedStack(t).gw)
	res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		spec, _ := tools.SpecOf(tool.Name)
		if got := strings.HasSuffix(tool.Description, "\n"+strings.TrimPrefix(LanguageDocLine, "\n")); got != spec.Executes {
			t.Errorf("%s (executes %v): description ends with the guide line: %v\n%s", tool.Name, spec.Executes, got, tool.Description)
		}
		if strings.Count(tool.Description, agentdocs.LanguageDocURI) > 1 {
			t.Errorf("%s names the guide twice", tool.Name)
		}
	}
	if !strings.Contains(Instructions, "read the resource "+agentdocs.LanguageDocURI+" (the .ax language guide), or use the prompt "+agentdocs.WriteProgramPrompt) {
		t.Errorf("instructions do not point to the guide:\n%s", Instructions)
	}
}
