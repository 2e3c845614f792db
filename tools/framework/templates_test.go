package framework_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/tools/framework"
	"github.com/axpool/axpool/tools/template"
)

// templateRuns renders each shipped template and drives it through a
// sample message list that exercises its commands and effects.
var templateRuns = []struct {
	template string
	args     []string
	messages []string
}{
	{"auth-app", []string{"app_name=Acme Portal"}, []string{
		"restore", "session_loaded:", "login:alice", "login_ok:admin", "grant:bob=editor", "grant:bob=wizard",
		"logout", "login:carol", "login_failed:bad password",
	}},
	{"crud-admin", []string{"entity_name=product", "fields=name:String, price:Int"}, []string{
		"edit:Widget", "create", "set_role:editor", "create", "edit:O'Brien", "update:1", "set_role:admin",
		"delete:1", "loaded:3", "unknown",
	}},
	{"form-basic", []string{"form_name=Contact", "fields=name, email,message"}, []string{
		"set:name=Ann", "set:email=ann.example.com", "touch:message", "submit", "set:email=ann@example.com",
		"set:message=Hi=there", "submit", "reset",
	}},
	{"offline-sync", []string{"entity_name=note"}, []string{
		"load", "loaded:a=1;b=2", "put:c=3", "online", "put:d=4", "synced:3", "conflict:a=9", "offline", "put:e=5",
	}},
	{"realtime-feed", []string{"feed_name=events", "poll_interval_ms=500"}, []string{
		"start", "tick:500", "tick:700", "tick:1000", "events:a| b |", "read", "stop", "tick:5000",
	}},
}

// TestTemplatesPassFrameworkTest: every shipped template, rendered, passes
// boruna_framework_test with its sample messages (every cycle succeeds,
// every effect allowed by the template's policies()); the responses are
// locked by testdata/templates/*.golden.
func TestTemplatesPassFrameworkTest(t *testing.T) {
	dir := filepath.Join("..", "..", "templates")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, run := range templateRuns {
		covered[run.template] = true
	}
	for _, e := range ents {
		if e.IsDir() && !covered[e.Name()] {
			t.Errorf("template %s has no framework_test run", e.Name())
		}
	}
	libs := libsDir(t)
	for _, run := range templateRuns {
		t.Run(run.template, func(t *testing.T) {
			kv, err := template.ParseArgs(run.args)
			if err != nil {
				t.Fatal(err)
			}
			r, err := template.Apply(dir, run.template, kv)
			if err != nil {
				t.Fatal(err)
			}
			v := framework.ValidateAppTool(r.Source, libs)
			if valid, _ := v.Get("valid"); valid != true {
				b, _ := v.Pretty()
				t.Fatalf("validate_app: %s", b)
			}
			o := framework.FrameworkTestTool(context.Background(), r.Source, run.messages, libs)
			if ok, _ := o.Get("success"); ok != true {
				b, _ := o.Pretty()
				t.Fatalf("framework_test failed: %s", b)
			}
			if n, _ := o.Get("total_cycles"); n != len(run.messages) {
				t.Errorf("total_cycles %v, want %d", n, len(run.messages))
			}
			checkGolden(t, filepath.Join("testdata", "templates", run.template+".golden"), o)
		})
	}
}
