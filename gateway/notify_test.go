package gateway

import (
	"context"
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
