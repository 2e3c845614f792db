package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/tools"
)

// The request path's shortcuts give exactly what the full decoding they
// skip would give.

// keptID tells the ids mcp-go writes back unchanged, which HTTP requests
// send as they are, from those that get a placeholder.
func TestKeptID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		kept bool
	}{
		{`0`, true}, {`7`, true}, {`-12`, true}, {`-0`, true}, {`123456789012345`, true}, {`9007199254740992`, true},
		{`-123456789012345`, true}, {`"abc"`, true}, {`""`, true}, {`"a b-c_1:2/3"`, true}, {`"é"`, true},
		{`9007199254740993`, false}, {`1180591620717411303424`, false}, {`7.0`, false}, {`1.50`, false}, {`1e3`, false},
		{`1E3`, false}, {`-`, false}, {``, false}, {`"a<b"`, false}, {`"a&b"`, false}, {`"a>b"`, false},
		{`"\u0041"`, false}, {`"a\"b"`, true}, {"\"\u2028\"", false}, {` 7`, false}, {`"`, false},
	} {
		if got := keptID([]byte(tc.id)); got != tc.kept {
			t.Errorf("keptID(%s) = %v, want %v", tc.id, got, tc.kept)
		}
	}
	// The shortcut answers as decoding would, for every id it answers.
	ids := []string{`1`, `-1`, `00`, `-00`, `01`, `999999999999999`, `-999999999999999`, `1000000000000000`, `1.0`, `-`, `--1`,
		`" "`, `"~"`, "\"\x7f\"", "\"\x1f\"", `"'"`, `"a/b"`, `"<"`, `">"`, `"&"`, `"\\"`, `"\""`, `"é"`, `"\u00e9"`, `""`, `"`, `x`, `true`, `null`}
	for c := 0; c < 128; c++ {
		ids = append(ids, `"a`+string(rune(c))+`b"`)
	}
	for _, id := range ids {
		kept, known := keptIDShortcut([]byte(id))
		if want := keptIDDecoded([]byte(id)); known && kept != want {
			t.Errorf("keptIDShortcut(%q) = %v, decoding says %v", id, kept, want)
		}
	}
	for _, id := range []string{`7`, `-12`, `123456789012345`, `"abc"`, `"a b-c_1:2/3"`, `""`} {
		if _, known := keptIDShortcut([]byte(id)); !known {
			t.Errorf("keptIDShortcut(%s) does not answer", id)
		}
	}
}

// slowProgressToken is metaProgressToken without its shortcut.
func slowProgressToken(meta json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return nil
	}
	return bytes.TrimSpace(m["progressToken"])
}

func TestMetaProgressTokenShortcut(t *testing.T) {
	for _, tc := range []struct{ meta, want string }{
		{``, ``},
		{`{}`, ``},
		{`{"progressToken":5}`, `5`},
		{`{"progressToken": "t" }`, `"t"`},
		{`{"progress\u0054oken":5}`, `5`},
		{`{"a":"progressToken"}`, ``},
		{`{"a":"x\n"}`, ``},
		{`"progressToken"`, ``},
		{`{"ProgressToken":1}`, ``},
		{`{"progressToken":"x","progressToken":7}`, `7`},
		{`[1,2]`, ``},
		{`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, ``},
	} {
		got := metaProgressToken(json.RawMessage(tc.meta))
		if string(got) != tc.want || !bytes.Equal(got, slowProgressToken(json.RawMessage(tc.meta))) {
			t.Errorf("metaProgressToken(%s) = %q, want %q", tc.meta, got, tc.want)
		}
	}
}

func TestModernMetaShortcut(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   bool
	}{
		{``, false},
		{`{}`, false},
		{`{"name":"boruna_run","arguments":{"source":"fn main() -> Int { 1 }"}}`, false},
		{`{"protocolVersion":"2026-07-28","capabilities":{}}`, false},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, true},
		{`{"_meta":{"io.modelcontextprotocol\/protocolVersion":"2026-07-28"}}`, true},
		{`{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, true},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, false},
		{`{"_meta":{"io.modelcontextprotocol/protocolVersion":2026}}`, false},
		{`{"a":"io.modelcontextprotocol/protocolVersion"}`, false},
		{`[{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}]`, false},
	} {
		got := modernMeta(json.RawMessage(tc.params))
		if got != tc.want || got != decodeModernMeta(json.RawMessage(tc.params)) {
			t.Errorf("modernMeta(%s) = %v, want %v", tc.params, got, tc.want)
		}
	}
}

// checkArgsOnce reuses the transport's outcome only for the same tool and
// the same argument bytes.
func TestCheckArgsOnce(t *testing.T) {
	raw := json.RawMessage(`{"source":"fn main() -> Int { 1 }"}`)
	want, err := tools.CheckArgs("boruna_run", raw)
	if err != nil {
		t.Fatal(err)
	}
	marker := checked("boruna_run", json.RawMessage(`{"source":"marker"}`))
	info := &callInfo{tool: "boruna_run", raw: raw, args: marker}
	for _, tc := range []struct {
		info *callInfo
		tool string
		raw  json.RawMessage
		want json.RawMessage
	}{
		{info, "boruna_run", append(json.RawMessage(nil), raw...), marker.JSON()},
		{info, "boruna_run", json.RawMessage(`{"source": "fn main() -> Int { 1 }"}`), want},
		{info, "boruna_compile", raw, mustCheck(t, "boruna_compile", raw)},
		{nil, "boruna_run", raw, want},
	} {
		got, err := checkArgsOnce(tc.info, tc.tool, tc.raw)
		if err != nil || !bytes.Equal(got.JSON(), tc.want) {
			t.Errorf("checkArgsOnce(%s, %s) = %s, %v; want %s", tc.tool, tc.raw, got.JSON(), err, tc.want)
		}
	}
	// A refusal the transport forwarded (an unknown argument) is reused too.
	bad := json.RawMessage(`{"source":"fn main() -> Int { 1 }","nope":1}`)
	_, wantErr := tools.CheckArgs("boruna_run", bad)
	if _, err := checkArgsOnce(&callInfo{tool: "boruna_run", raw: bad, err: wantErr}, "boruna_run", bad); err != wantErr {
		t.Errorf("refusal not reused: %v", err)
	}
}

func mustCheck(t *testing.T, tool string, raw json.RawMessage) json.RawMessage {
	t.Helper()
	out, err := tools.CheckArgs(tool, raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ctxBackend records, for each call, the checked arguments the transport
// handed to the handler (nil when none) and the arguments Run received.
type ctxBackend struct {
	inner dispatch.Backend
	mu    sync.Mutex
	seen  []*callInfo
	args  []json.RawMessage
}

func (b *ctxBackend) Run(ctx context.Context, call *tools.Args, progress func(steps, total int64)) (json.RawMessage, error) {
	c, _ := ctx.Value(callInfoKey{}).(*callInfo)
	b.mu.Lock()
	b.seen = append(b.seen, c)
	b.args = append(b.args, call.JSON())
	b.mu.Unlock()
	return b.inner.Run(ctx, call, progress)
}

// Over stdio and HTTP, in both protocol eras, the handler receives the
// outcome of the transport's argument check for its own call and runs the
// job with it.
func TestArgumentsCheckedOnce(t *testing.T) {
	s := sharedStack(t)
	be := &ctxBackend{inner: inProcessBackend{env: &tools.Env{}}}
	g := s.newGateway(t, Config{Backend: be})
	url := httpServer(t, g, HTTPConfig{})
	args := `{"source":"fn main() -> Int { 40 + 2 }","max_steps":1000.0}`
	// The arguments as the client sends them (encoding/json escapes '>').
	sent, err := json.Marshal(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	want := mustCheck(t, "boruna_run", sent)
	for name, c := range map[string]*client.Client{
		"stdio":       stdioClient(t, g),
		"http":        httpClient(t, url, false),
		"http-legacy": httpClient(t, url, true),
	} {
		if env := mustCall(t, c, "boruna_run", args); env["result"] != float64(42) {
			t.Fatalf("%s: result %v", name, env["result"])
		}
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if len(be.seen) != 3 {
		t.Fatalf("%d calls reached the backend, want 3", len(be.seen))
	}
	for i, c := range be.seen {
		if c == nil {
			t.Errorf("call %d: the handler got no checked arguments", i)
		} else if c.tool != "boruna_run" || !bytes.Equal(c.raw, sent) || c.args == nil || !bytes.Equal(c.args.JSON(), want) || c.err != nil {
			t.Errorf("call %d: checked %s %s → %v, %v; want %s", i, c.tool, c.raw, c.args, c.err, want)
		}
		if !bytes.Equal(be.args[i], want) {
			t.Errorf("call %d: backend got %s, want %s", i, be.args[i], want)
		}
	}
}
