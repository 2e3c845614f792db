package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/axpool/axpool/queue/queuetest"
)

// TestE2EEmbeddedLibsAndTemplates: `axpool mcp` started in a directory
// whose libs/ and templates/ belong to another project (issue 26 item
// 14), without --libs-dir or --templates-dir, lists the five shipped
// templates and compiles and runs `import "std-json"`, from the copies
// built into the binary (written under XDG_CACHE_HOME), and logs which
// directories it uses and why.
func TestE2EEmbeddedLibsAndTemplates(t *testing.T) {
	t.Parallel()
	empty, cache := t.TempDir(), t.TempDir()
	for _, d := range []string{"libs/lodash", "templates/partials"} {
		if err := os.MkdirAll(filepath.Join(empty, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var stderr queuetest.Buffer
	c := startStdioIn(t, empty, []string{"XDG_CACHE_HOME=" + cache}, &stderr, "--workers", "1")

	list := mustTool(t, c, "boruna_template_list", `{}`)
	var names []string
	for _, m := range list["templates"].([]any) {
		names = append(names, m.(map[string]any)["name"].(string))
	}
	if want := []string{"auth-app", "crud-admin", "form-basic", "offline-sync", "realtime-feed"}; list["count"] != 5.0 || !slices.Equal(names, want) {
		t.Errorf("boruna_template_list: %v", list)
	}

	src := jstr("import \"std-json\"\nfn main() -> String { json_string_field(\"k\", \"v\") }")
	if got := mustTool(t, c, "boruna_compile", `{"source":`+src+`}`); got["success"] != true {
		t.Errorf("boruna_compile: %v", got)
	}
	if got := mustTool(t, c, "boruna_run", `{"source":`+src+`}`); got["success"] != true || got["result"] != `"k": "v"` {
		t.Errorf("boruna_run: %v", got)
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "axpool", "*"))
	if len(dirs) != 2 || !strings.Contains(dirs[0], "libs-") || !strings.Contains(dirs[1], "templates-") {
		t.Fatalf("cache holds %v", dirs)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 2 {
		t.Errorf("the working directory got %v", ents)
	}
	for _, want := range []string{
		`msg="std libraries" component=gateway dir=` + dirs[0] + ` from="built-in copy" skipped=./libs reason="not an axpool library folder: no subdirectory holds package.ax.json and src/core.ax"`,
		`msg="App templates" component=gateway dir=` + dirs[1] + ` from="built-in copy" skipped=./templates reason="not an axpool templates folder: no subdirectory holds template.json and app.ax.template"`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "level=WARN") {
		t.Errorf("warnings:\n%s", stderr.String())
	}
}
