package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// nestedListProgram returns a program whose result is depth nested lists
// around 1.
func nestedListProgram(depth int) string {
	typ := strings.Repeat("List<", depth) + "Int" + strings.Repeat(">", depth)
	val := strings.Repeat("[", depth) + "1" + strings.Repeat("]", depth)
	return "fn main() -> " + typ + " { " + val + " }"
}

const doublingSchema = `{"$defs":{"n":{"allOf":[{"items":{"$ref":"#/$defs/n"}},{"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"}`

var costlyMessage = fmt.Sprintf("output_schema is too costly to apply to this result: "+
	"validation would exceed %d subschema applications (a recursive or repeated $ref over a large or deep result); "+
	"use a non-recursive schema or a smaller result", MaxSchemaWork)

// The red-team repro: 2^depth applications are refused before validation
// (three branches would take hours), with the exact message.
func TestOutputSchemaCostlyRecursiveRefused(t *testing.T) {
	for _, schema := range []string{
		doublingSchema,
		`{"$defs":{"n":{"allOf":[{"items":{"$ref":"#/$defs/n"}},{"items":{"$ref":"#/$defs/n"}},{"items":{"$ref":"#/$defs/n"}}]}},"$ref":"#/$defs/n"}`,
	} {
		got := runJSON(t, nil, nestedListProgram(22), `"output_schema":`+schema)
		want := `{"success":false,"protocol_version":1,"error_kind":"invalid_output_schema","message":` +
			jsonString(costlyMessage) + `,"outcome":"invalid_args","retryable":false}`
		if got != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	}
}

// A recursive schema over a small tree is validated normally, both ways.
func TestOutputSchemaRecursiveSmallAllowed(t *testing.T) {
	got := runJSON(t, nil, nestedListProgram(6), `"output_schema":`+doublingSchema)
	if want := `{"success":true,"protocol_version":1,"result":[[[[[[1]]]]]],"steps":8,"ui_output":[],"outcome":"ok","retryable":false}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	tree := `{"$defs":{"t":{"anyOf":[{"type":"integer"},{"type":"array","items":{"$ref":"#/$defs/t"}}]}},"$ref":"#/$defs/t"}`
	got = runJSON(t, nil, nestedListProgram(6), `"output_schema":`+tree)
	if !strings.HasPrefix(got, `{"success":true,`) {
		t.Errorf("tree schema: %s", got)
	}
}

// schemaWork counts applications exactly for a plain schema and stops
// past the limit.
func TestSchemaWorkCounts(t *testing.T) {
	sch, inst := compileForTest(t, `{"type":"array","items":{"type":"integer"}}`, `[1,2,3]`)
	if n, ok := schemaWork(sch, inst, 100); n != 4 || !ok {
		t.Errorf("schemaWork = %d, %v; want 4, true", n, ok)
	}
	if n, ok := schemaWork(sch, inst, 3); n != 4 || ok {
		t.Errorf("schemaWork limit 3 = %d, %v; want 4, false", n, ok)
	}
	// A self-reference that never descends stops at the nesting bound.
	sch, inst = compileForTest(t, `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`)
	if _, ok := schemaWork(sch, inst, MaxSchemaWork); ok {
		t.Error("ref loop without progress counted as within budget")
	}
	// $dynamicRef counts every schema with the anchor.
	sch, inst = compileForTest(t, `{"$dynamicAnchor":"x","type":"array","items":{"$dynamicRef":"#x"}}`, `[[1]]`)
	if n, ok := schemaWork(sch, inst, 100); !ok || n != 10 {
		t.Errorf("dynamicRef: schemaWork = %d, %v; want 10, true", n, ok)
	}
}

// BenchmarkOutputSchemaAtBudget validates a result whose work is just
// under MaxSchemaWork (depth 16: about 2^19 applications, the slowest
// accepted validation of this shape).
func BenchmarkOutputSchemaAtBudget(b *testing.B) {
	src := nestedListProgram(16)
	args := runArgs(src, `"output_schema":`+doublingSchema)
	for b.Loop() {
		if got := callBench(b, "boruna_run", args); !strings.HasPrefix(got, `{"success":true`) {
			b.Fatal(got)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func callBench(b *testing.B, tool, args string) string {
	o := Call(context.Background(), nil, tool, json.RawMessage(args), nil)
	out, err := o.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	return string(out)
}

// compileForTest compiles schema and decodes inst as checkOutputSchema does.
func compileForTest(t *testing.T, schema, inst string) (*jsonschema.Schema, any) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(inst))
	if err != nil {
		t.Fatal(err)
	}
	return sch, v
}
