package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/queue"
)

// A full queue answers queue_full at once, with retry_after_ms and the job
// metadata, never a hang (docs/tools.md §5).
func TestQueueFull(t *testing.T) {
	s := newStack(t, 0, queue.Config{MaxDepth: 1, RetryAfter: 750 * time.Millisecond})
	defer s.close()
	c := inProcess(t, s.gw)
	// The first job waits in the queue (no workers) until its call ends.
	ctx, cancel := context.WithCancel(context.Background())
	firstDone := make(chan struct{})
	go func() {
		defer close(firstDone)
		var req mcp.CallToolRequest
		req.Params.Name = "boruna_run"
		req.Params.Arguments = json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)
		c.CallTool(ctx, req)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := s.client.Stats(context.Background())
		if err == nil && st.Depth == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first job was not queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	got := mustCall(t, c, "boruna_run", `{"source":"fn main() -> Int { 2 }"}`)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("queue_full took %v", d)
	}
	// job_id names the refused job (a fresh UUID); no worker touched it.
	if id, _ := got["job_id"].(string); uuid.Validate(id) != nil {
		t.Fatalf("queue_full job_id = %q, want the refused job's UUID", id)
	}
	got["job_id"] = "<refused>"
	want := `{"success":false,"protocol_version":1,"error_kind":"queue_full","message":"the job queue is full; retry after 750 ms","outcome":"queue_full","retryable":true,"retry_after_ms":750,"job_id":"<refused>","queue_ms":0,"run_ms":0,"worker":""}`
	b, _ := json.Marshal(got)
	var wantMap map[string]any
	json.Unmarshal([]byte(want), &wantMap)
	wb, _ := json.Marshal(wantMap)
	if string(b) != string(wb) {
		t.Fatalf("queue_full result =\n%s\nwant\n%s", b, wb)
	}
	// Cancelling the queued call removes its job from the queue.
	cancel()
	<-firstDone
	for {
		st, err := s.client.Stats(context.Background())
		if err == nil && st.Depth == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancelled job stayed queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Secrets never leave the server: a program that returns a secret's value
// gets *** in the text and in structuredContent (docs/tools.md §4).
func TestSecretsMasked(t *testing.T) {
	s := sharedStack(t)
	g := s.newGateway(t, Config{Masker: NewMasker([]string{"DEPLOY_TOKEN=tok-9f8e7d6c5b", "SHORT_SECRET=abc"})})
	c := inProcess(t, g)
	res, err := call(t, c, "boruna_run", `{"source":`+src(`fn main() -> String { "key=tok-9f8e7d6c5b; abc" }`)+`}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := envelope(t, res)
	if got["result"] != "key=***; abc" {
		t.Fatalf("result = %v", got["result"])
	}
	text := res.Content[0].(mcp.TextContent).Text
	sc, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(text, "tok-9f8e7d6c5b") || strings.Contains(string(sc), "tok-9f8e7d6c5b") {
		t.Fatal("secret leaked")
	}
}

func TestResponseID(t *testing.T) {
	for line, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`:                "7",
		`{"jsonrpc":"2.0","result":{"x":[1,2]},"id":"a"}`:                 `"a"`,
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"m"}}`:  "3",
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`: "",
		`{"jsonrpc":"2.0","id":9,"method":"ping"}`:                        "",
		`not json`: "",
	} {
		id, ok := responseID([]byte(line))
		if got := string(id); ok != (want != "") || got != want {
			t.Errorf("responseID(%s) = %q, %v; want %q", line, got, ok, want)
		}
	}
	if idKey([]byte(`7`)) != idKey([]byte(`7.0`)) || idKey([]byte(`"7"`)) == idKey([]byte(`7`)) {
		t.Error("idKey must follow mcp-go's re-encoding of ids")
	}
}

// The stdio writer passes whole lines through and drops exactly the
// response of a cancelled tool call.
func TestStdioWriterDropsCancelledResponse(t *testing.T) {
	var out strings.Builder
	w := &stdioWriter{out: &out, calls: newCallTable(false)}
	w.inspect([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"x"}}}`))
	w.inspect([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"x"}}}`))
	w.inspect([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
	w.inspect([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`))
	w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n" + `{"jsonrpc":"2.0","id":1,`))
	w.Write([]byte(`"result":{}}` + "\n"))
	w.Write([]byte(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n"))
	w.Write([]byte(`{"jsonrpc":"2.0","id":99,"result":{}}` + "\n"))
	want := `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":99,"result":{}}` + "\n"
	if out.String() != want {
		t.Fatalf("output =\n%s\nwant\n%s", out.String(), want)
	}
	if calls, early := w.calls.size(); calls != 0 || early != 0 {
		t.Fatalf("state left: %d calls, %d early cancels", calls, early)
	}
}
