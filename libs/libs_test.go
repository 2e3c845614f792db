package libs_test

import (
	"bytes"
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
	"github.com/axpool/axpool/internal/axtest"
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
		var cases []axtest.Case
		for _, f := range files {
			cs, err := axtest.ParseFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Base(f) == "examples.ax" {
				examples += len(cs)
			}
			cases = append(cases, cs...)
		}
		total += len(cases)
		checkCoverage(t, dir, cases)
		t.Run(dir, func(t *testing.T) {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s:%d", filepath.Base(c.File), c.Line), func(t *testing.T) {
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
func checkCoverage(t *testing.T, dir string, cases []axtest.Case) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
	if err != nil {
		t.Fatal(err)
	}
	p := compiler.Analyze(src, compiler.Options{LibsDir: libsDir(t)})
	called := map[string]bool{}
	call := regexp.MustCompile(`\b([a-z_][a-z0-9_]*)\(`)
	for _, c := range cases {
		for _, m := range call.FindAllStringSubmatch(c.Src, -1) {
			called[m[1]] = true
		}
		called["main"] = called["main"] || c.Exp.Main != nil
	}
	for _, f := range p.Functions {
		if !called[f.Name] {
			t.Errorf("%s: no test calls %s", dir, f.Name)
		}
	}
}

// runCase runs c with the one .ax harness (internal/axtest): imports
// resolve against libs/, programs compile as scripts, a `want main` case
// runs the library's own src/core.ax, and any other case must import a
// library.
func runCase(t *testing.T, libs, dir string, c axtest.Case) {
	if c.Exp.Main == nil && !strings.Contains(c.Src, `import "`) {
		t.Fatalf("%s:%d: case imports no library", c.File, c.Line)
	}
	main := func() ([]byte, string, error) {
		file := filepath.Join(libs, dir, "src", "core.ax")
		src, err := os.ReadFile(file)
		return src, file, err
	}
	axtest.Run(t, axtest.Config{LibsDir: libs, Script: true, Main: main}, c)
}
