package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTemplateCLI(t *testing.T) {
	shipped := filepath.Join("..", "..", "templates")
	fixtures := filepath.Join("..", "..", "tools", "template", "testdata", "fixtures")
	out, _, code := runCLI(t, "template", "list", "--templates-dir", shipped)
	wantList := `auth-app 1.0.0 - Authentication flow with role management
  args: app_name (string, required)
  capabilities: net.fetch, fs.read, fs.write
crud-admin 1.0.0 - Full CRUD admin panel with authz guards, db effects, form validation
  args: entity_name (string, required), fields (string, required)
  capabilities: db.query
form-basic 1.0.0 - Simple validated form with field binding and submission
  args: fields (string, required), form_name (string, required)
offline-sync 1.0.0 - Offline-first app with sync queue and conflict resolution
  args: entity_name (string, required)
  capabilities: net.fetch, fs.read, fs.write
realtime-feed 1.0.0 - Live event feed with polling, rate limiting, and notifications
  args: feed_name (string, required), poll_interval_ms (int, default 1000)
  capabilities: net.fetch, time.now
`
	if code != 0 || out != wantList {
		t.Errorf("template list: code %d\n%s", code, out)
	}

	out, _, code = runCLI(t, "template", "list", "--templates-dir", shipped, "--json")
	if code != 0 || !strings.HasPrefix(out, "{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"count\": 5,\n") {
		t.Errorf("template list --json: code %d\n%s", code, out)
	}
	// A directory given explicitly must exist: a usage error naming the
	// flag, with or without --json.
	for _, json := range []string{"--json", "--json=false"} {
		out, errs, code := runCLI(t, "template", "list", "--templates-dir", "no-such-dir", json)
		if code != 2 || out != "" || errs != "axpool template list: --templates-dir no-such-dir: no such directory\n" {
			t.Errorf("template list %s missing dir: code %d\nstdout %q\nstderr %q", json, code, out, errs)
		}
	}

	// Rendered source on stdout; --validate reports on stderr.
	out, errs, code := runCLI(t, "template", "apply", "realtime-feed", "feed_name=events", "--templates-dir", shipped, "--validate")
	if code != 0 || !strings.HasPrefix(out, "// events live feed, generated from the realtime-feed template.\n// Polls GET /api/events/events every 1000 ms.\n") || errs != "validation passed\n" {
		t.Errorf("template apply: code %d stderr %q\n%s", code, errs, out)
	}
	// -o writes the file.
	dest := filepath.Join(t.TempDir(), "app.ax")
	out, errs, code = runCLI(t, "template", "apply", "form-basic", "form_name=Contact", "fields=a,b", "--templates-dir", shipped, "-o", dest)
	data, err := os.ReadFile(dest)
	if code != 0 || out != "" || errs != "wrote "+dest+"\n" || err != nil || !strings.HasPrefix(string(data), "// Contact form, generated") {
		t.Errorf("template apply -o: code %d stdout %q stderr %q err %v", code, out, errs, err)
	}
	// A failed validation still prints the source, then exits 1.
	out, _, code = runCLI(t, "template", "apply", "broken", "name=x", "--templates-dir", fixtures, "--validate")
	if code != 1 || out != "// x\nfn main() -> Int {\n    let count = 10\n    countt\n}\n" {
		t.Errorf("template apply broken: code %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "template", "apply", "broken", "name=x", "--templates-dir", fixtures, "--validate", "--json")
	if code != 1 || !strings.Contains(out, `"error": "template output does not compile: broken_app.ax:4:5: E003 undefined name 'countt' (did you mean 'count'?)"`) {
		t.Errorf("template apply broken --json: code %d\n%s", code, out)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"template", "apply", "form-basic", "form_name"}, 2},                            // not key=value
		{[]string{"template", "apply", "realtime-feed", "feed_name=x", "poll_interval_ms=x"}, 2}, // not an int
		{[]string{"template", "apply", "form-basic", "form_name=x"}, 1},                          // missing required
		{[]string{"template", "apply", "../etc"}, 1},                                             // invalid name
		{[]string{"template", "apply", "nope"}, 1},                                               // not found
		{[]string{"template", "apply"}, 2},                                                       // usage
	} {
		out, _, code := runCLI(t, append(c.args, "--templates-dir", shipped)...)
		if code != c.code || out != "" {
			t.Errorf("axpool %s: code %d (want %d), stdout %q", strings.Join(c.args, " "), code, c.code, out)
		}
	}
}
