package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/axpool/axpool/internal/node"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/worker/handlers"
)

// TestMemoryCeilingFlags: mcp, serve and worker default --max-memory-mb to
// DefaultMemoryCeilingMB, and their help says what the ceiling does and
// that 0 removes it.
func TestMemoryCeilingFlags(t *testing.T) {
	if node.DefaultMemoryCeilingMB != 1024 {
		t.Fatalf("DefaultMemoryCeilingMB = %d", node.DefaultMemoryCeilingMB)
	}
	for _, name := range []string{"mcp", "serve", "worker"} {
		c, _, err := rootCmd.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("max-memory-mb")
		if f == nil || f.DefValue != "1024" || f.Usage != memoryCeilingUsage {
			t.Errorf("axpool %s --max-memory-mb = %+v", name, f)
		}
	}
	if memoryCeilingUsage != "ceiling on a call's limits.max_memory_mb in MB: a call asking more runs with the ceiling "+
		"(and fails with limit_kind memory_mb, limit = the ceiling, if it needs more); bounds the default worker slots; 0 = no ceiling" {
		t.Errorf("usage = %q", memoryCeilingUsage)
	}
}

// TestWorkerArgs: the supervisor hands every ceiling to its workers,
// the default memory ceiling and an explicit 0 included, and the handler
// set with every grant.
func TestWorkerArgs(t *testing.T) {
	var nf nodeFlags
	nf.register(pflag.NewFlagSet("node", pflag.ContinueOnError)) // sets the defaults
	nf.libsDir, nf.templatesDir = "libs", "templates"            // as startNode resolves them
	cfg := nf.config(nil, nodeOptions{})
	got := node.WorkerArgs("nats://127.0.0.1:4222", &cfg)
	want := []string{"worker", "--nats", "nats://127.0.0.1:4222", "--libs-dir", "libs", "--templates-dir", "templates",
		"--max-steps", "0", "--max-wall-ms", "0", "--max-memory-mb", "1024", "--max-output-bytes", "0", "--log-level", "info", "--shutdown-grace", "10s",
		"--handlers", "live"}
	if !slices.Equal(got, want) {
		t.Errorf("default workerArgs =\n%q\nwant\n%q", got, want)
	}
	nf.maxMemoryMB, nf.slots, nf.ceilingPolicy, nf.secretEnv = 0, 3, "ceiling.json", []string{"DB_URL", "OTHER"}
	nf.grants = node.Grants{Handlers: "live", AllowPrivateNet: []string{"127.0.0.1/32"},
		Grants: handlers.Grants{AllowNet: []string{"api.example.com", "*.example.org"}, FSRoot: "/srv/files", FSReadOnly: true,
			DB: "/srv/app.db", DBReadOnly: true, LLMURL: "http://127.0.0.1:9/v1/chat/completions", LLMModel: "m"}}
	cfg = nf.config(nil, nodeOptions{})
	got = node.WorkerArgs("nats://x", &cfg)
	want = []string{"worker", "--nats", "nats://x", "--libs-dir", "libs", "--templates-dir", "templates",
		"--max-steps", "0", "--max-wall-ms", "0", "--max-memory-mb", "0", "--max-output-bytes", "0", "--log-level", "info",
		"--shutdown-grace", "10s", "--slots", "3", "--ceiling-policy", "ceiling.json", "--secret-env", "DB_URL", "--secret-env", "OTHER",
		"--handlers", "live", "--allow-net", "api.example.com,*.example.org", "--allow-private-net", "127.0.0.1/32",
		"--fs-root", "/srv/files", "--fs-read-only", "--db", "/srv/app.db", "--db-read-only",
		"--llm-url", "http://127.0.0.1:9/v1/chat/completions", "--llm-model", "m"}
	if !slices.Equal(got, want) {
		t.Errorf("workerArgs =\n%q\nwant\n%q", got, want)
	}
}

// TestE2EMemoryCeilingDefault: a node started without --max-memory-mb
// runs a call asking limits.max_memory_mb 3000 under the 1024 MB ceiling,
// so a string that doubles until memory runs out stops at 1024 MB; a call
// asking less than the ceiling keeps its own limit.
func TestE2EMemoryCeilingDefault(t *testing.T) {
	t.Parallel()
	var stderr queuetest.Buffer
	c := startStdio(t, &stderr, "--workers", "1")

	src := jstr("fn main() -> Int {\n  let mut s = \"x\"\n  while true { s = s ++ s }\n  0\n}\n")
	for _, ask := range []struct {
		mb, limit string
		want      float64
	}{{"3000", "1024", 1024}, {"64", "64", 64}} {
		got := mustTool(t, c, "boruna_run", `{"source":`+src+`,"limits":{"max_memory_mb":`+ask.mb+`}}`)
		want := map[string]any{
			"success": false, "error_kind": "limit_exceeded", "limit_kind": "memory_mb", "phase": "execution",
			"limit": ask.want, "message": "memory limit of " + ask.limit + " MB exceeded",
			"line": 3.0, "col": 22.0, "function": "main", "outcome": "memory_limit", "retryable": false,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("max_memory_mb %s: %s = %v, want %v (%v)", ask.mb, k, got[k], v, got)
			}
		}
	}
	if strings.Contains(stderr.String(), "panic") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}
