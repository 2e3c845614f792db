package mcpver

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	got := Parse(json.RawMessage(`{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
		"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{},"b":null}},
		"io.modelcontextprotocol/logLevel":"debug","traceparent":"` + tp + `","tracestate":"k=v"}}`))
	want := Request{Version: "2026-07-28", Modern: true, Extensions: []string{TasksExtension}, LogLevel: "debug", TraceParent: tp, TraceState: "k=v"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse = %+v, want %+v", got, want)
	}
	if !got.Has(TasksExtension) || got.Has("b") {
		t.Error("Has")
	}
	for _, p := range []string{``, `null`, `[1]`, `{"_meta":5}`, `{}`} {
		if got := Parse(json.RawMessage(p)); !reflect.DeepEqual(got, Request{}) {
			t.Errorf("Parse(%s) = %+v, want zero", p, got)
		}
	}
	// A member of an unexpected type does not hide the others.
	got = Parse(json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","traceparent":7}}`))
	if got.Version != "2025-11-25" || got.Modern || got.TraceParent != "" {
		t.Errorf("loose Parse = %+v", got)
	}
}

func TestValidTraceParent(t *testing.T) {
	for s, want := range map[string]bool{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": true,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00": true,
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": false, // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01": false, // zero span id
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": false, // upper case
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": false,
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7":    false,
		"": false,
	} {
		if got := ValidTraceParent(s); got != want {
			t.Errorf("ValidTraceParent(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestCheckHTTP(t *testing.T) {
	meta := Request{Version: "2026-07-28", Modern: true}
	call := json.RawMessage(`{"name":"boruna_run","arguments":{}}`)
	task := json.RawMessage(`{"taskId":"t-1"}`)
	h := func(kv ...string) http.Header {
		hh := http.Header{}
		hh.Set("MCP-Protocol-Version", "2026-07-28")
		for i := 0; i < len(kv); i += 2 {
			hh.Set(kv[i], kv[i+1])
		}
		return hh
	}
	cases := []struct {
		name   string
		h      http.Header
		method string
		params json.RawMessage
		meta   Request
		code   int
		msg    string
	}{
		{"ok", h("Mcp-Method", "tools/call", "Mcp-Name", "boruna_run"), "tools/call", call, meta, 0, ""},
		{"white space", h("Mcp-Method", " tools/call\t", "Mcp-Name", "  boruna_run  "), "tools/call", call, meta, 0, ""},
		{"base64 name", h("Mcp-Method", "tools/call", "Mcp-Name", "=?base64?Ym9ydW5hX3J1bg==?="), "tools/call", call, meta, 0, ""},
		{"no method", h(), "tools/list", nil, meta, -32020, "header mismatch: Mcp-Method: missing required header"},
		{"other method", h("Mcp-Method", "prompts/list"), "tools/list", nil, meta, -32020,
			`header mismatch: Mcp-Method: header value "prompts/list" does not match body value "tools/list"`},
		{"method case", h("Mcp-Method", "TOOLS/LIST"), "tools/list", nil, meta, -32020,
			`header mismatch: Mcp-Method: header value "TOOLS/LIST" does not match body value "tools/list"`},
		{"no name", h("Mcp-Method", "tools/call"), "tools/call", call, meta, -32020,
			`header mismatch: Mcp-Name: missing required header for method "tools/call"`},
		{"other name", h("Mcp-Method", "tools/call", "Mcp-Name", "wrong_tool_name"), "tools/call", call, meta, -32020,
			`header mismatch: Mcp-Name: header value "wrong_tool_name" does not match body value "boruna_run"`},
		{"repeated name", http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {"boruna_run", "boruna_compile"}, "Mcp-Protocol-Version": {"2026-07-28"}},
			"tools/call", call, meta, -32020, "header mismatch: Mcp-Name: repeated header"},
		{"repeated method", http.Header{"Mcp-Method": {"tools/list", "tools/list"}, "Mcp-Protocol-Version": {"2026-07-28"}},
			"tools/list", nil, meta, -32020, "header mismatch: Mcp-Method: repeated header"},
		{"bad base64", h("Mcp-Method", "tools/call", "Mcp-Name", "=?base64?!!?="), "tools/call", call, meta, -32020,
			"header mismatch: Mcp-Name: invalid Base64 encoding"},
		{"task name", h("Mcp-Method", "tasks/get", "Mcp-Name", "t-1"), "tasks/get", task, meta, 0, ""},
		{"task other name", h("Mcp-Method", "tasks/cancel", "Mcp-Name", "t-2"), "tasks/cancel", task, meta, -32020,
			`header mismatch: Mcp-Name: header value "t-2" does not match body value "t-1"`},
		{"no version header", http.Header{"Mcp-Method": {"tools/list"}}, "tools/list", nil, meta, -32020,
			`header mismatch: Mcp-Protocol-Version: required for requests carrying io.modelcontextprotocol/protocolVersion (send "2026-07-28", the _meta value)`},
		{"no version header nor meta version", http.Header{"Mcp-Method": {"tools/list"}}, "tools/list", nil, Request{}, -32020,
			"header mismatch: Mcp-Protocol-Version: required for requests carrying io.modelcontextprotocol/protocolVersion"},
		{"no meta version", h("Mcp-Method", "tools/list"), "tools/list", nil, Request{}, -32602,
			"missing or invalid _meta field io.modelcontextprotocol/protocolVersion"},
		{"versions differ", h("Mcp-Method", "tools/list", "MCP-Protocol-Version", "2026-07-28"), "tools/list", nil,
			Request{Version: "2027-01-01", Modern: true}, -32020,
			`header mismatch: Mcp-Protocol-Version: header value "2026-07-28" does not match _meta value "2027-01-01"`},
		// A client's value is quoted clipped to text.MaxEcho (128) bytes: a
		// 200 KB version is not echoed whole.
		{"long meta version", h("Mcp-Method", "tools/list", "MCP-Protocol-Version", "2026-07-28"), "tools/list", nil,
			Request{Version: strings.Repeat("9", 200_000), Modern: true}, -32020,
			`header mismatch: Mcp-Protocol-Version: header value "2026-07-28" does not match _meta value "` + strings.Repeat("9", 128) + `…"`},
		{"long unsupported", h("Mcp-Method", "tools/list", "MCP-Protocol-Version", strings.Repeat("é", 100_000)), "tools/list", nil,
			Request{Version: strings.Repeat("é", 100_000), Modern: true}, -32022,
			`unsupported protocol version "` + strings.Repeat("é", 64) + `…" (supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)`},
		{"long name", h("Mcp-Method", "tools/call", "Mcp-Name", strings.Repeat("n", 5000)), "tools/call", call, meta, -32020,
			`header mismatch: Mcp-Name: header value "` + strings.Repeat("n", 128) + `…" does not match body value "boruna_run"`},
		{"unsupported", h("Mcp-Method", "tools/list", "MCP-Protocol-Version", "2027-01-01"), "tools/list", nil,
			Request{Version: "2027-01-01", Modern: true}, -32022,
			`unsupported protocol version "2027-01-01" (supported: 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)`},
	}
	for _, tc := range cases {
		e := CheckHTTP(tc.h, tc.method, tc.params, tc.meta)
		switch {
		case tc.code == 0 && e != nil:
			t.Errorf("%s: %v", tc.name, e)
		case tc.code != 0 && (e == nil || e.Code != tc.code || e.Message != tc.msg):
			t.Errorf("%s: got %+v, want %d %q", tc.name, e, tc.code, tc.msg)
		}
	}
	e := CheckHTTP(h("Mcp-Method", "tools/list", "MCP-Protocol-Version", "2027-01-01"), "tools/list", nil, Request{Version: "2027-01-01", Modern: true})
	if b, _ := json.Marshal(e.Data); string(b) != `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"2027-01-01"}` {
		t.Errorf("data = %s", b)
	}
	long := strings.Repeat("v", 300)
	e = CheckHTTP(h("Mcp-Method", "tools/list", "MCP-Protocol-Version", long), "tools/list", nil, Request{Version: long, Modern: true})
	if b, _ := json.Marshal(e.Data); string(b) != `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26"],"requested":"`+strings.Repeat("v", 128)+`…"}` {
		t.Errorf("data of a 300-byte version = %s", b)
	}
}

func TestToolsTTL(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		changed time.Time
		want    time.Duration
	}{
		{time.Time{}, time.Hour},
		{now, 0},
		{now.Add(time.Second), 0}, // a clock step back
		{now.Add(-10 * time.Minute), time.Minute},
		{now.Add(-1234567 * time.Microsecond), 123 * time.Millisecond},
		{now.Add(-48 * time.Hour), time.Hour},
	} {
		if got := ToolsTTL(tc.changed, now); got != tc.want {
			t.Errorf("ToolsTTL(%v) = %v, want %v", tc.changed, got, tc.want)
		}
	}
}

// A request whose body lacks the name is left to the checks of its body.
func TestCheckHTTPNoNameInBody(t *testing.T) {
	h := http.Header{"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}}
	if e := CheckHTTP(h, "tools/call", json.RawMessage(`{"arguments":{}}`), Request{Version: "2026-07-28", Modern: true}); e != nil {
		t.Errorf("got %v", e)
	}
}
