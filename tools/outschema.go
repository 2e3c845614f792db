package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/axpool/axpool/wire"
)

// Output-schema limits (reference §3.4 step 6).
const (
	// MaxOutputSchemaBytes caps the compact JSON size of output_schema.
	MaxOutputSchemaBytes = 262_144
	// MaxSchemaErrors is the number of instance errors reported.
	MaxSchemaErrors = 100
	// MaxOutputSchemaDepth caps the nesting of arrays and objects in
	// output_schema (the root object is level 1).
	MaxOutputSchemaDepth = 64
	// MaxOutputSchemaValues caps the JSON values (objects, arrays and
	// scalars, object keys not counted) of output_schema.
	MaxOutputSchemaValues = 2048
)

var schemaPrinter = message.NewPrinter(language.English)

// noLoader refuses every URL that is not a built-in meta-schema, so an
// output_schema can never make the server read a file or the network.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %q is not allowed: output_schema must be self-contained", url)
}

const schemaURL = "mem:///output_schema.json"

// checkOutputSchema validates the encoded result of a successful run
// against raw (reference §3.4 step 6). It returns nil when the result
// matches, otherwise the failure response:
//
//   - schema over 262,144 bytes (compact) → invalid_output_schema,
//     `output_schema exceeds 262144 bytes (got N)`;
//   - arrays and objects nested deeper than MaxOutputSchemaDepth, or more
//     than MaxOutputSchemaValues JSON values (compiling a schema costs
//     the square of both, and cannot be cancelled) → invalid_output_schema,
//     `output_schema nests arrays and objects deeper than 64 levels`,
//     `output_schema has N JSON values; at most 2048 are allowed`;
//   - `$schema` naming another draft → invalid_output_schema;
//   - a schema that does not compile → invalid_output_schema,
//     `output_schema is not a valid JSON Schema: <reason>`;
//   - a schema whose validation of this result would exceed MaxSchemaWork
//     (schemaWork; the validator cannot be cancelled, so the work is
//     bounded before it starts) → invalid_output_schema,
//     `output_schema is too costly to apply to this result: …`;
//   - instance errors → validation_failed, phase "output_validation",
//     message "result does not match output_schema", errors [{path (JSON
//     pointer, "" = root), message}] (the first 100), truncated,
//     total_errors, steps.
//
// Booleans are valid schemas. The schema sees the wrapped value encoding
// (a record result is {"type":"record",…}).
func checkOutputSchema(raw json.RawMessage, result json.RawMessage, steps int64) *wire.Object {
	invalid := func(msg string) *wire.Object {
		return wire.WithOutcome(wire.Envelope(false).
			Set("error_kind", wire.KindInvalidOutputSchema).
			Set("message", msg), wire.OutcomeInvalidArgs)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return invalid("output_schema is not valid JSON: " + err.Error())
	}
	if compact.Len() > MaxOutputSchemaBytes {
		return invalid(fmt.Sprintf("output_schema exceeds %d bytes (got %d)", MaxOutputSchemaBytes, compact.Len()))
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(compact.Bytes()))
	if err != nil {
		return invalid("output_schema is not valid JSON: " + err.Error())
	}
	// The schema compiler's work grows with the square of the number of
	// subschemas and of their depth, and it cannot be cancelled: bound
	// both before compiling.
	values, deep := 0, false
	schemaShape(doc, 1, &values, &deep)
	if deep {
		return invalid(fmt.Sprintf("output_schema nests arrays and objects deeper than %d levels", MaxOutputSchemaDepth))
	}
	if values > MaxOutputSchemaValues {
		return invalid(fmt.Sprintf("output_schema has %d JSON values; at most %d are allowed", values, MaxOutputSchemaValues))
	}
	if obj, ok := doc.(map[string]any); ok {
		if s, ok := obj["$schema"].(string); ok && !strings.Contains(s, "2020-12") {
			return invalid(fmt.Sprintf("output_schema $schema %q is not supported: only JSON Schema Draft 2020-12 is supported", s))
		}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return invalid("output_schema is not a valid JSON Schema: " + err.Error())
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return invalid("output_schema is not a valid JSON Schema: " + err.Error())
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(result))
	if err != nil {
		// The VM's encoding is always valid JSON.
		return invalid("result could not be decoded for validation: " + err.Error())
	}
	if _, ok := schemaWork(sch, inst, MaxSchemaWork); !ok {
		return invalid(fmt.Sprintf("output_schema is too costly to apply to this result: "+
			"validation would exceed %d subschema applications (a recursive or repeated $ref over a large or deep result); "+
			"use a non-recursive schema or a smaller result", MaxSchemaWork))
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return invalid("output_schema could not be applied: " + err.Error())
	}
	var leaves []*wire.Object
	total := 0
	collectLeaves(ve, &leaves, &total)
	return wire.WithOutcome(wire.Envelope(false).
		Set("error_kind", wire.KindValidationFailed).
		Set("phase", "output_validation").
		Set("message", "result does not match output_schema").
		Set("errors", leaves).
		Set("truncated", total > MaxSchemaErrors).
		Set("total_errors", total).
		Set("steps", steps), wire.OutcomeRuntimeError)
}

// schemaShape walks v (at nesting level depth): it counts its JSON values
// into *values and sets *deep when arrays and objects nest deeper than
// MaxOutputSchemaDepth, without descending further (so its recursion is
// bounded by the limit).
func schemaShape(v any, depth int, values *int, deep *bool) {
	*values++
	switch v := v.(type) {
	case map[string]any:
		if depth > MaxOutputSchemaDepth {
			*deep = true
			return
		}
		for _, k := range v {
			schemaShape(k, depth+1, values, deep)
		}
	case []any:
		if depth > MaxOutputSchemaDepth {
			*deep = true
			return
		}
		for _, k := range v {
			schemaShape(k, depth+1, values, deep)
		}
	}
}

// collectLeaves appends the innermost errors of e (those without causes)
// in order, keeping the first MaxSchemaErrors and counting all of them.
func collectLeaves(e *jsonschema.ValidationError, out *[]*wire.Object, total *int) {
	if len(e.Causes) == 0 {
		*total++
		if len(*out) < MaxSchemaErrors {
			*out = append(*out, wire.NewObject().
				Set("path", jsonPointer(e.InstanceLocation)).
				Set("message", e.ErrorKind.LocalizedString(schemaPrinter)))
		}
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out, total)
	}
}

// jsonPointer renders an instance location as an RFC 6901 pointer
// ("" for the root).
func jsonPointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}
