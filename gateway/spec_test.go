package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// TestMemoryLimitSchema checks the schema of limits.max_memory_mb: the
// checks refuse 0 (TestCheckArgsAnswers), so the schema's minimum is 1.
func TestMemoryLimitSchema(t *testing.T) {
	for i := range specs {
		if specs[i].Name != "boruna_run" {
			continue
		}
		var sch struct {
			Properties map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(buildTool(&specs[i], false).RawInputSchema, &sch); err != nil {
			t.Fatal(err)
		}
		lim := sch.Properties["limits"].Properties
		want := map[string]string{
			"max_wall_ms":      `{"type":"integer","minimum":0,"description":"Wall-clock limit in milliseconds."}`,
			"max_output_bytes": `{"type":"integer","minimum":0,"description":"JSON size of result plus ui_output, in bytes."}`,
			"max_memory_mb":    `{"type":"integer","minimum":1,"description":"Memory limit of the run in MB (default 256, or the operator's)."}`,
		}
		for k, w := range want {
			if string(lim[k]) != w {
				t.Errorf("limits.%s = %s\nwant %s", k, lim[k], w)
			}
		}
		return
	}
	t.Fatal("no boruna_run")
}

var updateSpecs = flag.Bool("update-specs", false, "rewrite testdata/tool_specs.golden.json")

// TestToolSpecsGolden locks the advertised tools (names, titles,
// descriptions, input schemas byte for byte, annotations) without and with
// live capability handlers. Output schemas appear as the SHA-256 of their
// bytes: their content is package tools' (TestResultSchemas checks it
// against real results).
func TestToolSpecsGolden(t *testing.T) {
	var all []any
	for _, live := range []bool{false, true} {
		for i := range specs {
			b, err := json.Marshal(buildTool(&specs[i], live))
			if err != nil {
				t.Fatal(err)
			}
			m, err := wire.ParseObject(b)
			if err != nil {
				t.Fatal(err)
			}
			out := tools.ResultSchema(specs[i].Name)
			if out == nil {
				t.Fatalf("%s: no output schema", specs[i].Name)
			}
			m.Set("outputSchema", fmt.Sprintf("sha256:%x (tools.ResultSchema)", sha256.Sum256(out)))
			all = append(all, m)
		}
	}
	got, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "tool_specs.golden.json")
	if *updateSpecs {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("tools differ from %s (run with -update-specs after checking the change):\n%s", path, got)
	}
}
