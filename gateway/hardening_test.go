package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// paddedPing is a ping request of exactly n bytes (white space before the
// closing brace).
func paddedPing(id string, n int) string {
	head := `{"jsonrpc":"2.0","id":` + id + `,"method":"ping"`
	return head + strings.Repeat(" ", n-len(head)-1) + "}"
}

// A stdio line over MaxMessageBytes is answered -32600 (with the id when
// it comes first, else null), and the server keeps reading the next lines.
// (The exact boundary is TestLineReaderBoundary's: a message of 8 MB costs
// mcp-go many seconds of JSON scanning under the race detector.)
func TestStdioMessageCap(t *testing.T) {
	r := newRawStdio(t, sharedStack(t).gw)
	tooLarge := `"error":{"code":-32600,"message":"message exceeds 8 MB limit (8388608 bytes)"}}`
	r.send(paddedPing("2", MaxMessageBytes+1))
	if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":2,`+tooLarge {
		t.Fatalf("one byte over: %s", got)
	}
	// 9 MB that is not JSON at all: id null.
	r.send(strings.Repeat("x", 9<<20))
	if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":null,`+tooLarge {
		t.Fatalf("9 MB of garbage: %s", got)
	}
	r.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":3,"result":{}}` {
		t.Fatalf("ping after the refusals: %s", got)
	}
}

// The line reader's limit counts the message without its line end: max
// bytes pass (with or without a newline, at EOF), max+1 do not.
func TestLineReaderBoundary(t *testing.T) {
	const max = 100
	msg := func(n int) string { return strings.Repeat("a", n) }
	in := msg(max) + "\n" + msg(max+1) + "\n" + "{}\n" + msg(max+1) + "\n" + msg(max)
	lr := newLineReader(strings.NewReader(in), max)
	type step struct {
		line   string
		err    error
		prefix int // length passed to tooLong; -1 none
	}
	want := []step{
		{msg(max) + "\n", nil, -1},
		{"", nil, max},
		{"{}\n", nil, -1},
		{"", nil, max},
		{msg(max), io.EOF, -1},
	}
	for i, w := range want {
		prefix := -1
		line, err := lr.next(func(p []byte) {
			prefix = len(p)
			if string(p) != msg(max) {
				t.Errorf("step %d: prefix %q", i, p)
			}
		})
		if string(line) != w.line || err != w.err || prefix != w.prefix {
			t.Errorf("step %d: %d bytes, %v, prefix %d; want %d bytes, %v, prefix %d", i, len(line), err, prefix, len(w.line), w.err, w.prefix)
		}
	}
	// An over-long last line without a newline.
	lr = newLineReader(strings.NewReader(msg(max+1)), max)
	prefix := 0
	if line, err := lr.next(func(p []byte) { prefix = len(p) }); line != nil || err != io.EOF || prefix != max {
		t.Errorf("over-long last line: %q, %v, %d", line, err, prefix)
	}
}

// repeatReader yields an endless run of its first byte.
type repeatReader []byte

func (b repeatReader) Read(p []byte) (int, error) {
	return copy(p, b), nil
}

// The rest of an over-long line is discarded without being buffered: 64
// MB without a newline allocate a small fraction of that.
func TestLineReaderDiscardsUnbuffered(t *testing.T) {
	const max = 1 << 20
	in := io.MultiReader(io.LimitReader(repeatReader(bytes.Repeat([]byte("x"), 64<<10)), 64<<20), strings.NewReader("\n{\"a\":1}\n"))
	lr := newLineReader(in, max)
	var prefixes []int
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	line, err := lr.next(func(p []byte) { prefixes = append(prefixes, len(p)) })
	runtime.ReadMemStats(&after)
	if line != nil || err != nil {
		t.Fatalf("over-long line: %q, %v", line, err)
	}
	if len(prefixes) != 1 || prefixes[0] != max {
		t.Fatalf("tooLong calls = %v, want one with the first %d bytes", prefixes, max)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Fatalf("discarding 64 MB allocated %d bytes", alloc)
	}
	line, err = lr.next(func([]byte) { t.Fatal("next line is not too long") })
	if string(line) != "{\"a\":1}\n" || err != nil {
		t.Fatalf("next line: %q, %v", line, err)
	}
	if line, err = lr.next(nil); len(line) != 0 || err != io.EOF {
		t.Fatalf("at the end: %q, %v", line, err)
	}
}

// deepCall is a tools/call whose policy argument nests depth arrays.
func deepCall(id string, depth int) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 1 }","policy":` +
		strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}}}`
}

// Parse errors, over stdio and HTTP: nesting beyond encoding/json's limit
// and plain syntax errors are answered -32700 with a specific message and
// the id whenever it precedes the fault.
func TestParseErrors(t *testing.T) {
	s := sharedStack(t)
	tooDeep := `"error":{"code":-32700,"message":"parse error: JSON nesting exceeds 10000 levels"}}`
	cases := []struct{ name, msg, want string }{
		{"deep arguments", deepCall("9", 100_000), `{"jsonrpc":"2.0","id":9,` + tooDeep},
		{"deep arguments unclosed", `{"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"boruna_run","arguments":` +
			strings.Repeat("[", 100_000), `{"jsonrpc":"2.0","id":"d",` + tooDeep},
		{"id after the fault", `{"jsonrpc":"2.0","method":"tools/call","params":` + strings.Repeat("[", 100_000) + `,"id":10}`,
			`{"jsonrpc":"2.0","id":null,` + tooDeep},
		{"deep top level", strings.Repeat("[", 100_000), `{"jsonrpc":"2.0","id":null,` + tooDeep},
		{"one level too deep", deepCall("11", MaxJSONDepth-2), `{"jsonrpc":"2.0","id":11,` + tooDeep},
		{"trailing comma", `{"jsonrpc":"2.0","id":"s","method":"ping",}`,
			`{"jsonrpc":"2.0","id":"s","error":{"code":-32700,"message":"parse error: invalid character '}' looking for beginning of object key string at byte 43"}}`},
		{"truncated", `{"jsonrpc":"2.0","id":12,"method":"pi`,
			`{"jsonrpc":"2.0","id":12,"error":{"code":-32700,"message":"parse error: unexpected end of JSON input at byte 37"}}`},
	}
	t.Run("stdio", func(t *testing.T) {
		r := newRawStdio(t, s.gw)
		for _, tc := range cases {
			r.send(tc.msg)
			if got := string(r.nextRaw()); got != tc.want {
				t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
			}
		}
		// The deepest nesting encoding/json accepts is served normally: the
		// policy is not a policy, a domain failure.
		r.send(deepCall("13", MaxJSONDepth-3))
		m := r.response()
		res, _ := m["result"].(map[string]any)
		sc, _ := res["structuredContent"].(map[string]any)
		if m["id"] != float64(13) || sc["success"] != false || sc["error_kind"] != "invalid_policy" {
			t.Fatalf("nesting at the limit: %v", m)
		}
		r.send(`{"jsonrpc":"2.0","id":14,"method":"ping"}`)
		if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":14,"result":{}}` {
			t.Fatalf("ping after the parse errors: %s", got)
		}
	})
	t.Run("http", func(t *testing.T) {
		url := httpServer(t, s.gw, HTTPConfig{})
		for _, tc := range cases {
			resp := rawPost(t, url, map[string]string{"Authorization": "Bearer " + testToken}, tc.msg)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || string(body) != tc.want+"\n" {
				t.Errorf("%s: %d\n got %s\nwant %s", tc.name, resp.StatusCode, body, tc.want)
			}
		}
	})
}

// A tools/call without a tool name is invalid_params "missing tool name"
// on every transport, not mcp-go's "tool not found" for an empty name.
func TestMissingToolName(t *testing.T) {
	s := sharedStack(t)
	url := httpServer(t, s.gw, HTTPConfig{})
	for name, c := range map[string]*client.Client{
		"stdio":       stdioClient(t, s.gw),
		"http":        httpClient(t, url, false),
		"http-legacy": httpClient(t, url, true),
	} {
		_, err := call(t, c, "", `{"source":"x"}`, nil)
		if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), "missing tool name") {
			t.Errorf("%s: err = %v, want invalid params %q", name, err, "missing tool name")
		}
	}
}

// The exact answers to malformed tools/call params over raw stdio and raw
// HTTP (a legacy session).
func TestMissingToolNameRaw(t *testing.T) {
	s := sharedStack(t)
	cases := []struct{ params, msg string }{
		{`{"name":null,"arguments":{}}`, "missing tool name"},
		{`{"arguments":{"source":"x"}}`, "missing tool name"},
		{`{"name":""}`, "missing tool name"},
		{`null`, "missing tool name"},
		{`{"name":5}`, "tool name must be a string, got number"},
		{`[1]`, "params of tools/call must be an object, got array"},
	}
	want := func(i int, msg string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"error":{"code":-32602,"message":%q}}`, i, msg)
	}
	r := newRawStdio(t, s.gw)
	for i, tc := range cases {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i, tc.params))
		if got := string(r.nextRaw()); got != want(i, tc.msg) {
			t.Errorf("stdio %s: %s", tc.params, got)
		}
	}
	// Without params at all.
	r.send(`{"jsonrpc":"2.0","id":99,"method":"tools/call"}`)
	if got := string(r.nextRaw()); got != want(99, "missing tool name") {
		t.Errorf("stdio without params: %s", got)
	}
	url := httpServer(t, s.gw, HTTPConfig{})
	hdr := legacySession(t, url, testToken)
	for i, tc := range cases {
		resp := rawPost(t, url, hdr, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}`, i, tc.params))
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != want(i, tc.msg)+"\n" {
			t.Errorf("http %s: %d %s", tc.params, resp.StatusCode, body)
		}
	}
}

// legacySession initializes a 2025-11-25 session with token over raw HTTP
// and returns the headers of its later requests.
func legacySession(t testing.TB, url, token string) map[string]string {
	t.Helper()
	resp := rawPost(t, url, map[string]string{"Authorization": "Bearer " + token}, initBody)
	io.Copy(io.Discard, resp.Body)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: status %d, session %q", resp.StatusCode, sid)
	}
	hdr := map[string]string{"Authorization": "Bearer " + token, "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	resp = rawPost(t, url, hdr, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", resp.StatusCode)
	}
	return hdr
}

// initBody is a 2025-11-25 initialize request.
const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// sseData returns the data lines of an SSE stream, decoded with numbers
// kept as written, until the stream ends.
func sseData(t testing.TB, body io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(data))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// bigToken is 2^70: float64 would write it 1.1805916207174113e+21.
const bigToken = "1180591620717411303424"

// A numeric progress token float64 cannot hold is echoed byte-exact in
// notifications/progress, over stdio and HTTP.
func TestProgressTokenExact(t *testing.T) {
	s := sharedStack(t)
	callMsg := func(id int, token string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"boruna_run","arguments":%s,"_meta":{"progressToken":%s}}}`,
			id, progressArgs(progressLoop), token)
	}
	t.Run("stdio", func(t *testing.T) {
		r := newRawStdio(t, s.gw)
		for i, token := range []string{bigToken, "1.50"} {
			r.send(callMsg(i, token))
			progress := 0
			for {
				raw := r.nextRaw()
				dec := json.NewDecoder(bytes.NewReader(raw))
				dec.UseNumber()
				var m map[string]any
				if err := dec.Decode(&m); err != nil {
					t.Fatal(err)
				}
				if m["method"] != "notifications/progress" {
					if m["id"] != json.Number(fmt.Sprint(i)) || m["result"] == nil {
						t.Fatalf("response: %s", raw)
					}
					break
				}
				progress++
				if tok := m["params"].(map[string]any)["progressToken"]; tok != json.Number(token) {
					t.Fatalf("progressToken = %v in %s, want %s", tok, raw, token)
				}
			}
			if progress == 0 {
				t.Fatalf("token %s: no progress notification", token)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		url := httpServer(t, s.gw, HTTPConfig{})
		hdr := legacySession(t, url, testToken)
		resp := rawPost(t, url, hdr, callMsg(5, bigToken))
		msgs := sseData(t, resp.Body)
		if len(msgs) < 2 {
			t.Fatalf("%d SSE messages, want progress and the response: %v", len(msgs), msgs)
		}
		for _, m := range msgs[:len(msgs)-1] {
			if m["method"] != "notifications/progress" || m["params"].(map[string]any)["progressToken"] != json.Number(bigToken) {
				t.Fatalf("progress = %v", m)
			}
		}
		if last := msgs[len(msgs)-1]; last["id"] != json.Number("5") || last["result"] == nil {
			t.Fatalf("response = %v", last)
		}
	})
}
