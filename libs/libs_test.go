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

// referenceFunctions lists, per library, the functions of the reference's
// std libraries and their arities (reference/language-reference-impl.md
// §11, tooling-reference-impl.md §4). parse_int is deliberately absent
// (see doc.go). Every library must define each of them with that arity.
var referenceFunctions = map[string]map[string]int{
	"std-authz": {"authz_default_policy": 0, "authz_role_level": 2, "authz_check": 4, "authz_require_role": 3,
		"authz_guard_update": 4, "authz_is_admin": 2, "authz_can_write": 2, "authz_can_read": 2},
	"std-db": {"db_select": 2, "db_insert": 3, "db_update": 3, "db_delete": 2, "db_where": 2, "db_order": 2,
		"db_limit": 2, "db_offset": 2, "db_paginate": 3, "db_to_effect": 2, "pagination_info": 3,
		"pagination_has_next": 1, "pagination_has_prev": 1, "pagination_next_page": 1, "pagination_prev_page": 1},
	"std-effect": {"effect": 3, "no_effects": 0},
	"std-forms": {"form_init": 1, "field_init": 1, "field_set_value": 2, "field_touch": 1, "field_set_error": 2,
		"field_clear_error": 1, "field_is_valid": 1, "field_reset": 1, "form_set_field": 3, "form_set_error": 3,
		"form_clear_errors": 1, "form_submit": 1, "form_reset": 1, "form_is_valid": 1, "form_is_submitted": 1},
	"std-guard": {"guard_pass": 0, "guard_fail": 1, "to_guard": 2, "is_non_empty": 1, "min_length": 2,
		"max_length": 2, "length_between": 3, "is_in_range": 3, "is_in_range_float": 3, "matches_prefix": 2,
		"matches_suffix": 2, "matches_contains": 2, "list_contains_str": 2, "is_one_of": 2, "not_in_banlist": 2,
		"contains_ci": 2, "looks_like_refusal": 1, "is_probably_json": 1},
	"std-http": {"http_get": 2, "http_post": 3, "http_put": 3, "http_delete": 2, "http_request": 2,
		"http_retry_config": 3, "http_default_retry": 0, "http_parse_status": 1, "http_is_success": 1,
		"http_is_error": 1, "http_should_retry": 1, "http_next_backoff": 2},
	"std-json": {"json_ok": 1, "json_err": 1, "json_string_field": 2, "json_int_field": 2, "json_bool_field": 2,
		"json_null_field": 1, "json_object": 1, "json_array_wrap": 1, "json_array": 1, "escape_char": 1,
		"json_escape": 1, "int_to_string": 1},
	"std-llm": {"llm_call": 2, "llm_prompt": 3, "llm_json_call": 2, "default_llm_request": 2},
	"std-notifications": {"notification_init": 1, "notification_make": 4, "notification_push": 4,
		"notification_dismiss": 2, "notification_dismiss_effect": 2, "notification_count": 1,
		"notification_is_full": 1, "notification_info": 3, "notification_success": 2, "notification_warning": 2,
		"notification_error": 2},
	"std-routing": {"route_define": 2, "route_define_with_param": 3, "route_match_path": 2, "route_no_match": 0,
		"route_navigate": 1, "route_navigate_with_param": 2, "route_is_active": 2, "route_match_first": 4},
	"std-storage": {"storage_key": 2, "storage_get": 3, "storage_set": 4, "storage_delete": 3, "storage_list": 2,
		"storage_make_entry": 4, "storage_bump_version": 2, "storage_is_newer": 2},
	"std-sync": {"sync_init": 0, "sync_queue_edit": 1, "sync_mark_synced": 1, "sync_go_offline": 1,
		"sync_go_online": 1, "sync_detect_conflict": 1, "sync_resolve_conflict": 2, "sync_effect": 2,
		"sync_needs_push": 1, "sync_is_idle": 1, "sync_has_conflicts": 1},
	"std-testing": {"assert_eq_int": 3, "assert_eq_string": 3, "assert_true": 2, "assert_false": 2, "assert_gt": 3,
		"assert_lt": 3, "assert_not_empty": 2, "test_summary": 3, "test_all_passed_2": 2, "test_all_passed_3": 3},
	"std-ui": {"row": 2, "column": 2, "stack": 2, "container": 1, "card": 2, "section": 2, "button": 2, "input": 3,
		"select_field": 3, "checkbox": 3, "table_view": 2, "error_display": 1, "text": 1, "badge": 2,
		"empty_node": 0, "divider": 0},
	"std-validation": {"validate_required": 2, "validate_min_length": 3, "validate_max_length": 3,
		"validate_numeric": 2, "validate_min_value": 3, "validate_max_value": 3, "validate_not_empty": 2,
		"validate_equals": 3, "validation_ok": 0, "validation_fail": 2, "validation_merge": 2, "string_length": 1,
		"validate_contains": 3, "validate_starts_with": 3, "validate_ends_with": 3},
}

// shadowsBuiltin lists the library functions allowed to have the name of
// a built-in (doc.go: std-http's effect wrappers keep the reference names).
var shadowsBuiltin = map[string]bool{"http_get": true, "http_request": true}

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
	var want []string
	for name := range referenceFunctions {
		want = append(want, name)
	}
	sort.Strings(want)
	if got := libDirs(t); !slices.Equal(got, want) {
		t.Fatalf("library directories %v, want %v", got, want)
	}
}

// manifest is package.ax.json (reference/tooling-reference-impl.md §4).
type manifest struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Description          string            `json:"description"`
	Dependencies         map[string]string `json:"dependencies"`
	RequiredCapabilities []string          `json:"required_capabilities"`
	ExposedModules       []string          `json:"exposed_modules"`
}

var (
	packageName = regexp.MustCompile(`^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)*$`)
	semver      = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)
	importLine  = regexp.MustCompile(`(?m)^import "([^"]+)"`)
)

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
// ["core"], canonical capabilities, and dependencies that exist with their
// exact version and match the library's own imports.
func TestManifests(t *testing.T) {
	for _, dir := range libDirs(t) {
		t.Run(dir, func(t *testing.T) {
			m := readManifest(t, dir)
			if want := strings.ReplaceAll(dir, "-", "."); m.Name != want || !packageName.MatchString(m.Name) {
				t.Errorf("name %q, want %q", m.Name, want)
			}
			if m.Version != "1.0.0" || !semver.MatchString(m.Version) {
				t.Errorf("version %q, want 1.0.0", m.Version)
			}
			if m.Description == "" {
				t.Error("empty description")
			}
			if !slices.Equal(m.ExposedModules, []string{"core"}) {
				t.Errorf("exposed_modules %v, want [core]", m.ExposedModules)
			}
			if m.Dependencies == nil || m.RequiredCapabilities == nil {
				t.Error("dependencies and required_capabilities must be present (possibly empty)")
			}
			for _, c := range m.RequiredCapabilities {
				if _, ok := policy.ParseCapability(c); !ok {
					t.Errorf("required capability %q is not canonical", c)
				}
			}
			src, err := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
			if err != nil {
				t.Fatal(err)
			}
			var imports []string
			for _, mm := range importLine.FindAllStringSubmatch(string(src), -1) {
				imports = append(imports, mm[1])
			}
			var deps []string
			for name, version := range m.Dependencies {
				depDir := strings.ReplaceAll(name, ".", "-")
				deps = append(deps, depDir)
				if dm := readManifest(t, depDir); dm.Version != version {
					t.Errorf("dependency %s %s, but the library is %s", name, version, dm.Version)
				}
			}
			sort.Strings(deps)
			sort.Strings(imports)
			if !slices.Equal(deps, imports) {
				t.Errorf("dependencies %v differ from the imports of core.ax %v", deps, imports)
			}
		})
	}
}

// TestLibrariesCompile compiles every library on its own and checks its
// function table against the reference's names and arities, that no
// function shadows a built-in (except the documented ones), and that no
// function or type name is defined by two libraries.
func TestLibrariesCompile(t *testing.T) {
	funcOwner := map[string]string{}
	typeOwner := map[string]string{}
	for _, dir := range libDirs(t) {
		src, err := os.ReadFile(filepath.Join(dir, "src", "core.ax"))
		if err != nil {
			t.Fatal(err)
		}
		p := compiler.Analyze(src, compiler.Options{File: dir + "/src/core.ax", LibsDir: libsDir(t)})
		for _, d := range p.Diagnostics {
			t.Errorf("%s: %v", dir, d)
		}
		if _, errs := p.Compile(); errs != nil {
			t.Fatalf("%s: %v", dir, errs)
		}
		arity := map[string]int{}
		for _, f := range p.Functions {
			arity[f.Name] = len(f.Params)
			if len(f.Caps) > 0 {
				t.Errorf("%s: %s declares capabilities %v; library functions describe effects, they never perform them", dir, f.Name, f.Caps)
			}
			if prev, ok := funcOwner[f.Name]; ok {
				t.Errorf("function %s is defined by both %s and %s", f.Name, prev, dir)
			}
			funcOwner[f.Name] = dir
			_, isBuiltin := vm.LookupBuiltin(f.Name)
			_, isEffect := vm.LookupEffect(f.Name)
			if (isBuiltin || isEffect) && !shadowsBuiltin[f.Name] {
				t.Errorf("%s: function %s has the name of a built-in", dir, f.Name)
			}
		}
		for _, td := range p.Types {
			if prev, ok := typeOwner[td.Name]; ok {
				t.Errorf("type %s is declared by both %s and %s", td.Name, prev, dir)
			}
			typeOwner[td.Name] = dir
		}
		for name, n := range referenceFunctions[dir] {
			got, ok := arity[name]
			switch {
			case !ok:
				t.Errorf("%s: missing function %s/%d", dir, name, n)
			case got != n:
				t.Errorf("%s: %s takes %d parameters, the reference %d", dir, name, got, n)
			}
		}
		if t.Failed() {
			continue
		}
		t.Logf("%s: %d functions, %d types", dir, len(p.Functions), len(p.Types))
	}
}

// scriptCase is one case of a libs/<dir>/tests/*.ax file: cases are
// separated by a line that is exactly `---`; expectations are comments:
//
//	// want: <compact JSON>        the result, encoded as in docs/tools.md §2
//	// want brief: <compact JSON>  the result in the brief encoding (vm.EncodeBrief)
//	// want runtime: <message>     the run fails with this error message
//
// Runs use allow-all, the mock handler and default limits; imports resolve
// against libs/.
type scriptCase struct {
	file    string
	line    int
	src     string
	want    *string
	brief   *string
	runtime *string
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
			if !set(&c.want, ":") && !set(&c.brief, " brief:") && !set(&c.runtime, " runtime:") {
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

// TestLibraryScripts runs every case of every libs/<dir>/tests/*.ax file
// and checks that the cases of a library call each of its functions.
func TestLibraryScripts(t *testing.T) {
	libs := libsDir(t)
	total := 0
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
			cases = append(cases, splitCases(t, f)...)
		}
		total += len(cases)
		checkCoverage(t, dir, cases)
		t.Run(dir, func(t *testing.T) {
			for _, c := range cases {
				t.Run(fmt.Sprintf("%s:%d", filepath.Base(c.file), c.line), func(t *testing.T) {
					t.Parallel()
					runCase(t, libs, c)
				})
			}
		})
	}
	t.Logf("%d library script cases", total)
}

// checkCoverage reports the functions of dir's core.ax that no test case
// calls (an identifier followed by "(").
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
	}
	for _, f := range p.Functions {
		if !called[f.Name] {
			t.Errorf("%s: no test calls %s", dir, f.Name)
		}
	}
}

func runCase(t *testing.T, libs string, c scriptCase) {
	where := fmt.Sprintf("%s:%d", c.file, c.line)
	if c.want == nil && c.brief == nil && c.runtime == nil {
		t.Fatalf("%s: case has no expectation", where)
	}
	if !strings.Contains(c.src, `import "`) {
		t.Fatalf("%s: case imports no library", where)
	}
	m, errs := compiler.Compile([]byte(c.src), compiler.Options{File: "case.ax", LibsDir: libs})
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

// TestImportAllTogether: a program importing every library at once
// compiles (no ambiguous names) and combines their effects in one list.
func TestImportAllTogether(t *testing.T) {
	var src strings.Builder
	for _, dir := range libDirs(t) {
		fmt.Fprintf(&src, "import %q\n", dir)
	}
	src.WriteString(`fn main() -> List<Effect> {
    [http_get("/a", "a"), db_to_effect(db_select("t", []), "b"), llm_prompt("s", "u", "c"),
     notification_dismiss_effect(1, 10), storage_get("n", "k", "d"), sync_effect("/s", "e")]
}
`)
	m, errs := compiler.Compile([]byte(src.String()), compiler.Options{File: "all.ax", LibsDir: libsDir(t)})
	if errs != nil {
		t.Fatal(errs)
	}
	res, err := vm.Run(context.Background(), m, vm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range res.Value.Elems() {
		kinds = append(kinds, e.Field(0).AsString())
	}
	if want := []string{"http_request", "db_query", "llm_call", "timer", "fs_read", "http_request"}; !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
}
