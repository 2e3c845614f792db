// Package jsonenc is the module's one JSON encoder without HTML escaping:
// encoding/json as json.Marshal does it, except that "<", ">" and "&" stay
// as they are (a program's result, a source excerpt or a URL must reach the
// caller unchanged, docs/tools.md §1) and no newline is added.
//
// Every package of the module may import it.
//
// Imports: nothing from the module.
package jsonenc

import (
	"bytes"
	"encoding/json"
	"sync"
)

// Marshal returns the compact JSON encoding of v (as json.Marshal, keys of
// maps sorted, json.Marshaler honoured) without HTML escaping and without a
// trailing newline. Errors are json.Marshal's.
func Marshal(v any) ([]byte, error) {
	return Append(nil, v)
}

// Append appends the encoding Marshal gives v to dst and returns the
// extended slice; on error dst is returned unchanged with the error.
func Append(dst []byte, v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	defer encoders.Put(e)
	e.buf.Reset()
	if err := e.enc.Encode(v); err != nil {
		return dst, err
	}
	return append(dst, bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))...), nil
}

type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}
