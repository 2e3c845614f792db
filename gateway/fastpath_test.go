package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/axpool/axpool/tools"
)

// The request path's shortcuts give exactly what the full decoding they
// skip would give.

// slowIDKey is idKey without its shortcut: the round trip through an
// interface value that mcp-go applies to ids.
func slowIDKey(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestIDKeyShortcut(t *testing.T) {
	for _, tc := range []struct {
		id    string
		plain bool
	}{
		{`0`, true}, {`7`, true}, {`-12`, true}, {`-0`, true}, {`123456789012345`, true},
		{`-123456789012345`, true}, {`"abc"`, true}, {`""`, true}, {`"a b-c_1:2/3"`, true},
		{`1234567890123456`, false}, {`9007199254740993`, false}, {`7.0`, false}, {`1e3`, false},
		{`1E3`, false}, {`-`, false}, {``, false}, {`"a<b"`, false}, {`"a&b"`, false}, {`"a>b"`, false},
		{`"\u0041"`, false}, {`"a\"b"`, false}, {`"é"`, false}, {"\"\u2028\"", false}, {`null`, false},
		{`true`, false}, {`{}`, false}, {` 7`, false}, {`"`, false},
	} {
		if got := plainID([]byte(tc.id)); got != tc.plain {
			t.Errorf("plainID(%s) = %v, want %v", tc.id, got, tc.plain)
		}
		if got, want := idKey(json.RawMessage(tc.id)), slowIDKey(json.RawMessage(tc.id)); got != want {
			t.Errorf("idKey(%s) = %s, want %s", tc.id, got, want)
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
	want, err := CheckArgs("boruna_run", raw)
	if err != nil {
		t.Fatal(err)
	}
	marker := json.RawMessage(`{"marker":true}`)
	ctx := context.WithValue(context.Background(), checkedArgsKey{},
		&checkedArgs{tool: "boruna_run", raw: raw, args: marker})
	for _, tc := range []struct {
		ctx  context.Context
		tool string
		raw  json.RawMessage
		want json.RawMessage
	}{
		{ctx, "boruna_run", append(json.RawMessage(nil), raw...), marker},
		{ctx, "boruna_run", json.RawMessage(`{"source": "fn main() -> Int { 1 }"}`), want},
		{ctx, "boruna_compile", raw, mustCheck(t, "boruna_compile", raw)},
		{context.Background(), "boruna_run", raw, want},
	} {
		got, err := checkArgsOnce(tc.ctx, tc.tool, tc.raw)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("checkArgsOnce(%s, %s) = %s, %v; want %s", tc.tool, tc.raw, got, err, tc.want)
		}
	}
	// A refusal the transport forwarded (an unknown argument) is reused too.
	bad := json.RawMessage(`{"source":"fn main() -> Int { 1 }","nope":1}`)
	_, wantErr := CheckArgs("boruna_run", bad)
	ctx = context.WithValue(context.Background(), checkedArgsKey{}, &checkedArgs{tool: "boruna_run", raw: bad, err: wantErr})
	if _, err := checkArgsOnce(ctx, "boruna_run", bad); err != wantErr {
		t.Errorf("refusal not reused: %v", err)
	}
}

func mustCheck(t *testing.T, tool string, raw json.RawMessage) json.RawMessage {
	t.Helper()
	out, err := CheckArgs(tool, raw)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ctxBackend records, for each call, the checked arguments the transport
// handed to the handler (nil when none) and the arguments Run received.
type ctxBackend struct {
	inner Backend
	mu    sync.Mutex
	seen  []*checkedArgs
	args  []json.RawMessage
}

func (b *ctxBackend) Run(ctx context.Context, tool string, args json.RawMessage, progress func(steps, total int64)) (json.RawMessage, error) {
	c, _ := ctx.Value(checkedArgsKey{}).(*checkedArgs)
	b.mu.Lock()
	b.seen = append(b.seen, c)
	b.args = append(b.args, args)
	b.mu.Unlock()
	return b.inner.Run(ctx, tool, args, progress)
}

// Over HTTP, in both protocol eras, the handler receives the outcome of the
// transport's argument check for its own call and runs the job with it.
func TestHTTPArgumentsCheckedOnce(t *testing.T) {
	s := sharedStack(t)
	be := &ctxBackend{inner: inProcessBackend{env: &tools.Env{}}}
	url := httpServer(t, s.newGateway(t, Config{Backend: be}), HTTPConfig{})
	args := `{"source":"fn main() -> Int { 40 + 2 }","max_steps":1000.0}`
	// The arguments as the client sends them (encoding/json escapes '>').
	sent, err := json.Marshal(json.RawMessage(args))
	if err != nil {
		t.Fatal(err)
	}
	want := mustCheck(t, "boruna_run", sent)
	for _, legacy := range []bool{false, true} {
		c := httpClient(t, url, legacy)
		if env := mustCall(t, c, "boruna_run", args); env["result"] != float64(42) {
			t.Fatalf("legacy=%v: result %v", legacy, env["result"])
		}
	}
	be.mu.Lock()
	defer be.mu.Unlock()
	if len(be.seen) != 2 {
		t.Fatalf("%d calls reached the backend, want 2", len(be.seen))
	}
	for i, c := range be.seen {
		if c == nil {
			t.Errorf("call %d: the handler got no checked arguments", i)
		} else if c.tool != "boruna_run" || !bytes.Equal(c.raw, sent) || !bytes.Equal(c.args, want) || c.err != nil {
			t.Errorf("call %d: checked %s %s → %s, %v; want %s", i, c.tool, c.raw, c.args, c.err, want)
		}
		if !bytes.Equal(be.args[i], want) {
			t.Errorf("call %d: backend got %s, want %s", i, be.args[i], want)
		}
	}
}
