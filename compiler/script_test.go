package compiler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// TestScripts runs every case of every compiler/testdata/*.ax file. A file
// holds cases
// separated by a line that is exactly `---`; expectations are `//` comments
// anywhere in the case:
//
//	// want: <compact JSON>          compiles and runs; result encoding
//	// want error: E003 3:9 msg      compile fails; first errors, in order
//	// want warning: E009 3:9 msg    compiles; the warnings, in order
//	// want ok                       compiles without errors or warnings
//	// want runtime: <message>       compiles, run fails with this runtime error
//	// want limit: steps|wall_ms|memory_mb|output_bytes|call_depth
//	// want stack: main 3:5 > f 1:20   the failed run's call stack, outermost
//	                                 first, "… N frames …" where elided
//	// want ui: <compact JSON array> the run's ui_output
//	// want steps: N                 exact step count
//	// | text                        continues the expectation above it on a
//	                                 new line (messages that list built-ins)
//	// options: max_steps=N policy=allow-all|deny-all|<json> max_memory_mb=N max_output_bytes=N max_wall_ms=N
//
// Line numbers are relative to the case. Runs use the mock handler and
// allow-all unless options say otherwise; imports resolve against
// testdata/libs.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.ax"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.ax files")
	}
	total := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cases := splitCases(string(src))
		total += len(cases)
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			for _, c := range cases {
				c := c
				t.Run(fmt.Sprintf("line%d", c.line), func(t *testing.T) {
					t.Parallel()
					runCase(t, base, c)
				})
			}
		})
	}
	t.Logf("%d script cases in %d files", total, len(files))
}

type scriptCase struct {
	line int // first line of the case in its file
	src  string
	exp  expectations
	errs []string // malformed expectation lines
	last *string  // the expectation a `// |` line continues
}

type expectations struct {
	want     *string
	errors   []string
	warnings []string
	runtime  *string
	limit    *string
	stack    *string
	ui       *string
	steps    *int64
	ok       bool // compiles without errors or warnings (no run)
	options  string
}

func (e *expectations) runs() bool {
	return e.want != nil || e.runtime != nil || e.limit != nil || e.stack != nil || e.ui != nil || e.steps != nil
}

func splitCases(src string) []scriptCase {
	lines := strings.Split(src, "\n")
	var out []scriptCase
	start := 0
	flush := func(end int) {
		if end <= start {
			return
		}
		body := strings.Join(lines[start:end], "\n")
		if strings.TrimSpace(body) == "" {
			return
		}
		c := scriptCase{line: start + 1, src: body}
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

func (c *scriptCase) parseLine(l string, n int) {
	l = strings.TrimRight(l, "\r")
	if k := strings.Index(l, "// |"); k >= 0 {
		if c.last == nil {
			c.errs = append(c.errs, fmt.Sprintf("line %d: continuation without an expectation", n))
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
		c.exp.options = strings.TrimSpace(l[j+len("// options:"):])
		return
	case i < 0:
		return
	}
	rest := l[i+len("// want"):]
	val := func(prefix string) (string, bool) {
		if strings.HasPrefix(rest, prefix) {
			return strings.TrimSpace(rest[len(prefix):]), true
		}
		return "", false
	}
	if v, ok := val(":"); ok {
		c.exp.want = &v
	} else if strings.TrimSpace(rest) == " ok" || strings.TrimSpace(rest) == "ok" {
		c.exp.ok = true
	} else if v, ok := val(" error:"); ok {
		c.exp.errors = append(c.exp.errors, v)
		c.last = &c.exp.errors[len(c.exp.errors)-1]
	} else if v, ok := val(" warning:"); ok {
		c.exp.warnings = append(c.exp.warnings, v)
		c.last = &c.exp.warnings[len(c.exp.warnings)-1]
	} else if v, ok := val(" runtime:"); ok {
		c.exp.runtime = &v
		c.last = c.exp.runtime
	} else if v, ok := val(" limit:"); ok {
		c.exp.limit = &v
	} else if v, ok := val(" stack:"); ok {
		c.exp.stack = &v
	} else if v, ok := val(" ui:"); ok {
		c.exp.ui = &v
	} else if v, ok := val(" steps:"); ok {
		steps, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			c.errs = append(c.errs, fmt.Sprintf("line %d: bad steps %q", n, v))
		}
		c.exp.steps = &steps
	} else {
		c.errs = append(c.errs, fmt.Sprintf("line %d: unknown expectation %q", n, l))
	}
}

// formatDiag renders a diagnostic as in expectations: `E003 3:9 msg`, with
// the file name before the position when it is not the case itself.
func formatDiag(e *compiler.Error) string {
	file := ""
	if e.File != "case.ax" {
		file = filepath.ToSlash(e.File) + ":"
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
		if f.File != "case.ax" {
			file = filepath.ToSlash(f.File) + ":"
		}
		parts = append(parts, fmt.Sprintf("%s %s%d:%d", f.Func, file, f.Pos.Line, f.Pos.Col))
	}
	return strings.Join(parts, " > ")
}

func runCase(t *testing.T, file string, c scriptCase) {
	t.Helper()
	where := fmt.Sprintf("%s:%d", file, c.line)
	for _, e := range c.errs {
		t.Errorf("%s: %s", where, e)
	}
	exp := c.exp
	if len(exp.errors) == 0 && !exp.runs() && len(exp.warnings) == 0 && !exp.ok {
		t.Fatalf("%s: case has no expectations", where)
	}
	opts := compiler.Options{File: "case.ax", LibsDir: filepath.Join("testdata", "libs")}
	diags, _ := compiler.Check([]byte(c.src), opts)
	var gotWarn []string
	for _, d := range diags {
		if d.Severity == compiler.SeverityWarning {
			gotWarn = append(gotWarn, formatDiag(d))
		}
	}
	mod, errs := compiler.Compile([]byte(c.src), opts)
	if len(exp.errors) > 0 {
		if errs == nil {
			t.Fatalf("%s: compiled, want errors:\n%s", where, strings.Join(exp.errors, "\n"))
		}
		var got []string
		for _, e := range errs {
			got = append(got, formatDiag(e))
		}
		n := min(len(got), len(exp.errors))
		if n < len(exp.errors) || !equalStrings(got[:n], exp.errors) {
			t.Fatalf("%s: errors\n got: %s\nwant: %s", where, strings.Join(got, "\n      "), strings.Join(exp.errors, "\n      "))
		}
		return
	}
	if errs != nil {
		t.Fatalf("%s: compile failed: %v", where, strings.Join(errStrings(errs), "\n"))
	}
	if len(exp.warnings) > 0 || len(gotWarn) > 0 {
		if !equalStrings(gotWarn, exp.warnings) {
			t.Errorf("%s: warnings\n got: %s\nwant: %s", where, strings.Join(gotWarn, "\n      "), strings.Join(exp.warnings, "\n      "))
		}
	}
	if !exp.runs() {
		return
	}
	runOpts, err := parseOptions(exp.options)
	if err != nil {
		t.Fatalf("%s: options: %v", where, err)
	}
	res, err := vm.Run(context.Background(), mod, runOpts)
	if res == nil {
		t.Fatalf("%s: vm.Run returned a nil result (err %v)", where, err)
	}
	switch {
	case exp.runtime != nil:
		var re *vm.RuntimeError
		var ce *vm.CapabilityError
		if err == nil || (!errors.As(err, &re) && !errors.As(err, &ce)) {
			t.Fatalf("%s: run error %v (%T), want runtime error %q", where, err, err, *exp.runtime)
		}
		if err.Error() != *exp.runtime {
			t.Fatalf("%s: runtime error\n got: %s\nwant: %s", where, err.Error(), *exp.runtime)
		}
	case exp.limit != nil:
		var le *vm.LimitError
		if !errors.As(err, &le) {
			t.Fatalf("%s: run error %v (%T), want limit %s", where, err, err, *exp.limit)
		}
		if le.Kind != *exp.limit {
			t.Fatalf("%s: limit %s (%s), want %s", where, le.Kind, le.Msg, *exp.limit)
		}
	default:
		if err != nil {
			t.Fatalf("%s: run failed: %v", where, err)
		}
	}
	if exp.stack != nil {
		if got := formatStack(err); got != *exp.stack {
			t.Errorf("%s: stack\n got: %s\nwant: %s", where, got, *exp.stack)
		}
	}
	if exp.want != nil {
		got, _ := res.Value.MarshalJSON()
		if want := compact(*exp.want); string(got) != want {
			t.Errorf("%s: result\n got: %s\nwant: %s", where, got, want)
		}
	}
	if exp.ui != nil {
		b := []byte{'['}
		for i, v := range res.UIOutput {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.AppendJSON(b)
		}
		b = append(b, ']')
		if want := compact(*exp.ui); string(b) != want {
			t.Errorf("%s: ui_output\n got: %s\nwant: %s", where, b, want)
		}
	}
	if exp.steps != nil && res.Steps != *exp.steps {
		t.Errorf("%s: steps %d, want %d", where, res.Steps, *exp.steps)
	}
}

func parseOptions(s string) (vm.Options, error) {
	var o vm.Options
	for _, f := range splitOptions(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return o, fmt.Errorf("bad option %q", f)
		}
		num := func() (int64, error) { return strconv.ParseInt(v, 10, 64) }
		switch k {
		case "max_steps":
			n, err := num()
			if err != nil {
				return o, err
			}
			o.Limits.MaxSteps = n
		case "max_memory_mb":
			n, err := num()
			if err != nil {
				return o, err
			}
			o.Limits.MaxMemory = n << 20
		case "max_output_bytes":
			n, err := num()
			if err != nil {
				return o, err
			}
			o.Limits.MaxOutput = n
		case "max_wall_ms":
			n, err := num()
			if err != nil {
				return o, err
			}
			o.Limits.MaxWall = time.Duration(n) * time.Millisecond
		case "policy":
			var p *policy.Policy
			var err error
			switch v {
			case "allow-all":
				p = policy.AllowAll()
			case "deny-all":
				p = policy.DenyAll()
			default:
				p, err = policy.Parse([]byte(v))
			}
			if err != nil {
				return o, err
			}
			o.Policy = p
		default:
			return o, fmt.Errorf("unknown option %q", k)
		}
	}
	return o, nil
}

// splitOptions splits on spaces outside JSON braces.
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

func compact(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		return s
	}
	return b.String()
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func errStrings(l compiler.ErrorList) []string {
	out := make([]string, len(l))
	for i, e := range l {
		out[i] = e.Error()
	}
	return out
}
