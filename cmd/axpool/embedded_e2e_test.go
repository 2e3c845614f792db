package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/axpool/axpool/queue/queuetest"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
)

// TestE2EEmbeddedLibsAndTemplates: `axpool mcp` started in an empty
// directory, without --libs-dir or --templates-dir, lists the five shipped
// templates and compiles and runs `import "std-json"`, from the copies
// built into the binary (written under XDG_CACHE_HOME).
func TestE2EEmbeddedLibsAndTemplates(t *testing.T) {
	empty, cache := t.TempDir(), t.TempDir()
	var stderr queuetest.Buffer
	c, err := client.NewStdioMCPClientWithOptions(axpoolBin,
		[]string{"TMPDIR=" + t.TempDir(), "XDG_CACHE_HOME=" + cache},
		[]string{"mcp", "--workers", "1"},
		transport.WithCommandStderrWriter(&stderr),
		transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Dir = empty
			return cmd, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	initClient(t, c)

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
		t.Errorf("cache holds %v", dirs)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("the working directory got %v", ents)
	}
	if strings.Contains(stderr.String(), "level=WARN") {
		t.Errorf("warnings:\n%s", stderr.String())
	}
}
