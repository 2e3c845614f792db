package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/internal/mcptest"
)

// A call's response stays writable however long the call runs after its
// last notification: a session notification (here
// notifications/tools/list_changed, as a scripts reload sends) that
// mcp-go writes on the call's stream more than SendTimeout after a debug
// line reaches the client, and the call goes on. The deadline the debug
// line's write set outlived it: mcp-go's later write failed at once, the
// connection was lost and the call ended without a result ("transport
// error: unexpected nil response"); an elicitation/create of code mode
// asked after a pause, or a result not written from the slot, were lost
// the same way.
func TestNotifyNoStaleDeadline(t *testing.T) {
	s := sharedStack(t)
	g := s.newGateway(t, Config{})
	const sendTimeout = 500 * time.Millisecond
	url := httpServer(t, g, HTTPConfig{SendTimeout: sendTimeout})
	c := httpClient(t, url, true) // a session, no GET stream: the call's stream is its only one
	setLevel(t, c, mcp.LoggingLevelDebug)
	l := newProgramLog(c)
	changed := make(chan struct{}, 1)
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := mcptest.Call(ctx, c, "boruna_run", sleepyDebug, nil) // two lines, then 30 s asleep
		done <- err
	}()
	for {
		if data, _ := l.got(); len(data) == len(wantDebug) {
			break
		}
		select {
		case <-l.more:
		case err := <-done:
			t.Fatalf("the call ended before its debug lines: %v", err)
		case <-ctx.Done():
			t.Fatal("no debug lines within 90 s")
		}
	}
	time.Sleep(4 * sendTimeout) // the call runs on, silent, past the deadline of the lines' writes
	g.mcp.SendNotificationToAllClients(string(mcp.MethodNotificationToolsListChanged), nil)
	select {
	case <-changed:
	case err := <-done:
		t.Fatalf("the call ended instead of getting notifications/tools/list_changed on its stream: %v", err)
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed within 90 s")
	}
	select {
	case err := <-done:
		t.Fatalf("the call ended while its program sleeps: %v", err)
	default:
	}
	cancel()
	<-done
}

// The gateway's notifications and mcp-go's writes on a call's response
// come from different goroutines, and mcp-go sets the response's headers
// (Header().Set) without the gateway's lock, as its forwarder does before
// writing a session notification or an elicitation/create on the call's
// stream: notify, which made the response an event stream, set the same
// header map under its lock only — a data race (go test -race), and a
// "concurrent map writes" crash of the server when both came at once.
// Here a tool's handler has notify write a line while it sets the headers
// as mcp-go's forwarder does, then writes an event as it does: the
// response holds the line, the event and the result, each whole.
func TestNotifyHeadersOfMCPGo(t *testing.T) {
	s := sharedStack(t)
	g := s.newGateway(t, Config{})
	tool := mcp.NewTool("boruna_run", mcp.WithString("source", mcp.Required()))
	g.mcp.AddTool(tool, func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		hw, ok := ctx.Value(streamKey{}).(*httpWriter)
		if !ok {
			return nil, errors.New("no stream in the call's context")
		}
		var notifyErr error
		notified := make(chan struct{})
		go func() {
			defer close(notified)
			n := notification("notifications/message", map[string]any{"level": "debug", "logger": ProgramLogger, "data": "line"})
			notifyErr = notify(ctx, n, func() error { return errors.New("sent as mcp-go sends it") }, nil)
		}()
		h := hw.Header() // as mcp-go's forwarder upgrades the response
		h.Set("Content-Type", "text/event-stream")
		h.Set("Connection", "keep-alive")
		h.Set("Cache-Control", "no-cache")
		<-notified
		if notifyErr != nil {
			return nil, notifyErr
		}
		hw.WriteHeader(http.StatusOK)
		if _, err := fmt.Fprintf(hw, "event: message\ndata: %s\n\n", `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`); err != nil {
			return nil, err
		}
		hw.Flush()
		return mcp.NewToolResultText("done"), nil
	})
	url := httpServer(t, g, HTTPConfig{})
	hdr := legacySession(t, url, testToken)
	resp := rawPost(t, url, hdr, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 1 }"}}}`)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	var got []string
	for _, m := range sseData(t, resp.Body) {
		b, _ := json.Marshal(m)
		got = append(got, string(b))
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"line","level":"debug","logger":"axpool.program"}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"id":3,"jsonrpc":"2.0","result":{"content":[{"text":"done","type":"text"}]}}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the response's messages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A call's notification that comes after the call was cancelled (a debug
// line of its job while the gateway waits for the job's end) is dropped:
// not written on its response, not handed to mcp-go's session either.
func TestNotifyAfterCancelDropped(t *testing.T) {
	rec := httptest.NewRecorder()
	hw := &httpWriter{w: rec}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = withStream(ctx, hw)
	cancel()
	fellBack := 0
	err := notify(ctx, notification("notifications/message", map[string]any{"level": "debug", "data": "late"}),
		func() error { fellBack++; return nil }, nil)
	if err != nil || fellBack != 0 || rec.Body.Len() != 0 || hw.wrote.Load() {
		t.Fatalf("notify after cancel: err %v, fallback called %d times, body %q, status sent %v; want nothing sent", err, fellBack, rec.Body.String(), hw.wrote.Load())
	}
}
