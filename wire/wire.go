// Package wire holds the pieces of the MCP wire contract (docs/tools.md)
// that several packages need: the response envelope with its field order,
// the protocol version, the closed set of outcomes, and the error kinds.
//
// wire is a leaf package (its only module import is its encoder), so the
// queue, the worker, the tools and the gateway can all share it.
//
// Imports: internal/jsonenc.
package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/jsonenc"
)

// ProtocolVersion is the envelope version carried by every tool response
// (docs/tools.md §1).
const ProtocolVersion = 1

// Object is a JSON object that keeps its keys in insertion order.
// Values are anything encoding/json can marshal (vm.Value implements
// json.Marshaler), or json.RawMessage.
//
// Lookups scan the keys while the object is small and use an index once it
// holds more than indexAfter keys, so building an object of n keys (as
// ParseObject does for a client's arguments) takes O(n) time, not O(n²).
type Object struct {
	// ms are the members in order: one slice, so that an object is two
	// allocations (checked arguments and their canonical form make one
	// per level of every call).
	ms  []member
	idx map[string]int // key → position; nil while len(ms) <= indexAfter
}

// member is one key and its value.
type member struct {
	key string
	val any
}

// indexAfter is the key count above which an Object keeps an index.
const indexAfter = 16

// find returns the position of key, or -1.
func (o *Object) find(key string) int {
	if o.idx != nil {
		if i, ok := o.idx[key]; ok {
			return i
		}
		return -1
	}
	for i := range o.ms {
		if o.ms[i].key == key {
			return i
		}
	}
	return -1
}

// NewObject returns an empty ordered object.
func NewObject() *Object { return &Object{} }

// NewObjectSize returns an empty ordered object with room for n members
// before it grows (n < 0 counts as 0).
func NewObjectSize(n int) *Object {
	n = max(n, 0)
	return &Object{ms: make([]member, 0, n)}
}

// Envelope returns an object that starts with `success` and then
// `protocol_version: 1`, the order every tool response uses (docs/tools.md §1).
func Envelope(success bool) *Object {
	return NewObject().Set("success", success).Set("protocol_version", ProtocolVersion)
}

// Set sets key to v, keeping the key's position if it already exists.
// It returns o for chaining.
func (o *Object) Set(key string, v any) *Object {
	if i := o.find(key); i >= 0 {
		o.ms[i].val = v
		return o
	}
	o.ms = append(o.ms, member{key, v})
	switch {
	case o.idx != nil:
		o.idx[key] = len(o.ms) - 1
	case len(o.ms) > indexAfter:
		o.reindex()
	}
	return o
}

// reindex rebuilds the index from the members (or drops it for a small
// object).
func (o *Object) reindex() {
	if len(o.ms) <= indexAfter {
		o.idx = nil
		return
	}
	o.idx = make(map[string]int, len(o.ms))
	for i := range o.ms {
		o.idx[o.ms[i].key] = i
	}
}

// Get returns the value stored under key.
func (o *Object) Get(key string) (any, bool) {
	if i := o.find(key); i >= 0 {
		return o.ms[i].val, true
	}
	return nil, false
}

// Delete removes key if present.
func (o *Object) Delete(key string) {
	if i := o.find(key); i >= 0 {
		o.ms = append(o.ms[:i], o.ms[i+1:]...)
		if o.idx != nil {
			o.reindex()
		}
	}
}

// Keys returns the keys in order.
func (o *Object) Keys() []string {
	if len(o.ms) == 0 {
		return nil
	}
	keys := make([]string, len(o.ms))
	for i := range o.ms {
		keys[i] = o.ms[i].key
	}
	return keys
}

// All yields the members in order, key and value: Keys and Get without
// a copy of the keys or a look-up each.
func (o *Object) All() iter.Seq2[string, any] {
	return func(yield func(string, any) bool) {
		for i := range o.ms {
			if !yield(o.ms[i].key, o.ms[i].val) {
				return
			}
		}
	}
}

// Len returns the number of keys.
func (o *Object) Len() int { return len(o.ms) }

// MarshalJSON encodes o compactly, keys in order, without HTML escaping.
// Errors: a value encoding/json cannot encode (wrapped with its key).
func (o *Object) MarshalJSON() ([]byte, error) { return o.AppendJSON(nil) }

// AppendJSON appends o's MarshalJSON encoding to dst. A nested *Object is
// encoded in place, an Outcome as its string, and the rest by
// jsonenc.Append, so a value is encoded once (encoding/json would encode a
// nested object's MarshalJSON output and then scan it again at each
// level). On error dst is returned unchanged with the error.
func (o *Object) AppendJSON(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, '{')
	for i := range o.ms {
		k := o.ms[i].key
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, k)
		dst = append(dst, ':')
		var err error
		switch v := o.ms[i].val.(type) {
		case *Object:
			if v == nil {
				dst = append(dst, "null"...)
				continue
			}
			dst, err = v.AppendJSON(dst)
		case Outcome:
			dst = jsonenc.AppendString(dst, string(v))
		default:
			dst, err = jsonenc.Append(dst, v)
		}
		if err != nil {
			return dst[:start], fmt.Errorf("wire: field %q: %w", k, err)
		}
	}
	return append(dst, '}'), nil
}

// Pretty encodes o with a 2-space indent (the text content of every tool
// response, docs/tools.md §1), without HTML escaping and without a trailing
// newline.
func (o *Object) Pretty() ([]byte, error) {
	compact, err := o.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ParseObject decodes a JSON object keeping its key order. Values are kept
// as json.RawMessage. Errors: encoding/json's, for data that is not one
// JSON object.
func ParseObject(data []byte) (*Object, error) {
	// Room for the members of a usual object (a job event, a batch item,
	// a tool's arguments): two allocations instead of a growth each.
	o := NewObjectSize(8)
	if SplitObject(data, func(key string, val json.RawMessage) { o.Set(key, val) }) {
		return o, nil
	}
	return parseObjectDecoder(data)
}

// SplitObject calls member for each member of the JSON object data, in
// order (a repeated key is passed each time), with the value's bytes (a
// sub-slice of data, without surrounding white space), and reports true.
// It reports false, having called nothing, when data is not one valid JSON
// object (callers then decode it with encoding/json for its error
// message). Keys are decoded as encoding/json decodes them (invalid UTF-8
// and lone surrogates become U+FFFD).
func SplitObject(data []byte, member func(key string, val json.RawMessage)) bool {
	return splitObject(data, member, true)
}

// SplitValidObject is SplitObject for data known to be valid JSON — a
// value SplitObject or SplitArray passed on, taken from data they
// checked — which it does not check again: only that it is an object.
// On data that is not valid JSON its result is not defined (it may
// panic).
func SplitValidObject(data []byte, member func(key string, val json.RawMessage)) bool {
	return splitObject(data, member, false)
}

func splitObject(data []byte, member func(key string, val json.RawMessage), check bool) bool {
	if !isObject(data, check) {
		return false
	}
	return walkObject(data, func(key, val []byte) bool {
		var k string
		var ok bool
		if plainString(key) {
			k = internKey(key[1 : len(key)-1])
		} else if k, ok = decodedString(key); !ok {
			return false // cannot happen: data is valid
		}
		member(k, json.RawMessage(val))
		return true
	})
}

// isObject reports whether data starts, after white space, with '{' and
// (check) is valid JSON: one object, then white space.
func isObject(data []byte, check bool) bool {
	i := skipSpace(data, 0)
	return i < len(data) && data[i] == '{' && (!check || jsonenc.Valid(data))
}

// walkObject calls member with each member of data — one valid JSON
// object (isObject) — in order: its key as written (quotes and escapes
// included) and its value's bytes (capacity cut at their end), until
// member returns false; it reports whether member took every member.
func walkObject(data []byte, member func(key, val []byte) bool) bool {
	i := skipSpace(data, skipSpace(data, 0)+1)
	if data[i] == '}' {
		return true
	}
	for {
		end, _ := stringEnd(data, i)
		key := data[i:end]
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the ':'
		vend, _ := valueEnd(data, i)
		if !member(key, data[i:vend:vend]) {
			return false
		}
		i = skipSpace(data, vend)
		if data[i] == '}' {
			return true
		}
		i = skipSpace(data, i+1) // the ','
	}
}

// SplitArray returns the elements of the JSON array data, in order, each
// the value's bytes (a sub-slice of data, without surrounding white
// space) — what json.Unmarshal into a []json.RawMessage gives, without
// its reflection. ok is false, and elems nil, when data is not one valid
// JSON array.
func SplitArray(data []byte) (elems []json.RawMessage, ok bool) {
	return splitArray(data, true)
}

// SplitValidArray is SplitArray for data known to be valid JSON, as
// SplitValidObject is SplitObject.
func SplitValidArray(data []byte) (elems []json.RawMessage, ok bool) {
	return splitArray(data, false)
}

func splitArray(data []byte, check bool) (elems []json.RawMessage, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' || (check && !jsonenc.Valid(data)) {
		return nil, false
	}
	// data is valid JSON starting with '[': one array, then white space.
	elems = []json.RawMessage{}
	i = skipSpace(data, i+1)
	if data[i] == ']' {
		return elems, true
	}
	for {
		end, _ := valueEnd(data, i)
		elems = append(elems, json.RawMessage(data[i:end:end]))
		i = skipSpace(data, end)
		if data[i] == ']' {
			return elems, true
		}
		i = skipSpace(data, i+1) // the ','
	}
}

// ScanObject calls member for each top-level member of data, read as a
// JSON object that may be invalid or nested beyond any limit: for a
// message that does not decode, to read what it can (the id and reply of
// a job, queue). Values are skipped by counting brackets outside strings
// (no recursion, no depth limit; their insides are not checked), and the
// scan stops at the first byte that is not where an object's syntax puts
// it, having passed the members before it. Keys are decoded as
// SplitObject decodes them; a key that does not decode stops the scan.
// Data that does not start with '{' calls nothing.
func ScanObject(data []byte, member func(key string, val json.RawMessage)) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(data, i)
		if i >= len(data) || data[i] != '"' {
			return // '}', or not an object
		}
		end, ok := stringEnd(data, i)
		if !ok {
			return
		}
		k, ok := decodedString(data[i:end])
		if !ok {
			return
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return
		}
		i = skipSpace(data, i+1)
		vend, ok := valueEnd(data, i)
		if !ok {
			return
		}
		member(k, json.RawMessage(data[i:vend:vend]))
		i = skipSpace(data, vend)
		if i >= len(data) || data[i] != ',' {
			return // '}', or garbage
		}
		i++
	}
}

// skipSpace returns the position of the first byte at or after i that is
// not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the position just past the JSON string that starts
// with the '"' at i, and false when data ends inside it.
func stringEnd(data []byte, i int) (int, bool) {
	j := i + 1
	for {
		// Eight bytes at a time while none is a quote or a backslash.
		for j+8 <= len(data) && !quoteOrBackslash8(binary.LittleEndian.Uint64(data[j:])) {
			j += 8
		}
		if j >= len(data) {
			return len(data), false
		}
		switch data[j] {
		case '\\':
			j += 2
		case '"':
			return j + 1, true
		default:
			j++
		}
	}
}

// quoteOrBackslash8 reports whether one of the 8 bytes of x is '"' or
// '\\' (the has-zero-byte test of x with each byte of them xored in:
// exact as a boolean).
func quoteOrBackslash8(x uint64) bool {
	const lows, highs = 0x0101010101010101, 0x8080808080808080
	q := x ^ ('"' * lows)
	b := x ^ ('\\' * lows)
	return ((q-lows)&^q|(b-lows)&^b)&highs != 0
}

// valueEnd returns the position just past the JSON value that starts at i
// — a string, an array or object (its brackets counted outside strings,
// its contents not checked) or a scalar up to the next delimiter — and
// false when data ends inside it or no value starts at i. On valid JSON
// (SplitObject) it is always true.
func valueEnd(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return i, false
	}
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, ok := stringEnd(data, j)
				if !ok {
					return end, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(data), false
	case ',', '}', ']', ':':
		return i, false
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j, true
		}
		j++
	}
	return j, true
}

// DecodeString sets *dst to the JSON string raw as json.Unmarshal does
// (anything but a string leaves *dst as it is): a string without an
// escape in valid UTF-8 is taken between its quotes, without
// encoding/json's reflection (most strings of a grade job's arguments,
// a batch item and a result envelope), any other through encoding/json.
func DecodeString(raw []byte, dst *string) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		*dst = string(raw[1 : len(raw)-1])
		return
	}
	_ = json.Unmarshal(raw, dst)
}

// PlainString returns the value of raw, a valid JSON value without white
// space around it, when it is a string without an escape and of ASCII only — its content between the
// quotes is then its value, taken without decoding; ok is false for any
// other string and for anything but a string (decode those with
// encoding/json). The fast readers of this project's own messages
// (SplitObject's keys, queue's job and event decoders, the gateway's
// JSON-RPC reader) share it.
func PlainString(raw []byte) (s string, ok bool) {
	if !plainString(raw) {
		return "", false
	}
	return string(raw[1 : len(raw)-1]), true
}

// decodedString is the string raw decodes to with encoding/json, and
// false when raw is not a JSON string. Its variable is on the heap, the
// callers' are not.
func decodedString(raw []byte) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// plainString reports whether raw is a JSON string that PlainString
// reads: quoted, without escapes or bytes over 0x7f.
func plainString(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// keyCache holds member names SplitObject has made strings of, one per
// slot of a hash of their bytes: the few names of the objects a process
// reads again and again — a job event's, a batch item's, a tool's
// arguments — are made once instead of once per object. A name that
// meets another in its slot replaces it.
var keyCache [1024]atomic.Pointer[string]

// maxCachedKey is the longest member name keyCache keeps.
const maxCachedKey = 32

// internKey returns b as a string, from keyCache when it holds it.
func internKey(b []byte) string {
	if len(b) > maxCachedKey {
		return string(b)
	}
	h := uint32(2166136261) // FNV-1a
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &keyCache[h%uint32(len(keyCache))]
	if p := slot.Load(); p != nil && *p == string(b) {
		return *p
	}
	s := string(b)
	slot.Store(&s)
	return s
}

// parseObjectDecoder is ParseObject through encoding/json's decoder: its
// errors for data that is not a JSON object.
func parseObjectDecoder(data []byte) (*Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("wire: expected a JSON object")
	}
	o := NewObject()
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("wire: expected an object key")
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		o.Set(key, raw)
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return o, nil
}

// JSONType names the JSON type of a well-formed raw value for error
// messages: "object", "array", "string", "boolean", "null" or "number";
// "nothing" when raw is empty or only white space. Leading white space is
// skipped.
func JSONType(raw []byte) string {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// errNotObject is the error of AppendFields and AddJobMeta for an
// envelope that is not a JSON object.
var errNotObject = errors.New("wire: envelope: not a JSON object")

// AppendFields returns the JSON object env with the members of fields
// appended before its closing brace, keeping env's bytes and member order:
// a result of megabytes is neither decoded nor encoded again (the job
// metadata of docs/tools.md §5, the "cached" and "replayed" flags of §7).
// env must not already hold fields' keys. Errors: env is not a JSON object
// (only its braces are checked: envelopes come from axpool's own encoder),
// a field value that cannot be encoded.
func AppendFields(env []byte, fields *Object) (json.RawMessage, error) {
	env, err := trimObject(env)
	if err != nil {
		return nil, err
	}
	extra, err := fields.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if len(extra) == 2 { // {}
		return append(json.RawMessage(nil), env...), nil
	}
	out := openObject(make([]byte, 0, len(env)+len(extra)), env)
	return append(out, extra[1:]...), nil
}

// trimObject returns env without the white space around it, or
// errNotObject when it is not a JSON object (only its braces are checked).
// It is the check of AppendFields and AddJobMeta.
func trimObject(env []byte) ([]byte, error) {
	env = bytes.TrimSpace(env)
	if len(env) < 2 || env[0] != '{' || env[len(env)-1] != '}' {
		return nil, errNotObject
	}
	return env, nil
}

// openObject appends to out the object env (as trimObject returns it)
// without its closing brace, and a comma when env has members: the place
// where AppendFields and AddJobMeta append their members and the brace.
func openObject(out, env []byte) []byte {
	out = append(out, env[:len(env)-1]...)
	if len(bytes.TrimSpace(env[1:len(env)-1])) > 0 {
		out = append(out, ',')
	}
	return out
}
