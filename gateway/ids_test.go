package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Request ids of every size and form come back byte for byte over stdio
// and HTTP (mcp-go alone rounds them through float64 and re-escapes
// strings).
func TestExactIDs(t *testing.T) {
	s := sharedStack(t)
	ids := []string{`9007199254740993`, `9007199254740992`, `1180591620717411303424`, `-9007199254740993`,
		`1.50`, `1e3`, `1E+3`, `-0`, `0.1`, `7`, `"a<b>&c"`, `"\u0041"`, `"é"`, `"x\/y"`, `""`}
	r := newRawStdio(t, s.gw)
	url := httpServer(t, s.gw, HTTPConfig{})
	legacy := legacySession(t, url, testToken)
	for _, id := range ids {
		want := `{"jsonrpc":"2.0","id":` + id + `,"result":{}}`
		r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if got := string(r.nextRaw()); got != want {
			t.Errorf("stdio ping %s:\n got %s\nwant %s", id, got, want)
		}
		if status, body := rawDo(t, http.MethodPost, url, legacy, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`); status != http.StatusOK || body != want+"\n" {
			t.Errorf("http ping %s: %d\n got %s\nwant %s", id, status, body, want)
		}
	}
	// A tool call's result, and a refusal, carry the exact id too.
	big := `9007199254740993`
	r.send(toolCallMsg(big, "boruna_run", shortArgs, ""))
	if got := r.nextRaw(); !bytes.HasPrefix(got, []byte(`{"jsonrpc":"2.0","id":`+big+`,"result":{`)) {
		t.Errorf("stdio call: %s", got)
	}
	if status, body := rawDo(t, http.MethodPost, url, legacy, toolCallMsg(big, "boruna_run", shortArgs, "")); status != http.StatusOK ||
		!strings.HasPrefix(body, `{"jsonrpc":"2.0","id":`+big+`,"result":{`) || !strings.Contains(body, `\"result\": 42`) {
		t.Errorf("http call: %d %s", status, body)
	}
	r.send(toolCallMsg(`1.50`, "boruna_nope", shortArgs, ""))
	if got, want := string(r.nextRaw()), rpcErrLine(t, `1.50`, -32602, `unknown tool "boruna_nope"`); got != want {
		t.Errorf("stdio refusal:\n got %s\nwant %s", got, want)
	}
}

// wallArgs is an endless loop stopped by a 2 s wall limit.
const wallArgs = `{"source":"fn main() -> Int { let mut i = 0\n while true { i = i + 1 }\n i }","max_steps":1000000000000000,"max_wall_ms":2000}`

// Two calls with ids 2^53 and 2^53+1 (the same float64) in flight
// together over stdio: cancelling the first stops only it; the second
// completes and is answered with its own id.
func TestExactIDsCancelStdio(t *testing.T) {
	s := sharedStack(t)
	waitIdle(t, s, 30*time.Second)
	r := newRawStdio(t, s.gw)
	r.send(toolCallMsg(`9007199254740992`, "boruna_run", endlessArgs, `{"progressToken":"a"}`))
	r.send(toolCallMsg(`9007199254740993`, "boruna_run", wallArgs, `{"progressToken":"b"}`))
	// Both run once each has reported progress; b's wall limit may end it
	// before the cancel on a busy machine, never a's endless loop.
	seen := map[string]bool{}
	var bResult []byte
	isB := func(raw []byte) bool {
		return bytes.HasPrefix(raw, []byte(`{"jsonrpc":"2.0","id":9007199254740993,"result":`)) && bytes.Contains(raw, []byte(`\"outcome\": \"wall_limit\"`))
	}
	for !seen["a"] || !seen["b"] {
		raw := r.nextRaw()
		var m struct {
			Method string `json:"method"`
			Params struct {
				ProgressToken string `json:"progressToken"`
			} `json:"params"`
		}
		json.Unmarshal(raw, &m)
		switch {
		case m.Method == "notifications/progress":
			seen[m.Params.ProgressToken] = true
		case isB(raw):
			bResult = raw
		default:
			t.Fatalf("before both ran: %s", raw)
		}
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740992}}`)
	for bResult == nil {
		raw := r.nextRaw()
		if bytes.Contains(raw, []byte(`"method":"notifications/progress"`)) {
			continue
		}
		if !isB(raw) {
			t.Fatalf("want the wall-limit result of 9007199254740993, got %s", raw)
		}
		bResult = raw
	}
	waitIdle(t, s, 10*time.Second)
	// Nothing for the cancelled call: the next line is the ping's.
	r.send(`{"jsonrpc":"2.0","id":"after","method":"ping"}`)
	for {
		raw := string(r.nextRaw())
		if strings.Contains(raw, `"method":"notifications/progress"`) {
			continue
		}
		if raw != `{"jsonrpc":"2.0","id":"after","result":{}}` {
			t.Fatalf("got %s, want only the ping's response", raw)
		}
		break
	}
}

// The same over HTTP, in one session: the cancelled call's stream ends
// without a response, the other's carries its result with its own id.
func TestExactIDsCancelHTTP(t *testing.T) {
	s := sharedStack(t)
	waitIdle(t, s, 30*time.Second)
	url := httpServer(t, s.gw, HTTPConfig{})
	hdr := legacySession(t, url, testToken)
	// (mcp-go sends a session's notifications on whichever of its
	// streams reads them first; clients tell them apart by token.)
	a := sseEvents(rawPost(t, url, hdr, toolCallMsg(`9007199254740992`, "boruna_run", endlessArgs, `{"progressToken":"a"}`)).Body)
	b := sseEvents(rawPost(t, url, hdr, toolCallMsg(`9007199254740993`, "boruna_run", wallArgs, `{"progressToken":"b"}`)).Body)
	var fromA, fromB []string
	for !strings.Contains(strings.Join(append(fromA, fromB...), ""), `"progressToken":"a"`) ||
		!strings.Contains(strings.Join(append(fromA, fromB...), ""), `"progressToken":"b"`) {
		select {
		case e := <-a:
			fromA = append(fromA, e)
		case e := <-b:
			fromB = append(fromB, e)
		case <-time.After(30 * time.Second):
			t.Fatalf("no progress of both calls: %q %q", fromA, fromB)
		}
	}
	if status, body := rawDo(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740992}}`); status != http.StatusAccepted || body != "" {
		t.Fatalf("cancel: %d %q", status, body)
	}
	for e := range a {
		fromA = append(fromA, e)
	}
	for e := range b {
		fromB = append(fromB, e)
	}
	for _, e := range fromA {
		if !strings.Contains(e, `"method":"notifications/progress"`) {
			t.Fatalf("the cancelled call's stream carried %s", e)
		}
	}
	if last := fromB[len(fromB)-1]; !strings.HasPrefix(last, `{"jsonrpc":"2.0","id":9007199254740993,"result":`) || !strings.Contains(last, `\"outcome\": \"wall_limit\"`) {
		t.Fatalf("the other call's last event: %s", last)
	}
	waitIdle(t, s, 10*time.Second)
}

// A JSON-RPC batch, and any message that is not a JSON object, is refused
// -32600 with id null (stdio, and HTTP with status 400); so is a method
// that is not a string, with the id.
func TestBatchAndNonObjects(t *testing.T) {
	s := sharedStack(t)
	r := newRawStdio(t, s.gw)
	url := httpServer(t, s.gw, HTTPConfig{})
	legacy := legacySession(t, url, testToken)
	for _, tc := range []struct{ in, want string }{
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, rpcErrLine(t, "null", -32600, msgBatch)},
		{`[]`, rpcErrLine(t, "null", -32600, msgBatch)},
		{`42`, rpcErrLine(t, "null", -32600, "invalid request: a message must be a JSON object, got number")},
		{`"ping"`, rpcErrLine(t, "null", -32600, "invalid request: a message must be a JSON object, got string")},
		{`null`, rpcErrLine(t, "null", -32600, "invalid request: a message must be a JSON object, got null")},
		{`{"jsonrpc":"2.0","id":3,"method":5}`, rpcErrLine(t, "3", -32600, "invalid request: method must be a string, got number")},
	} {
		r.send(tc.in)
		if got := string(r.nextRaw()); got != tc.want {
			t.Errorf("stdio %s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
		resp := rawPost(t, url, legacy, tc.in)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || string(body) != tc.want+"\n" {
			t.Errorf("http %s: %d\n got %s\nwant %s", tc.in, resp.StatusCode, body, tc.want)
		}
	}
	if msgBatch != "invalid request: JSON-RPC batches are not supported; send one message at a time" {
		t.Fatalf("msgBatch = %q", msgBatch)
	}
	r.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":4,"result":{}}` {
		t.Fatalf("ping after the refusals: %s", got)
	}
}

// Each stdio connection is its own mcp-go session: two served by one
// Server at once answer their own requests, with ids that collide.
func TestStdioSessionsConcurrent(t *testing.T) {
	s := sharedStack(t)
	a, b := newRawStdio(t, s.gw), newRawStdio(t, s.gw)
	a.send(toolCallMsg(`1`, "boruna_run", shortArgs, `{"progressToken":"a"}`))
	b.send(toolCallMsg(`1`, "boruna_run", `{"source":"fn main() -> Int { 6 * 7 + 1 }"}`, `{"progressToken":"b"}`))
	for name, r := range map[string]*rawStdio{"a": a, "b": b} {
		want := map[string]string{"a": `\"result\": 42,`, "b": `\"result\": 43,`}[name]
		if got := r.nextRaw(); !bytes.HasPrefix(got, []byte(`{"jsonrpc":"2.0","id":1,"result":`)) || !bytes.Contains(got, []byte(want)) {
			t.Errorf("%s: %s", name, got)
		}
		r.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":2,"result":{}}` {
			t.Errorf("%s ping: %s", name, got)
		}
	}
}

// ServeStdio returns when its context ends even if nobody reads stdout:
// the responses it cannot write are dropped.
func TestStdioStuckStdout(t *testing.T) {
	s := sharedStack(t)
	sr, cw := io.Pipe()
	out := stuckWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(out.release)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.gw.ServeStdio(ctx, sr, out) }()
	defer cw.Close()
	for i := range 3 {
		if _, err := fmt.Fprintf(cw, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i); err != nil {
			t.Fatal(err)
		}
	}
	<-out.entered // the first response is being written, and never will be
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeStdio still blocked on stdout 30 s after its context ended")
	}
}

// stuckWriter blocks every Write until release, saying so on entered.
type stuckWriter struct{ entered, release chan struct{} }

func (w stuckWriter) Write([]byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.release
	return 0, io.ErrClosedPipe
}
