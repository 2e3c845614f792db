package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// The routing headers of a 2026-07-28 tools/call are checked once.
//
// ServeHTTP checks them (mcpver.CheckHTTP: Mcp-Method, Mcp-Name and
// MCP-Protocol-Version against the body, stricter than mcp-go: a repeated
// header is refused) before anything else reads the request. mcp-go
// checks them again in HandleMessage, and with them the parameters its
// tool binds to headers (x-mcp-header): for that it re-encodes and
// decodes the tool's whole input schema on every call — 2 KiB for
// boruna_run, 45-100 µs and 104 allocations a call, the largest single
// cost of serving one in the BenchmarkRunHTTPInProcess profile (14 % of
// the process's CPU). For a call that passed CheckHTTP and precheckCall
// to a tool whose schema binds no header (none of axpool's does; it is
// computed, not assumed: toolBindsNoHeader), that second check cannot
// fail, so ServeHTTP hands mcp-go a copy of the headers and marks the
// context (checkedHeadersKey); once mcp-go has read the protocol version
// to tell the request's era, skipHeaderRecheck (its HTTPContextFunc, which
// runs between the two) removes MCP-Protocol-Version from that copy, and
// mcp-go skips the check it runs only for requests carrying the header.
// TestHeaderRecheckSkipped checks both halves.

// checkedHeadersKey marks the context of a request whose headers mcp-go
// need not check again (its value is true).
type checkedHeadersKey struct{}

// skipHeaderRecheck is the HTTPContextFunc of the gateway's streamable
// HTTP server: for a request marked checkedHeadersKey it removes
// MCP-Protocol-Version from the request's headers (ServeHTTP's copy).
func skipHeaderRecheck(ctx context.Context, r *http.Request) context.Context {
	if checked, _ := ctx.Value(checkedHeadersKey{}).(bool); checked && r != nil {
		r.Header.Del(mcp.HeaderProtocolVersion)
	}
	return ctx
}

// headerBindings remembers, per tool name, whether the tool's input
// schema binds a parameter to a header, for the schema it was read from
// (a tool replaced with another schema is read again).
type headerBindings struct{ m sync.Map } // name → bindingsOf

type bindingsOf struct {
	schema json.RawMessage // the schema it was computed from
	none   bool
}

// sameSchema reports whether a and b hold the same bytes: at once when
// they are the same slice (the registered tool unchanged), else by
// comparing them (a replaced tool: tens of nanoseconds per KiB).
func sameSchema(a, b json.RawMessage) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || bytes.Equal(a, b))
}

// toolBindsNoHeader reports whether the registered tool name has a raw
// input schema binding no parameter to a header (mcp-go's
// ExtractParamHeaderBindings finds none); false for an unknown tool or one
// without a raw schema.
func (g *Server) toolBindsNoHeader(name string) bool {
	t := g.mcp.GetTool(name)
	if t == nil || len(t.Tool.RawInputSchema) == 0 {
		return false
	}
	schema := t.Tool.RawInputSchema
	if v, ok := g.bindings.m.Load(name); ok {
		if b := v.(bindingsOf); sameSchema(b.schema, schema) {
			return b.none
		}
	}
	none := len(mcp.ExtractParamHeaderBindings(&t.Tool)) == 0
	g.bindings.m.Store(name, bindingsOf{schema: schema, none: none})
	return none
}
