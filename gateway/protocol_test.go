package gateway

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// rpcErrLine is the exact JSON-RPC error line the gateway writes (id is
// JSON text).
func rpcErrLine(t testing.TB, id string, code int, msg string) string {
	t.Helper()
	m, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":%s}}`, id, code, m)
}

// toolCallMsg is a raw tools/call; meta (JSON text) may be "".
func toolCallMsg(id, tool, args, meta string) string {
	params := fmt.Sprintf(`"name":%q,"arguments":%s`, tool, args)
	if meta != "" {
		params += `,"_meta":` + meta
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{%s}}`, id, params)
}

// withMeta adds the 2026-07-28 _meta fields to meta (a JSON object text).
func withModernMeta(meta string) string {
	if meta == "" || meta == "{}" {
		return modernMetaJSON
	}
	return strings.TrimSuffix(modernMetaJSON, "}") + "," + strings.TrimPrefix(meta, "{")
}

// protocolCase is one refused tools/call and its exact answer.
type protocolCase struct {
	name, tool, meta string
	code             int
	msg              string
}

// checkProtocolCases sends each case over raw stdio, a raw legacy HTTP
// session and raw 2026-07-28 HTTP, and compares the exact answers.
func checkProtocolCases(t *testing.T, cases []protocolCase) {
	s := sharedStack(t)
	r := newRawStdio(t, s.gw)
	url := httpServer(t, s.gw, HTTPConfig{})
	legacy := legacySession(t, url, testToken)
	for i, tc := range cases {
		id := fmt.Sprint(100 + i)
		want := rpcErrLine(t, id, tc.code, tc.msg)
		r.send(toolCallMsg(id, tc.tool, shortArgs, tc.meta))
		if got := string(r.nextRaw()); got != want {
			t.Errorf("stdio %s:\n got %s\nwant %s", tc.name, got, want)
		}
		if status, body := rawDo(t, http.MethodPost, url, legacy, toolCallMsg(id, tc.tool, shortArgs, tc.meta)); status != http.StatusOK || body != want+"\n" {
			t.Errorf("http legacy %s: %d\n got %s\nwant %s", tc.name, status, body, want)
		}
		// The 2026-07-28 era maps invalid_params to HTTP 400.
		if status, body := rawDo(t, http.MethodPost, url, modernHeaders(tc.tool), toolCallMsg(id, tc.tool, shortArgs, withModernMeta(tc.meta))); status != http.StatusBadRequest || body != want+"\n" {
			t.Errorf("http modern %s: %d\n got %s\nwant %s", tc.name, status, body, want)
		}
	}
}

// An unknown tool is JSON-RPC invalid_params (docs/tools.md §1) with the
// gateway's message, suggesting the clearly nearest tool name.
func TestUnknownTool(t *testing.T) {
	checkProtocolCases(t, []protocolCase{
		{name: "far", tool: "boruna_nope", code: -32602, msg: `unknown tool "boruna_nope"`},
		{name: "near", tool: "boruna_rn", code: -32602, msg: `unknown tool "boruna_rn" (did you mean "boruna_run"?)`},
		{name: "near2", tool: "boruna_compil", code: -32602, msg: `unknown tool "boruna_compil" (did you mean "boruna_compile"?)`},
		{name: "case", tool: "Boruna_Run", code: -32602, msg: `unknown tool "Boruna_Run" (did you mean "boruna_run"?)`},
		{name: "long", tool: strings.Repeat("é", 100), code: -32602, msg: `unknown tool "` + strings.Repeat("é", 64) + `"… (200 bytes)`},
	})
}

// A progress token over MaxProgressTokenBytes (as JSON text) is refused
// with invalid_params before anything runs; one of exactly that size is
// served.
func TestProgressTokenCap(t *testing.T) {
	if MaxProgressTokenBytes != 256 {
		t.Fatalf("MaxProgressTokenBytes = %d, the documented value is 256", MaxProgressTokenBytes)
	}
	long := `{"progressToken":"` + strings.Repeat("t", MaxProgressTokenBytes-1) + `"}` // 257 bytes of JSON
	longNum := `{"progressToken":` + strings.Repeat("7", MaxProgressTokenBytes+1) + `}`
	escaped := `{"progressToken":"` + strings.Repeat(`\u0074`, 50) + `"}` // 302 bytes as sent
	t.Run("refused", func(t *testing.T) {
		checkProtocolCases(t, []protocolCase{
			{name: "string", tool: "boruna_run", meta: long, code: -32602, msg: "progress token exceeds 256 bytes"},
			{name: "number", tool: "boruna_run", meta: longNum, code: -32602, msg: "progress token exceeds 256 bytes"},
			{name: "escaped", tool: "boruna_run", meta: escaped, code: -32602, msg: "progress token exceeds 256 bytes"},
		})
	})

	// Exactly 256 bytes: served, on both transports.
	s := sharedStack(t)
	exact := `{"progressToken":"` + strings.Repeat("t", MaxProgressTokenBytes-2) + `"}`
	r := newRawStdio(t, s.gw)
	r.send(toolCallMsg("5", "boruna_run", shortArgs, exact))
	m := r.response()
	res, _ := m["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	if m["id"] != float64(5) || sc["outcome"] != "ok" || sc["result"] != float64(42) {
		t.Fatalf("stdio, 256-byte token: %v", m)
	}
	url := httpServer(t, s.gw, HTTPConfig{})
	status, body := rawDo(t, http.MethodPost, url, legacySession(t, url, testToken), toolCallMsg("6", "boruna_run", shortArgs, exact))
	if status != http.StatusOK || !strings.Contains(body, `\"result\": 42`) {
		t.Fatalf("http, 256-byte token: %d %s", status, body)
	}
}

// A progress token that is neither a string nor a number (MCP's
// ProgressToken) — an object, an array, a boolean — is refused with
// invalid_params before anything runs, on both transports, as a tool call
// of axpool_batch as of any tool; null is no token.
func TestProgressTokenType(t *testing.T) {
	batch := "axpool_batch"
	checkProtocolCases(t, []protocolCase{
		{name: "object", tool: "boruna_run", meta: `{"progressToken":{"a":1}}`, code: -32602, msg: "progress token must be a string or a number, got object"},
		{name: "array", tool: batch, meta: `{"progressToken":[1]}`, code: -32602, msg: "progress token must be a string or a number, got array"},
		{name: "boolean", tool: "boruna_run", meta: `{"progressToken":true}`, code: -32602, msg: "progress token must be a string or a number, got boolean"},
	})
}

// A message whose id is an object, an array or a boolean is answered -32600
// Invalid Request with id null (JSON-RPC 2.0 §4, §5), on both transports;
// nothing runs.
func TestInvalidRequestID(t *testing.T) {
	s := sharedStack(t)
	msg := func(typ string) string {
		return rpcErrLine(t, "null", -32600, "invalid request: id must be a string, a number or null, got "+typ)
	}
	cases := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, msg("object")},
		{`{"jsonrpc":"2.0","id":[1],"method":"ping"}`, msg("array")},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, msg("boolean")},
		{toolCallMsg(`{"a":1}`, "boruna_run", endlessArgs, ""), msg("object")},
		{toolCallMsg(`[]`, "boruna_run", endlessArgs, ""), msg("array")},
		{`{"jsonrpc":"2.0","id": {},"result":{}}`, msg("object")},
	}
	r := newRawStdio(t, s.gw)
	for _, tc := range cases {
		r.send(tc.in)
		if got := string(r.nextRaw()); got != tc.want {
			t.Errorf("stdio %s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	// Valid ids are still served.
	r.send(`{"jsonrpc":"2.0","id":"s","method":"ping"}`)
	if got := string(r.nextRaw()); got != `{"jsonrpc":"2.0","id":"s","result":{}}` {
		t.Fatalf("ping: %s", got)
	}
	url := httpServer(t, s.gw, HTTPConfig{})
	legacy := legacySession(t, url, testToken)
	for _, tc := range cases {
		if status, body := rawDo(t, http.MethodPost, url, legacy, tc.in); status != http.StatusBadRequest || body != tc.want+"\n" {
			t.Errorf("http %s: %d\n got %s\nwant %s", tc.in, status, body, tc.want)
		}
	}
	if n := busySlots(t, s); n != 0 {
		t.Fatalf("%d jobs running after refused calls", n)
	}
}
