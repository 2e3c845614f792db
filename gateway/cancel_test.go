package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/dispatch"
)

// endlessArgs is a boruna_run that loops until its step or wall limit: far
// beyond any test's patience, so only a cancellation ends it in time.
const endlessArgs = `{"source":"fn main() -> Int { let mut i = 0\n while true { i = i + 1 }\n i }","max_steps":1000000000000000}`

// shortArgs is a boruna_run that answers at once.
const shortArgs = `{"source":"fn main() -> Int { 41 + 1 }"}`

// A notifications/cancelled written right behind its tools/call (same
// write) reaches the call whatever stage it is in — still in mcp-go's
// queue, in the handler before the job is submitted, or running — so no
// job outlives the cancel, and no cancelled call is answered. The end of
// every call is observed deterministically: at stdin EOF ServeStdio waits
// until each call it read has been answered (the responses of the
// cancelled ones being dropped), so it returns only once every handler
// has ended and cancelled its job.
func TestStdioCancelRightBehindCall(t *testing.T) {
	s := sharedStack(t)
	waitIdle(t, s, 30*time.Second)
	r := newRawStdio(t, s.gw)
	const n = 20
	var b strings.Builder
	for id := 1; id <= n; id++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"boruna_run","arguments":%s}}`+"\n", id, endlessArgs)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"test"}}`+"\n", id)
	}
	fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"boruna_run","arguments":%s}}`, shortArgs)
	r.send(b.String())
	// The fresh call is answered (and is the only answer) although 20
	// endless calls were sent before it to 4 worker slots.
	m := r.next()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if m["id"] != float64(100) || sc["outcome"] != "ok" || sc["result"] != float64(42) {
		t.Fatalf("response = %v", m)
	}
	r.in.Close()
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("ServeStdio still waits for cancelled calls 20 s after stdin closed")
	}
	if line, ok := <-r.lines; ok {
		t.Fatalf("a cancelled call was answered: %s", line)
	}
	waitIdle(t, s, 10*time.Second)
}

// modernHeaders are the headers of a raw 2026-07-28 tools/call of tool.
func modernHeaders(tool string) map[string]string {
	return map[string]string{
		"Authorization":           "Bearer " + testToken,
		mcp.HeaderProtocolVersion: mcp.ProtocolVersion20260728,
		mcp.HeaderMethod:          string(mcp.MethodToolsCall),
		mcp.HeaderName:            tool,
	}
}

// modernMetaJSON is the _meta a 2026-07-28 request must carry.
const modernMetaJSON = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`

// rawHTTPRequest renders a POST of body to url with headers, as bytes for
// a raw TCP connection.
func rawHTTPRequest(t testing.TB, url string, header map[string]string, body string) (addr string, req []byte) {
	t.Helper()
	hr, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		hr.Header.Set(k, v)
	}
	var b strings.Builder
	if err := hr.Write(&b); err != nil {
		t.Fatal(err)
	}
	return hr.URL.Host, []byte(b.String())
}

// Clients that close their connection right after sending a tools/call
// (30 at once, on both protocol eras) leave no job running. The end of
// every handler is observed deterministically: Shutdown waits for the
// requests in flight and returns nil only once all have ended; then the
// workers must be idle and a fresh call answered.
func TestHTTPEarlyDisconnect(t *testing.T) {
	s := sharedStack(t)
	waitIdle(t, s, 30*time.Second)
	h, url := httpServerH(t, s.gw, HTTPConfig{})
	legacy := legacySession(t, url, testToken)
	legacyBody := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"boruna_run","arguments":%s}}`, id, endlessArgs)
	}
	modernBody := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"boruna_run","arguments":%s,"_meta":%s}}`, id, endlessArgs, modernMetaJSON)
	}
	// The modern request shape is accepted (a short call is answered).
	if status, body := rawDo(t, http.MethodPost, url, modernHeaders("boruna_run"),
		fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"boruna_run","arguments":%s,"_meta":%s}}`, shortArgs, modernMetaJSON)); status != http.StatusOK || !strings.Contains(body, `\"result\": 42`) {
		t.Fatalf("modern short call: %d %s", status, body)
	}
	var wg sync.WaitGroup
	for i := range 30 {
		hdr, body := legacy, legacyBody(i+1)
		if i%2 == 1 {
			hdr, body = modernHeaders("boruna_run"), modernBody(i+1)
		}
		addr, req := rawHTTPRequest(t, url, hdr, body)
		wg.Go(func() {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := conn.Write(req); err != nil {
				t.Error(err)
			}
			conn.Close()
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil {
		t.Fatalf("handlers of disconnected clients still running 20 s later: %v", err)
	}
	waitIdle(t, s, 10*time.Second)
	c := stdioClient(t, s.gw)
	got := mustCall(t, c, "boruna_run", shortArgs)
	if got["outcome"] != "ok" || got["result"] != float64(42) {
		t.Fatalf("fresh call: %v", got)
	}
}

// Over HTTP a notifications/cancelled can overtake its tools/call (they
// travel on two connections): the session remembers the cancel, and the
// call, when it arrives, submits no job and gets no response: its event
// stream ends at once, empty.
func TestHTTPCancelBeforeCall(t *testing.T) {
	s := sharedStack(t)
	be := &ctxBackend{inner: &dispatch.QueueBackend{Client: s.Client, Timeout: time.Minute}}
	url := httpServer(t, s.newGateway(t, Config{Backend: be}), HTTPConfig{})
	hdr := legacySession(t, url, testToken)
	status, body := rawDo(t, http.MethodPost, url, hdr, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":77}}`)
	if status != http.StatusAccepted || body != "" {
		t.Fatalf("cancel: %d %q", status, body)
	}
	resp := rawPost(t, url, hdr, fmt.Sprintf(
		`{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"boruna_run","arguments":%s}}`, endlessArgs))
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || len(got) != 0 {
		t.Fatalf("cancelled call: %d %q %q (%v), want 200, an empty event stream", resp.StatusCode, resp.Header.Get("Content-Type"), got, err)
	}
	be.mu.Lock()
	if len(be.seen) != 0 {
		t.Errorf("%d jobs submitted for a call cancelled before it arrived", len(be.seen))
	}
	be.mu.Unlock()
	// Another id of the session is not affected.
	status, body = rawDo(t, http.MethodPost, url, hdr, fmt.Sprintf(
		`{"jsonrpc":"2.0","id":78,"method":"tools/call","params":{"name":"boruna_run","arguments":%s}}`, shortArgs))
	if status != http.StatusOK || !strings.Contains(body, `"outcome\": \"ok\"`) {
		t.Fatalf("call 78: %d %s", status, body)
	}
}

// The call table: cancels reach every call entered under the id, as the
// client wrote it; early cancels (HTTP) are kept at most earlyCancelTTL and
// maxEarlyCancels; a stdio table keeps none.
func TestCallTable(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	// added enters a call and reports whether it is cancelled at once.
	added := func(tab *callTable, key string) bool {
		ctx, cancel := context.WithCancel(context.Background())
		tab.add(key, cancel)
		return ctx.Err() != nil
	}
	t.Run("cancel", func(t *testing.T) {
		tab := newCallTable(false)
		ctx, cancel := context.WithCancel(context.Background())
		c := tab.add("1", cancel)
		ctx2, cancel2 := context.WithCancel(context.Background())
		c2 := tab.add("1", cancel2) // a reused id
		ctx3, cancel3 := context.WithCancel(context.Background())
		c3 := tab.add("1.0", cancel3) // another id
		tab.cancel("1", t0)
		if ctx.Err() == nil || ctx2.Err() == nil {
			t.Fatal("the calls of the id were not cancelled")
		}
		if ctx3.Err() != nil {
			t.Fatal("cancelling 1 cancelled 1.0")
		}
		if !tab.release(c) || !tab.release(c2) || tab.release(c3) {
			t.Fatal("release did not report exactly the cancelled calls")
		}
		tab.cancel("2", t0) // unknown id on stdio: forgotten
		if calls, early := tab.size(); calls != 0 || early != 0 {
			t.Fatalf("size = %d, %d; want 0, 0", calls, early)
		}
		if added(tab, "2") {
			t.Fatal("a stdio table remembered a cancel of an unseen id")
		}
	})
	t.Run("early", func(t *testing.T) {
		tab := newCallTable(true)
		tab.cancel(`"a"`, t0)
		if !added(tab, `"a"`) {
			t.Fatal("early cancel not applied")
		}
		if _, early := tab.size(); early != 0 {
			t.Fatalf("%d early cancels left after use", early)
		}
		// Expiry: a cancel older than the TTL is forgotten when the next
		// one is recorded.
		tab.cancel(`"old"`, t0)
		tab.cancel(`"new"`, t0.Add(earlyCancelTTL))
		if _, early := tab.size(); early != 1 {
			t.Fatalf("%d early cancels, want 1 after expiry", early)
		}
		if added(tab, `"old"`) || !added(tab, `"new"`) {
			t.Fatal("expiry forgot the wrong cancel")
		}
		// Cap: the oldest goes first.
		tab = newCallTable(true)
		for i := range maxEarlyCancels + 5 {
			tab.cancel(fmt.Sprint(i), t0)
		}
		if _, early := tab.size(); early != maxEarlyCancels {
			t.Fatalf("%d early cancels, want the cap %d", early, maxEarlyCancels)
		}
		if added(tab, "4") || !added(tab, "5") || !added(tab, fmt.Sprint(maxEarlyCancels+4)) {
			t.Fatal("the cap did not forget exactly the 5 oldest")
		}
		// Ids too long to remember are not kept.
		tab = newCallTable(true)
		tab.cancel(`"`+strings.Repeat("x", maxEarlyCancelKey)+`"`, t0)
		if _, early := tab.size(); early != 0 {
			t.Fatalf("an id over %d bytes was remembered", maxEarlyCancelKey)
		}
	})
}
