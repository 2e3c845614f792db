// Package wire holds the pieces of the MCP wire contract (shared/CONTRACT.md)
// that several packages need: the response envelope with its field order,
// the protocol version, the closed set of outcomes, and the error kinds.
//
// wire is a leaf package: it imports nothing from axpool, so the queue,
// the worker, the tools and the gateway can all share it.
package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ProtocolVersion is the envelope version carried by every tool response
// (CONTRACT.md §1).
const ProtocolVersion = 1

// Object is a JSON object that keeps its keys in insertion order.
// Values are anything encoding/json can marshal (vm.Value implements
// json.Marshaler), or json.RawMessage.
type Object struct {
	keys []string
	vals []any
}

// NewObject returns an empty ordered object.
func NewObject() *Object { return &Object{} }

// Envelope returns an object that starts with `success` and then
// `protocol_version: 1`, the order every tool response uses (CONTRACT.md §1).
func Envelope(success bool) *Object {
	return NewObject().Set("success", success).Set("protocol_version", ProtocolVersion)
}

// Set sets key to v, keeping the key's position if it already exists.
// It returns o for chaining.
func (o *Object) Set(key string, v any) *Object {
	for i, k := range o.keys {
		if k == key {
			o.vals[i] = v
			return o
		}
	}
	o.keys = append(o.keys, key)
	o.vals = append(o.vals, v)
	return o
}

// Get returns the value stored under key.
func (o *Object) Get(key string) (any, bool) {
	for i, k := range o.keys {
		if k == key {
			return o.vals[i], true
		}
	}
	return nil, false
}

// Delete removes key if present.
func (o *Object) Delete(key string) {
	for i, k := range o.keys {
		if k == key {
			o.keys = append(o.keys[:i], o.keys[i+1:]...)
			o.vals = append(o.vals[:i], o.vals[i+1:]...)
			return
		}
	}
}

// Keys returns the keys in order.
func (o *Object) Keys() []string { return append([]string(nil), o.keys...) }

// Len returns the number of keys.
func (o *Object) Len() int { return len(o.keys) }

// MarshalJSON encodes o compactly, keys in order, without HTML escaping.
func (o *Object) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		kb, err := encode(k)
		if err != nil {
			return nil, err
		}
		buf.Write(kb)
		buf.WriteByte(':')
		vb, err := encode(o.vals[i])
		if err != nil {
			return nil, fmt.Errorf("wire: field %q: %w", k, err)
		}
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Pretty encodes o with a 2-space indent (the text content of every tool
// response, CONTRACT.md §1), without HTML escaping and without a trailing
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

// encode marshals v without HTML escaping and without the encoder's
// trailing newline.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// ParseObject decodes a JSON object keeping its key order. Values are kept
// as json.RawMessage.
func ParseObject(data []byte) (*Object, error) {
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
