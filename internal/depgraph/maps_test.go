package depgraph

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The maps of the house: the README's "Layout" table and the package
// table of docs/architecture.md. They must name every package of the
// module, and the architecture table's last column must be each package's
// rule in allowed, so that a new package or a new import across packages
// is drawn on the maps in the same change.

// section returns the text of the markdown section headed heading in the
// file at path (up to the next heading of the same level).
func section(t *testing.T, path, heading string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "\n"+heading+"\n")
	if start < 0 {
		t.Fatalf("%s has no %q section", path, heading)
	}
	text = text[start+1:]
	level := heading[:strings.IndexByte(heading, ' ')+1]
	if end := strings.Index(text[len(heading):], "\n"+level); end >= 0 {
		text = text[:len(heading)+end]
	}
	return text
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// named returns the package paths a text names in code spans: `a/b`, and
// `a/` for package a.
func named(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
		out[strings.TrimSuffix(m[1], "/")] = true
	}
	return out
}

// TestReadmeLayoutNamesEveryPackage: the README's Layout section names
// every package.
func TestReadmeLayoutNamesEveryPackage(t *testing.T) {
	names := named(section(t, filepath.Join("..", "..", "README.md"), "## Layout"))
	for _, p := range listPackages(t) {
		if name := rel(p.ImportPath); !names[name] {
			t.Errorf("README.md's Layout section does not name package %s", name)
		}
	}
}

// TestArchitectureTable: docs/architecture.md's package table has one row
// per package, whose last column lists exactly the module packages it may
// import (allowed), or "nothing".
func TestArchitectureTable(t *testing.T) {
	text := section(t, filepath.Join("..", "..", "docs", "architecture.md"), "## Packages")
	rows := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) != 3 {
			continue
		}
		pkg := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		if _, dup := rows[pkg]; dup {
			t.Errorf("docs/architecture.md: package %s has two rows", pkg)
		}
		imports := []string{}
		for _, m := range codeSpan.FindAllStringSubmatch(cells[2], -1) {
			imports = append(imports, m[1])
		}
		rows[pkg] = imports
	}
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		name := rel(p.ImportPath)
		seen[name] = true
		got, ok := rows[name]
		if !ok {
			t.Errorf("docs/architecture.md's package table has no row for %s", name)
			continue
		}
		want := slices.Sorted(slices.Values(allowed[name]))
		if !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			t.Errorf("docs/architecture.md: %s may import %s; its rule is %s", name, list(got), list(want))
		}
	}
	for name := range rows {
		if !seen[name] && name != "bench/" {
			t.Errorf("docs/architecture.md has a row for %s, which go list does not know", name)
		}
	}
}
