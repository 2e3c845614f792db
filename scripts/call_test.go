package scripts

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// inProcess is a RunFunc that runs jobs with Execute and counts them.
func inProcess(n *atomic.Int64) RunFunc {
	return func(ctx context.Context, job json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
		n.Add(1)
		return Execute(ctx, &tools.Env{}, job, progress).MarshalJSON()
	}
}

func loadDir(t *testing.T, files map[string]string) *Catalogue {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range files {
		writeFile(t, dir, rel, content)
	}
	c, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Diagnostics) > 0 {
		t.Fatalf("diagnostics: %v", c.Diagnostics)
	}
	return c
}

func field(t *testing.T, out []byte, key string) string {
	t.Helper()
	o, err := wire.ParseObject(out)
	if err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	v, ok := o.Get(key)
	if !ok {
		return "<absent>"
	}
	raw := v.(json.RawMessage)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func TestCallerGrantsHooksAndContext(t *testing.T) {
	c := loadDir(t, map[string]string{
		"clean.ax": "//! confirm \"Delete all build output?\"\nfn main() -> Int { 1 }\n",
		"test.ax":  "//! on_failure \"_diagnose\"\nfn main(n: Int) -> Int { 10 / n }\n",
		"_diagnose.ax": "fn main(failed: String, error: String) -> String !{ui.render} {\n" +
			"  ui_render(\"second line\")\n  \"post-mortem for \" ++ failed ++ \": \" ++ error\n}\n",
		"plain.ax":      "//! on_failure \"_plainhook\"\nfn main() -> Int { 1 / 0 }\n",
		"_plainhook.ax": "fn main() -> Unit !{ui.render} {\n  ui_render(\"no args\")\n  ui_render(\"and a list\")\n}\n",
		"badhook.ax":    "//! on_failure \"_broken\"\nfn main() -> Int { 1 / 0 }\n",
		"_broken.ax":    "fn main() -> Int { let x = 0\n 5 / x }\n",
		"big.ax":        "//! on_failure \"_big\"\nfn main() -> Int { 1 / 0 }\n",
		"_big.ax":       "fn main() -> String {\n  let mut s = \"é\"\n  let mut i = 0\n  while i < 14 { s = s ++ s\n i = i + 1 }\n  s\n}\n",
		"health.ax":     "//! context\nfn main() -> String { \"branch main\\n\\n\" }\n",
	})
	var runs atomic.Int64
	caller := &Caller{Catalogue: c, Run: inProcess(&runs)}
	ctx := context.Background()

	clean, _ := c.Lookup("clean")
	if _, ref := caller.Check(clean, nil); ref == nil {
		t.Fatal("destructive script ran without a grant")
	} else if b, _ := ref.MarshalJSON(); string(b) != `{"success":false,"protocol_version":1,"script":"clean","script_digest":"`+clean.Digest+
		`","error_kind":"not_permitted","message":"script \"clean\" is destructive; start axpool with --allow-destructive clean to permit it","outcome":"policy_denied","retryable":false,"confirm":"Delete all build output?"}` {
		t.Errorf("refusal = %s", b)
	}
	caller.Allowed = map[string]bool{"clean": true}
	if args, ref := caller.Check(clean, nil); ref != nil {
		t.Fatalf("granted script refused: %v", ref)
	} else if out, err := caller.Call(ctx, clean, args, nil); err != nil || field(t, out, "result") != "1" {
		t.Errorf("granted run = %s, %v", out, err)
	}

	test, _ := c.Lookup("test")
	if _, ref := caller.Check(test, json.RawMessage(`{"n":"zero"}`)); ref == nil {
		t.Fatal("invalid args accepted")
	} else if b, _ := ref.MarshalJSON(); !strings.Contains(string(b), `"error_kind":"invalid_args","message":"script \"test\": invalid value \"zero\" for parameter \"n\" (expected an integer)","outcome":"invalid_args"`) {
		t.Errorf("invalid args refusal = %s", b)
	}
	before := runs.Load()
	out, err := caller.Call(ctx, test, json.RawMessage(`{"n":0}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := field(t, out, "fix_suggestion"); got != "post-mortem for test: division by zero\nsecond line" {
		t.Errorf("fix_suggestion = %q in %s", got, out)
	}
	if field(t, out, "outcome") != "runtime_error" || runs.Load()-before != 2 {
		t.Errorf("outcome %s, runs %d: %s", field(t, out, "outcome"), runs.Load()-before, out)
	}
	before = runs.Load()
	out, _ = caller.Call(ctx, test, json.RawMessage(`{"n":5}`), nil)
	if field(t, out, "result") != "2" || field(t, out, "fix_suggestion") != "<absent>" || runs.Load()-before != 1 {
		t.Errorf("a successful run ran the hook: %s", out)
	}

	plain, _ := c.Lookup("plain")
	out, _ = caller.Call(ctx, plain, json.RawMessage(`{}`), nil)
	if got := field(t, out, "fix_suggestion"); got != "no args\nand a list" {
		t.Errorf("hook without parameters: %q", got)
	}
	bad, _ := c.Lookup("badhook")
	out, _ = caller.Call(ctx, bad, json.RawMessage(`{}`), nil)
	if got := field(t, out, "fix_suggestion_error"); got != `failure hook "_broken" failed: division by zero` ||
		field(t, out, "error_kind") != "runtime_error" || field(t, out, "message") != "division by zero" {
		t.Errorf("failing hook: %q in %s", got, out)
	}
	big, _ := c.Lookup("big")
	out, _ = caller.Call(ctx, big, json.RawMessage(`{}`), nil)
	got := field(t, out, "fix_suggestion")
	if !strings.HasSuffix(got, "\n[truncated]") || len(got) != MaxHookOutputBytes+len("\n[truncated]") || !strings.HasPrefix(got, "éé") {
		t.Errorf("capped suggestion: %d bytes, ends %q", len(got), got[max(len(got)-20, 0):])
	}

	text, detail := caller.ContextText(ctx)
	if text != "branch main" || detail != "" {
		t.Errorf("context = %q, %q", text, detail)
	}
	failing := &Caller{Catalogue: c, Run: func(context.Context, json.RawMessage, func(int64, int64)) (json.RawMessage, error) {
		return json.RawMessage(`{"success":false,"protocol_version":1,"error_kind":"runtime_error","message":"boom\nline two","outcome":"runtime_error","retryable":false}`), nil
	}}
	text, detail = failing.ContextText(ctx)
	if text != `(context script "health" failed; proceeding without project context)` || detail != "boom line two" {
		t.Errorf("failed context = %q, %q", text, detail)
	}
}

// The operator's ceiling narrows a script's policy too: declared ∩
// sidecar ∩ ceiling.
func TestExecuteCeilingPolicy(t *testing.T) {
	c := loadDir(t, map[string]string{
		"clock.ax":          "fn main() -> Int !{time.now} { now_ms() }\n",
		"twice.ax":          "fn main() -> Int !{time.now} { now_ms() - now_ms() }\n",
		"twice.policy.json": `{"default_allow": true, "rules": {"time.now": {"allow": true, "budget": 5}}}`,
	})
	deny := policy.DenyAll()
	one := policy.AllowAll()
	one.Rules = map[policy.Capability]policy.Rule{policy.TimeNow: {Allow: true, Budget: 1}}
	for _, tc := range []struct {
		script  string
		ceiling *policy.Policy
		want    string
	}{
		{"clock", nil, `1700000000`},
		{"clock", deny, `policy_denied capability denied: time.now`},
		{"twice", nil, `0`},
		{"twice", one, `policy_denied capability budget exceeded: time.now (CapabilityBudgetExceeded(TimeNow))`},
	} {
		s, _ := c.Lookup(tc.script)
		o := Execute(context.Background(), &tools.Env{CeilingPolicy: tc.ceiling}, s.NewJob(json.RawMessage(`{}`)).Marshal(), nil)
		b, _ := o.MarshalJSON()
		got := field(t, b, "result")
		if field(t, b, "success") != "true" {
			got = field(t, b, "outcome") + " " + field(t, b, "message")
		}
		if got != tc.want {
			t.Errorf("%s under %v: %s", tc.script, tc.ceiling, b)
		}
	}
}
