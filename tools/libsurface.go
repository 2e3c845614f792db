package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/axpool/axpool/compiler/syntax"
)

// LibrarySurface renders the public surface of the standard library dir
// ("std-json") as markdown, for the MCP resource axpool://libs/<dir>
// (docs/tools.md §7 "agent docs"): a heading, the library's leading
// comment, the import line, the manifest's required capabilities and
// dependencies, then one code block with each record, enum and function
// signature in source order (as boruna_symbols writes them), each under
// its doc comment (the `//` lines right above it). The self-test `main`
// is left out: an importer never sees it. src is libs/<dir>/src/core.ax,
// manifest libs/<dir>/package.ax.json. An error means src does not parse
// or manifest is not JSON (the embedded libraries always do).
func LibrarySurface(dir string, src, manifest []byte) (string, error) {
	var m struct {
		Description  string            `json:"description"`
		Dependencies map[string]string `json:"dependencies"`
		Caps         []string          `json:"required_capabilities"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return "", fmt.Errorf("%s/package.ax.json: %w", dir, err)
	}
	f, errs := syntax.Parse(dir+"/src/core.ax", src)
	if len(errs) > 0 {
		return "", fmt.Errorf("%s/src/core.ax: %v", dir, errs[0])
	}
	lines := strings.Split(string(src), "\n")
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", dir)
	if head := commentText(leadingComment(lines)); len(head) > 0 {
		for _, l := range head {
			b.WriteString(l + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Import it with `import %q`. Manifest: %s.\n", dir, m.Description)
	caps := "none"
	if len(m.Caps) > 0 {
		caps = strings.Join(m.Caps, ", ")
	}
	fmt.Fprintf(&b, "Required capabilities (of the effects it describes, for an App's policies()): %s.\n", caps)
	if len(m.Dependencies) > 0 {
		var deps []string
		for d, v := range m.Dependencies {
			deps = append(deps, d+" "+v)
		}
		slices.Sort(deps)
		fmt.Fprintf(&b, "Dependencies: %s.\n", strings.Join(deps, ", "))
	}
	b.WriteString("\n```ax\n")
	first := true
	for _, it := range f.Items {
		var sig string
		var line int32
		switch d := it.(type) {
		case *syntax.FnDecl:
			if d.Name.Name == "main" {
				continue
			}
			sig, line = signatureOf(fnSymbol(d)), d.Pos().Line
		case *syntax.RecordDecl:
			sig, line = signatureOf(recordSymbol(d)), d.Pos().Line
		case *syntax.EnumDecl:
			sig, line = signatureOf(enumSymbol(d)), d.Pos().Line
		default:
			continue
		}
		if !first {
			b.WriteString("\n")
		}
		first = false
		for _, l := range commentAbove(lines, line) {
			b.WriteString(strings.TrimRight("// "+l, " ") + "\n")
		}
		b.WriteString(sig + "\n")
	}
	b.WriteString("```\n")
	return b.String(), nil
}

// leadingComment returns the `//` lines that open the file, up to the
// first line that is not one.
func leadingComment(lines []string) []string {
	n := 0
	for n < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[n]), "//") {
		n++
	}
	return lines[:n]
}

// commentAbove returns the text of the `//` lines right above the 1-based
// line (commentText).
func commentAbove(lines []string, line int32) []string {
	i := line - 1 // index of the line; lines[i-1] is the one above
	j := i
	for j > 0 && strings.HasPrefix(strings.TrimSpace(lines[j-1]), "//") {
		j--
	}
	return commentText(lines[j:i])
}

// commentText strips the `//` marker and one space from each line.
func commentText(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimPrefix(strings.TrimSpace(l), "//")
		out = append(out, strings.TrimPrefix(l, " "))
	}
	return out
}

// signatureOf is the "signature" field of a boruna_symbols symbol.
func signatureOf(o interface{ Get(string) (any, bool) }) string {
	s, _ := o.Get("signature")
	return s.(string)
}
