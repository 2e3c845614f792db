package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/golden"
)

var update = flag.Bool("update", false, "rewrite the expected outputs (.out) of examples/; review the diff")

// scriptsExample is the scripts directory of examples/, run as one
// example: `axpool script list --scripts-dir examples/scripts`.
const scriptsExample = "examples/scripts"

// gradedExample is the graded batch of examples/ (docs/operations.md
// "Graded batches"), run as one example: its saved results re-graded
// against its items, which runs nothing and so prints the same verdicts
// every time (the wall time and rate aside, wallTime).
const gradedExample = "examples/graded"

// wallTime is the wall time and rate of a batch's summary line, which
// differ from run to run.
var wallTime = regexp.MustCompile(` in [0-9.]+s \([0-9.]+ items/s\)`)

// exampleCommandPrefix starts the first line of an .ax example that names
// the command it is run with: `// $ axpool run --policy examples/policies/clock-and-random.json examples/capabilities.ax`.
const exampleCommandPrefix = "// $ "

// TestExamples runs every example of examples/ with the axpool binary, from
// the repository root as examples/README.md tells users to, and compares
// what it prints with the .out file next to it: stdout, then stderr, then
// "[exit status N]" when N is not 0. An .ax file is run with the command of
// its first line (exampleCommandPrefix) or `axpool run FILE`; a policy file
// (examples/policies/*.json) with `axpool policy validate FILE`; a
// workflow.json with `axpool workflow validate FILE`. Any other file, an
// example without its .out and an .out without its example fail the test.
// -update rewrites the .out files.
func TestExamples(t *testing.T) {
	t.Parallel()
	root := golden.RepoRoot(t)
	cases, outs := exampleCases(t, root)

	// At least the examples examples/README.md promises, by command.
	count := map[string]int{}
	for _, c := range cases {
		count[c.args[0]]++
		if path.Ext(c.file) == ".ax" {
			count[".ax"]++
		}
	}
	for _, w := range []struct {
		kind  string
		least int
	}{{".ax", 10}, {"run", 10}, {"app", 1}, {"policy", 2}, {"workflow", 2}} {
		if count[w.kind] < w.least {
			t.Errorf("examples/ has %d examples of kind %q, want at least %d", count[w.kind], w.kind, w.least)
		}
	}

	for _, c := range cases {
		delete(outs, c.out)
		t.Run(c.file, func(t *testing.T) {
			got := runExample(t, root, c.args)
			if c.file == gradedExample {
				got = wallTime.ReplaceAll(got, []byte(" in 0.0s (0.0 items/s)"))
			}
			golden.Check(t, filepath.Join(root, filepath.FromSlash(c.out)), got, *update)
		})
	}
	for out := range outs {
		t.Errorf("%s has no example next to it (remove it, or add the example)", out)
	}
}

// exampleCase is one example: its file and expected output (slash paths
// relative to the repository root) and the command line after "axpool".
type exampleCase struct {
	file, out string
	args      []string
}

// exampleCases lists the examples under root/examples and the .out files
// found there (a set, by slash path).
func exampleCases(t *testing.T, root string) ([]exampleCase, map[string]bool) {
	t.Helper()
	var cases []exampleCase
	outs := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "examples"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == scriptsExample {
				// A scripts directory (docs/scripts.md) is one example, its
				// catalogue; the scripts themselves run in script_test.go.
				cases = append(cases, exampleCase{file: rel, out: rel + ".out", args: []string{"script", "list", "--scripts-dir", rel}})
				return filepath.SkipDir
			}
			if rel == gradedExample {
				cases = append(cases, exampleCase{file: rel, out: rel + ".out",
					args: []string{"batch", rel + "/evals.jsonl", "--regrade", rel + "/results.jsonl", "--pass-at", "1,2"}})
				return filepath.SkipDir
			}
			return nil
		}
		switch ext := path.Ext(rel); {
		case ext == ".out":
			outs[rel] = true
		case rel == "examples/README.md", rel == "examples/embed.go":
		case ext == ".ax" || ext == ".json":
			args, err := exampleCommand(p, rel)
			if err != nil {
				t.Error(err)
				return nil
			}
			cases = append(cases, exampleCase{file: rel, out: strings.TrimSuffix(rel, ext) + ".out", args: args})
		default:
			t.Errorf("%s: not an example (.ax, policies/*.json, workflow.json) nor an expected output (.out)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return cases, outs
}

// exampleCommand returns the axpool arguments that run the example at p
// (rel: its slash path from the repository root).
func exampleCommand(p, rel string) ([]string, error) {
	switch {
	case strings.HasSuffix(rel, ".ax"):
		src, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		first, _, _ := strings.Cut(string(src), "\n")
		line, ok := strings.CutPrefix(strings.TrimRight(first, "\r"), exampleCommandPrefix)
		if !ok {
			return []string{"run", rel}, nil
		}
		words, err := shellWords(line)
		if err != nil {
			return nil, fmt.Errorf("%s:1: %v", rel, err)
		}
		if len(words) < 2 || words[0] != "axpool" {
			return nil, fmt.Errorf("%s:1: the command must start with axpool: %q", rel, line)
		}
		for _, w := range words[1:] {
			if w == rel {
				return words[1:], nil
			}
		}
		return nil, fmt.Errorf("%s:1: the command does not name the example itself (%s): %q", rel, rel, line)
	case strings.HasPrefix(rel, "examples/policies/") && strings.HasSuffix(rel, ".json"):
		return []string{"policy", "validate", rel}, nil
	case path.Base(rel) == "workflow.json":
		return []string{"workflow", "validate", rel}, nil
	}
	return nil, fmt.Errorf("%s: a JSON example is either examples/policies/*.json or a workflow.json", rel)
}

// runExample runs the axpool binary with args in dir and returns stdout,
// stderr and, for a non-zero status, "[exit status N]\n".
func runExample(t *testing.T, dir string, args []string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t), args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := append(stdout.Bytes(), stderr.Bytes()...)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		out = fmt.Appendf(out, "[exit status %d]\n", ee.ExitCode())
	default:
		t.Fatalf("axpool %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// shellWords splits a command line as a POSIX shell would for the simple
// lines of the examples: words separated by blanks, with '…' and "…"
// quoting (no escapes, variables or globs).
func shellWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\\' || c == '$' || c == '*' || c == '?' || c == '|' || c == '>' || c == '<' || c == ';' || c == '&' || c == '`':
			return nil, fmt.Errorf("unsupported shell character %q in %q", c, line)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in %q", quote, line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

func TestShellWords(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  bool
	}{
		{"axpool run examples/hello.ax", []string{"axpool", "run", "examples/hello.ax"}, false},
		{"axpool  app test x.ax --messages 'add:buy milk,save'", []string{"axpool", "app", "test", "x.ax", "--messages", "add:buy milk,save"}, false},
		{`a "b c"d ''`, []string{"a", "b cd", ""}, false},
		{"a 'b", nil, true},
		{"a > out", nil, true},
		{"a $HOME", nil, true},
	}
	for _, c := range cases {
		got, err := shellWords(c.in)
		if (err != nil) != c.err || strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
			t.Errorf("shellWords(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.err)
		}
	}
}
