package gateway

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/wire"
)

// Defences of both transports against hostile or sloppy clients, applied to
// the raw JSON-RPC bytes before mcp-go sees them:
//
//   - a message is at most MaxMessageBytes; an over-long stdio line is
//     discarded as it streams in and answered -32600 (tooLargeResponse);
//   - JSON that does not parse (including nesting deeper than encoding/json's
//     10,000 levels) is answered -32700 with a specific message and the
//     request's id whenever it can be read (parseErrorResponse);
//   - a tools/call without a tool name is answered -32602 "missing tool
//     name" (callParamsError);
//   - a numeric progress token that float64 would alter is carried through
//     mcp-go as a private string and echoed byte-exact (rawProgressToken).

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
	if cap(lr.buf) > 1<<20 {
		lr.buf = nil // do not keep a large buffer after a large message
	}
	lr.buf = lr.buf[:0]
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
// valid JSON, or nil when it is valid JSON (mcp-go then answers shape
// errors itself). The message names the problem: nesting beyond
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

// recoverID returns the "id" member of a JSON-RPC message read up to the
// point where the message stops being valid (or ends), when it is a string
// or a number; otherwise nil. Members before the id are skipped whole.
func recoverID(msg []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			if len(v) > 0 && (v[0] == '"' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
				return v
			}
			return nil
		}
	}
	return nil
}

// rpcError builds a JSON-RPC error response. id is echoed byte for byte
// (nil or empty → null).
func rpcError(id json.RawMessage, code int, msg string) mcp.JSONRPCMessage {
	var rid any
	if len(id) > 0 && !bytes.Equal(id, []byte("null")) {
		rid = id
	}
	return mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		ID:      mcp.NewRequestId(rid),
		Error:   mcp.NewJSONRPCErrorDetails(code, msg, nil),
	}
}

// callParams is what the gateway reads of the params of a tools/call.
// parseCallParams fills in tool and token once, for every check that
// needs them.
type callParams struct {
	Name      json.RawMessage `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`

	tool  string          // the decoded tool name (when usable)
	token json.RawMessage // _meta.progressToken as sent, trimmed; nil when none
}

// parseCallParams reads the params of a tools/call. It returns the
// -32602 message for params that are not an object or a tool name that
// is missing (absent, null or "") or not a string; "" when the name is
// usable (p.name() then returns it).
func parseCallParams(raw json.RawMessage) (callParams, string) {
	var p callParams
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return p, msgMissingToolName
	}
	if raw[0] != '{' {
		return p, "params of tools/call must be an object, got " + wire.JSONType(raw)
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, fmt.Sprintf("params of tools/call: %v", err)
	}
	name := bytes.TrimSpace(p.Name)
	switch {
	case len(name) == 0, bytes.Equal(name, []byte("null")), bytes.Equal(name, []byte(`""`)):
		return p, msgMissingToolName
	case name[0] != '"':
		return p, "tool name must be a string, got " + wire.JSONType(name)
	}
	_ = json.Unmarshal(name, &p.tool) // a JSON string: cannot fail
	p.token = metaProgressToken(p.Meta)
	return p, ""
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

// progressTokenLen returns the length of _meta.progressToken as sent (0
// when there is none or _meta is not an object).
func (p callParams) progressTokenLen() int { return len(p.token) }

// name returns the tool name (parseCallParams accepted it).
func (p callParams) name() string { return p.tool }

// rawTokenPrefix marks a progress token rewritten by rewriteProgressToken.
// The random part keeps a client from forging one.
var rawTokenPrefix = func() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return "axpool-raw-progress-token-" + hex.EncodeToString(b[:]) + ":"
}()

// rewriteProgressToken handles a numeric _meta.progressToken that would
// not survive mcp-go: mcp.Meta decodes it into float64, so 2^70 would come
// back as 1.1805916207174113e+21 and 1.50 as 1.5. Such a token is replaced
// in the message by a private string holding its exact text, which the
// progress relay turns back into the original number (rawProgressToken).
// p is msg's params as parseCallParams read them. It returns msg unchanged
// when there is nothing to do.
func rewriteProgressToken(msg []byte, p callParams) []byte {
	tok := p.token
	if len(tok) == 0 || !(tok[0] == '-' || (tok[0] >= '0' && tok[0] <= '9')) || floatExact(tok) {
		return msg
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p.Meta, &meta) != nil {
		return msg
	}
	var top, params map[string]json.RawMessage
	if json.Unmarshal(msg, &top) != nil || json.Unmarshal(top["params"], &params) != nil {
		return msg
	}
	var err error
	if meta["progressToken"], err = json.Marshal(rawTokenPrefix + string(tok)); err != nil {
		return msg
	}
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return msg
	}
	if top["params"], err = json.Marshal(params); err != nil {
		return msg
	}
	out, err := json.Marshal(top)
	if err != nil {
		return msg
	}
	if bytes.HasSuffix(msg, []byte("\n")) {
		out = append(out, '\n')
	}
	return out
}

// floatExact reports whether the JSON number tok is written back
// identically after a round trip through float64.
func floatExact(tok []byte) bool {
	f, err := strconv.ParseFloat(string(tok), 64)
	if err != nil {
		return false
	}
	b, err := json.Marshal(f)
	return err == nil && bytes.Equal(b, tok)
}

// rawProgressToken undoes rewriteProgressToken: a token it produced becomes
// the client's number, byte for byte; any other token is returned as is.
func rawProgressToken(tok mcp.ProgressToken) mcp.ProgressToken {
	s, ok := tok.(string)
	if !ok || !strings.HasPrefix(s, rawTokenPrefix) {
		return tok
	}
	raw := json.RawMessage(s[len(rawTokenPrefix):])
	if !json.Valid(raw) {
		return tok
	}
	return raw
}
