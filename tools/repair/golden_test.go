package repair

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/golden"
	"github.com/axpool/axpool/wire"
)

// Golden tests: every testdata/check/NAME.ax is checked and every
// testdata/repair/NAME.ax repaired with the tool engines; the pretty JSON
// response must equal NAME.json byte for byte. A first line
// `// args: k=v ...` sets strategy, patch_id and libs (a libs dir relative
// to the package). Run `go test ./repair -run Golden -update` to rewrite
// the .json files after an intended change, and review the diff.

var update = flag.Bool("update", false, "rewrite the golden .json files")

func goldenArgs(src string) map[string]string {
	args := map[string]string{}
	first, _, _ := strings.Cut(src, "\n")
	if rest, ok := strings.CutPrefix(strings.TrimSpace(first), "// args:"); ok {
		for _, kv := range strings.Fields(rest) {
			k, v, _ := strings.Cut(kv, "=")
			args[k] = v
		}
	}
	return args
}

func runGolden(t *testing.T, dir string, min int, engine func(t *testing.T, src string, args map[string]string) *wire.Object) {
	for _, file := range golden.Files(t, filepath.Join("testdata", dir, "*.ax"), min) {
		name := strings.TrimSuffix(filepath.Base(file), ".ax")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			out := engine(t, string(src), goldenArgs(string(src)))
			golden.CheckPretty(t, strings.TrimSuffix(file, ".ax")+".json", out, *update)
		})
	}
}

func TestCheckGolden(t *testing.T) {
	runGolden(t, "check", 10, func(t *testing.T, src string, args map[string]string) *wire.Object {
		o := CheckTool(src, "", args["libs"])
		// Invariants: success, count = len(diagnostics), every diagnostic
		// located, every patch with edits produces text that parses.
		var resp struct {
			Success     bool `json:"success"`
			Count       int  `json:"diagnostics_count"`
			Diagnostics []struct {
				ID       string          `json:"id"`
				Location json.RawMessage `json:"location"`
			} `json:"diagnostics"`
		}
		decode(t, o, &resp)
		if !resp.Success || resp.Count != len(resp.Diagnostics) {
			t.Errorf("success %v, count %d for %d diagnostics", resp.Success, resp.Count, len(resp.Diagnostics))
		}
		for _, d := range resp.Diagnostics {
			if len(d.Location) == 0 {
				t.Errorf("diagnostic %s has no location", d.ID)
			}
		}
		ds := Diagnose([]byte(src), compiler.Options{LibsDir: args["libs"]})
		for i := range ds {
			for _, p := range ds[i].Patches {
				if len(p.Edits) == 0 {
					continue
				}
				out, applied, _, _ := applyPatches([]byte(src), []selected{{&ds[i], &p}})
				if len(applied) != 1 {
					t.Errorf("patch %s does not apply alone", p.ID)
					continue
				}
				for _, d := range Diagnose(out, compiler.Options{LibsDir: args["libs"]}) {
					if d.ID == compiler.CodeLexer || d.ID == compiler.CodeParser {
						t.Errorf("patch %s produces invalid syntax: %s", p.ID, d.Message)
					}
				}
			}
		}
		return o
	})
}

func TestRepairGolden(t *testing.T) {
	runGolden(t, "repair", 10, func(t *testing.T, src string, args map[string]string) *wire.Object {
		o := RepairTool(src, "", args["strategy"], args["patch_id"], args["libs"])
		var resp struct {
			Source   string `json:"repaired_source"`
			Applied  int    `json:"patches_applied"`
			Skipped  int    `json:"patches_skipped"`
			Verify   bool   `json:"verify_passed"`
			After    int    `json:"diagnostics_after"`
			AppliedL []any  `json:"applied"`
			SkippedL []any  `json:"skipped"`
		}
		decode(t, o, &resp)
		opts := compiler.Options{LibsDir: args["libs"]}
		after := Diagnose([]byte(resp.Source), opts)
		if len(after) != resp.After || (countErrors(after) == 0) != resp.Verify {
			t.Errorf("re-check of the repaired source: %d diagnostics (%d errors); response says after %d, verify %v",
				len(after), countErrors(after), resp.After, resp.Verify)
		}
		if resp.Applied != len(resp.AppliedL) || resp.Skipped != len(resp.SkippedL) {
			t.Errorf("counts %d/%d do not match lists %d/%d", resp.Applied, resp.Skipped, len(resp.AppliedL), len(resp.SkippedL))
		}
		if resp.Verify && findFn(compiler.Analyze([]byte(resp.Source), opts).File, "main") != nil {
			if _, errs := compiler.Compile([]byte(resp.Source), opts); errs != nil {
				t.Errorf("verified source does not compile: %v", errs)
			}
		}
		return o
	})
}

func decode(t *testing.T, o *wire.Object, v any) {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
