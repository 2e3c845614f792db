package scripts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/axpool/axpool/tools"
)

// TestData runs every testdata/*.txt archive. An archive is a directory
// of files written `-- path --` then the content, plus expectation
// sections whose names start with "@":
//
//	a line of a file ending in `### COL: message` (one or more) expects that diagnostic
//	at that line and column (the suffix is removed before the file is
//	written); every diagnostic of the catalogue must be expected;
//	-- @tools --            one line per tool: "name hint,hint" (true hints) or "name -"
//	-- @context --          the context script's name
//	-- @schema NAME --      the input schema, compact JSON compared byte for byte
//	-- @description NAME -- the composed description
//	-- @args NAME --        lines "ARGS => NORMALISED" or "ARGS => error: MESSAGE"
//	-- @run NAME --         lines "ARGS => RESULT" (the run's result JSON, then
//	                        " ui: ITEM…" when there is ui_output) or
//	                        "ARGS => fail OUTCOME: MESSAGE"
//
// Adding a case is adding a file.
func TestData(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runArchive(t, f) })
	}
}

type section struct {
	name string
	body string
}

func parseArchive(t *testing.T, data string) []section {
	var out []section
	for _, line := range strings.SplitAfter(data, "\n") {
		trimmed := strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(trimmed, "-- ") && strings.HasSuffix(trimmed, " --") && len(trimmed) > 6 {
			out = append(out, section{name: trimmed[3 : len(trimmed)-3]})
			continue
		}
		if len(out) == 0 {
			continue // the archive's comment
		}
		out[len(out)-1].body += line
	}
	return out
}

func runArchive(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var want []string
	var checks []section
	for _, s := range parseArchive(t, string(data)) {
		if strings.HasPrefix(s.name, "@") {
			checks = append(checks, s)
			continue
		}
		var out strings.Builder
		for i, line := range strings.SplitAfter(s.body, "\n") {
			if line == "" {
				continue
			}
			nl := strings.HasSuffix(line, "\n")
			line = strings.TrimSuffix(line, "\n")
			if j := strings.Index(line, " ### "); j >= 0 {
				for _, exp := range strings.Split(line[j+5:], " ### ") {
					col, msg, ok := strings.Cut(exp, ": ")
					if _, err := strconv.Atoi(col); !ok || err != nil {
						t.Fatalf("%s: bad expectation %q (want `### COL: message`)", s.name, exp)
					}
					want = append(want, s.name+":"+strconv.Itoa(i+1)+":"+col+": "+msg)
				}
				line = strings.TrimRight(line[:j], " ")
			}
			out.WriteString(line)
			if nl {
				out.WriteByte('\n')
			}
		}
		p := filepath.Join(dir, filepath.FromSlash(s.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := Load(dir, Options{LibsDir: "../libs"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range cat.Diagnostics {
		rel, _ := filepath.Rel(dir, d.File)
		d.File = filepath.ToSlash(rel)
		got = append(got, d.String())
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("diagnostics:\ngot:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range checks {
		kind, name, _ := strings.Cut(s.name, " ")
		body := strings.TrimRight(s.body, "\n")
		var sc *Script
		if name != "" {
			var ok bool
			if sc, ok = cat.Script(name); !ok {
				t.Errorf("%s: no script %q (registered: %v)", s.name, name, cat.Names())
				continue
			}
		}
		switch kind {
		case "@tools":
			var lines []string
			for _, tool := range cat.Tools {
				lines = append(lines, tool.Name+" "+hints(tool.Annotations()))
			}
			if got := strings.Join(lines, "\n"); got != body {
				t.Errorf("@tools:\ngot:\n%s\nwant:\n%s", got, body)
			}
		case "@context":
			got := ""
			if cat.Context != nil {
				got = cat.Context.Name
			}
			if got != body {
				t.Errorf("@context: got %q, want %q", got, body)
			}
		case "@schema":
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(body)); err != nil {
				t.Errorf("%s: expected schema is not JSON: %v", s.name, err)
				continue
			}
			got, _ := InputSchema(sc.Params).MarshalJSON()
			if string(got) != buf.String() {
				t.Errorf("%s:\ngot  %s\nwant %s", s.name, got, buf.String())
			}
		case "@description":
			if sc.Description != body {
				t.Errorf("%s:\ngot  %q\nwant %q", s.name, sc.Description, body)
			}
		case "@args":
			for _, line := range strings.Split(body, "\n") {
				in, exp, ok := strings.Cut(line, " => ")
				if !ok {
					t.Fatalf("%s: bad line %q", s.name, line)
				}
				out, aerr := sc.CheckArgs(json.RawMessage(in))
				got := string(out)
				if aerr != nil {
					got = "error: " + aerr.Msg
				}
				if got != exp {
					t.Errorf("%s: %s\ngot  %s\nwant %s", s.name, in, got, exp)
				}
			}
		case "@run":
			for _, line := range strings.Split(body, "\n") {
				in, exp, ok := strings.Cut(line, " => ")
				if !ok {
					t.Fatalf("%s: bad line %q", s.name, line)
				}
				if got := runLine(t, sc, in); got != exp {
					t.Errorf("%s: %s\ngot  %s\nwant %s", s.name, in, got, exp)
				}
			}
		default:
			t.Fatalf("unknown section %q", s.name)
		}
	}
}

// hints renders the true annotations, comma-separated ("-" for none).
func hints(a Annotations) string {
	var hs []string
	for _, h := range []struct {
		name string
		on   bool
	}{{"readOnly", a.ReadOnly}, {"destructive", a.Destructive}, {"idempotent", a.Idempotent}, {"openWorld", a.OpenWorld}} {
		if h.on {
			hs = append(hs, h.name)
		}
	}
	if len(hs) == 0 {
		return "-"
	}
	return strings.Join(hs, ",")
}

// runLine checks args, runs the script's job through Execute (mock
// handlers) and renders the outcome for @run.
func runLine(t *testing.T, sc *Script, args string) string {
	t.Helper()
	checked, aerr := sc.CheckArgs(json.RawMessage(args))
	if aerr != nil {
		return "error: " + aerr.Msg
	}
	o := Execute(context.Background(), &tools.Env{LibsDir: "../libs"}, sc.NewJob(checked).Marshal(), nil)
	b, _ := o.MarshalJSON()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if keys := o.Keys(); len(keys) < 4 || keys[2] != "script" || keys[3] != "script_digest" || m["script"] != sc.Name || m["script_digest"] != sc.Digest {
		t.Errorf("envelope %s: want script and script_digest after protocol_version", b)
	}
	if m["success"] != true {
		return fmt.Sprintf("fail %v: %v", m["outcome"], m["message"])
	}
	res, _ := o.Get("result")
	out := string(res.(json.RawMessage))
	ui, _ := o.Get("ui_output")
	for _, u := range ui.([]json.RawMessage) {
		out += " ui: " + string(u)
	}
	return out
}
