// Package axtest is the one .ax test-case harness of the module, in the
// manner of go.starlark.net's script tests: a file holds cases separated
// by a line that is exactly `---`, each case a program with its
// expectations written inside it as comments, and one table-driven Go test
// runs them all (compiler/testdata/*.ax, libs/<lib>/tests/*.ax). Adding a
// case is adding text to a file. The expectation keywords, one set for
// every file:
//
//	// want: <compact JSON>           compiles and runs; the result's JSON encoding (docs/tools.md §2)
//	// want brief: <compact JSON>     compiles and runs; the result in the brief encoding (vm.EncodeBrief)
//	// want error: E003 3:9 msg       compile fails; its first errors, in order
//	// want warning: E009 3:9 msg     compiles; its warnings, in order
//	// want ok                        compiles without errors or warnings (no run)
//	// want runtime: <message>        compiles, the run fails with this runtime error
//	// want limit: steps|wall_ms|memory_mb|output_bytes|call_depth
//	// want stack: main 3:5 > f 1:20  the failed run's call stack, outermost
//	                                  first, "… N frames …" where elided
//	// want ui: <compact JSON array>  the run's ui_output
//	// want steps: N                  the exact step count
//	// want main: <compact JSON>      the case has no program: Config.Main's
//	                                  source (a library's src/core.ax) is run
//	// | text                         continues the expectation above it on a
//	                                  new line (messages that list built-ins)
//	// options: max_steps=N policy=allow-all|deny-all|<json> max_memory_mb=N max_output_bytes=N max_wall_ms=N
//
// Line numbers are relative to the case, which is compiled as "case.ax";
// a position in another file names it (relative to the test's directory).
// Runs use the mock handler and allow-all unless options say otherwise;
// a case with no warning expectation must compile without warnings.
//
// Imports: compiler, policy and vm.
package axtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// CaseFile is the file name a case is compiled as.
const CaseFile = "case.ax"

// Case is one case of a file.
type Case struct {
	// File is the file it comes from; Line its first line there.
	File string
	Line int
	// Src is its text, expectations included.
	Src string
	// Exp are its expectations.
	Exp Expectations
	// Errs are its malformed expectation lines (Run reports them).
	Errs []string
	last *string // the expectation a `// |` line continues
}

// Expectations are a case's `// want` and `// options:` lines.
type Expectations struct {
	Want, Brief, Runtime, Limit, Stack, UI, Main *string
	Errors, Warnings                             []string
	Steps                                        *int64
	OK                                           bool
	Options                                      string
}

// runs reports whether the case is run.
func (e *Expectations) runs() bool {
	return e.Want != nil || e.Brief != nil || e.Runtime != nil || e.Limit != nil || e.Stack != nil || e.UI != nil ||
		e.Steps != nil || e.Main != nil
}

// count is the number of expectations.
func (e *Expectations) count() int {
	n := len(e.Errors) + len(e.Warnings)
	for _, p := range []*string{e.Want, e.Brief, e.Runtime, e.Limit, e.Stack, e.UI, e.Main} {
		if p != nil {
			n++
		}
	}
	if e.Steps != nil {
		n++
	}
	if e.OK {
		n++
	}
	return n
}

// ParseFile reads the cases of the file at path.
func ParseFile(path string) ([]Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, string(b)), nil
}

// Parse splits src, the text of file, into its cases (blank cases are
// dropped).
func Parse(file, src string) []Case {
	lines := strings.Split(src, "\n")
	var out []Case
	start := 0
	flush := func(end int) {
		body := strings.Join(lines[start:end], "\n")
		if end <= start || strings.TrimSpace(body) == "" {
			return
		}
		c := Case{File: file, Line: start + 1, Src: body}
		for i, l := range lines[start:end] {
			c.parseLine(l, i+1)
		}
		out = append(out, c)
	}
	for i, l := range lines {
		if strings.TrimRight(l, "\r") == "---" {
			flush(i)
			start = i + 1
		}
	}
	flush(len(lines))
	return out
}

func (c *Case) parseLine(l string, n int) {
	l = strings.TrimRight(l, "\r")
	if k := strings.Index(l, "// |"); k >= 0 {
		if c.last == nil {
			c.Errs = append(c.Errs, fmt.Sprintf("line %d: continuation without an expectation", n))
			return
		}
		*c.last += "\n" + l[k+len("// |"):]
		return
	}
	c.last = nil
	i := strings.Index(l, "// want")
	j := strings.Index(l, "// options:")
	switch {
	case j >= 0:
		c.Exp.Options = strings.TrimSpace(l[j+len("// options:"):])
		return
	case i < 0:
		return
	}
	rest := l[i+len("// want"):]
	val := func(prefix string) (string, bool) {
		if v, ok := strings.CutPrefix(rest, prefix); ok {
			return strings.TrimSpace(v), true
		}
		return "", false
	}
	e := &c.Exp
	set := func(p **string, v string) { *p = &v; c.last = *p }
	if v, ok := val(":"); ok {
		set(&e.Want, v)
	} else if strings.TrimSpace(rest) == "ok" {
		e.OK = true
	} else if v, ok := val(" error:"); ok {
		e.Errors = append(e.Errors, v)
		c.last = &e.Errors[len(e.Errors)-1]
	} else if v, ok := val(" warning:"); ok {
		e.Warnings = append(e.Warnings, v)
		c.last = &e.Warnings[len(e.Warnings)-1]
	} else if v, ok := val(" runtime:"); ok {
		set(&e.Runtime, v)
	} else if v, ok := val(" brief:"); ok {
		set(&e.Brief, v)
	} else if v, ok := val(" main:"); ok {
		set(&e.Main, v)
	} else if v, ok := val(" limit:"); ok {
		set(&e.Limit, v)
	} else if v, ok := val(" stack:"); ok {
		set(&e.Stack, v)
	} else if v, ok := val(" ui:"); ok {
		set(&e.UI, v)
	} else if v, ok := val(" steps:"); ok {
		steps, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			c.Errs = append(c.Errs, fmt.Sprintf("line %d: bad steps %q", n, v))
		}
		e.Steps = &steps
	} else {
		c.Errs = append(c.Errs, fmt.Sprintf("line %d: unknown expectation %q", n, l))
	}
}

// Config is how a file's cases compile and run.
type Config struct {
	// LibsDir resolves imports.
	LibsDir string
	// Script compiles the cases as scripts (compiler.Options.Script).
	Script bool
	// Main returns the program a `want main` case runs and its file name;
	// nil refuses such cases.
	Main func() (src []byte, file string, err error)
}

// Run compiles and runs c under cfg and checks its expectations.
func Run(t *testing.T, cfg Config, c Case) {
	t.Helper()
	where := fmt.Sprintf("%s:%d", c.File, c.Line)
	for _, e := range c.Errs {
		t.Errorf("%s: %s", where, e)
	}
	exp := c.Exp
	switch {
	case exp.count() == 0:
		t.Fatalf("%s: case has no expectations", where)
	case exp.Main != nil && exp.count() > 1:
		t.Fatalf("%s: `want main` stands alone", where)
	}
	src, file := []byte(c.Src), CaseFile
	if exp.Main != nil {
		if cfg.Main == nil {
			t.Fatalf("%s: `want main` is not supported here", where)
		}
		var err error
		if src, file, err = cfg.Main(); err != nil {
			t.Fatal(err)
		}
		exp.Want = exp.Main
	}
	opts := compiler.Options{File: file, LibsDir: cfg.LibsDir, Script: cfg.Script}
	diags, _ := compiler.Check(src, opts)
	var gotWarn []string
	for _, d := range diags {
		if d.Severity == compiler.SeverityWarning {
			gotWarn = append(gotWarn, formatDiag(d))
		}
	}
	mod, errs := compiler.Compile(src, opts)
	if len(exp.Errors) > 0 {
		if errs == nil {
			t.Fatalf("%s: compiled, want errors:\n%s", where, strings.Join(exp.Errors, "\n"))
		}
		var got []string
		for _, e := range errs {
			got = append(got, formatDiag(e))
		}
		if len(got) < len(exp.Errors) || !slices.Equal(got[:len(exp.Errors)], exp.Errors) {
			t.Fatalf("%s: errors\n got: %s\nwant: %s", where, strings.Join(got, "\n      "), strings.Join(exp.Errors, "\n      "))
		}
		return
	}
	if errs != nil {
		t.Fatalf("%s: compile failed: %v", where, errs)
	}
	if !slices.Equal(gotWarn, exp.Warnings) {
		t.Errorf("%s: warnings\n got: %s\nwant: %s", where, strings.Join(gotWarn, "\n      "), strings.Join(exp.Warnings, "\n      "))
	}
	if !exp.runs() {
		return
	}
	runOpts, err := ParseOptions(exp.Options)
	if err != nil {
		t.Fatalf("%s: options: %v", where, err)
	}
	res, err := vm.Run(context.Background(), mod, runOpts)
	if res == nil {
		t.Fatalf("%s: vm.Run returned a nil result (err %v)", where, err)
	}
	checkRun(t, where, exp, res, err)
}

// checkRun checks a run's result and error against exp.
func checkRun(t *testing.T, where string, exp Expectations, res *vm.Result, err error) {
	t.Helper()
	switch {
	case exp.Runtime != nil:
		var re *vm.RuntimeError
		var ce *vm.CapabilityError
		if err == nil || (!errors.As(err, &re) && !errors.As(err, &ce)) {
			t.Fatalf("%s: run error %v (%T), want runtime error %q", where, err, err, *exp.Runtime)
		}
		if err.Error() != *exp.Runtime {
			t.Fatalf("%s: runtime error\n got: %s\nwant: %s", where, err.Error(), *exp.Runtime)
		}
	case exp.Limit != nil:
		var le *vm.LimitError
		if !errors.As(err, &le) {
			t.Fatalf("%s: run error %v (%T), want limit %s", where, err, err, *exp.Limit)
		}
		if le.Kind != *exp.Limit {
			t.Fatalf("%s: limit %s (%s), want %s", where, le.Kind, le.Msg, *exp.Limit)
		}
	default:
		if err != nil {
			t.Fatalf("%s: run failed: %v", where, err)
		}
	}
	if exp.Stack != nil {
		if got := formatStack(err); got != *exp.Stack {
			t.Errorf("%s: stack\n got: %s\nwant: %s", where, got, *exp.Stack)
		}
	}
	if exp.Want != nil {
		got, _ := res.Value.MarshalJSON()
		if want := compact(*exp.Want); string(got) != want {
			t.Errorf("%s: result\n got: %s\nwant: %s", where, got, want)
		}
	}
	if exp.Brief != nil {
		if got, want := vm.EncodeBrief(res.Value), compact(*exp.Brief); string(got) != want {
			t.Errorf("%s: brief result\n got: %s\nwant: %s", where, got, want)
		}
	}
	if exp.UI != nil {
		b := []byte{'['}
		for i, v := range res.UIOutput {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.AppendJSON(b)
		}
		b = append(b, ']')
		if want := compact(*exp.UI); string(b) != want {
			t.Errorf("%s: ui_output\n got: %s\nwant: %s", where, b, want)
		}
	}
	if exp.Steps != nil && res.Steps != *exp.Steps {
		t.Errorf("%s: steps %d, want %d", where, res.Steps, *exp.Steps)
	}
}

// showFile is how a position outside the case names its file: relative
// to the working directory when that is shorter to read.
func showFile(file string) string {
	if filepath.IsAbs(file) {
		if wd, err := os.Getwd(); err == nil {
			if rel, err := filepath.Rel(wd, file); err == nil && !strings.HasPrefix(rel, "..") {
				file = rel
			}
		}
	}
	return filepath.ToSlash(file) + ":"
}

// formatDiag renders a diagnostic as in expectations: `E003 3:9 msg`, with
// the file before the position when it is not the case itself.
func formatDiag(e *compiler.Error) string {
	file := ""
	if e.File != CaseFile {
		file = showFile(e.File)
	}
	return fmt.Sprintf("%s %s%d:%d %s", e.Code, file, e.Pos.Line, e.Pos.Col, e.Msg)
}

// formatStack renders the call stack of a run error as in expectations:
// `main 3:5 > f 1:20`, with `file:` before a position outside the case and
// `… N frames …` where frames were elided; "none" when err has none.
func formatStack(err error) string {
	loc, _ := vm.LocationOf(err)
	if len(loc.Stack.Frames) == 0 {
		return "none"
	}
	var parts []string
	for i, f := range loc.Stack.Frames {
		if i == loc.Stack.ElidedAt() {
			parts = append(parts, fmt.Sprintf("… %d frames …", loc.Stack.Elided))
		}
		file := ""
		if f.File != CaseFile {
			file = showFile(f.File)
		}
		parts = append(parts, fmt.Sprintf("%s %s%d:%d", f.Func, file, f.Pos.Line, f.Pos.Col))
	}
	return strings.Join(parts, " > ")
}

// ParseOptions reads an `// options:` line (see the package doc) into
// run options: allow-all and the mock handler unless it says otherwise.
func ParseOptions(s string) (vm.Options, error) {
	var o vm.Options
	o.Policy = policy.AllowAll()
	for _, f := range splitOptions(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return o, fmt.Errorf("bad option %q", f)
		}
		if k == "policy" {
			var err error
			switch v {
			case "allow-all":
				o.Policy = policy.AllowAll()
			case "deny-all":
				o.Policy = policy.DenyAll()
			default:
				o.Policy, err = policy.Parse([]byte(v))
			}
			if err != nil {
				return o, err
			}
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return o, err
		}
		switch k {
		case "max_steps":
			o.Limits.MaxSteps = n
		case "max_memory_mb":
			o.Limits.MaxMemory = n << 20
		case "max_output_bytes":
			o.Limits.MaxOutput = n
		case "max_wall_ms":
			o.Limits.MaxWall = time.Duration(n) * time.Millisecond
		default:
			return o, fmt.Errorf("unknown option %q", k)
		}
	}
	return o, nil
}

// splitOptions splits on spaces outside JSON braces and brackets.
func splitOptions(s string) []string {
	var out []string
	depth, start := 0, -1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		case c == ' ' && depth == 0:
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// compact is the compact form of the JSON s (s itself if it is not JSON,
// so that the mismatch shows).
func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}
