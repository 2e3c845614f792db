package template_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/tools/template"
	"github.com/axpool/axpool/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

const (
	shipped  = "../../templates"
	fixtures = "testdata/fixtures"
	libsDir  = "../../libs"
)

// goldenCases are compared byte for byte with testdata/golden/NAME.golden
// (the pretty envelope plus a newline).
var goldenCases = []struct {
	name string
	run  func() *wire.Object
}{
	{"list_shipped", func() *wire.Object { return template.ListTool(shipped) }},
	{"list_fixtures", func() *wire.Object { return template.ListTool(fixtures) }},
	{"list_missing_dir", func() *wire.Object { return template.ListTool("testdata/no-such-dir") }},
	{"list_malformed", func() *wire.Object { return template.ListTool("testdata/malformed") }},

	{"apply_crud_admin", func() *wire.Object {
		return template.ApplyTool(shipped, "crud-admin", []string{"entity_name=product", "fields=name:String, price:Int"}, true, libsDir)
	}},
	{"apply_form_basic", func() *wire.Object {
		return template.ApplyTool(shipped, "form-basic", []string{"form_name=Contact", "fields=name,email,message"}, true, libsDir)
	}},
	{"apply_auth_app", func() *wire.Object {
		return template.ApplyTool(shipped, "auth-app", []string{"app_name=Acme Portal"}, true, libsDir)
	}},
	{"apply_realtime_feed_default", func() *wire.Object {
		return template.ApplyTool(shipped, "realtime-feed", []string{"feed_name=events"}, true, libsDir)
	}},
	{"apply_realtime_feed_interval", func() *wire.Object {
		return template.ApplyTool(shipped, "realtime-feed", []string{"feed_name=orders", "poll_interval_ms=250"}, false, libsDir)
	}},
	{"apply_offline_sync", func() *wire.Object {
		return template.ApplyTool(shipped, "offline-sync", []string{"entity_name=note"}, true, libsDir)
	}},

	// Values with quotes, backslashes and line breaks still yield valid
	// code: escaped in string literals, flattened in comments.
	{"apply_crud_admin_hostile_values", func() *wire.Object {
		return template.ApplyTool(shipped, "crud-admin", []string{"entity_name=x\" ++ evil() ++ \"\n}\nfn evil() -> Int { 1 }\n// ", "fields=a\nfn main() -> Int { 0 }"}, true, libsDir)
	}},
	{"apply_missing_required", func() *wire.Object {
		return template.ApplyTool(shipped, "form-basic", []string{"form_name=c"}, false, libsDir)
	}},
	{"apply_missing_required_first_alphabetical", func() *wire.Object {
		return template.ApplyTool(shipped, "crud-admin", nil, false, libsDir)
	}},
	{"apply_not_key_value", func() *wire.Object {
		return template.ApplyTool(shipped, "form-basic", []string{"form_name"}, false, libsDir)
	}},
	// key=value parsing happens before the disk is touched.
	{"apply_not_key_value_before_name", func() *wire.Object {
		return template.ApplyTool("testdata/no-such-dir", "../x", []string{"ok=1", "bad"}, false, libsDir)
	}},
	{"apply_int_arg_invalid", func() *wire.Object {
		return template.ApplyTool(shipped, "realtime-feed", []string{"feed_name=x", "poll_interval_ms=1s"}, false, libsDir)
	}},
	{"apply_missing_dir", func() *wire.Object {
		return template.ApplyTool("testdata/no-such-dir", "crud-admin", nil, false, libsDir)
	}},
	{"apply_not_found", func() *wire.Object {
		return template.ApplyTool(shipped, "crud-admn", nil, false, libsDir)
	}},
	{"apply_no_source_file", func() *wire.Object {
		return template.ApplyTool(fixtures, "nosource", nil, false, libsDir)
	}},
	{"apply_malformed_manifest", func() *wire.Object {
		return template.ApplyTool("testdata/malformed", "bad", []string{"x=1"}, false, libsDir)
	}},
	// Single pass: a={{b}} stays literal; defaults fill n, flag and word;
	// b, nothing (null default) and unknown placeholders stay verbatim
	// where not supplied.
	{"apply_no_reexpansion_and_defaults", func() *wire.Object {
		return template.ApplyTool(fixtures, "subst", []string{"a={{b}}", "b=X"}, false, libsDir)
	}},
	{"apply_escaping", func() *wire.Object {
		return template.ApplyTool(fixtures, "subst", []string{"a=say \"hi\"\\\nbye", "n=-3", "flag=false", "extra=ignored=="}, false, libsDir)
	}},
	{"apply_dir_name_differs", func() *wire.Object {
		return template.ApplyTool(fixtures, "zeta-dir", []string{"aa=1", "=empty key"}, false, libsDir)
	}},
	{"apply_validate_fails", func() *wire.Object {
		return template.ApplyTool(fixtures, "broken", []string{"name=x"}, true, libsDir)
	}},
	{"apply_validate_false_no_field", func() *wire.Object {
		return template.ApplyTool(fixtures, "broken", []string{"name=x"}, false, libsDir)
	}},
}

func TestGolden(t *testing.T) {
	for _, c := range goldenCases {
		t.Run(c.name, func(t *testing.T) {
			golden.CheckPretty(t, filepath.Join("testdata", "golden", c.name+".golden"), c.run(), *update)
		})
	}
}

// TestInvalidNames checks that no name reaches outside the templates
// directory. Names are taken literally: URL-encoded dots are not decoded.
func TestInvalidNames(t *testing.T) {
	invalid := []string{
		"", ".", "..", "../", "..\\", "../templates/crud-admin", "a/../../etc", "..\\..\\windows",
		"/etc", "/etc/passwd", "crud-admin/", "sub/dir", "a\\b", "nul\x00byte", "..%2F..%2Fetc",
		"...", "x..y", "crud-admin%2F..%2F..",
	}
	for _, name := range invalid {
		_, err := template.Apply(shipped, name, map[string]string{})
		var te *template.Error
		if !errors.As(err, &te) || te.Code != template.ErrInvalidName || te.Msg != "invalid template name '"+name+"'" {
			t.Errorf("Apply(%q) = %v, want invalid template name", name, err)
		}
		if kind := template.ErrorKind(err); kind != "template_error" {
			t.Errorf("ErrorKind(%q) = %s", name, kind)
		}
	}
	for _, name := range []string{"%2e%2e%2fetc", "%2e%2e", "%2f", "~", "crud-admin%2F%2e%2e"} {
		_, err := template.Apply(shipped, name, map[string]string{})
		var te *template.Error
		if !errors.As(err, &te) || te.Code != template.ErrNotFound || te.Msg != "template '"+name+"' not found" {
			t.Errorf("Apply(%q) = %v, want not found", name, err)
		}
	}
}

// TestSymlinks: a template directory or file that resolves outside the
// templates directory is refused; a symlink inside it is followed.
func TestSymlinks(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "templates")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(dir, "real"), filepath.Join(dir, "leaky"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	manifest := `{"name":"%s","version":"1","description":"d","dependencies":[],"capabilities":[],"args":{}}`
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "real", "template.json"), strings.Replace(manifest, "%s", "real", 1))
	write(filepath.Join(dir, "real", "app.ax.template"), "fn main() -> Int { 1 }\n")
	write(filepath.Join(outside, "template.json"), strings.Replace(manifest, "%s", "secret", 1))
	write(filepath.Join(outside, "app.ax.template"), "SECRET\n")
	write(filepath.Join(dir, "leaky", "template.json"), strings.Replace(manifest, "%s", "leaky", 1))
	link := func(target, name string) {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link(outside, filepath.Join(dir, "escape"))                                                     // dir symlink out
	link(filepath.Join(dir, "real"), filepath.Join(dir, "alias"))                                   // dir symlink in
	link(filepath.Join(outside, "app.ax.template"), filepath.Join(dir, "leaky", "app.ax.template")) // file symlink out

	for _, name := range []string{"escape", "leaky"} {
		_, err := template.Apply(dir, name, nil)
		var te *template.Error
		if !errors.As(err, &te) || te.Code != template.ErrInvalidName {
			t.Errorf("Apply(%s) = %v, want invalid template name", name, err)
		}
	}
	r, err := template.Apply(dir, "alias", nil)
	if err != nil || r.TemplateName != "real" || r.OutputFile != "alias_app.ax" || r.Source != "fn main() -> Int { 1 }\n" {
		t.Errorf("Apply(alias) = %+v, %v", r, err)
	}
	ms, err := template.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name+"@"+m.Dir)
	}
	if got := strings.Join(names, ","); got != "leaky@leaky,real@alias,real@real" {
		t.Errorf("List = %s", got)
	}
}

func TestParseArgs(t *testing.T) {
	got, err := template.ParseArgs([]string{"a=1", "b=x=y", "=v", "a=2", "c="})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "2", "b": "x=y", "": "v", "c": ""}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("got[%q] = %q, want %q", k, got[k], v)
		}
	}
	_, err = template.ParseArgs([]string{"ok=1", "novalue"})
	var te *template.Error
	if !errors.As(err, &te) || te.Code != template.ErrArgFormat || err.Error() != "argument must be key=value format, got: novalue" {
		t.Errorf("err = %v", err)
	}
	if template.ErrorKind(err) != "invalid_args" {
		t.Errorf("ErrorKind = %s", template.ErrorKind(err))
	}
}

func TestTooLarge(t *testing.T) {
	big := strings.Repeat("x", template.MaxSourceBytes)
	_, err := template.Apply(fixtures, "subst", map[string]string{"a": big})
	var te *template.Error
	if !errors.As(err, &te) || te.Code != template.ErrTooLarge || err.Error() != "rendered template exceeds 1048576 bytes" {
		t.Errorf("err = %v", err)
	}
}

// TestPathologicalTemplate: many "{{" without a closing "}}" render in
// linear time and unchanged.
func TestPathologicalTemplate(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("{{", 200_000) + "}" + strings.Repeat("{{a", 100_000)
	if err := os.WriteFile(filepath.Join(dir, "p", "template.json"),
		[]byte(`{"name":"p","version":"1","description":"d","dependencies":[],"capabilities":[],"args":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "app.ax.template"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := template.Apply(dir, "p", map[string]string{"a": "X"})
	if err != nil || r.Source != text {
		t.Errorf("Apply: err %v, source changed: %v", err, r.Source != text)
	}
}

func TestListTyped(t *testing.T) {
	ms, err := template.List(shipped)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name+":"+strings.Join(m.ArgNames(), ","))
	}
	want := "auth-app:app_name crud-admin:entity_name,fields form-basic:fields,form_name offline-sync:entity_name realtime-feed:feed_name,poll_interval_ms"
	if strings.Join(got, " ") != want {
		t.Errorf("List = %v", got)
	}
	rf := ms[4].Args["poll_interval_ms"]
	if rf.Type != "int" || rf.Required || string(rf.Default) != "1000" {
		t.Errorf("poll_interval_ms = %+v", rf)
	}
	_, err = template.List("testdata/no-such-dir")
	var te *template.Error
	if !errors.As(err, &te) || te.Code != template.ErrDirMissing || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("List(missing) = %v", err)
	}
}

func BenchmarkApplyCrudAdmin(b *testing.B) {
	args := map[string]string{"entity_name": "product", "fields": "name:String,price:Int"}
	for b.Loop() {
		if _, err := template.Apply(shipped, "crud-admin", args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkApplyToolValidate(b *testing.B) {
	for b.Loop() {
		template.ApplyTool(shipped, "crud-admin", []string{"entity_name=product", "fields=name"}, true, libsDir)
	}
}
