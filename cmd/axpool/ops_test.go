package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/axpool/axpool/queue/queuetest"
)

// startMCPProcess starts `axpool mcp` with flags as a child this test can
// kill, and returns an initialized client on its stdin/stdout and the
// process.
func startMCPProcess(t *testing.T, stderr *queuetest.Buffer, flags ...string) (*client.Client, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(bin(t), append([]string{"mcp"}, flags...)...)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c := client.NewClient(transport.NewIO(stdout, stdin, io.NopCloser(bytes.NewReader(nil))))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	initClient(t, c)
	return c, cmd
}

// metricsURL waits for the "serving metrics" log line and returns its URL.
func metricsURL(t *testing.T, stderr *queuetest.Buffer) string {
	t.Helper()
	re := regexp.MustCompile(`serving metrics\".*url=(http://[0-9.:]+)/metrics`)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no metrics listener; stderr:\n%s", stderr.String())
	return ""
}

// scrape GETs url+/metrics and returns every sample by its text form,
// `name{label="v",…}` (labels sorted by name, as the client writes them).
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	status, body := httpGet(t, url+"/metrics")
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func sha(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}

// TestMetricsAndAuditLog runs known calls through `axpool mcp
// --metrics-addr --audit-log`, scrapes /metrics and checks exact counter
// values, checks the probes, then kills the process with SIGKILL and finds
// every answered call in the audit log (docs/operations.md "Metrics",
// "Audit log").
func TestMetricsAndAuditLog(t *testing.T) {
	t.Parallel()
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	var stderr queuetest.Buffer
	c, cmd := startMCPProcess(t, &stderr, "--workers", "1", "--slots", "2", "--metrics-addr", "127.0.0.1:0", "--audit-log", audit)
	url := metricsURL(t, &stderr)
	if status, body := httpGet(t, url+"/healthz"); status != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", status, body)
	}
	// /readyz: the bus answers and the worker process is alive.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, body := httpGet(t, url+"/readyz")
		if status == 200 && body == "ready\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %d %q", status, body)
		}
	}

	okSrc := "fn main() -> Int { 6 * 7 }"
	calls := []struct{ tool, args string }{
		{"boruna_run", `{"source":` + jstr(okSrc) + `}`},
		{"boruna_run", `{"source":` + jstr(okSrc) + `,"policy":"deny-all"}`},
		{"boruna_run", `{"source":"fn main() -> Int {"}`},
		{"boruna_run", `{"source":` + jstr("fn main() -> Int {\n let mut i = 0\n while true { i = i + 1 }\n i\n}") + `,"max_steps":1000}`},
		{"boruna_run", `{"source":` + jstr(okSrc) + `,"max_step":1}`},
		{"boruna_capability_list", `{}`},
		{"boruna_workflow_validate", `{"workflow_json":"{"}`},
	}
	var results []map[string]any
	for _, call := range calls {
		results = append(results, mustTool(t, c, call.tool, call.args))
	}

	// A job is acknowledged after its result was sent and its caller
	// confirmed holding it (docs/architecture.md "Jobs"): the last one's
	// ack may reach the stream after its call returned. Wait for it.
	m := scrape(t, url)
	for deadline := time.Now().Add(30 * time.Second); m["axpool_queue_in_flight"] != 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		m = scrape(t, url)
	}
	want := map[string]float64{
		`axpool_gateway_calls_total{outcome="ok",tool="boruna_run"}`:                   2,
		`axpool_gateway_calls_total{outcome="compile_error",tool="boruna_run"}`:        1,
		`axpool_gateway_calls_total{outcome="step_limit",tool="boruna_run"}`:           1,
		`axpool_gateway_calls_total{outcome="invalid_args",tool="boruna_run"}`:         1,
		`axpool_gateway_calls_total{outcome="ok",tool="boruna_capability_list"}`:       1,
		`axpool_gateway_calls_total{outcome="failed",tool="boruna_workflow_validate"}`: 1,
		`axpool_gateway_caller_calls_total{caller="stdio",outcome="ok"}`:               3,
		`axpool_gateway_caller_calls_total{caller="stdio",outcome="compile_error"}`:    1,
		`axpool_gateway_caller_calls_total{caller="stdio",outcome="step_limit"}`:       1,
		`axpool_gateway_caller_calls_total{caller="stdio",outcome="invalid_args"}`:     1,
		`axpool_gateway_caller_calls_total{caller="stdio",outcome="failed"}`:           1,
		`axpool_gateway_calls_in_flight`:                                               0,
		`axpool_jobs_total{outcome="ok",tool="boruna_run"}`:                            2,
		`axpool_jobs_total{outcome="compile_error",tool="boruna_run"}`:                 1,
		`axpool_jobs_total{outcome="step_limit",tool="boruna_run"}`:                    1,
		`axpool_job_queue_seconds_count{tool="boruna_run"}`:                            4,
		`axpool_job_run_seconds_count{tool="boruna_run"}`:                              4,
		`axpool_job_steps_count{tool="boruna_run"}`:                                    3, // the compile error has no steps
		`axpool_job_steps_sum{tool="boruna_run"}`:                                      4 + 4 + 1001,
		`axpool_limit_hits_total{kind="steps"}`:                                        1,
		`axpool_queue_up`:                                                              1,
		`axpool_queue_depth`:                                                           0,
		`axpool_queue_in_flight`:                                                       0,
		`axpool_worker_processes`:                                                      1,
		`axpool_worker_restarts_total`:                                                 0,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for k := range m {
		if strings.HasPrefix(k, "axpool_gateway_calls_total{") || strings.HasPrefix(k, "axpool_jobs_total{") {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected sample %s = %v", k, m[k])
			}
		}
	}
	if _, ok := m["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}

	// SIGKILL: nothing is flushed at exit, yet every answered call is in
	// the audit log, one JSON line each, in order.
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(audit); st.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %04o, want 0600", st.Mode().Perm())
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(calls) {
		t.Fatalf("%d audit lines, want %d:\n%s", len(lines), len(calls), data)
	}
	allowAll, denyAll := sha(`"allow-all"`), sha(`"deny-all"`)
	for i, line := range lines {
		var e struct {
			Time, Caller, Tool, ArgsSHA256, SourceSHA256, PolicySHA256, Outcome, JobID string
			Success                                                                    bool
			Steps, RunMs                                                               *int64
		}
		if err := json.Unmarshal([]byte(line), &struct {
			Time         *string `json:"time"`
			Caller       *string `json:"caller"`
			Tool         *string `json:"tool"`
			ArgsSHA256   *string `json:"args_sha256"`
			SourceSHA256 *string `json:"source_sha256"`
			PolicySHA256 *string `json:"policy_sha256"`
			Outcome      *string `json:"outcome"`
			Success      *bool   `json:"success"`
			Steps        **int64 `json:"steps"`
			RunMs        **int64 `json:"run_ms"`
			JobID        *string `json:"job_id"`
		}{&e.Time, &e.Caller, &e.Tool, &e.ArgsSHA256, &e.SourceSHA256, &e.PolicySHA256, &e.Outcome, &e.Success, &e.Steps, &e.RunMs, &e.JobID}); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		res := results[i]
		if _, err := time.Parse(time.RFC3339Nano, e.Time); err != nil || e.Caller != "stdio" || e.Tool != calls[i].tool ||
			len(e.ArgsSHA256) != 64 || e.JobID != res["job_id"] && !(res["job_id"] == nil && e.JobID == "") ||
			e.Success != (res["success"] == true) {
			t.Errorf("line %d = %s\nresult %v", i, line, res)
		}
		if strings.Contains(line, "6 * 7") || strings.Contains(line, "while true") {
			t.Errorf("line %d holds the source: %s", i, line)
		}
		if out, _ := res["outcome"].(string); out != "" && e.Outcome != out {
			t.Errorf("line %d: outcome %s, result %s", i, e.Outcome, out)
		}
		if steps, ok := res["steps"].(float64); ok != (e.Steps != nil) || ok && float64(*e.Steps) != steps {
			t.Errorf("line %d: steps %v, result %v", i, e.Steps, res["steps"])
		}
		if runMs, ok := res["run_ms"].(float64); ok != (e.RunMs != nil) || ok && float64(*e.RunMs) != runMs {
			t.Errorf("line %d: run_ms %v, result %v", i, e.RunMs, res["run_ms"])
		}
	}
	if e := lines[0]; !strings.Contains(e, `"source_sha256":"`+sha(okSrc)+`"`) || !strings.Contains(e, `"policy_sha256":"`+allowAll+`"`) {
		t.Errorf("run line: %s", e)
	}
	if e := lines[1]; !strings.Contains(e, `"policy_sha256":"`+denyAll+`"`) {
		t.Errorf("deny-all line: %s", e)
	}
	if e := lines[5]; strings.Contains(e, "source_sha256") || strings.Contains(e, "policy_sha256") || !strings.Contains(e, `"outcome":"ok","success":true,"steps":null,"run_ms":null,"job_id":""`) {
		t.Errorf("capability_list line: %s", e)
	}
}
