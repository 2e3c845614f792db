package main

import (
	"strings"
	"testing"
)

func TestWorkflowValidateCLI(t *testing.T) {
	dir := t.TempDir()
	valid := writeFile(t, dir, "valid.json", `{"schema_version":1,"name":"demo","version":"1.0.0","steps":{"m":{"kind":"source","source":"m.ax"},"a":{"kind":"source","source":"a.ax","depends_on":["m"]},"z":{"kind":"approval_gate","required_role":"reviewer"}},"edges":[]}`)
	invalid := writeFile(t, dir, "invalid.json", `{"schema_version":1,"name":"w","version":"1","steps":{"a":{"kind":"source","source":"a.ax"},"b":{"kind":"source","source":"","depends_on":["a"]}},"edges":[["b","a"],["a","ghost"]]}`)
	broken := writeFile(t, dir, "broken.json", `{"schema_version":2}`)

	cases := []struct {
		args         []string
		code         int
		stdout, errs string
	}{
		{[]string{"workflow", "validate", valid}, 0,
			"OK: demo 1.0.0 (3 steps, 0 edges)\nexecution order:\n  1. m\n  2. a\n  3. z\n", ""},
		{[]string{"workflow", "validate", invalid}, 1, "",
			"UnknownStep: edge references unknown step 'ghost'\nMissingField: step 'b' has empty source path\nCycle: cycle detected among steps: a, b\n"},
		{[]string{"workflow", "validate", broken}, 1, "",
			"parse_error: invalid workflow JSON: workflow.json `schema_version: 2` is not supported by this build (max supported: 1); upgrade Boruna to read this workflow\n"},
		{[]string{"workflow", "validate", "--json", valid}, 0,
			"{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"workflow_name\": \"demo\",\n  \"workflow_version\": \"1.0.0\",\n  \"steps_count\": 3,\n  \"edges_count\": 0,\n  \"execution_order\": [\n    \"m\",\n    \"a\",\n    \"z\"\n  ]\n}\n", ""},
		{[]string{"workflow", "validate", "--json", broken}, 1,
			"{\n  \"success\": false,\n  \"protocol_version\": 1,\n  \"error_kind\": \"parse_error\",\n  \"message\": \"invalid workflow JSON: workflow.json `schema_version: 2` is not supported by this build (max supported: 1); upgrade Boruna to read this workflow\"\n}\n", ""},
		{[]string{"workflow", "validate", dir + "/missing.json"}, 1, "", ""},
		{[]string{"workflow", "validate"}, 2, "", "axpool workflow validate: want one FILE argument, got 0 (see axpool workflow validate --help)\n"},
		{[]string{"workflow", "validate", valid, valid}, 2, "", "axpool workflow validate: want one FILE argument, got 2 (see axpool workflow validate --help)\n"},
	}
	for _, c := range cases {
		out, errs, code := runCLI(t, c.args...)
		if code != c.code || out != c.stdout || errs != c.errs {
			t.Errorf("axpool %s\n code %d, want %d\n stdout %q\n want   %q\n stderr %q\n want   %q",
				strings.Join(c.args, " "), code, c.code, out, c.stdout, errs, c.errs)
		}
	}
}
