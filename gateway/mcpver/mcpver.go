package mcpver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/axpool/axpool/internal/text"
	"github.com/mark3labs/mcp-go/mcp"
)

// Versions are the protocol revisions axpool serves, newest first. A
// client of the stateless 2026-07-28 revision names it in each request's
// _meta; the others negotiate with initialize (mcp-go answers the
// revision asked for, or 2025-11-25 for one it does not know).
var Versions = []string{
	mcp.ProtocolVersion20260728,
	mcp.ProtocolVersion20251125,
	mcp.ProtocolVersion20250618,
	mcp.ProtocolVersion20250326,
}

// The error codes of protocol revision 2026-07-28 (its reserved range
// -32020…-32099).
const (
	// CodeHeaderMismatch: a standard header (MCP-Protocol-Version,
	// Mcp-Method, Mcp-Name) is missing or differs from the body
	// (SEP-2243). Sent with HTTP 400.
	CodeHeaderMismatch = mcp.HEADER_MISMATCH // -32020
	// CodeMissingCapability: the request needs a client capability the
	// client did not declare, such as the Tasks extension (SEP-2575).
	CodeMissingCapability = mcp.MISSING_REQUIRED_CLIENT_CAPABILITY // -32021
	// CodeUnsupportedVersion: the request names a revision axpool does
	// not serve; data is {"supported":[…],"requested":"…"}.
	CodeUnsupportedVersion = mcp.UNSUPPORTED_PROTOCOL_VERSION // -32022
)

// TasksExtension is the identifier of the Tasks extension (SEP-2663)
// under capabilities.extensions.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Error is a JSON-RPC error decided here: Code, Message and, when not
// nil, Data (JSON-encodable).
type Error struct {
	Code    int
	Message string
	Data    any
}

// Error returns the message.
func (e *Error) Error() string { return e.Message }

// Request is what the params._meta of one request declares.
type Request struct {
	// Version is io.modelcontextprotocol/protocolVersion ("" when absent).
	Version string
	// Modern reports a version of the stateless era (2026-07-28 or
	// later, as mcp-go decides the era).
	Modern bool
	// Extensions are the keys of clientCapabilities.extensions.
	Extensions []string
	// LogLevel is io.modelcontextprotocol/logLevel ("" when absent: no
	// notifications/message for the request).
	LogLevel string
	// TraceParent and TraceState are the W3C trace context
	// (_meta.traceparent, _meta.tracestate; SEP-414), "" when absent or
	// malformed (a traceparent must be 55 characters of the form
	// 00-<32 hex>-<16 hex>-<2 hex>).
	TraceParent, TraceState string
}

// Has reports whether the request declares extension ext.
func (r Request) Has(ext string) bool { return slices.Contains(r.Extensions, ext) }

// Parse reads the _meta of params (a request's params as sent; nil or
// not an object gives the zero Request).
func Parse(params json.RawMessage) Request {
	var p struct {
		Meta struct {
			Version      string          `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			LogLevel     string          `json:"io.modelcontextprotocol/logLevel"`
			TraceParent  string          `json:"traceparent"`
			TraceState   string          `json:"tracestate"`
		} `json:"_meta"`
	}
	params = bytes.TrimSpace(params)
	if len(params) == 0 || params[0] != '{' {
		return Request{}
	}
	var r Request
	if json.Unmarshal(params, &p) != nil {
		// A member of another type than expected: read what can be read.
		var loose struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(params, &loose) != nil {
			return r
		}
		_ = json.Unmarshal(loose.Meta[mcp.MetaKeyProtocolVersion], &p.Meta.Version)
		p.Meta.Capabilities = loose.Meta[mcp.MetaKeyClientCapabilities]
	}
	m := p.Meta
	r.Version, r.Modern = m.Version, mcp.IsModernProtocol(m.Version)
	r.Extensions = Extensions(m.Capabilities)
	r.LogLevel = m.LogLevel
	if ValidTraceParent(m.TraceParent) {
		r.TraceParent, r.TraceState = m.TraceParent, m.TraceState
	}
	return r
}

// Extensions returns the keys of the "extensions" member of a client
// capabilities object (as sent), sorted; nil when there is none.
func Extensions(caps json.RawMessage) []string {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if len(caps) == 0 || json.Unmarshal(caps, &c) != nil {
		return nil
	}
	var out []string
	for k, v := range c.Extensions {
		if v := bytes.TrimSpace(v); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// ValidTraceParent reports whether s is a W3C traceparent of version 00:
// "00-" + 32 lowercase hex (not all zero) + "-" + 16 lowercase hex (not
// all zero) + "-" + 2 lowercase hex.
func ValidTraceParent(s string) bool {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return false
	}
	hex := func(t string) bool {
		zero := true
		for i := 0; i < len(t); i++ {
			c := t[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
			zero = zero && c == '0'
		}
		return !zero
	}
	return hex(s[3:35]) && hex(s[36:52]) && (hex(s[53:55]) || s[53:55] == "00")
}

// nameHeaderTasks are the Tasks methods whose Mcp-Name is the taskId
// (SEP-2663 "Routing headers").
var nameHeaderTasks = map[string]bool{"tasks/get": true, "tasks/update": true, "tasks/cancel": true}

// ModernHTTP reports whether a POST belongs to the 2026-07-28 era: its
// MCP-Protocol-Version header or its _meta names that revision or a later
// one (as mcp-go decides; naming it in one place only is a mismatch that
// CheckHTTP reports).
func ModernHTTP(h http.Header, req Request) bool {
	return req.Modern || mcp.IsModernProtocol(strings.TrimSpace(h.Get(mcp.HeaderProtocolVersion)))
}

// CheckHTTP checks a request (it has an id) of the 2026-07-28 era
// (ModernHTTP) before anything else reads it. First the routing headers
// (SEP-2243): Mcp-Method must equal the method, and Mcp-Name must equal
// params.name (tools/call, prompts/get), params.uri (resources/read) or
// params.taskId (tasks/get, tasks/update, tasks/cancel; SEP-2663) when the body has
// one — else CodeHeaderMismatch. Header names are case-insensitive, values are
// compared exactly after surrounding white space is removed (RFC 9110
// §5.5); an Mcp-Name may be written =?base64?…?=. Then the revision, as
// mcp-go checks it: the MCP-Protocol-Version header is required
// (CodeHeaderMismatch), so is the _meta version (-32602), the two must be
// equal (CodeHeaderMismatch) and name a revision of Versions
// (CodeUnsupportedVersion). It returns nil when the request passes.
func CheckHTTP(h http.Header, method string, params json.RawMessage, req Request) *Error {
	get := func(name string) string { return strings.TrimSpace(h.Get(name)) }
	mismatch := func(header, format string, a ...any) *Error {
		return &Error{Code: CodeHeaderMismatch, Message: "header mismatch: " + header + ": " + fmt.Sprintf(format, a...)}
	}
	// A routing header sent twice is refused: an intermediary and axpool
	// could read different copies.
	for _, name := range []string{mcp.HeaderMethod, mcp.HeaderName, mcp.HeaderProtocolVersion} {
		if len(h.Values(name)) > 1 {
			return mismatch(name, "repeated header")
		}
	}
	m := get(mcp.HeaderMethod)
	switch {
	case m == "":
		return mismatch(mcp.HeaderMethod, "missing required header")
	case m != method:
		return mismatch(mcp.HeaderMethod, "header value %s does not match body value %s", text.Quote(m), text.Quote(method))
	}
	body, named := mcp.ExtractHeaderName(mcp.MCPMethod(method), params)
	if nameHeaderTasks[method] {
		var p struct {
			TaskID string `json:"taskId"`
		}
		_ = json.Unmarshal(params, &p)
		body, named = p.TaskID, true
	}
	if named && body != "" { // a request without the name is refused for its body
		n := get(mcp.HeaderName)
		decoded, ok := mcp.DecodeHeaderValue(n)
		switch {
		case n == "":
			return mismatch(mcp.HeaderName, "missing required header for method %s", text.Quote(method))
		case !ok:
			return mismatch(mcp.HeaderName, "invalid Base64 encoding")
		case decoded != body:
			return mismatch(mcp.HeaderName, "header value %s does not match body value %s", text.Quote(decoded), text.Quote(body))
		}
	}
	hv := get(mcp.HeaderProtocolVersion)
	switch {
	case hv == "" && req.Version != "":
		return mismatch(mcp.HeaderProtocolVersion, "required for requests carrying %s (send %s, the _meta value)", mcp.MetaKeyProtocolVersion, text.Quote(req.Version))
	case hv == "":
		return mismatch(mcp.HeaderProtocolVersion, "required for requests carrying %s", mcp.MetaKeyProtocolVersion)
	case req.Version == "":
		return &Error{Code: mcp.INVALID_PARAMS, Message: "missing or invalid _meta field " + mcp.MetaKeyProtocolVersion}
	case hv != req.Version:
		return mismatch(mcp.HeaderProtocolVersion, "header value %s does not match _meta value %s", text.Quote(hv), text.Quote(req.Version))
	case !slices.Contains(Versions, req.Version):
		return unsupported(req.Version)
	}
	return nil
}

// unsupported is the CodeUnsupportedVersion error of a request naming
// revision v.
func unsupported(v string) *Error {
	return &Error{Code: CodeUnsupportedVersion,
		Message: fmt.Sprintf("unsupported protocol version %s (supported: %s)", text.Quote(v), strings.Join(Versions, ", ")),
		Data:    mcp.UnsupportedProtocolVersionData{Supported: Versions, Requested: text.Clip(v, text.MaxEcho)}}
}

// CheckMetaVersion refuses a request whose _meta names, as v, a revision
// axpool does not serve and that mcp-go would take for an older era — a
// date before 2026-07-28 that is no revision ("2026-06-30",
// "2025-11-26") — with CodeUnsupportedVersion, as CheckHTTP answers an
// unknown later one (such a request was served as a legacy one, over
// HTTP refused for its missing session). nil for no version, a revision
// of Versions, 2024-11-05 (which initialize accepts) and any version of
// the 2026-07-28 era (CheckHTTP and mcp-go check those).
func CheckMetaVersion(v string) *Error {
	if v == "" || v == "2024-11-05" || mcp.IsModernProtocol(v) || slices.Contains(Versions, v) {
		return nil
	}
	return unsupported(v)
}

// MaxToolsTTL caps the cache lifetime of the tool list.
const MaxToolsTTL = time.Hour

// ToolsTTL is the ttlMs of tools/list (SEP-2549) for a tool set that last
// changed at changed (the zero time: never, a fixed tool set): MaxToolsTTL
// for a fixed set; else a tenth of the time since the change, at most
// MaxToolsTTL — a catalogue of scripts that was just edited is likely to
// change again soon, one untouched for a day is not.
func ToolsTTL(changed, now time.Time) time.Duration {
	if changed.IsZero() {
		return MaxToolsTTL
	}
	age := max(now.Sub(changed), 0)
	return min(age/10, MaxToolsTTL).Truncate(time.Millisecond)
}
