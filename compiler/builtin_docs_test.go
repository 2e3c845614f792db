package compiler_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/vm"
)

var update = flag.Bool("update", false, "rewrite the built-in table of docs/language.md")

// builtinTableHeader is the header row of the built-in table of
// docs/language.md "Built-in functions".
const builtinTableHeader = "| name | type | capability | description |"

// builtinTable renders the VM's table of built-ins as the rows of
// docs/language.md's table: every name, the type, the capability ("—" for
// a pure built-in) and the description.
func builtinTable() string {
	var b strings.Builder
	b.WriteString(builtinTableHeader + "\n|---|---|---|---|\n")
	row := func(f vm.FuncInfo, capability string) {
		names := make([]string, len(f.Names))
		for i, n := range f.Names {
			names[i] = "`" + n + "`"
		}
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", strings.Join(names, ", "), f.Sig, capability, strings.ReplaceAll(f.Doc, "|", `\|`))
	}
	for bi := vm.Builtin(0); bi < vm.NumBuiltins; bi++ {
		row(bi.Info(), "—")
	}
	for e := vm.Effect(0); e < vm.NumEffects; e++ {
		row(e.Info(), "`"+e.Capability().String()+"`")
	}
	return b.String()
}

// TestBuiltinDocs checks that docs/language.md's built-in table is the
// VM's table: every built-in, by each of its names, with its type,
// capability and description. -update rewrites the table in place.
func TestBuiltinDocs(t *testing.T) {
	path := filepath.Join(golden.RepoRoot(t), "docs", "language.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	start := strings.Index(s, builtinTableHeader+"\n")
	if start < 0 {
		t.Fatalf("%s has no built-in table (a line %q)", path, builtinTableHeader)
	}
	end := start
	for end < len(s) && s[end] == '|' {
		nl := strings.IndexByte(s[end:], '\n')
		if nl < 0 {
			end = len(s)
			break
		}
		end += nl + 1
	}
	want := builtinTable()
	if got := s[start:end]; got != want {
		if *update {
			if err := os.WriteFile(path, []byte(s[:start]+want+s[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the built-in table of %s differs from the VM's table (go test ./compiler -run TestBuiltinDocs -update rewrites it):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}
