package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// The transport-level refusals are JSON-RPC invalid_params errors on every
// transport a real client uses (the in-process path is tested separately).
func TestInvalidParams(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	clients := map[string]*client.Client{
		"stdio":       stdioClient(t, s.gw),
		"http":        httpClient(t, url, false),
		"http-legacy": httpClient(t, url, true),
	}
	big := strings.Repeat("a", MaxSourceBytes+1)
	cases := []struct{ tool, args, msg string }{
		{"boruna_run", `{"source":` + src(big) + `}`, "source exceeds 1 MB limit"},
		{"boruna_run", `{"source":"fn main() -> Int { 1 }","max_steps":"many"}`,
			`invalid argument "max_steps" for tool "boruna_run": expected a non-negative integer (at most 9223372036854775807), got string`},
		{"boruna_run", `{}`, `missing required argument "source" for tool "boruna_run"`},
		{"boruna_framework_test", `{"source":"x","messages":"inc"}`,
			`invalid argument "messages" for tool "boruna_framework_test": expected an array of strings, got string`},
	}
	for name, c := range clients {
		for _, tc := range cases {
			res, err := call(t, c, tc.tool, tc.args, nil)
			if err == nil {
				t.Errorf("%s %s: got a result, want invalid_params: %+v", name, tc.msg, res)
				continue
			}
			if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: err = %v, want invalid params %q", name, err, tc.msg)
			}
		}
		// An unknown tool is the gateway's invalid_params, with a suggestion
		// when one tool name is clearly nearest.
		if _, err := call(t, c, "boruna_rnu", `{}`, nil); !errors.Is(err, mcp.ErrInvalidParams) ||
			!strings.Contains(err.Error(), `unknown tool "boruna_rnu" (did you mean "boruna_run"?)`) {
			t.Errorf("%s: unknown tool: err = %v", name, err)
		}
	}
}

// stripJob removes the fields that differ between two runs of one program.
func stripJob(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		switch k {
		case "job_id", "queue_ms", "run_ms", "worker":
		default:
			out[k] = v
		}
	}
	return out
}

// progressLog collects notifications/progress of one token, with their
// arrival times.
type progressLog struct {
	mu     sync.Mutex
	values []float64
	totals []float64
	at     []time.Time
	first  chan struct{}
	each   chan struct{} // one send per notification (buffered)
	once   sync.Once
}

func newProgressLog(c *client.Client, token string) *progressLog {
	p := &progressLog{first: make(chan struct{}), each: make(chan struct{}, 1000)}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" || n.Params.AdditionalFields["progressToken"] != token {
			return
		}
		p.mu.Lock()
		v, _ := n.Params.AdditionalFields["progress"].(float64)
		tot, _ := n.Params.AdditionalFields["total"].(float64)
		p.values = append(p.values, v)
		p.totals = append(p.totals, tot)
		p.at = append(p.at, time.Now())
		p.mu.Unlock()
		p.once.Do(func() { close(p.first) })
		select {
		case p.each <- struct{}{}:
		default:
		}
	})
	return p
}

// progressLoop is a loop of 18 million steps (9 per iteration): whatever
// the machine's speed it passes 100,000 steps, so a call with a token gets
// at least one notification.
const progressLoop = 2_000_000

// longLoop runs for many seconds; the cancellation tests stop it.
const longLoop = 2_000_000_000

func progressArgs(n int) string {
	prog := fmt.Sprintf("fn main() -> Int {\n  let mut i = 0\n  while i < %d { i = i + 1 }\n  i\n}", n)
	return `{"source":` + src(prog) + `,"max_steps":100000000000}`
}

// Progress (docs/tools.md §2), on every transport, with nothing that
// depends on the machine's speed: a bounded run gets at least one
// notification (the first goes out at once, at 100,000 steps), strictly
// increasing, total = the step ceiling, and the same result as without a
// token (which gets none); an endless run's notifications are coalesced —
// the k-th arrives at least k-1 intervals after the call was sent — and the
// test waits for three before cancelling it.
func TestProgress(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	for name, c := range map[string]*client.Client{
		"stdio":       stdioClient(t, s.gw),
		"http":        httpClient(t, url, false),
		"http-legacy": httpClient(t, url, true),
	} {
		t.Run(name, func(t *testing.T) {
			log := newProgressLog(c, "tok-"+name)
			res, err := call(t, c, "boruna_run", progressArgs(progressLoop), &mcp.Meta{ProgressToken: "tok-" + name})
			if err != nil {
				t.Fatal(err)
			}
			with := envelope(t, res)
			if with["success"] != true || with["result"] != float64(progressLoop) {
				t.Fatalf("result = %v", with)
			}
			log.mu.Lock()
			values, totals := log.values, log.totals
			log.mu.Unlock()
			if len(values) < 1 {
				t.Fatalf("no progress notification in a run of %v steps", with["steps"])
			}
			for i := range values {
				if i > 0 && values[i] <= values[i-1] {
					t.Errorf("progress not increasing: %v", values)
				}
				if totals[i] != 1e11 {
					t.Errorf("total = %v, want the step ceiling 1e11", totals[i])
				}
				if values[i] > with["steps"].(float64) {
					t.Errorf("progress %v beyond the run's steps %v", values[i], with["steps"])
				}
			}
			// The same call without a token: no notifications, same result.
			before := len(values)
			res, err = call(t, c, "boruna_run", progressArgs(progressLoop), nil)
			if err != nil {
				t.Fatal(err)
			}
			without := envelope(t, res)
			a, _ := json.Marshal(stripJob(with))
			b, _ := json.Marshal(stripJob(without))
			if string(a) != string(b) {
				t.Errorf("result with a progress token differs:\n%s\n%s", a, b)
			}
			log.mu.Lock()
			after := len(log.values)
			log.mu.Unlock()
			if after != before {
				t.Errorf("%d notifications for a call without a token", after-before)
			}

			// An endless run: three notifications, coalesced.
			end := newProgressLog(c, "end-"+name)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sent := time.Now()
			errc := make(chan error, 1)
			go func() {
				var req mcp.CallToolRequest
				req.Params.Name = "boruna_run"
				req.Params.Arguments = json.RawMessage(progressArgs(longLoop))
				req.Params.Meta = &mcp.Meta{ProgressToken: "end-" + name}
				_, err := c.CallTool(ctx, req)
				errc <- err
			}()
			for range 3 {
				select {
				case <-end.each:
				case <-time.After(60 * time.Second):
					t.Fatal("fewer than 3 notifications from an endless run in 60 s")
				}
			}
			cancel()
			if err := <-errc; err == nil {
				t.Fatal("the cancelled endless run returned a result")
			}
			end.mu.Lock()
			for k, at := range end.at[:3] {
				if d := at.Sub(sent); d < time.Duration(k)*testProgressInterval {
					t.Errorf("notification %d arrived %v after the call, before %d intervals of %v", k+1, d, k, testProgressInterval)
				}
				if k > 0 && end.values[k] <= end.values[k-1] {
					t.Errorf("progress not increasing: %v", end.values)
				}
			}
			end.mu.Unlock()
			waitIdle(t, s, 10*time.Second)
		})
	}
}

// busySlots returns the number of jobs running on workers.
func busySlots(t testing.TB, s *stack) int {
	t.Helper()
	st, err := s.Client.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.BusySlots
}

// waitIdle waits until no worker runs a job and the queue is empty.
func waitIdle(t testing.TB, s *stack, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		st, err := s.Client.Stats(context.Background())
		if err == nil && st.BusySlots == 0 && st.InFlight == 0 && st.Depth == 0 {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("workers still busy after %v", within)
	return 0
}

// rawStdio drives ServeStdio with raw JSON-RPC lines.
type rawStdio struct {
	t     testing.TB
	in    *io.PipeWriter
	lines chan []byte
	done  chan struct{} // closed when ServeStdio has returned
}

// newRawStdio returns a raw stdio connection initialized with 2025-11-25.
func newRawStdio(t testing.TB, g *Server) *rawStdio {
	r := newRawStdioBare(t, g)
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.next()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// newRawStdioBare returns a raw stdio connection that has sent nothing.
func newRawStdioBare(t testing.TB, g *Server) *rawStdio {
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	done := make(chan struct{})
	go func() { g.ServeStdio(context.Background(), sr, sw); sw.Close(); close(done) }()
	r := &rawStdio{t: t, in: cw, lines: make(chan []byte, 1000), done: done}
	go func() {
		sc := bufio.NewScanner(cr)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if !json.Valid(sc.Bytes()) {
				t.Errorf("stdout carried a non-JSON line: %q", sc.Text())
				continue
			}
			r.lines <- bytes.Clone(sc.Bytes())
		}
		close(r.lines)
	}()
	t.Cleanup(func() {
		cw.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("ServeStdio did not stop at EOF")
		}
	})
	return r
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// nextRaw returns the next line of stdout, without its newline.
func (r *rawStdio) nextRaw() []byte {
	r.t.Helper()
	select {
	case b, ok := <-r.lines:
		if !ok {
			r.t.Fatal("stdout closed")
		}
		return b
	case <-time.After(30 * time.Second):
		r.t.Fatal("no message within 30 s")
		return nil
	}
}

// next returns the next message of stdout, decoded.
func (r *rawStdio) next() map[string]any {
	r.t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.nextRaw(), &m); err != nil {
		r.t.Fatal(err)
	}
	return m
}

// response skips progress notifications and returns the next message.
func (r *rawStdio) response() map[string]any {
	r.t.Helper()
	for {
		if m := r.next(); m["method"] != "notifications/progress" {
			return m
		}
	}
}

func TestCancelStdio(t *testing.T) {
	s := sharedStack(t)
	r := newRawStdio(t, s.gw)
	// A run of ~10^9 steps (many seconds), with a progress token so we know
	// it is running on a worker.
	r.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"boruna_run","arguments":` +
		progressArgs(longLoop) + `,"_meta":{"progressToken":"p7"}}}`)
	m := r.next()
	if m["method"] != "notifications/progress" {
		t.Fatalf("first message = %v, want progress", m)
	}
	if busySlots(t, s) != 1 {
		t.Fatalf("busy slots = %d, want 1", busySlots(t, s))
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`)
	stopped := waitIdle(t, s, 5*time.Second)
	t.Logf("job stopped %v after the cancel", stopped)
	// The next answer is the ping's: request 7 gets no response (progress
	// notifications sent before the cancel may still be in the pipe).
	r.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	for {
		m := r.next()
		if m["method"] == "notifications/progress" {
			continue
		}
		if m["id"] != float64(8) {
			t.Fatalf("got %v, want only the ping's response", m)
		}
		break
	}
	// Invalid params over raw stdio: the exact JSON-RPC error.
	r.send(`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"boruna_ast","arguments":{"source":` +
		src(strings.Repeat("b", MaxSourceBytes+1)) + `}}}`)
	m = r.next()
	e, _ := m["error"].(map[string]any)
	if m["id"] != "x" || e["code"] != float64(-32602) || e["message"] != "source exceeds 1 MB limit" {
		t.Fatalf("got %v", m)
	}
}

func TestCancelHTTPDisconnect(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	for _, legacy := range []bool{false, true} {
		c := httpClient(t, url, legacy)
		log := newProgressLog(c, "hp")
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			var req mcp.CallToolRequest
			req.Params.Name = "boruna_run"
			req.Params.Arguments = json.RawMessage(progressArgs(longLoop))
			req.Params.Meta = &mcp.Meta{ProgressToken: "hp"}
			_, err := c.CallTool(ctx, req)
			errc <- err
		}()
		select {
		case <-log.first:
		case <-time.After(30 * time.Second):
			t.Fatal("no progress")
		}
		cancel()
		// mcp-go's client races its own context against the SSE reader it
		// closes on cancellation: CallTool returns either ctx.Err() or
		// "unexpected nil response" (client/transport/streamable_http.go).
		// Either way no result may arrive.
		if err := <-errc; !errors.Is(err, context.Canceled) &&
			(err == nil || !strings.Contains(err.Error(), "unexpected nil response")) {
			t.Fatalf("CallTool after cancel: %v, want context.Canceled", err)
		}
		stopped := waitIdle(t, s, 5*time.Second)
		t.Logf("legacy=%v: job stopped %v after the disconnect", legacy, stopped)
	}
}

// At stdin EOF the calls in flight are answered before ServeStdio returns:
// a run of about half a second sent just before stdin closes gets its full
// result, not a cancellation.
func TestStdioDrainAtEOF(t *testing.T) {
	r := newRawStdio(t, sharedStack(t).gw)
	r.send(`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"boruna_run","arguments":` + progressArgs(progressLoop) + `}}`)
	r.in.Close()
	m := r.response()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if m["id"] != float64(21) || sc["success"] != true || sc["outcome"] != "ok" || sc["result"] != float64(progressLoop) {
		t.Fatalf("response = %v", m)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after the drain")
	}
	if _, ok := <-r.lines; ok {
		t.Fatal("a message after the drained response")
	}
}
