package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// runCLI runs axpool in-process with args and returns stdout, stderr and
// the exit status. Flags of every command are reset first, because cobra
// keeps flag values between executions.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	resetFlags(rootCmd)
	var out, errb bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errb)
	defer func() {
		rootCmd.SetOut(nil)
		rootCmd.SetErr(nil)
	}()
	code = run(args)
	return out.String(), errb.String(), code
}

func resetFlags(c *cobra.Command) {
	reset := func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			_ = sv.Replace(nil) // Set would append the printed default "[]"
		} else {
			_ = f.Value.Set(f.DefValue)
		}
		f.Changed = false
	}
	c.Flags().VisitAll(reset)
	c.PersistentFlags().VisitAll(reset)
	for _, sub := range c.Commands() {
		resetFlags(sub)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPolicyValidateCLI(t *testing.T) {
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", `{"default_allow":false,"rules":{"net.fetch":{"allow":true,"budget":0}}}`)
	unknown := writeFile(t, dir, "unknown.json", `{"default_allow":"yes","foo":1}`)
	alias := writeFile(t, dir, "alias.json", `{"rules":{"net":{"allow":true,"budget":0}}}`)
	netp := writeFile(t, dir, "net.json", `{"net_policy":{"timeout_ms":0}}`)
	version := writeFile(t, dir, "version.json", `{"schema_version":2,"rules":{"net":{"allow":true,"budget":0}}}`)
	shorthand := writeFile(t, dir, "shorthand.json", `"allow-all"`)
	dup := writeFile(t, dir, "dup.json", `{"default_allow":true,"default_allow":false}`)
	bom := writeFile(t, dir, "bom.json", "\ufeff"+`{"default_allow":true}`+"\n")
	missing := filepath.Join(dir, "missing.json")

	cases := []struct {
		args           []string
		stdout, stderr string
		code           int
	}{
		{[]string{"policy", "validate", good}, "OK: " + good + "\n", "", 0},
		{[]string{"policy", "validate", unknown}, "", "error: policy.unknown_field: unknown field \"foo\" at foo\n", 2},
		{[]string{"policy", "validate", alias}, "", "error: policy.invalid_capability: unknown capability \"net\" — did you mean \"net.fetch\"?\n", 2},
		{[]string{"policy", "validate", netp}, "", "error: policy.invalid_net_policy: net_policy.timeout_ms: must be > 0\n", 2},
		{[]string{"policy", "validate", version}, "", "error: policy.unknown_schema_version: schema_version 2 not supported by this binary (expected 1)\n", 2},
		{[]string{"policy", "validate", shorthand}, "", "error: policy.parse_error: invalid type: string \"allow-all\", expected a policy object\n", 2},
		{[]string{"policy", "validate", missing}, "", "error: policy.io_error: " + missing + ": no such file or directory\n", 1},
		{[]string{"policy", "validate", dup}, "", "error: policy.parse_error: duplicate key \"default_allow\" at default_allow\n", 2},
		{[]string{"policy", "validate", bom}, "OK: " + bom + "\n", "", 0},
		{[]string{"policy", "validate", "--json", dup},
			`{"errors":[{"error_kind":"policy.parse_error","message":"policy.parse_error: duplicate key \"default_allow\" at default_allow"}],"ok":false}` + "\n", "", 2},
		{[]string{"policy", "show", bom}, "Schema version: 1\nDefault behavior: allow\nRules: (none)\nNet policy: (default)\n", "", 0},

		{[]string{"policy", "validate", "--json", good}, "{\"ok\":true}\n", "", 0},
		{[]string{"policy", "validate", "--json", unknown},
			`{"errors":[{"error_kind":"policy.unknown_field","message":"policy.unknown_field: unknown field \"foo\" at foo","path":"foo"}],"ok":false}` + "\n", "", 2},
		{[]string{"policy", "validate", "--json", alias},
			`{"errors":[{"error_kind":"policy.invalid_capability","found":"net","hint":"net.fetch","message":"policy.invalid_capability: unknown capability \"net\" — did you mean \"net.fetch\"?"}],"ok":false}` + "\n", "", 2},
		{[]string{"policy", "validate", "--json", netp},
			`{"errors":[{"error_kind":"policy.invalid_net_policy","field":"timeout_ms","message":"policy.invalid_net_policy: net_policy.timeout_ms: must be > 0"}],"ok":false}` + "\n", "", 2},
		{[]string{"policy", "validate", "--json", version},
			`{"errors":[{"error_kind":"policy.unknown_schema_version","found":2,"message":"policy.unknown_schema_version: schema_version 2 not supported by this binary (expected 1)"}],"ok":false}` + "\n", "", 2},
		{[]string{"policy", "validate", "--json", missing},
			`{"errors":[{"error_kind":"policy.io_error","message":"policy.io_error: ` + missing + `: no such file or directory"}],"ok":false}` + "\n", "", 1},

		{[]string{"policy", "show", good}, "Schema version: 1\nDefault behavior: deny\nRules:\n  net.fetch      allow  budget=unlimited\nNet policy: (default)\n", "", 0},
		{[]string{"policy", "show", alias}, "", "error: policy.invalid_capability: unknown capability \"net\" — did you mean \"net.fetch\"?\n", 2},
		{[]string{"policy", "show", missing}, "", "error: policy.io_error: " + missing + ": no such file or directory\n", 1},
	}
	for _, c := range cases {
		stdout, stderr, code := runCLI(t, c.args...)
		if stdout != c.stdout || stderr != c.stderr || code != c.code {
			t.Errorf("axpool %v:\n stdout %q\n stderr %q\n code %d\nwant\n stdout %q\n stderr %q\n code %d",
				c.args, stdout, stderr, code, c.stdout, c.stderr, c.code)
		}
	}
}

func TestPolicyCLIUsage(t *testing.T) {
	for _, args := range [][]string{{"policy", "validate"}, {"policy", "show"}, {"policy", "show", "a", "b"}, {"policy", "validate", "--bogus", "x"}} {
		_, _, code := runCLI(t, args...)
		if code != 2 {
			t.Errorf("axpool %v exit %d, want 2", args, code)
		}
	}
}
