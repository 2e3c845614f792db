package scripts

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/tools"
)

// RunNested outside a capability handler's call (no calling run): the
// script runs under its own limits and a deny-all caller policy; the
// depth limit, a failure's Err text and a job that does not decode.
func TestRunNested(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"add.ax":   "// Adds.\nfn main(a: Int, b: Int) -> Int { a + b }\n",
		"clock.ax": "// Reads the clock.\nfn main() -> Bool !{time.now} { now_ms() > 0 }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := Load(dir, Options{})
	if err != nil || len(cat.Diagnostics) > 0 {
		t.Fatalf("load: %v %v", err, cat.Diagnostics)
	}
	job := func(name, args string) json.RawMessage {
		s, ok := cat.Lookup(name)
		if !ok {
			t.Fatalf("no script %q", name)
		}
		return s.NewJob(json.RawMessage(args)).Marshal()
	}
	env := &tools.Env{}
	ctx := context.Background()

	value, isError, msg, err := RunNested(ctx, env, job("add", `{"a": 2, "b": 40}`))
	var got struct {
		Success bool   `json:"success"`
		Script  string `json:"script"`
		Result  int    `json:"result"`
		Steps   int    `json:"steps"`
	}
	if err != nil || isError || json.Unmarshal(value, &got) != nil || !got.Success || got.Script != "add" || got.Result != 42 || got.Steps != 4 {
		t.Errorf("add: %s %v %q %v", value, isError, msg, err)
	}

	_, isError, msg, err = RunNested(ctx, env, job("clock", `{}`))
	if want := `script "clock" failed (policy_denied): capability denied: time.now (at clock.ax:2:33)`; err != nil || !isError || msg != want {
		t.Errorf("clock outside a run: %v %q %v\nwant %q", isError, msg, err, want)
	}

	_, isError, msg, err = RunNested(context.WithValue(ctx, depthKey{}, MaxNestedDepth), env, job("add", `{"a": 1, "b": 1}`))
	if want := `script "add": not run: named scripts may call each other at most 4 deep (tool_call depth limit)`; err != nil || !isError || msg != want {
		t.Errorf("depth: %v %q %v", isError, msg, err)
	}

	if _, _, _, err = RunNested(ctx, env, json.RawMessage(`[1]`)); err == nil || err.Error() != "script job: json: cannot unmarshal array into Go value of type scripts.Job" {
		t.Errorf("bad job: %v", err)
	}
}
