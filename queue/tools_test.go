package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestGatewayOfReply(t *testing.T) {
	for reply, want := range map[string]string{
		EventSubject("gw-1", "job-2"): "gw-1",
		"axpool.evt.gw":               "",
		"axpool.evt.gw.":              "",
		"axpool.evt..job":             "",
		"axpool.evt.gw.a.b":           "",
		"other.gw.job":                "",
		"":                            "",
	} {
		got, ok := GatewayOfReply(reply)
		if got != want && ok || ok != (want != "") {
			t.Errorf("GatewayOfReply(%q) = %q, %v; want %q", reply, got, ok, want)
		}
	}
}

// callErr asserts that err is a *ToolCallError with code and msg.
func callErr(t *testing.T, what string, err error, code, msg string) {
	t.Helper()
	var e *ToolCallError
	if !errors.As(err, &e) || e.Code != code || e.Msg != msg {
		t.Errorf("%s: got %v, want %s: %s", what, err, code, msg)
	}
}

func TestToolCalls(t *testing.T) {
	emb, bus, _ := StartTestStack(t, Config{}, ClientOptions{})
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	svc, err := bus.ServeTools("gw-a", func(ctx context.Context, req *ToolRequest) ToolResult {
		switch req.Name {
		case "up__echo":
			d, _ := ctx.Deadline()
			return ToolResult{Value: json.RawMessage(`{"job":"` + req.JobID + `","args":` + string(req.Args) +
				`,"deadline_set":` + boolText(!req.Deadline.IsZero() && !d.After(req.Deadline)) + `}`)}
		case "up__seq":
			return ToolResult{Value: json.RawMessage(fmt.Sprintf(`{"job":%q,"seq":%d,"approved":%v}`, req.JobID, req.Seq, req.Approved))}
		case "up__fail":
			return ToolResult{Value: json.RawMessage(`"no"`), IsError: true, Text: "no"}
		case "up__big":
			return ToolResult{Value: json.RawMessage(`"` + strings.Repeat("x", int(bus.Conn().MaxPayload())) + `"`)}
		case "up__block":
			started <- struct{}{}
			<-ctx.Done()
			ended <- ctx.Err()
			return ToolResult{Code: "cancelled", Error: "cancelled"}
		}
		return ToolResult{Code: "unknown_tool", Error: `unknown tool "` + req.Name + `"`}
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := bus.CallTool(ctx, "gw-a", "job-1", "up__echo", json.RawMessage(`{"k":1}`))
	if err != nil || string(res.Value) != `{"job":"job-1","args":{"k":1},"deadline_set":true}` || res.IsError {
		t.Errorf("echo = %+v, %v", res, err)
	}
	// A worker's own connection (another process in fleet mode) reaches
	// the gateway's service the same way.
	nc2, err := emb.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	bus2, err := Attach(ctx, nc2, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = bus2.CallTool(ctx, "gw-a", "job-9", "up__echo", json.RawMessage(`{}`))
	if err != nil || string(res.Value) != `{"job":"job-9","args":{},"deadline_set":true}` {
		t.Errorf("echo from another connection = %+v, %v", res, err)
	}
	// CallToolRequest sends the call's number and approval.
	res, err = bus.CallToolRequest(ctx, "gw-a", ToolRequest{JobID: "job-3", Seq: 7, Name: "up__seq", Approved: true})
	if err != nil || string(res.Value) != `{"job":"job-3","seq":7,"approved":true}` {
		t.Errorf("seq = %+v, %v", res, err)
	}
	res, err = bus.CallTool(ctx, "gw-a", "job-1", "up__fail", nil)
	if err != nil || !res.IsError || res.Text != "no" || string(res.Value) != `"no"` {
		t.Errorf("fail = %+v, %v", res, err)
	}
	_, err = bus.CallTool(ctx, "gw-a", "job-1", "up__nope", nil)
	callErr(t, "nope", err, "unknown_tool", `unknown tool "up__nope"`)
	_, err = bus.CallTool(ctx, "gw-a", "job-1", "up__big", nil)
	var e *ToolCallError
	if !errors.As(err, &e) || e.Code != CodeTooLarge || !strings.HasPrefix(e.Msg, "the tool's result (") {
		t.Errorf("big: %v", err)
	}
	_, err = bus.CallTool(ctx, "gw-b", "job-1", "up__echo", nil)
	callErr(t, "no gateway", err, CodeNoGateway, `tool "up__echo": gateway gw-b does not answer tool calls (it is gone, or has neither upstreams nor scripts)`)
	_, err = bus.CallTool(ctx, "gw.b", "job-1", "up__echo", nil)
	callErr(t, "bad gateway", err, CodeNoGateway, `tool "up__echo": invalid gateway ID "gw.b"`)

	// The caller's cancellation reaches the gateway's handler.
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := bus.CallTool(cctx, "gw-a", "job-2", "up__block", nil)
		done <- err
	}()
	<-started
	ccancel()
	callErr(t, "cancelled", <-done, "cancelled", `tool "up__block": cancelled`)
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("handler's context: %v", err)
	}

	// Stop cancels the calls in flight and answers no more.
	go func() {
		_, err := bus.CallTool(ctx, "gw-a", "job-3", "up__block", nil)
		done <- err
	}()
	<-started
	svc.Stop()
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("handler's context after Stop: %v", err)
	}
	callErr(t, "stopped", <-done, "cancelled", "cancelled")
	_, err = bus.CallTool(ctx, "gw-a", "job-4", "up__echo", nil)
	callErr(t, "after stop", err, CodeNoGateway, `tool "up__echo": gateway gw-a does not answer tool calls (it is gone, or has neither upstreams nor scripts)`)
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
