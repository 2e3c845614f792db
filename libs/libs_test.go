package libs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
)

// libraryNames are the fourteen std libraries with the reference's
// surface and the extra std-effect (doc.go).
var libraryNames = []string{"std-authz", "std-db", "std-effect", "std-forms", "std-guard", "std-http", "std-json",
	"std-llm", "std-notifications", "std-routing", "std-storage", "std-sync", "std-testing", "std-ui", "std-validation"}

// The names more than one library declares, and the library functions
// named like a built-in (doc.go): the parse_int stubs of std-http and
// std-validation, std-http's effect descriptors named like the net.fetch
// built-ins, std-json's int_to_string, and the Effect record of every
// effect library.
var (
	sharedFunctions = map[string][]string{"parse_int": {"std-http", "std-validation"}}
	builtinNamed    = map[string]bool{"http_get": true, "http_request": true, "parse_int": true, "int_to_string": true}
	sharedTypes     = map[string][]string{"Effect": {"std-db", "std-effect", "std-http", "std-llm", "std-notifications", "std-storage", "std-sync"}}
)

// manifests are the dependencies (package names, version 1.0.0) and the
// required capabilities of each package.ax.json.
var manifests = map[string]struct{ deps, caps []string }{
	"std-authz": {}, "std-db": {caps: []string{"db.query"}}, "std-effect": {},
	"std-forms": {deps: []string{"std.validation"}}, "std-guard": {}, "std-http": {caps: []string{"net.fetch"}},
	"std-json": {}, "std-llm": {caps: []string{"llm.call"}}, "std-notifications": {caps: []string{"time.now"}},
	"std-routing": {}, "std-storage": {caps: []string{"fs.read", "fs.write"}}, "std-sync": {caps: []string{"net.fetch"}},
	"std-testing": {}, "std-ui": {}, "std-validation": {},
}

// documentedExamples is the number of cases in the tests/examples.ax
// files: one per documented example of the libraries' behaviour.
const documentedExamples = 290

// libDirs returns the library directory names, sorted.
func libDirs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

func libsDir(t *testing.T) string {
	t.Helper()
	d, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLibrarySet(t *testing.T) {
	if got := libDirs(t); !slices.Equal(got, libraryNames) {
		t.Fatalf("library directories %v, want %v", got, libraryNames)
	}
}

// manifest is package.ax.json.
type manifest struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Description          string            `json:"description"`
	Dependencies         map[string]string `json:"dependencies"`
	RequiredCapabilities []string          `json:"required_capabilities"`
	ExposedModules       []string          `json:"exposed_modules"`
}

var importLine = regexp.MustCompile(`(?m)^import "([^"]+)"`)

func readManifest(t *testing.T, dir string) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "package.ax.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m manifest
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s/package.ax.json: %v", dir, err)
	}
	return m
}

// TestManifests checks every package.ax.json: the package name is the
// directory name with dots, version 1.0.0, a description, exposed_modules
// ["core"], the listed dependencies (which exist, at their version) and
// capabilities (canonical), and no import in core.ax beyond the
// dependencies.
func TestManifests(t *testing.T) {
	for _, dir := range libDirs(t) {
		t.Run(dir, func(t *testing.T) {
			m := readManifest(t, dir)
			want := manifests[dir]
			if name := strings.ReplaceAll(dir, "-", "."); m.Name != name {
				t.Errorf("name %q, want %q", m.Name, name)
			}
			if m.Version != "1.0.0" {
				t.Errorf("version %q, want 1.0.0", m.Version)
			}
			if m.Description == "" || strings.Contains(m.Description, "\n") {
				t.Errorf("description %q, want one line", m.Description)
			}
			if !slices.Equal(m.ExposedModules, []string{"core"}) {
				t.Errorf("exposed_modules %v, want [core]", m.ExposedModules)
			}
			if m.Dependencies == nil || m.RequiredCapabilities == nil {
				t.Error("dependencies and required_capabilities must be present (possibly empty)")
			}
			if !slices.Equal(m.RequiredCapabilities, want.caps) && len(m.RequiredCapabilities)+len(want.caps) > 0 {
				t.Errorf("required_capabilities %v, want %v", m.RequiredCapabilities, want.caps)
			}
			for _, c := range m.RequiredCapabilities {
				if _, ok := policy.ParseCapability(c); !ok {
					t.Errorf("required capability %q is not canonical", c)
				}
			}
			var deps []string
			for name, version := range m.Dependencies {
				deps = append(deps, name)
				if dm := readManifest(t, strings.ReplaceAll(name, ".", "-")); dm.Version != version {
					t.Errorf("dependency %s %s, but the library is %s", name, version, dm.Version)
				}
			}
			sort.Strings(deps)
			if !slices.Equal(deps, want.deps) && len(deps)+len(want.deps) > 0 {
				t.Errorf("dependencies %v, want %v", deps, want.deps)
			}
			src, err := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
			if err != nil {
				t.Fatal(err)
			}
			for _, mm := range importLine.FindAllStringSubmatch(string(src), -1) {
				if !slices.Contains(deps, strings.ReplaceAll(mm[1], "-", ".")) {
					t.Errorf("core.ax imports %s, which is not a dependency", mm[1])
				}
			}
		})
	}
}

// surface renders a library's declarations in source order, one a line:
// `type R { f: T, … }` for each record, then `fn f(p: T, …) -> R` for
// each function (main included).
func surface(p *compiler.Program) string {
	var b strings.Builder
	for _, d := range p.Types {
		fmt.Fprintf(&b, "type %s {", d.Name)
		for i, f := range d.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %s: %s", f.Name, f.Type)
		}
		b.WriteString(" }\n")
	}
	for _, f := range p.Functions {
		b.WriteString(f.Signature())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSurface compiles every library on its own and compares its records
// (names, fields in order, field types) and functions (names, parameter
// names and types, result types, in order) with tests/surface.txt.
func TestSurface(t *testing.T) {
	for _, dir := range libDirs(t) {
		src, err := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(dir, "tests", "surface.txt"))
		if err != nil {
			t.Fatal(err)
		}
		p := compiler.Analyze(src, compiler.Options{File: dir + "/src/core.ax", LibsDir: libsDir(t)})
		for _, d := range p.Diagnostics {
			t.Errorf("%s: %v", dir, d)
		}
		if got := surface(p); got != string(want) {
			t.Errorf("%s: surface\n got:\n%s\nwant:\n%s", dir, got, want)
		}
		if _, errs := p.Compile(); errs != nil {
			t.Errorf("%s: %v", dir, errs)
		}
	}
}

// TestLibraryNames: library functions declare no capabilities (they
// describe effects, they never perform them); only the documented
// functions share a name with a built-in or with another library's
// function, and only Effect is declared by several libraries.
func TestLibraryNames(t *testing.T) {
	funcOwners := map[string][]string{}
	typeOwners := map[string][]string{}
	for _, dir := range libDirs(t) {
		src, err := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
		if err != nil {
			t.Fatal(err)
		}
		p := compiler.Analyze(src, compiler.Options{File: dir + "/src/core.ax", LibsDir: libsDir(t)})
		for _, f := range p.Functions {
			if f.Name == "main" {
				continue
			}
			if len(f.Caps) > 0 {
				t.Errorf("%s: %s declares capabilities %v", dir, f.Name, f.Caps)
			}
			funcOwners[f.Name] = append(funcOwners[f.Name], dir)
			_, isBuiltin := vm.LookupBuiltin(f.Name)
			_, isEffect := vm.LookupEffect(f.Name)
			if (isBuiltin || isEffect) != builtinNamed[f.Name] {
				t.Errorf("%s: function %s: built-in name %v, want %v", dir, f.Name, isBuiltin || isEffect, builtinNamed[f.Name])
			}
		}
		for _, d := range p.Types {
			typeOwners[d.Name] = append(typeOwners[d.Name], dir)
		}
	}
	check := func(what string, owners, want map[string][]string) {
		for name, dirs := range owners {
			if len(dirs) > 1 && !slices.Equal(dirs, want[name]) {
				t.Errorf("%s %s is declared by %v", what, name, dirs)
			}
		}
		for name, dirs := range want {
			if !slices.Equal(owners[name], dirs) {
				t.Errorf("%s %s is declared by %v, want %v", what, name, owners[name], dirs)
			}
		}
	}
	check("function", funcOwners, sharedFunctions)
	check("type", typeOwners, sharedTypes)
}

// scriptCase is one case of a libs/<dir>/tests/*.ax file: cases are
// separated by a line that is exactly `---`; expectations are comments:
//
//	// want: <compact JSON>        the result, encoded as in docs/tools.md §2
//	// want brief: <compact JSON>  the result in the brief encoding (vm.EncodeBrief)
//	// want runtime: <message>     the run fails with this error message
//	// want error: E003 2:5 msg    compilation fails; its first errors, in order
//	// want main: <compact JSON>   the library's own src/core.ax, run as the
//	                               program, returns this (the case has no source)
//
// Runs use allow-all, the mock handler and default limits; imports resolve
// against libs/. Line numbers in errors are relative to the case.
type scriptCase struct {
	file    string
	line    int
	src     string
	want    *string
	brief   *string
	runtime *string
	main    *string
	errors  []string
}

func (c *scriptCase) expectations() int {
	n := len(c.errors)
	for _, p := range []*string{c.want, c.brief, c.runtime, c.main} {
		if p != nil {
			n++
		}
	}
	return n
}

func splitCases(t *testing.T, file string) []scriptCase {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []scriptCase
	start := 0
	flush := func(end int) {
		body := strings.Join(lines[start:end], "\n")
		if strings.TrimSpace(body) == "" {
			return
		}
		c := scriptCase{file: file, line: start + 1, src: body}
		for _, l := range lines[start:end] {
			rest, ok := strings.CutPrefix(strings.TrimSpace(l), "// want")
			if !ok {
				continue
			}
			set := func(p **string, prefix string) bool {
				if v, ok := strings.CutPrefix(rest, prefix); ok {
					v = strings.TrimSpace(v)
					*p = &v
					return true
				}
				return false
			}
			if v, ok := strings.CutPrefix(rest, " error:"); ok {
				c.errors = append(c.errors, strings.TrimSpace(v))
				continue
			}
			if !set(&c.want, ":") && !set(&c.brief, " brief:") && !set(&c.runtime, " runtime:") && !set(&c.main, " main:") {
				t.Errorf("%s:%d: unknown expectation %q", file, start+1, l)
			}
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

func compactJSON(t *testing.T, where, s string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		t.Fatalf("%s: expectation is not JSON: %v", where, err)
	}
	return buf.String()
}

// TestLibraryScripts runs every case of every libs/<dir>/tests/*.ax file,
// checks that the cases of a library call each of its functions, and
// that the examples.ax files hold documentedExamples cases.
func TestLibraryScripts(t *testing.T) {
	libs := libsDir(t)
	total, examples := 0, 0
	for _, dir := range libDirs(t) {
		files, err := filepath.Glob(filepath.Join(dir, "tests", "*.ax"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Errorf("%s: no tests/*.ax files", dir)
			continue
		}
		var cases []scriptCase
		for _, f := range files {
			cs := splitCases(t, f)
			if filepath.Base(f) == "examples.ax" {
				examples += len(cs)
			}
			cases = append(cases, cs...)
		}
		total += len(cases)
		checkCoverage(t, dir, cases)
		t.Run(dir, func(t *testing.T) {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s:%d", filepath.Base(c.file), c.line), func(t *testing.T) {
					t.Parallel()
					runCase(t, libs, dir, c)
				})
			}
		})
	}
	if examples != documentedExamples {
		t.Errorf("%d cases in tests/examples.ax files, want %d (one per documented example)", examples, documentedExamples)
	}
	t.Logf("%d library script cases, %d of them documented examples", total, examples)
}

// checkCoverage reports the functions of dir's core.ax that no test case
// calls (an identifier followed by "("); a `want main` case calls main.
func checkCoverage(t *testing.T, dir string, cases []scriptCase) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
	if err != nil {
		t.Fatal(err)
	}
	p := compiler.Analyze(src, compiler.Options{LibsDir: libsDir(t)})
	called := map[string]bool{}
	call := regexp.MustCompile(`\b([a-z_][a-z0-9_]*)\(`)
	for _, c := range cases {
		for _, m := range call.FindAllStringSubmatch(c.src, -1) {
			called[m[1]] = true
		}
		called["main"] = called["main"] || c.main != nil
	}
	for _, f := range p.Functions {
		if !called[f.Name] {
			t.Errorf("%s: no test calls %s", dir, f.Name)
		}
	}
}

// formatDiag renders a compile error as in expectations: `E003 3:9 msg`,
// with the file name (relative to libs/) before the position when it is
// not the case itself.
func formatDiag(libs string, e *compiler.Error) string {
	file := ""
	if e.File != "case.ax" {
		rel, err := filepath.Rel(libs, e.File)
		if err != nil {
			rel = e.File
		}
		file = filepath.ToSlash(rel) + ":"
	}
	return fmt.Sprintf("%s %s%d:%d %s", e.Code, file, e.Pos.Line, e.Pos.Col, e.Msg)
}

func runCase(t *testing.T, libs, dir string, c scriptCase) {
	where := fmt.Sprintf("%s:%d", c.file, c.line)
	if c.expectations() == 0 || c.main != nil && c.expectations() > 1 {
		t.Fatalf("%s: a case needs expectations, and `want main` stands alone", where)
	}
	src, file := []byte(c.src), "case.ax"
	if c.main != nil {
		var err error
		file = filepath.Join(libs, dir, "src", "core.ax")
		if src, err = os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
		c.want = c.main
	} else if !strings.Contains(c.src, `import "`) {
		t.Fatalf("%s: case imports no library", where)
	}
	m, errs := compiler.Compile(src, compiler.Options{File: file, LibsDir: libs, Script: true})
	if len(c.errors) > 0 {
		var got []string
		for _, e := range errs {
			got = append(got, formatDiag(libs, e))
		}
		if len(got) < len(c.errors) || !slices.Equal(got[:len(c.errors)], c.errors) {
			t.Fatalf("%s: errors\n got: %s\nwant: %s", where, strings.Join(got, "\n      "), strings.Join(c.errors, "\n      "))
		}
		return
	}
	if errs != nil {
		t.Fatalf("%s: compile: %v", where, errs)
	}
	res, err := vm.Run(context.Background(), m, vm.Options{Policy: policy.AllowAll()})
	if c.runtime != nil {
		if err == nil || err.Error() != *c.runtime {
			t.Fatalf("%s: run error %v, want %q", where, err, *c.runtime)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: run: %v", where, err)
	}
	if c.want != nil {
		got, _ := res.Value.MarshalJSON()
		if want := compactJSON(t, where, *c.want); string(got) != want {
			t.Errorf("%s: result\n got: %s\nwant: %s", where, got, want)
		}
	}
	if c.brief != nil {
		got := vm.EncodeBrief(res.Value)
		if want := compactJSON(t, where, *c.brief); string(got) != want {
			t.Errorf("%s: brief result\n got: %s\nwant: %s", where, got, want)
		}
	}
}
