package template

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/axpool/axpool/wire"
)

// parseManifest decodes template.json strictly: every field is required
// (except an argument's default) and must have the right JSON type;
// unknown fields are ignored. Errors name the field and give a line and
// column for syntax errors.
func parseManifest(data []byte) (*Manifest, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, syntaxError(data, err)
	}
	if top == nil {
		return nil, errors.New("expected a JSON object, got null")
	}
	m := &Manifest{}
	var err error
	if m.Name, err = reqString(top, "name"); err != nil {
		return nil, err
	}
	if m.Version, err = reqString(top, "version"); err != nil {
		return nil, err
	}
	if m.Description, err = reqString(top, "description"); err != nil {
		return nil, err
	}
	if m.Dependencies, err = reqStrings(top, "dependencies"); err != nil {
		return nil, err
	}
	if m.Capabilities, err = reqStrings(top, "capabilities"); err != nil {
		return nil, err
	}
	raw, ok := top["args"]
	if !ok || isNull(raw) {
		return nil, errors.New("missing field `args`")
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil || args == nil {
		return nil, fmt.Errorf("field `args`: expected an object, got %s", wire.JSONType(raw))
	}
	m.Args = make(map[string]ArgSpec, len(args))
	names := make([]string, 0, len(args))
	for n := range args {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		spec, err := parseArg(n, args[n])
		if err != nil {
			return nil, err
		}
		m.Args[n] = spec
	}
	return m, nil
}

func parseArg(name string, raw json.RawMessage) (ArgSpec, error) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return ArgSpec{}, fmt.Errorf("field `args.%s`: expected an object, got %s", name, wire.JSONType(raw))
	}
	prefix := "args." + name + "."
	var s ArgSpec
	var err error
	if s.Type, err = reqString(fields, prefix+"type"); err != nil {
		return s, err
	}
	r, ok := fields["required"]
	if !ok || isNull(r) {
		return s, fmt.Errorf("missing field `%srequired`", prefix)
	}
	if json.Unmarshal(r, &s.Required) != nil {
		return s, fmt.Errorf("field `%srequired`: expected a boolean, got %s", prefix, wire.JSONType(r))
	}
	if s.Description, err = reqString(fields, prefix+"description"); err != nil {
		return s, err
	}
	if d, ok := fields["default"]; ok && !isNull(d) {
		s.Default = d
	}
	return s, nil
}

// reqString reads a required string field. path is the field's dotted
// path; its last element is the key in fields.
func reqString(fields map[string]json.RawMessage, path string) (string, error) {
	raw, ok := fields[lastKey(path)]
	if !ok || isNull(raw) {
		return "", fmt.Errorf("missing field `%s`", path)
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("field `%s`: expected a string, got %s", path, wire.JSONType(raw))
	}
	return s, nil
}

func reqStrings(fields map[string]json.RawMessage, path string) ([]string, error) {
	raw, ok := fields[lastKey(path)]
	if !ok || isNull(raw) {
		return nil, fmt.Errorf("missing field `%s`", path)
	}
	l := []string{}
	if json.Unmarshal(raw, &l) != nil {
		return nil, fmt.Errorf("field `%s`: expected an array of strings, got %s", path, wire.JSONType(raw))
	}
	return l, nil
}

func lastKey(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '.' {
			return path[i+1:]
		}
	}
	return path
}

func isNull(raw json.RawMessage) bool { return wire.JSONType(raw) == "null" }

// syntaxError describes a JSON decoding failure of a whole manifest.
func syntaxError(data []byte, err error) error {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		off := min(max(syn.Offset, 0), int64(len(data)))
		prefix := data[:off]
		line := bytes.Count(prefix, []byte{'\n'}) + 1
		col := max(int(off)-(bytes.LastIndexByte(prefix, '\n')+1), 1)
		return fmt.Errorf("%v at line %d column %d", syn, line, col)
	}
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Errorf("expected a JSON object, got %s", typ.Value)
	}
	return err
}
