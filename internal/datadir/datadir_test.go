package datadir

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// mkfiles creates each file (slash-separated, under root) empty, with its
// directories; a name ending in "/" is a directory.
func mkfiles(t *testing.T, root string, names ...string) {
	t.Helper()
	for _, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		if strings.HasSuffix(n, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRecognizes: a library folder has a subdirectory with
// package.ax.json and src/core.ax; a templates folder one with
// template.json and app.ax.template. Anything else — the libs/ or
// templates/ of an unrelated project — is not one (issue 26 item 14).
func TestRecognizes(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	cases := []struct {
		d     Dir
		files []string
		want  bool
	}{
		{Libs, nil, false},
		{Libs, []string{"README.md", "util.js"}, false},
		{Libs, []string{"left-pad/index.js", "left-pad/package.json"}, false},
		{Libs, []string{"std-json/package.ax.json"}, false},
		{Libs, []string{"std-json/src/core.ax"}, false},
		{Libs, []string{"std-json/package.ax.json", "std-json/src/core.ax/"}, false}, // core.ax a directory
		{Libs, []string{".hidden/package.ax.json", ".hidden/src/core.ax"}, false},
		{Libs, []string{"package.ax.json", "src/core.ax"}, false}, // one library, not a folder of them
		{Libs, []string{"vendor/x", "std-json/package.ax.json", "std-json/src/core.ax"}, true},
		{Libs, []string{"mylib/package.ax.json", "mylib/src/core.ax"}, true},
		{Templates, []string{"index.html", "partials/header.html"}, false},
		{Templates, []string{"form-basic/template.json"}, false},
		{Templates, []string{"form-basic/template.json", "form-basic/app.ax.template"}, true},
		{Templates, []string{"std-json/package.ax.json", "std-json/src/core.ax"}, false},
	}
	for _, c := range cases {
		dir := t.TempDir()
		mkfiles(t, dir, c.files...)
		if got := c.d.Recognizes(dir); got != c.want {
			t.Errorf("%s.Recognizes(%v) = %v, want %v", c.d.Name, c.files, got, c.want)
		}
	}
	if Libs.Recognizes(filepath.Join(t.TempDir(), "missing")) {
		t.Error("a missing directory is a library folder")
	}
	// The embedded copies are folders of their own kind.
	for _, d := range []Dir{Libs, Templates} {
		dir, err := d.Extract()
		if err != nil {
			t.Fatal(err)
		}
		if !d.Recognizes(dir) {
			t.Errorf("the embedded %s at %s is not an axpool %s", d.Name, dir, d.Kind)
		}
	}
}

// logBuffer returns a logger writing text lines without the time to buf.
func logBuffer(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}

// TestResolveLogs: Resolve uses ./libs only when it is a library folder
// and logs which directory it chose, and why (issue 26 item 14).
func TestResolveLogs(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	builtin, err := Libs.Extract()
	if err != nil {
		t.Fatal(err)
	}
	tplBuiltin, err := Templates.Extract()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	log := logBuffer(&buf)
	resolve := func(d Dir, given string, set bool) string {
		t.Helper()
		buf.Reset()
		flag := map[string]string{"libs": "libs-dir", "templates": "templates-dir"}[d.Name]
		got, err := d.Resolve(given, set, flag, log)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	check := func(what, got, want, line string) {
		t.Helper()
		if got != want || buf.String() != line {
			t.Errorf("%s: %q, logged %q; want %q, %q", what, got, buf.String(), want, line)
		}
	}

	got := resolve(Libs, "", false)
	check("no ./libs", got, builtin, "level=INFO msg=\"std libraries\" dir="+builtin+" from=\"built-in copy\"\n")

	mkfiles(t, work, "libs/README.md", "libs/vendor/", "templates/index.html")
	got = resolve(Libs, "", false)
	check("an unrelated ./libs", got, builtin, "level=INFO msg=\"std libraries\" dir="+builtin+" from=\"built-in copy\" skipped=./libs "+
		"reason=\"not an axpool library folder: no subdirectory holds package.ax.json and src/core.ax\"\n")
	got = resolve(Templates, "", false)
	check("an unrelated ./templates", got, tplBuiltin, "level=INFO msg=\"App templates\" dir="+tplBuiltin+" from=\"built-in copy\" skipped=./templates "+
		"reason=\"not an axpool templates folder: no subdirectory holds template.json and app.ax.template\"\n")

	mkfiles(t, work, "libs/std-mine/package.ax.json", "libs/std-mine/src/core.ax")
	got = resolve(Libs, "", false)
	check("a library folder in ./libs", got, "libs", "level=INFO msg=\"std libraries\" dir=libs from=\"working directory\"\n")

	got = resolve(Libs, work, true)
	check("--libs-dir", got, work, "level=DEBUG msg=\"std libraries\" dir="+work+" from=--libs-dir\n")
	got = resolve(Libs, "", true)
	check("--libs-dir \"\"", got, "", "level=DEBUG msg=\"std libraries\" dir=\"\" from=\"--libs-dir \\\"\\\"\"\n")

	// A flag's directory need not be a library folder: the operator chose it.
	got = resolve(Templates, filepath.Join(work, "templates"), true)
	check("--templates-dir", got, filepath.Join(work, "templates"), "level=DEBUG msg=\"App templates\" dir="+filepath.Join(work, "templates")+" from=--templates-dir\n")

	// Without a logger nothing is logged, and the choice is the same.
	if got, err := Libs.Resolve("", false, "libs-dir", nil); err != nil || got != "libs" {
		t.Errorf("without a logger: %q, %v", got, err)
	}
}

// unwritableCache makes the user's cache directory one that cannot be
// written (XDG_CACHE_HOME the file it returns) and TMPDIR a new
// directory, which it returns too, in a new working directory.
func unwritableCache(t *testing.T) (file, tmp string) {
	t.Helper()
	t.Chdir(t.TempDir())
	file = filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tmp = t.TempDir()
	t.Setenv("XDG_CACHE_HOME", file)
	t.Setenv("TMPDIR", tmp)
	return file, tmp
}

// TestExtractFallsBack: a user's cache directory that cannot be written
// (here an XDG_CACHE_HOME that is a file; a read-only home does the same)
// gives the copy under the temporary directory, where every command
// failed — `axpool run hello.ax` included, exit 2: `write the built-in
// libs: mkdir …: read-only file system`. When neither can be written the
// error names both, and Resolve says what to do.
func TestExtractFallsBack(t *testing.T) {
	file, tmp := unwritableCache(t)
	sum, err := Libs.digest()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Libs.Extract()
	want := filepath.Join(tmp, "axpool-"+strconv.Itoa(os.Getuid()), "libs-"+sum)
	if err != nil || got != want || !Libs.Holds(got) {
		t.Fatalf("Extract() = %q, %v; want %q", got, err, want)
	}

	t.Setenv("TMPDIR", file)
	_, err = Libs.Resolve("", false, "libs-dir", nil)
	wantErr := "write the built-in libs: in the user's cache directory: mkdir " + file + ": not a directory; " +
		"in the temporary directory: mkdir " + file + ": not a directory" +
		" (set XDG_CACHE_HOME or TMPDIR to a writable directory, or pass --libs-dir)"
	if err == nil || err.Error() != wantErr {
		t.Errorf("nowhere to write: %v\nwant %s", err, wantErr)
	}
}

// TestExtractReusesPrivateCopy: once the copy under the cache directory
// was changed, every process wrote a fresh private copy of its own next
// to it and never removed it (one more directory at every `axpool run`);
// the first private copy is used again.
func TestExtractReusesPrivateCopy(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	dir, err := Libs.Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "std-json", "src", "core.ax"), []byte("// changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	first, err := Libs.Extract()
	if err != nil || first == dir || !Libs.Holds(first) {
		t.Fatalf("after a change: %q, %v", first, err)
	}
	for range 3 {
		if again, err := Libs.Extract(); err != nil || again != first {
			t.Errorf("Extract() = %q, %v; want the private copy %q again", again, err, first)
		}
	}
	ents, err := os.ReadDir(filepath.Join(cache, "axpool"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if want := []string{filepath.Base(dir), filepath.Base(first)}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("cache holds %v, want %v", names, want)
	}
}
