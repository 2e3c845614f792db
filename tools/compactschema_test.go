package tools

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// compiledOutput compiles tool's compact outputSchema.
func compiledOutput(t *testing.T, tool string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(OutputSchema(tool)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	url := "mem:///out/" + tool + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("%s: outputSchema does not compile: %v", tool, err)
	}
	return s
}

func mustInstance(t *testing.T, b []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The compact outputSchema of boruna_check, exactly: protocol_version and
// the failure's error_kind and message at the root, the success branch's
// fields with their types, the full schema's resource named.
func TestOutputSchemaCompact(t *testing.T) {
	want := `{"type":"object","description":"Full schema: resource axpool://schemas/results/boruna_check",` +
		`"properties":{"protocol_version":{"const":1},"error_kind":{"type":"string"},"message":{"type":"string"},"outcome":{"type":"string"}},` +
		`"required":["success","protocol_version"],"anyOf":[{"properties":{"success":{"const":true},"file":{"type":"string"},` +
		`"diagnostics_count":{"type":"integer"},"errors_count":{"type":"integer"},"warnings_count":{"type":"integer"},"summary":{"type":"string"},"diagnostics":{"type":"array"},"diagnostics_truncated":{"type":"boolean"},"diagnostics_total":{"type":"integer"}}},` +
		`{"properties":{"success":{"const":false}}}]}`
	if got := string(OutputSchema("boruna_check")); got != want {
		t.Errorf("boruna_check:\n got %s\nwant %s", got, want)
	}
	if OutputSchema("boruna_nope") != nil {
		t.Error("unknown tool has an outputSchema")
	}
	// Every field a success branch of the full schema lists is in the
	// compact one (but the job metadata, left to the full schema).
	for _, name := range Names() {
		var full, compact struct {
			AnyOf []struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"anyOf"`
		}
		json.Unmarshal(ResultSchema(name), &full)
		json.Unmarshal(OutputSchema(name), &compact)
		for _, br := range full.AnyOf {
			if string(br.Properties["success"]) != `{"const":true}` {
				continue
			}
			for f := range br.Properties {
				if _, ok := compact.AnyOf[0].Properties[f]; !ok && !strings.Contains("protocol_version outcome retryable job_id queue_ms run_ms worker cached replayed", f) {
					t.Errorf("%s: success field %s is not in the outputSchema", name, f)
				}
			}
		}
		// A result of the wrong success type is refused.
		if compiledOutput(t, name).Validate(mustInstance(t, []byte(`{"success":"yes","protocol_version":1}`))) == nil {
			t.Errorf("%s: a non-boolean success passes", name)
		}
	}
}
