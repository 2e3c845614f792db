package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/mcpver"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// The JSON-RPC checks both transports run on a message before mcp-go
// sees it; the rules are listed once, in doc.go.

// MaxMessageBytes caps one JSON-RPC message: one stdio line (without its
// newline) and, by default, one HTTP request body (DefaultMaxBodyBytes).
// 8 MiB holds the largest accepted source (MaxSourceBytes, 1 MiB) even when
// every byte of it is JSON-escaped as \u00XX (6 bytes each), plus the
// request envelope and the other arguments.
const MaxMessageBytes = 8 << 20

// MaxJSONDepth is the deepest nesting of arrays and objects a message may
// have: encoding/json (used by mcp-go and by the gateway) refuses deeper
// input with a syntax error, which the gateway answers as a parse error.
const MaxJSONDepth = 10000

// SessionLimitCode is the JSON-RPC error code of an initialize refused
// because its token has MaxSessionsPerToken live sessions. JSON-RPC 2.0
// leaves -32000…-32099 to implementations; -32000 and -32001 are avoided
// because common MCP clients give them their own meaning.
const SessionLimitCode = -32030

// Messages of the JSON-RPC errors the gateway answers itself.
var (
	// msgTooLarge is the -32600 message of a message over MaxMessageBytes.
	msgTooLarge = fmt.Sprintf("message exceeds 8 MB limit (%d bytes)", MaxMessageBytes)
	// msgTooDeep is the -32700 message of JSON nested too deeply.
	msgTooDeep = fmt.Sprintf("parse error: JSON nesting exceeds %d levels", MaxJSONDepth)
)

// msgMissingToolName is the -32602 message of a tools/call whose
// params.name is absent, null or "".
const msgMissingToolName = "missing tool name"

// MaxProgressTokenBytes caps a tools/call's _meta.progressToken, measured
// as the JSON text the client sent (quotes and escapes included): the token
// is echoed in every notifications/progress, so a long one would multiply
// the traffic a call causes. A longer token is refused with JSON-RPC
// invalid_params (-32602) "progress token exceeds 256 bytes" before
// anything runs, on both transports.
const MaxProgressTokenBytes = 256

// msgProgressTokenTooLong is the -32602 message of a progress token over
// MaxProgressTokenBytes.
var msgProgressTokenTooLong = fmt.Sprintf("progress token exceeds %d bytes", MaxProgressTokenBytes)

// checkID returns the -32600 answer to a message whose id is neither a
// string, a number nor null (an object, an array or a boolean), or nil.
// JSON-RPC 2.0 §4 allows only those three types, and §5 answers an invalid
// request with id null: the id is not echoed.
func checkID(id json.RawMessage) mcp.JSONRPCMessage {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return nil
	}
	switch id[0] {
	case '{', '[', 't', 'f':
		return rpcError(nil, mcp.INVALID_REQUEST, "invalid request: id must be a string, a number or null, got "+wire.JSONType(id))
	}
	return nil
}

// lineReader reads newline-terminated messages of at most max bytes. The
// rest of a longer line is read and dropped in bufio-sized pieces, never
// buffered, so a client that sends gigabytes without a newline costs
// max + 64 KiB of memory.
type lineReader struct {
	br  *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line (newline included) and the read error (io.EOF
// after the last line, which may lack its newline). When the line is over
// the limit, next calls tooLong with its first max bytes as soon as the
// limit is crossed, discards the rest of it, and returns a nil line.
func (lr *lineReader) next(tooLong func(prefix []byte)) ([]byte, error) {
	lr.buf = nil // the caller keeps each line
	over := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if !over {
			content := len(chunk)
			if err == nil {
				content-- // the newline does not count
			}
			if len(lr.buf)+content > lr.max {
				over = true
				prefix := append(lr.buf, chunk[:lr.max-len(lr.buf)]...)
				tooLong(prefix)
				lr.buf = nil
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if over {
			return nil, err
		}
		return lr.buf, err
	}
}

// tooLargeResponse is the answer to a message over MaxMessageBytes:
// -32600 Invalid Request (JSON-RPC 2.0 §5.1: the message is refused as a
// request without being parsed, so "Parse error" would claim a fault that
// may not exist), with the id read from the message's first bytes when it
// comes before the bulk of the message (as every mcp-go client writes it),
// else null.
func tooLargeResponse(prefix []byte) mcp.JSONRPCMessage {
	return rpcError(recoverID(prefix), mcp.INVALID_REQUEST, msgTooLarge)
}

// parseErrorResponse returns the -32700 answer to a message that is not
// valid JSON (err is json.Unmarshal's), or nil when it is valid JSON. The message names the problem: nesting beyond
// MaxJSONDepth, or encoding/json's syntax error and its byte offset. The
// id is recovered when it precedes the fault, else null (JSON-RPC 2.0 §5).
func parseErrorResponse(msg []byte, err error) mcp.JSONRPCMessage {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return nil
	}
	text := fmt.Sprintf("parse error: %s at byte %d", se.Error(), se.Offset)
	if strings.HasSuffix(se.Error(), "exceeded max depth") {
		text = msgTooDeep
	}
	return rpcError(recoverID(msg), mcp.PARSE_ERROR, text)
}

// recoverID returns the id of a JSON-RPC message read up to the point
// where the message stops being valid (or ends), when it is a string or a
// number; otherwise nil.
func recoverID(msg []byte) json.RawMessage {
	start, end, ok := idSpan(msg)
	if !ok || !(msg[start] == '"' || msg[start] == '-' || (msg[start] >= '0' && msg[start] <= '9')) {
		return nil
	}
	return msg[start:end]
}

// idSpan returns where the value of the "id" member of the JSON-RPC
// message msg lies (the last one, matched as encoding/json matches it),
// reading only as far as msg is valid; ok is false when there is none.
func idSpan(msg []byte) (start, end int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 0, 0, false
	}
	for dec.More() {
		t, err := dec.Token()
		var v json.RawMessage
		if err != nil || dec.Decode(&v) != nil {
			break
		}
		if key, _ := t.(string); strings.EqualFold(key, "id") {
			end = int(dec.InputOffset())
			start, ok = end-len(v), true
		}
	}
	return start, end, ok
}

// rpcResponse is a JSON-RPC response whose id is the client's own bytes
// (mcp.RequestId would round numbers and HTML-escape strings).
type rpcResponse struct {
	JSONRPC string                   `json:"jsonrpc"`
	ID      json.RawMessage          `json:"id"`
	Result  any                      `json:"result,omitempty"`
	Error   *mcp.JSONRPCErrorDetails `json:"error,omitempty"`
}

// rpcError builds a JSON-RPC error response. id is echoed byte for byte
// (nil or empty → null).
func rpcError(id json.RawMessage, code int, msg string) mcp.JSONRPCMessage {
	if !hasID(id) {
		id = json.RawMessage("null")
	}
	e := mcp.NewJSONRPCErrorDetails(code, msg, nil)
	return rpcResponse{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: &e}
}

// rpcErrorOf is rpcError of e, with its data.
func rpcErrorOf(id json.RawMessage, e *mcpver.Error) mcp.JSONRPCMessage {
	m := rpcError(id, e.Code, e.Message).(rpcResponse)
	m.Error.Data = e.Data
	return m
}

// withID returns mcp-go's response m with its id replaced by id, the
// client's own bytes. Other messages and a nil id are returned as they are.
func withID(m mcp.JSONRPCMessage, id json.RawMessage) mcp.JSONRPCMessage {
	switch r := m.(type) {
	case mcp.JSONRPCResponse:
		if id != nil {
			return rpcResponse{JSONRPC: r.JSONRPC, ID: id, Result: r.Result}
		}
	case mcp.JSONRPCError:
		if id != nil {
			return rpcResponse{JSONRPC: r.JSONRPC, ID: id, Error: &r.Error}
		}
	}
	return m
}

// encodeLine encodes v as one line of JSON without HTML escaping.
func encodeLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// callParams is what the gateway reads of the params of a tools/call;
// parseCallParams fills in tool and token.
type callParams struct {
	Name      json.RawMessage `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
	Task      json.RawMessage `json:"task"`

	tool  string          // the decoded tool name (when usable)
	token json.RawMessage // _meta.progressToken as sent, trimmed; nil when none
}

// parseCallParams reads the params of a tools/call. It returns the
// -32602 message for params that are not an object or a tool name that
// is missing (absent, null or "") or not a string; "" when the name is
// usable (p.tool then holds it).
func parseCallParams(raw json.RawMessage) (callParams, string) {
	var p callParams
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return p, msgMissingToolName
	}
	if raw[0] != '{' {
		return p, "params of tools/call must be an object, got " + wire.JSONType(raw)
	}
	if !splitCallParams(raw, &p) {
		p = callParams{}
		if err := json.Unmarshal(raw, &p); err != nil {
			return p, fmt.Sprintf("params of tools/call: %v", err)
		}
	}
	name := bytes.TrimSpace(p.Name)
	switch {
	case len(name) == 0, bytes.Equal(name, []byte("null")), bytes.Equal(name, []byte(`""`)):
		return p, msgMissingToolName
	case name[0] != '"':
		return p, "tool name must be a string, got " + wire.JSONType(name)
	}
	wire.DecodeString(name, &p.tool) // a JSON string of a valid message
	p.token = metaProgressToken(p.Meta)
	return p, ""
}

// splitCallParams fills in p's members from raw, the params of a
// tools/call, as json.Unmarshal does, without reflection — when raw is a
// valid JSON object whose keys are all spelled exactly as callParams'
// (encoding/json would also take "NAME" or "Name"); else it reports false,
// p possibly half filled, and the caller decodes raw with encoding/json.
// The members are sub-slices of raw.
func splitCallParams(raw json.RawMessage, p *callParams) bool {
	ok := true
	return wire.SplitObject(raw, func(key string, val json.RawMessage) {
		switch key {
		case "name":
			p.Name = val
		case "arguments":
			p.Arguments = val
		case "_meta":
			p.Meta = val
		case "task":
			p.Task = val
		default:
			ok = false
		}
	}) && ok
}

// progressTokenType returns the -32602 message for a progress token (as
// sent) that is not one of MCP's ProgressToken types, a string or a
// number: `progress token must be a string or a number, got object`; ""
// for one that is, for null and for none.
func progressTokenType(token json.RawMessage) string {
	if len(token) == 0 || bytes.Equal(token, []byte("null")) {
		return ""
	}
	switch typ := wire.JSONType(token); typ {
	case "string", "number":
		return ""
	default:
		return "progress token must be a string or a number, got " + typ
	}
}

// metaProgressToken returns the "progressToken" member of a _meta object as
// sent (trimmed), or nil when there is none or meta is not an object. A
// _meta whose text neither contains "progressToken" nor any escape cannot
// hold the member and is not decoded.
func metaProgressToken(meta json.RawMessage) json.RawMessage {
	if len(meta) == 0 || !mayContainKey(meta, "progressToken") {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	return bytes.TrimSpace(m["progressToken"])
}

// mayContainKey reports whether the JSON text doc may hold an object member
// named key (compared exactly, as a map lookup does): key appears in it
// literally, or doc contains an escape, which could spell it.
func mayContainKey(doc []byte, key string) bool {
	return bytes.Contains(doc, []byte(key)) || bytes.IndexByte(doc, '\\') >= 0
}

// rpcMessage is the part of a JSON-RPC message the checks read.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// msgBatch is the -32600 message of a JSON-RPC batch.
const msgBatch = "invalid request: JSON-RPC batches are not supported; send one message at a time"

// precheck parses one client message (without its line end). It returns
// the message, or the error to answer instead: -32700 for text that is not
// JSON (parseErrorResponse), -32600 with id null for a batch, a value that
// is not an object or an id of the wrong type (checkID), -32600 for a
// method that is not a string.
func precheck(body []byte) (rpcMessage, mcp.JSONRPCMessage) {
	var msg rpcMessage
	if splitMessage(body, &msg) {
		if resp := checkID(msg.ID); resp != nil {
			return msg, resp
		}
		return msg, checkLogLevels(msg)
	}
	msg = rpcMessage{}
	err := json.Unmarshal(body, &msg)
	if resp := parseErrorResponse(body, err); resp != nil {
		return msg, resp
	}
	var ute *json.UnmarshalTypeError
	switch t := bytes.TrimSpace(body); {
	case t[0] == '[':
		return msg, rpcError(nil, mcp.INVALID_REQUEST, msgBatch)
	case t[0] != '{':
		return msg, rpcError(nil, mcp.INVALID_REQUEST, "invalid request: a message must be a JSON object, got "+wire.JSONType(t))
	case err == nil:
		if resp := checkID(msg.ID); resp != nil {
			return msg, resp
		}
		return msg, checkLogLevels(msg)
	case errors.As(err, &ute):
		if resp := checkID(msg.ID); resp != nil {
			return msg, resp
		}
		return msg, rpcError(msg.ID, mcp.INVALID_REQUEST, "invalid request: "+ute.Field+" must be a string, got "+ute.Value)
	}
	return msg, rpcError(nil, mcp.INVALID_REQUEST, "invalid request: "+err.Error())
}

// splitMessage fills in msg from body as json.Unmarshal does, without
// reflection, when body is a valid JSON object whose keys are all spelled
// exactly as rpcMessage's or "jsonrpc" (encoding/json would also take
// "ID" or "Method") and whose method is a plain string (plainString); else
// it reports false, msg possibly half filled, and precheck decodes body
// with encoding/json for its value or error. The members are sub-slices of
// body.
func splitMessage(body []byte, msg *rpcMessage) bool {
	ok := true
	return wire.SplitObject(body, func(key string, val json.RawMessage) {
		switch key {
		case "jsonrpc":
		case "id":
			msg.ID = val
		case "params":
			msg.Params = val
		case "method":
			m, plain := wire.PlainString(val)
			msg.Method, ok = m, ok && plain
		default:
			ok = false
		}
	}) && ok
}

// logLevels are MCP's log levels (RFC 5424's), least severe first.
var logLevels = []mcp.LoggingLevel{mcp.LoggingLevelDebug, mcp.LoggingLevelInfo, mcp.LoggingLevelNotice,
	mcp.LoggingLevelWarning, mcp.LoggingLevelError, mcp.LoggingLevelCritical, mcp.LoggingLevelAlert, mcp.LoggingLevelEmergency}

// msgLogLevels ends the message of a log level that is not one of
// logLevels.
const msgLogLevels = `must be one of "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"`

// badLogLevel describes raw (a log level as sent; nil when absent) when it
// is not a string naming one of logLevels: `"verbose"`, `5`; else "".
func badLogLevel(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return text.Clip(string(bytes.TrimSpace(raw)), text.MaxEcho)
	}
	for _, l := range logLevels {
		if string(l) == s {
			return ""
		}
	}
	return text.Quote(s)
}

// checkLogLevels refuses, with JSON-RPC invalid_params (-32602), a request
// whose log level is not one of MCP's: a logging/setLevel whose
// params.level is missing or not a level (`logging/setLevel: params.level
// must be one of "debug", …; got 5` — mcp-go alone answers -32600 for a
// non-string), and any request whose per-request _meta level
// (io.modelcontextprotocol/logLevel, 2026-07-28) is not a level (mcp-go
// alone ignores it). Else nil — also for a logging/setLevel of the
// 2026-07-28 era (its _meta says so), which mcp-go answers -32601: the
// method was removed, whatever its params.
func checkLogLevels(msg rpcMessage) mcp.JSONRPCMessage {
	setLevel := msg.Method == string(mcp.MethodSetLogLevel)
	if setLevel && modernMeta(msg.Params) {
		return nil
	}
	// A key spelled with escapes is not looked for (mcp-go then reads it as
	// an unknown level and sends nothing): the check costs nothing on a
	// call without the key.
	if !hasID(msg.ID) || !setLevel && !bytes.Contains(msg.Params, []byte(mcp.MetaKeyLogLevel)) {
		return nil
	}
	var p struct {
		Level json.RawMessage            `json:"level"`
		Meta  map[string]json.RawMessage `json:"_meta"`
	}
	if len(msg.Params) > 0 && json.Unmarshal(msg.Params, &p) != nil {
		return nil // params of the wrong shape: mcp-go's answer
	}
	if bad := badLogLevel(p.Meta[mcp.MetaKeyLogLevel]); bad != "" {
		return rpcError(msg.ID, mcp.INVALID_PARAMS, "_meta "+mcp.MetaKeyLogLevel+" "+msgLogLevels+"; got "+bad)
	}
	if !setLevel {
		return nil
	}
	if p.Level == nil {
		return rpcError(msg.ID, mcp.INVALID_PARAMS, "logging/setLevel: params.level is required and "+msgLogLevels)
	}
	if bad := badLogLevel(p.Level); bad != "" {
		return rpcError(msg.ID, mcp.INVALID_PARAMS, "logging/setLevel: params.level "+msgLogLevels+"; got "+bad)
	}
	return nil
}

// precheckCall checks a tools/call request. It returns the JSON-RPC
// invalid_params error to send — for a missing or non-string tool name,
// params that are not an object, an unknown tool
// (tools.UnknownToolMessage), a progress token over MaxProgressTokenBytes,
// or arguments that fail CheckArgs' transport-level checks — or else the
// call's callInfo for its handler.
//
// g, when not nil, is the server, whose script tools (scripts.go) pass:
// their arguments are checked by the handler, and every refusal is a tool
// result (docs/scripts.md "Calls"); an unknown tool's suggestion may name
// a script.
func precheckCall(msg rpcMessage, g *Server) (*callInfo, mcp.JSONRPCMessage) {
	p, bad := parseCallParams(msg.Params)
	if bad != "" {
		return nil, rpcError(msg.ID, mcp.INVALID_PARAMS, bad)
	}
	script := g.isScript(p.tool) || g.isToolSearch(p.tool)
	if _, ok := tools.SpecOf(p.tool); !script && (!ok || !g.listed(p.tool)) {
		return nil, rpcError(msg.ID, mcp.INVALID_PARAMS, g.unknownToolMessage(p.tool))
	}
	if len(p.token) > MaxProgressTokenBytes {
		return nil, rpcError(msg.ID, mcp.INVALID_PARAMS, msgProgressTokenTooLong)
	}
	if bad := progressTokenType(p.token); bad != "" {
		return nil, rpcError(msg.ID, mcp.INVALID_PARAMS, bad)
	}
	task := len(bytes.TrimSpace(p.Task)) > 0 && !bytes.Equal(bytes.TrimSpace(p.Task), []byte("null"))
	if script {
		return &callInfo{tool: p.tool, raw: p.Arguments, token: p.token, task: task}, nil
	}
	args, err := tools.Check(p.tool, p.Arguments)
	var ae *tools.ArgError
	if errors.As(err, &ae) && ae.Protocol() {
		return nil, rpcError(msg.ID, mcp.INVALID_PARAMS, ae.Msg)
	}
	return &callInfo{tool: p.tool, raw: p.Arguments, args: args, err: err, token: p.token, task: task}, nil
}
