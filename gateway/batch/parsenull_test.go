package batch

import (
	"encoding/json"
	"testing"
)

// TestParseToolNull: a null "tool" is an absent one (docs/tools.md §1: a
// JSON null for an optional argument means the argument is absent), so the
// item runs the default tool, not `unknown tool ""`.
func TestParseToolNull(t *testing.T) {
	for _, line := range []string{
		`{"id":"a","source":"fn main() -> Int { 1 }","tool":null}`,
		`{"id":"a","tool":null,"source":"fn main() -> Int { 1 }"}`,
	} {
		it := Parse([]byte(line), 1, "line")
		if it.Malformed() || it.Tool != DefaultTool {
			b, _ := json.Marshal(it.Err)
			t.Errorf("%s: tool %q, malformed %v %s; want %s", line, it.Tool, it.Malformed(), b, DefaultTool)
		}
	}
}
