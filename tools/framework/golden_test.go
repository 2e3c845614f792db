package framework_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/tools/framework"
	"github.com/axpool/axpool/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// libsDir is the repository's std libraries.
func libsDir(t testing.TB) string { return golden.LibsDir(t) }

// checkGolden compares the pretty JSON of o with path (.golden next to
// the input), or rewrites it with -update.
func checkGolden(t *testing.T, path string, o *wire.Object) {
	t.Helper()
	golden.CheckPretty(t, path, o, *update)
}

func inputs(t *testing.T, dir string) []string {
	t.Helper()
	return golden.Files(t, filepath.Join("testdata", dir, "*.ax"), 10)
}

// TestValidateAppGolden runs ValidateAppTool on every
// testdata/validate_app/*.ax and compares the response with the .golden
// file next to it.
func TestValidateAppGolden(t *testing.T) {
	libs := libsDir(t)
	for _, in := range inputs(t, "validate_app") {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(in, ".ax")+".golden", framework.ValidateAppTool(string(src), libs))
		})
	}
}

// TestFrameworkTestGolden runs FrameworkTestTool on every
// testdata/framework_test/*.ax; the first line of each file is
// `// messages: <JSON array of strings>`.
func TestFrameworkTestGolden(t *testing.T) {
	libs := libsDir(t)
	for _, in := range inputs(t, "framework_test") {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(src), "\n")
			list, ok := strings.CutPrefix(first, "// messages:")
			if !ok {
				t.Fatalf("%s: first line must be `// messages: [...]`", in)
			}
			var msgs []string
			if err := json.Unmarshal([]byte(list), &msgs); err != nil {
				t.Fatalf("%s: messages: %v", in, err)
			}
			o := framework.FrameworkTestTool(context.Background(), string(src), msgs, libs)
			checkGolden(t, strings.TrimSuffix(in, ".ax")+".golden", o)
		})
	}
}
