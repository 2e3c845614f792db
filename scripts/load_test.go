package scripts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A reload compiles only the files whose content changed; sidecars and
// cross-file checks are redone every time.
func TestReloadCompilesOnlyChangedFiles(t *testing.T) {
	dir := t.TempDir()
	for i := range 5 {
		writeFile(t, dir, fmt.Sprintf("s%d.ax", i), fmt.Sprintf("fn main() -> Int { %d }\n", i))
	}
	c1, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c1.Compiled != 5 || len(c1.Tools) != 5 {
		t.Fatalf("first load: compiled %d, tools %d", c1.Compiled, len(c1.Tools))
	}
	writeFile(t, dir, "s2.ax", "fn main() -> Int { 22 }\n")
	writeFile(t, dir, "s3.policy.json", `{"default_allow": true}`)
	c2, err := Load(dir, Options{Previous: c1})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Compiled != 1 {
		t.Fatalf("reload compiled %d files, want 1", c2.Compiled)
	}
	s2, _ := c2.Lookup("s2")
	if !strings.Contains(string(s2.Source), "22") || s2.Digest == mustLookup(t, c1, "s2").Digest {
		t.Fatalf("s2 not reloaded: %q", s2.Source)
	}
	if s3 := mustLookup(t, c2, "s3"); s3.Policy == nil || !s3.Policy.DefaultAllow {
		t.Fatalf("s3 sidecar not read: %+v", s3.Policy)
	}
	if mustLookup(t, c1, "s3").Policy != nil {
		t.Fatal("the earlier catalogue changed")
	}
	if err := os.Remove(filepath.Join(dir, "s4.ax")); err != nil {
		t.Fatal(err)
	}
	c3, err := Load(dir, Options{Previous: c2})
	if err != nil {
		t.Fatal(err)
	}
	if c3.Compiled != 0 || len(c3.Tools) != 4 {
		t.Fatalf("after a removal: compiled %d, tools %v", c3.Compiled, c3.Names())
	}
}

func mustLookup(t *testing.T, c *Catalogue, name string) *Script {
	t.Helper()
	s, ok := c.Lookup(name)
	if !ok {
		t.Fatalf("no script %q in %v", name, c.Names())
	}
	return s
}

func TestLoadErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "missing"), Options{}); err == nil || !strings.Contains(err.Error(), "scripts directory") {
		t.Fatalf("missing dir: %v", err)
	}
	dir := t.TempDir()
	writeFile(t, dir, "big.ax", "fn main() -> Int { 1 }\n"+strings.Repeat("// x\n", 1<<18))
	writeFile(t, dir, ".git/hooks.ax", "this is skipped")
	c, err := Load(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Diagnostics) != 1 || !strings.HasSuffix(c.Diagnostics[0].String(), "big.ax:1:1: script exceeds the 1 MB source limit (more than 1048576 bytes)") {
		t.Fatalf("diagnostics: %v", c.Diagnostics)
	}
	if len(c.Failed) != 1 || c.Failed[0].Name != "big" {
		t.Fatalf("failed: %+v", c.Failed)
	}
}

// BenchmarkLoad1000 loads a directory of 1,000 scripts (docs/scripts.md:
// under 1 s), and reloads it after one file changed.
func BenchmarkLoad1000(b *testing.B) {
	dir := b.TempDir()
	for i := range 1000 {
		writeFile(b, dir, fmt.Sprintf("team%d/s%d.ax", i%10, i), fmt.Sprintf(`enum Env { Staging, Prod }
type Target { host: String, port: Int }

// Script %d: deploys somewhere.
//! returns "a URL"
//! param env "Target environment"
fn main(env: Env, replicas: Int, tags: List<String>, target: Target, note: Option<String>) -> String {
  let mut i = 0
  while i < replicas { i = i + 1 }
  match env { Staging => "https://staging/" ++ target.host, Prod => "https://prod/" ++ target.host }
}
`, i))
	}
	b.Run("full", func(b *testing.B) {
		for b.Loop() {
			c, err := Load(dir, Options{})
			if err != nil || len(c.Tools) != 1000 {
				b.Fatalf("%v %d %v", err, len(c.Tools), c.Diagnostics)
			}
		}
	})
	b.Run("reload-one-changed", func(b *testing.B) {
		prev, _ := Load(dir, Options{})
		n := 0
		for b.Loop() {
			n++
			writeFile(b, dir, "team0/s0.ax", fmt.Sprintf("fn main() -> Int { %d }\n", n))
			c, err := Load(dir, Options{Previous: prev})
			if err != nil || c.Compiled != 1 {
				b.Fatalf("%v compiled %d", err, c.Compiled)
			}
			prev = c
		}
	})
}
