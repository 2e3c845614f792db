package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// flagSet returns a flag set with d's flag, parsed from args.
func flagSet(t *testing.T, d dataDir, args ...string) (*pflag.FlagSet, *string) {
	t.Helper()
	var v string
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	d.register(fs, &v, "test")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return fs, &v
}

// TestDataDirResolve covers the order: the flag's directory (which must
// be one), ./libs, the embedded copy under the user's cache directory.
func TestDataDirResolve(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	file := filepath.Join(work, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--libs-dir", "/nonexistent/libs"}, "--libs-dir /nonexistent/libs: no such directory"},
		{[]string{"--libs-dir", file}, "--libs-dir " + file + ": not a directory"},
	} {
		fs, v := flagSet(t, libsData, c.args...)
		if _, err := libsData.resolve(fs, *v, nil); err == nil || err.Error() != c.want {
			t.Errorf("%v: err %v, want %q", c.args, err, c.want)
		}
	}
	fs, v := flagSet(t, libsData, "--libs-dir", work)
	if got, err := libsData.resolve(fs, *v, nil); err != nil || got != work {
		t.Errorf("explicit dir: %q, %v", got, err)
	}
	fs, v = flagSet(t, libsData, "--libs-dir", "")
	if got, err := libsData.resolve(fs, *v, nil); err != nil || got != "" {
		t.Errorf("explicit empty: %q, %v", got, err)
	}

	// No flag, no ./libs: the embedded copy, written once.
	fs, v = flagSet(t, libsData)
	got, err := libsData.resolve(fs, *v, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, filepath.Join(cache, "axpool", "libs-")) || !libsData.Holds(got) {
		t.Fatalf("embedded copy at %q", got)
	}
	if b, err := os.ReadFile(filepath.Join(got, "std-json", "src", "core.ax")); err != nil || len(b) == 0 {
		t.Fatalf("std-json: %v", err)
	}
	again, err := libsData.resolve(fs, *v, nil)
	if err != nil || again != got {
		t.Errorf("second resolve %q, %v; want %q", again, err, got)
	}
	// A changed copy is not used: a fresh one next to it is.
	core := filepath.Join(got, "std-json", "src", "core.ax")
	if err := os.WriteFile(core, []byte("fn evil() -> Int { 0 }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh, err := libsData.resolve(fs, *v, nil)
	if err != nil || fresh == got || !libsData.Holds(fresh) {
		t.Errorf("after tampering: %q, %v", fresh, err)
	}
	// An extra file makes a copy unusable too.
	if err := os.WriteFile(filepath.Join(fresh, "extra"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if libsData.Holds(fresh) {
		t.Error("a copy with an extra file holds the embedded files")
	}

	// An unrelated ./libs (issue 26 item 14) does not replace the
	// embedded copy; an axpool library folder there does.
	for _, d := range []string{"vendor", "std-mine/src"} {
		if err := os.MkdirAll(filepath.Join(work, "libs", d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := libsData.resolve(fs, *v, nil); err != nil || !libsData.Holds(got) {
		t.Errorf("with an unrelated ./libs: %q, %v; want an embedded copy", got, err)
	}
	writeFile(t, filepath.Join(work, "libs", "std-mine"), "package.ax.json", "{}")
	writeFile(t, filepath.Join(work, "libs", "std-mine", "src"), "core.ax", "fn one() -> Int { 1 }\n")
	if got, err := libsData.resolve(fs, *v, nil); err != nil || got != "libs" {
		t.Errorf("with ./libs: %q, %v", got, err)
	}
}

// TestDataDirTemplates: the embedded templates are the five shipped ones.
func TestDataDirTemplates(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	flags, v := flagSet(t, templatesData)
	dir, err := templatesData.resolve(flags, *v, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := fs.Glob(os.DirFS(dir), "*/template.json")
	if err != nil || len(ms) != 5 {
		t.Errorf("templates %v, %v", ms, err)
	}
}

// TestBuiltinCopyUnwritable: a user's cache directory that cannot be
// written gives the built-in copy under the temporary directory, so `axpool
// run` works (it exited 2, `axpool run: write the built-in libs: mkdir …:
// not a directory`, even for a program that imports nothing); when the
// temporary directory cannot be written either, the run fails with exit
// status 1, an environment failure and no usage error.
func TestBuiltinCopyUnwritable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	writeFile(t, dir, "file", "")
	writeFile(t, dir, "main.ax", "import \"std-json\"\nfn main() -> Int { 1 + 2 }\n")
	run := func(tmp string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin(t), "run", "main.ax")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+file, "TMPDIR="+tmp)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	if out, errs, code := run(t.TempDir()); out != "3\nsteps: 4\n" || errs != "" || code != 0 {
		t.Errorf("cache directory a file: stdout %q, stderr %q, exit %d; want \"3\\nsteps: 4\\n\", \"\", 0", out, errs, code)
	}
	want := "axpool run: write the built-in libs: in the user's cache directory: mkdir " + file + ": not a directory; " +
		"in the temporary directory: mkdir " + file + ": not a directory (set XDG_CACHE_HOME or TMPDIR to a writable directory, or pass --libs-dir)\n"
	if out, errs, code := run(file); out != "" || errs != want || code != 1 {
		t.Errorf("nowhere to write: stdout %q, stderr %q, exit %d; want \"\", %q, 1", out, errs, code, want)
	}
}
