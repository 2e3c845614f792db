package scripts

import (
	"os"
	"path/filepath"
	"testing"
)

// `//! task` sets Script.Task; a script without it is TaskOptional.
func TestTaskDirective(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"a.ax": "// A.\n//! task required\nfn main() -> Int { 1 }\n",
		"b.ax": "// B.\n//! task never\nfn main() -> Int { 1 }\n",
		"c.ax": "// C.\nfn main() -> Int { 1 }\n",
		"d.ax": "// D.\n//! task optional\nfn main() -> Int { 1 }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cat, err := Load(dir, Options{LibsDir: "../libs"})
	if err != nil || len(cat.Diagnostics) > 0 {
		t.Fatalf("load: %v %v", err, cat.Diagnostics)
	}
	want := map[string]TaskSupport{"a": TaskRequired, "b": TaskNever, "c": TaskOptional, "d": TaskOptional}
	for _, s := range cat.Tools {
		if s.Task != want[s.Name] {
			t.Errorf("%s: Task %q, want %q", s.Name, s.Task, want[s.Name])
		}
	}
	if len(cat.Tools) != 4 {
		t.Errorf("%d tools", len(cat.Tools))
	}
}
