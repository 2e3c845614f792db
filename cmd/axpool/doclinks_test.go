package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/axpool/axpool/internal/golden"
)

// The repository's documentation must only point at what the repository
// holds (docs/architecture.md "Repository conventions"). These tests read
// every tracked .go and .md file.

var (
	// docPathRe finds a docs/… or examples/… path that is not part of a
	// longer path or URL; the path ends with a letter, digit or '_' (so a
	// sentence's full stop is not part of it).
	docPathRe = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./:-])((?:docs|examples)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`)
	// sharedDocRe finds names of documents that live outside the
	// repository and must not be cited by it.
	sharedDocRe = regexp.MustCompile(`CONTRACT\.md|LANGUAGE\.md|ARCHITECTURE\.md|SCRIPTS\.md|docs\/spec|docs\/reference`)
	// toolsCiteRe finds `docs/tools.md §2`, `§1–3`, `§1, §4, §5`, with an
	// optional quoted phrase right after the last number.
	toolsCiteRe = regexp.MustCompile(`docs\/tools\.md (§\d(?:[–-]\d)?(?:, ?§\d(?:[–-]\d)?)*)(?: "([^"]+)")?`)
	// quoteCiteRe finds `docs/<file>.md "Section or phrase"`.
	quoteCiteRe = regexp.MustCompile(`docs/([a-z]+\.md) "([^"]+)"`)
	// mdLinkRe finds the target of a markdown link or image.
	mdLinkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// commentBreakRe joins the lines of a Go comment, so that a citation
	// split over two lines is seen whole.
	commentBreakRe = regexp.MustCompile(`\n[ \t]*//[ \t]?`)
)

// repoDocFiles returns the repository's .go and .md files, tracked or not
// ignored (slash
// paths relative to root), from git when the tree is a git checkout, else
// by walking it (skipping hidden directories).
func repoDocFiles(t *testing.T, root string) []string {
	t.Helper()
	if out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.go", "*.md").Output(); err == nil && len(out) > 0 {
		var files []string
		for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
				files = append(files, f) // not deleted in the work tree
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".md")) {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// lineOf returns the 1-based line of offset off in text.
func lineOf(text string, off int) int { return strings.Count(text[:off], "\n") + 1 }

// TestDocLinks checks, in every tracked .go and .md file: that each
// docs/… and examples/… path exists; that no file but a test names the
// documents outside the repository (sharedDocRe); that each
// `docs/tools.md §N` names a section of docs/tools.md and a phrase quoted
// after it occurs in that section; that each `docs/<file>.md "…"` phrase
// occurs in that file; and, in .md files, that each relative link resolves
// to a file, and its #anchor to a heading.
func TestDocLinks(t *testing.T) {
	root := golden.RepoRoot(t)
	files := repoDocFiles(t, root)
	if len(files) < 50 {
		t.Fatalf("found %d .go and .md files under %s, want many more", len(files), root)
	}
	docs := map[string]*mdDoc{}
	doc := func(rel string) *mdDoc {
		if d, ok := docs[rel]; ok {
			return d
		}
		d := readMD(filepath.Join(root, filepath.FromSlash(rel)))
		docs[rel] = d
		return d
	}
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if !strings.HasSuffix(f, "_test.go") {
			for _, m := range sharedDocRe.FindAllStringIndex(text, -1) {
				t.Errorf("%s:%d: names %q, a document outside the repository; cite docs/ instead", f, lineOf(text, m[0]), text[m[0]:m[1]])
			}
		}
		for _, m := range docPathRe.FindAllStringSubmatchIndex(text, -1) {
			p := text[m[2]:m[3]]
			checked++
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				t.Errorf("%s:%d: %s does not exist in the repository", f, lineOf(text, m[2]), p)
			}
		}
		joined := text
		if strings.HasSuffix(f, ".go") {
			joined = commentBreakRe.ReplaceAllString(text, " ")
		}
		for _, m := range toolsCiteRe.FindAllStringSubmatch(joined, -1) {
			checked++
			tools := doc("docs/tools.md")
			for _, n := range sectionNumbers(m[1]) {
				sec, ok := tools.sections[n]
				if !ok {
					t.Errorf("%s: cites docs/tools.md §%d, which has no section §%d", f, n, n)
					continue
				}
				if m[2] != "" && !strings.Contains(normText(sec), normText(m[2])) {
					t.Errorf("%s: cites docs/tools.md §%d %q, which that section does not mention", f, n, m[2])
				}
			}
		}
		for _, m := range quoteCiteRe.FindAllStringSubmatch(joined, -1) {
			checked++
			d := doc("docs/" + m[1])
			if d.missing {
				continue // reported as a missing path above
			}
			if !strings.Contains(normText(d.text), normText(m[2])) {
				t.Errorf("%s: cites docs/%s %q, which docs/%s does not contain", f, m[1], m[2], m[1])
			}
		}
		if strings.HasSuffix(f, ".md") {
			for _, m := range mdLinkRe.FindAllStringSubmatchIndex(text, -1) {
				target := text[m[2]:m[3]]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				rel := f
				if file != "" {
					rel = path.Clean(path.Join(path.Dir(f), file))
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil || strings.HasPrefix(rel, "../") {
						t.Errorf("%s:%d: link %s: %s does not exist in the repository", f, lineOf(text, m[2]), target, rel)
						continue
					}
				}
				if anchor != "" {
					if !strings.HasSuffix(rel, ".md") {
						t.Errorf("%s:%d: link %s: an anchor into a file that is not markdown", f, lineOf(text, m[2]), target)
					} else if !doc(rel).anchors[anchor] {
						t.Errorf("%s:%d: link %s: %s has no heading #%s", f, lineOf(text, m[2]), target, rel, anchor)
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("checked %d references, want at least 100 (the code cites docs/ often)", checked)
	}
}

// mdDoc is a markdown file read for the link checks.
type mdDoc struct {
	missing  bool
	text     string
	anchors  map[string]bool
	sections map[int]string // "## §N …" → the section's text (docs/tools.md)
}

var sectionHeadRe = regexp.MustCompile(`^## §(\d+) `)

func readMD(p string) *mdDoc {
	b, err := os.ReadFile(p)
	if err != nil {
		return &mdDoc{missing: true, anchors: map[string]bool{}, sections: map[int]string{}}
	}
	d := &mdDoc{text: string(b), anchors: map[string]bool{}, sections: map[int]string{}}
	seen := map[string]int{}
	cur, inFence := -1, false
	var sec strings.Builder
	flush := func() {
		if cur >= 0 {
			d.sections[cur] = sec.String()
		}
		sec.Reset()
	}
	for _, line := range strings.Split(d.text, "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "#") {
			title := strings.TrimSpace(strings.TrimLeft(line, "#"))
			slug := headingSlug(title)
			if n := seen[slug]; n > 0 {
				d.anchors[slug+"-"+strconv.Itoa(n)] = true
			} else {
				d.anchors[slug] = true
			}
			seen[slug]++
			if strings.HasPrefix(line, "## ") {
				flush()
				cur = -1
				if m := sectionHeadRe.FindStringSubmatch(line); m != nil {
					cur, _ = strconv.Atoi(m[1])
				}
			}
		}
		sec.WriteString(line)
		sec.WriteByte('\n')
	}
	flush()
	return d
}

// headingSlug is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, every character other than letters, digits, '-' and '_'
// dropped.
func headingSlug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// sectionNumbers expands "§1–3, §5" to 1, 2, 3, 5.
func sectionNumbers(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimPrefix(strings.TrimSpace(part), "§")
		lo, hi, isRange := strings.Cut(strings.ReplaceAll(part, "–", "-"), "-")
		a, _ := strconv.Atoi(lo)
		b := a
		if isRange {
			b, _ = strconv.Atoi(hi)
		}
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	return out
}

// normText lower-cases s, drops markdown emphasis and code marks and
// collapses white space, for "does the doc mention this phrase" checks.
func normText(s string) string {
	s = strings.NewReplacer("*", "", "`", "", "_", " ").Replace(strings.ToLower(s))
	return strings.Join(strings.Fields(s), " ")
}

// TestOperationsDocListsEveryFlag checks that docs/operations.md documents
// every command of the binary under a "### axpool …" heading and, in that
// section, every flag of the command as `--name`. A heading may name
// sibling commands ("### axpool policy validate, show"), and a section that
// says "Every flag of `axpool X`" also counts the flags of X's section.
func TestOperationsDocListsEveryFlag(t *testing.T) {
	root := golden.RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{} // command path → section text
	var names []string
	var body bytes.Buffer
	flush := func() {
		for _, n := range names {
			sections[n] = body.String()
		}
		names = nil
		body.Reset()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			flush()
			if title, ok := strings.CutPrefix(line, "### axpool "); ok {
				parts := strings.Split(title, ", ")
				first := strings.Fields(parts[0])
				names = append(names, strings.Join(first, " "))
				for _, sib := range parts[1:] {
					names = append(names, strings.Join(append(first[:len(first)-1:len(first)-1], sib), " "))
				}
			}
			continue
		}
		body.WriteString(line + "\n")
	}
	flush()
	inheritRe := regexp.MustCompile("Every flag of `axpool ([a-z ]+)`")

	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			visit(sub)
		}
		name := strings.TrimPrefix(c.CommandPath(), "axpool ")
		if !c.Runnable() || c == rootCmd || name == "help" || strings.HasPrefix(name, "completion") {
			return
		}
		text, ok := sections[name]
		if !ok {
			t.Errorf("docs/operations.md has no \"### axpool %s\" section", name)
			return
		}
		if m := inheritRe.FindStringSubmatch(text); m != nil {
			text += sections[m[1]]
		}
		check := func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			if !strings.Contains(text, "`--"+f.Name+"`") {
				t.Errorf("docs/operations.md, section axpool %s: flag --%s is not documented", name, f.Name)
			}
		}
		c.Flags().VisitAll(check)
		c.InheritedFlags().VisitAll(check)
	}
	visit(rootCmd)
}
