package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckCLI(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.ax", "fn main() -> Int {\n    let count = 10\n    countt\n}\n")
	warn := writeFile(t, dir, "warn.ax", "fn pick(o: Option<Int>) -> Int { match o { _ => 1, None => 2 } }\nfn main() -> Int { pick(None) }\n")
	clean := writeFile(t, dir, "clean.ax", "fn main() -> Int { 1 }\n")
	nomain := writeFile(t, dir, "lib.ax", "fn helper(x: Int) -> Int { x }\n")

	cases := []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"check", bad}, 1,
			"[E003] " + bad + ":3:5: undefined name 'countt' (did you mean 'count'?)\n" +
				"  fix(E003-rename-countt): rename 'countt' to 'count' [confidence: High]\n"},
		{[]string{"check", warn}, 0,
			"[E009] " + warn + ":1:52: warning: unreachable match arm: earlier arms already match every value this pattern matches\n"},
		{[]string{"check", clean}, 0, "no diagnostics\n"},
		{[]string{"check", nomain}, 1,
			"[MISSING_MAIN] " + nomain + ":1:1: program has no 'main' function\n" +
				"  fix(add_main): add 'fn main() -> Int { 0 }' [confidence: High]\n"},
		{[]string{"check", "--json", clean}, 0,
			"{\n  \"success\": true,\n  \"protocol_version\": 1,\n  \"file\": \"" + clean + "\",\n  \"diagnostics_count\": 0,\n  \"diagnostics\": []\n}\n"},
		{[]string{"check", filepath.Join(dir, "missing.ax")}, 1, ""},
		{[]string{"check"}, 2, ""},
	}
	for _, c := range cases {
		out, _, code := runCLI(t, c.args...)
		if code != c.code || out != c.stdout {
			t.Errorf("axpool %s\n code %d, want %d\n stdout %q\n want   %q", strings.Join(c.args, " "), code, c.code, out, c.stdout)
		}
	}

	out, _, code := runCLI(t, "check", "--json", bad)
	for _, frag := range []string{`"diagnostics_count": 1`, `"id": "E003-rename-countt"`, `"confidence": "High"`, `"old_text": "countt"`} {
		if code != 1 || !strings.Contains(out, frag) {
			t.Errorf("check --json: code %d, output lacks %s:\n%s", code, frag, out)
		}
	}
}

func TestRepairCLI(t *testing.T) {
	dir := t.TempDir()
	src := "fn main() -> Int {\n    let count = 10\n    countt\n}\n"
	fixed := "fn main() -> Int {\n    let count = 10\n    count\n}\n"
	bad := writeFile(t, dir, "bad.ax", src)

	out, errs, code := runCLI(t, "repair", bad)
	if code != 0 || out != fixed || errs != "applied E003-rename-countt (E003): rename 'countt' to 'count'\nverify passed: 1 diagnostics before, 0 after\n" {
		t.Errorf("repair: code %d\nstdout %q\nstderr %q", code, out, errs)
	}
	if b, _ := os.ReadFile(bad); string(b) != src {
		t.Error("repair without --write changed the file")
	}

	out, _, code = runCLI(t, "repair", "--json", "--patch-id", "nope", bad)
	for _, frag := range []string{`"patches_applied": 0`, `"reason": "no applicable patches found"`, `"verify_passed": false`} {
		if code != 1 || !strings.Contains(out, frag) {
			t.Errorf("repair --patch-id nope: code %d, output lacks %s:\n%s", code, frag, out)
		}
	}

	out, _, code = runCLI(t, "repair", "--write", bad)
	if code != 0 || out != "" {
		t.Errorf("repair --write: code %d stdout %q", code, out)
	}
	if b, _ := os.ReadFile(bad); string(b) != fixed {
		t.Errorf("file after --write: %q", b)
	}

	broken := writeFile(t, dir, "broken.ax", "fn main() -> Int {\n    let x = 1 +\n}\n")
	out, errs, code = runCLI(t, "repair", broken)
	if code != 1 || out != "fn main() -> Int {\n    let x = 1 +\n}\n" ||
		errs != "verify failed: 1 diagnostics before, 1 after\n[E002] "+broken+":3:1: expected expression, found '}'\n" {
		t.Errorf("repair broken: code %d\nstdout %q\nstderr %q", code, out, errs)
	}

	if _, _, code := runCLI(t, "repair", "--strategy", "ALL", bad); code != 2 {
		t.Errorf("repair --strategy ALL: code %d, want 2", code)
	}
	if _, _, code := runCLI(t, "repair", filepath.Join(dir, "missing.ax")); code != 1 {
		t.Errorf("repair missing file: code %d, want 1", code)
	}
}
