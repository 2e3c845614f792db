package dispatch

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/batch"
	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
)

var jobSize = regexp.MustCompile(`the job is [0-9]+ bytes`)

// TestBatchScriptQueueRefusal: a script item whose own job the queue
// refuses (over its message limit) is answered invalid_args with job_id
// "" — the envelope of a refusal — yet it is a result, not a malformed
// item; only a refusal before any job (an unknown script, here) is. So
// batchScript cannot tell a refusal from the envelope alone: scriptItem
// reports it.
func TestBatchScriptQueueRefusal(t *testing.T) {
	s := pooltest.Start(t, pooltest.Options{Stack: queuetest.Options{Embedded: queue.EmbeddedOptions{MaxPayload: 64 << 10}}})
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "echo.ax"), []byte("// Echo.\nfn main(s: String) -> String { s }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := scripts.Load(dir, scripts.Options{})
	if err != nil || len(cat.Diagnostics) > 0 {
		t.Fatalf("load: %v %v", err, cat.Diagnostics)
	}
	d, err := New(Config{Backend: &QueueBackend{Client: s.Client, Timeout: time.Minute}, Local: ToolsLocal(nil),
		Executes: tools.Executes, Scripts: NewScripts(cat, nil)})
	if err != nil {
		t.Fatal(err)
	}
	input := `{"id":"big","script":"echo","args":{"s":"` + strings.Repeat("x", 100<<10) + `"}}` + "\n" +
		`{"id":"typo","script":"ecoh","args":{}}` + "\n"
	got := map[string]batch.Result{}
	if err := d.RunItems(context.Background(), readItems(input), ItemsOptions{Concurrency: 1, OnResult: func(r batch.Result) {
		got[r.Item.ID] = r
	}}); err != nil {
		t.Fatal(err)
	}
	echo, _ := cat.Lookup("echo")
	for _, c := range []struct {
		id, env   string
		malformed bool
	}{
		{"big", `{"success":false,"protocol_version":1,"script":"echo","script_digest":"` + echo.Digest + `","error_kind":"invalid_args",` +
			`"message":"the job is N bytes once encoded (source and arguments, JSON-escaped), above the queue's message limit of 65536 bytes; send a shorter source or fewer or smaller arguments",` +
			`"outcome":"invalid_args","retryable":false,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`, false},
		{"typo", `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"line 2: unknown script \"ecoh\" (did you mean \"echo\"?)","outcome":"invalid_args","retryable":false,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`, true},
	} {
		r := got[c.id]
		// The job's size counts its timestamps, whose encoding varies by a
		// few bytes.
		env := jobSize.ReplaceAllString(string(r.Envelope), "the job is N bytes")
		if env != c.env || r.Item.Malformed() != c.malformed {
			t.Errorf("%s: %s (malformed %v)\nwant %s (malformed %v)", c.id, r.Envelope, r.Item.Malformed(), c.env, c.malformed)
		}
	}
}
