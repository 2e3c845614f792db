package agentdocs

import (
	"strings"
	"testing"
)

// TestServedLinks: relative links become the URI of the resource serving
// their target, anchor kept; web addresses, anchors alone and targets no
// resource serves stay as written.
func TestServedLinks(t *testing.T) {
	in := "[a](operations.md#flags) [b](https://example.com/x.md) [c](../examples/hello.ax) [d](#top) " +
		"[e](nope.md) [f](../policy/policy.schema.json) [g](../examples/nope.ax) [h](mailto:x@y)"
	want := "[a](axpool://docs/operations#flags) [b](https://example.com/x.md) [c](axpool://examples/hello.ax) [d](#top) " +
		"[e](nope.md) [f](axpool://policy/policy.schema.json) [g](../examples/nope.ax) [h](mailto:x@y)"
	if got := servedLinks("docs/language.md", in); got != want {
		t.Errorf("servedLinks:\n got %s\nwant %s", got, want)
	}
}

// TestResources: the list starts with the pages of docs/ in docPages
// order, each with its title; every URI is listed once.
func TestResources(t *testing.T) {
	res, err := Resources()
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range docPages {
		if r := res[i]; r.URI != DocsURIPrefix+p.name || r.Name != p.name || r.Title != p.title || r.MIMEType != "text/markdown" || r.Text == "" {
			t.Errorf("resource %d = %s %q %q %s (%d bytes), want the page %s", i, r.URI, r.Name, r.Title, r.MIMEType, len(r.Text), p.name)
		}
	}
	seen := map[string]bool{}
	for _, r := range res {
		if seen[r.URI] {
			t.Errorf("%s listed twice", r.URI)
		}
		seen[r.URI] = true
	}
	for _, uri := range []string{LanguageDocURI, PolicySchemaURI, LibsURIPrefix + "std-json", ExamplesURIPrefix + "hello.ax", ExamplesURIPrefix + "README.md"} {
		if !seen[uri] {
			t.Errorf("%s is not listed", uri)
		}
	}
}

// TestWriteProgram: the answer embeds the served language guide and the
// trimmed task; a blank task is an error naming the argument.
func TestWriteProgram(t *testing.T) {
	a, err := WriteProgram("  sum the squares of 1..100\n")
	if err != nil {
		t.Fatal(err)
	}
	if a.Guide.URI != LanguageDocURI || a.Guide.MIMEType != "text/markdown" || !strings.Contains(a.Guide.Text, "](axpool://docs/") {
		t.Errorf("guide = %s %s, links rewritten %v", a.Guide.URI, a.Guide.MIMEType, strings.Contains(a.Guide.Text, "](axpool://docs/"))
	}
	if !strings.Contains(a.Task, "that does this:\n\nsum the squares of 1..100\n\nCheck it") {
		t.Errorf("task message = %q", a.Task)
	}
	if _, err := WriteProgram(" \t"); err == nil || err.Error() != `prompt write_ax_program: argument "task" is required (what the program should do)` {
		t.Errorf("blank task: %v", err)
	}
}
