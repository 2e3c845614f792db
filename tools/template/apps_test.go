package template_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/tools/template"
	"github.com/axpool/axpool/vm"
)

// effectCaps maps App effect kinds to the capability they need
// (reference/tooling-reference-impl.md §2.2).
var effectCaps = map[string]string{
	"http_request": "net.fetch", "db_query": "db.query", "fs_read": "fs.read", "fs_write": "fs.write",
	"timer": "time.now", "random": "random", "spawn_actor": "actor.spawn", "emit_ui": "ui.render",
	"llm_call": "llm.call", "send_to_actor": "actor.send",
}

var appScenarios = []struct {
	name     string
	template string
	args     []string
	messages []string // "tag:payload"
}{
	{"crud_admin", "crud-admin", []string{"entity_name=product", "fields=name:String, price:Int"}, []string{
		"edit:Widget", "create", "set_role:editor", "edit:   ", "create", "edit:Widget", "create",
		"edit:O'Brien", "update:1", "update:7", "delete:1", "set_role:admin", "delete:1", "loaded:3", "unknown",
	}},
	{"form_basic", "form-basic", []string{"form_name=Contact", "fields=name, email,message,name"}, []string{
		"set:name=Ann", "set:email=ann.example.com", "touch:message", "submit", "set:email=ann@example.com",
		"set:message=Hi=there", "set:bogus=1", "submit", "reset",
	}},
	{"auth_app", "auth-app", []string{"app_name=Acme Portal"}, []string{
		"restore", "session_loaded:", "login:", "login:alice", "login_ok:admin", "login:bob",
		"grant:bob=editor", "grant:bob=wizard", "grant:alice=member", "grant:bob=admin", "logout",
		"login:carol", "login_failed:bad password", "session_loaded:dave",
	}},
	{"realtime_feed", "realtime-feed", []string{"feed_name=events"}, []string{
		"tick:0", "start", "start", "tick:1000", "tick:1500", "tick:2000", "events:a| b |", "events:c",
		"read", "events:", "set_interval:50", "stop", "tick:5000", "start", "tick:9000",
	}},
	{"realtime_feed_keeps_50", "realtime-feed", []string{"feed_name=big"}, []string{
		"events:" + numbered("e", 52), "events:last",
	}},
	{"realtime_feed_interval", "realtime-feed", []string{"feed_name=orders", "poll_interval_ms=250"}, []string{
		"start", "tick:100", "tick:200", "tick:350",
	}},
	{"offline_sync", "offline-sync", []string{"entity_name=note"}, []string{
		"load", "loaded:a=1;b=2;bad", "put:c=3", "put:oops", "online", "put:d=4", "synced:3",
		"conflict:a=9", "synced:1", "offline", "put:e=5",
	}},
}

// numbered returns "p1|p2|…|pn".
func numbered(p string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("%s%d", p, i+1)
	}
	return strings.Join(parts, "|")
}

// TestAppScenarios renders each shipped template, compiles it, and drives
// the App through init, a list of messages (update) and view, comparing a
// transcript of brief-encoded values with testdata/golden/app_NAME.golden.
// It also checks each cycle against the App's policies(): the effect
// count limit and the capability of every effect.
func TestAppScenarios(t *testing.T) {
	for _, sc := range appScenarios {
		t.Run(sc.name, func(t *testing.T) {
			kv, err := template.ParseArgs(sc.args)
			if err != nil {
				t.Fatal(err)
			}
			r, err := template.Apply(shipped, sc.template, kv)
			if err != nil {
				t.Fatal(err)
			}
			mod, errs := compiler.Compile([]byte(r.Source), compiler.Options{File: r.OutputFile, ModuleName: "app"})
			if errs != nil {
				t.Fatal(errs)
			}
			var msgType *vm.TypeDesc
			for _, td := range mod.Types {
				if td.Name == "Msg" {
					msgType = td
				}
			}
			call := func(entry string, args ...vm.Value) vm.Value {
				t.Helper()
				res, err := vm.Run(context.Background(), mod, vm.Options{Entry: entry, Args: args, Policy: nil})
				if err != nil {
					t.Fatalf("%s: %v", entry, err)
				}
				return res.Value
			}
			brief := func(v vm.Value) string { return string(vm.EncodeBrief(v)) }

			var out strings.Builder
			caps, maxEffects := []string{}, int64(0)
			hasPolicies := slices.ContainsFunc(mod.Functions, func(f *vm.Function) bool { return f.Name == "policies" })
			if hasPolicies {
				p := call("policies")
				for _, c := range p.Field(0).Elems() {
					caps = append(caps, c.AsString())
				}
				maxEffects = p.Field(1).AsInt()
				fmt.Fprintf(&out, "policies: %s\n", brief(p))
			}
			if !slices.Equal(caps, r.Capabilities) && hasPolicies {
				t.Errorf("policies() capabilities %v differ from the manifest's %v", caps, r.Capabilities)
			}
			state := call("init")
			fmt.Fprintf(&out, "init: %s\n", brief(state))
			for _, m := range sc.messages {
				tag, payload, _ := strings.Cut(m, ":")
				res := call("update", state, vm.NewRecord(msgType, vm.Str(tag), vm.Str(payload)))
				state = res.Field(0)
				effects := res.Field(1)
				fmt.Fprintf(&out, "> %s\n  state: %s\n", m, brief(state))
				if effects.Len() > 0 {
					fmt.Fprintf(&out, "  effects: %s\n", brief(effects))
				}
				if hasPolicies && maxEffects > 0 && int64(effects.Len()) > maxEffects {
					t.Errorf("%s: %d effects exceed max_effects %d", m, effects.Len(), maxEffects)
				}
				for _, e := range effects.Elems() {
					need, known := effectCaps[e.Field(0).AsString()]
					if !known || (hasPolicies && !slices.Contains(caps, need)) {
						t.Errorf("%s: effect %s not allowed by policies %v", m, e.Field(0).AsString(), caps)
					}
				}
			}
			fmt.Fprintf(&out, "view: %s\n", brief(call("view", state)))

			golden.Check(t, filepath.Join("testdata", "golden", "app_"+sc.name+".golden"), []byte(out.String()), *update)
		})
	}
}
