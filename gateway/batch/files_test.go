package batch

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeCommand: the resume hint names the program as it was invoked
// (quoted for a shell), "axpool" for a `go run` build, and drops an
// earlier --resume, and the flags asked to be dropped in either spelling.
func TestResumeCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		out  string
		drop []string
		want string
	}{
		{[]string{"./axpool", "batch", "in.jsonl", "-o", "out.jsonl"}, "out.jsonl", nil, "./axpool batch in.jsonl -o out.jsonl --resume"},
		{[]string{"/opt/my tools/axpool", "batch", "in.jsonl", "-o", "o.jsonl", "--resume"}, "o.jsonl", nil, "'/opt/my tools/axpool' batch in.jsonl -o o.jsonl --resume"},
		{[]string{"/tmp/go-build123/b001/exe/axpool", "batch", "in.jsonl", "-o", "o.jsonl"}, "o.jsonl", nil, "axpool batch in.jsonl -o o.jsonl --resume"},
		{[]string{"./axpool", "batch", "in.jsonl"}, "-", nil, "./axpool batch in.jsonl -o OUT.jsonl (write to a file to be able to resume)"},
		{[]string{"./axpool", "batch", "in.jsonl", "--fail-fast", "-o", "o.jsonl", "--fail-fast=true", "--resume"}, "o.jsonl", []string{"--fail-fast"}, "./axpool batch in.jsonl -o o.jsonl --resume"},
		{[]string{"./axpool", "batch", "in.jsonl", "--fail-fast", "-o", "o.jsonl"}, "o.jsonl", nil, "./axpool batch in.jsonl --fail-fast -o o.jsonl --resume"},
		{[]string{"./axpool", "batch", "in.jsonl", "--fail-fast-ish", "-o", "o.jsonl"}, "o.jsonl", []string{"--fail-fast"}, "./axpool batch in.jsonl --fail-fast-ish -o o.jsonl --resume"},
		{[]string{"./axpool", "batch", "in.jsonl", "-o", "o.jsonl", "--resume=true"}, "o.jsonl", nil, "./axpool batch in.jsonl -o o.jsonl --resume"},
	} {
		if got := ResumeCommand(c.args, "in.jsonl", c.out, c.drop...); got != c.want {
			t.Errorf("ResumeCommand for %q = %q, want %q", c.args, got, c.want)
		}
	}
}

// TestRerunCommand: the command --regrade's reasons give, with the real
// file names, quoted for a shell.
func TestRerunCommand(t *testing.T) {
	if got := RerunCommand([]string{"./axpool", "batch", "x"}, "my evals.jsonl", "old.jsonl"); got != "./axpool batch 'my evals.jsonl' -o old.jsonl --resume" {
		t.Errorf("RerunCommand = %q", got)
	}
	if got := RerunCommand([]string{"/tmp/go-build1/exe/axpool"}, "in.jsonl", "o.jsonl"); got != "axpool batch in.jsonl -o o.jsonl --resume" {
		t.Errorf("RerunCommand = %q", got)
	}
}

// TestUntilDone: a reader of UntilDone reads r through to its end; once
// its context ends, a read waiting for input that never comes returns
// ErrInputStopped.
func TestUntilDone(t *testing.T) {
	b, err := io.ReadAll(UntilDone(context.Background(), strings.NewReader("a\nb\n")))
	if string(b) != "a\nb\n" || err != nil {
		t.Errorf("read %q, %v; want \"a\\nb\\n\", no error", b, err)
	}
	never, w := io.Pipe() // written once, never closed
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	r := UntilDone(ctx, never)
	go w.Write([]byte("x"))
	buf := make([]byte, 8)
	if n, err := r.Read(buf); string(buf[:n]) != "x" || err != nil {
		t.Fatalf("read %q, %v; want \"x\", no error", buf[:n], err)
	}
	cancel() // the next read waits for input that never comes
	if n, err := r.Read(buf); n != 0 || !errors.Is(err, ErrInputStopped) {
		t.Errorf("read %q, %v after the end of ctx; want ErrInputStopped", buf[:n], err)
	}
}

// TestSameFile: one existing file under two names, or — where a path does
// not exist yet — the same absolute path once its links are followed.
func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	for _, err := range []error{
		os.WriteFile(at("in.jsonl"), nil, 0o644),
		os.Symlink("in.jsonl", at("to-in")),
		os.Symlink("new.jsonl", at("to-new")),
		os.Symlink("loop2", at("loop1")),
		os.Symlink("loop1", at("loop2")),
		os.Mkdir(at("sub"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{at("in.jsonl"), at("to-in"), true},             // both exist
		{at("in.jsonl"), at("sub/../in.jsonl"), true},   // cleaned
		{at("new.jsonl"), at("sub/../new.jsonl"), true}, // neither exists
		{at("to-new"), at("new.jsonl"), true},           // a link to a file not created yet
		{at("in.jsonl"), at("new.jsonl"), false},        // one exists, the other not
		{at("to-new"), at("other.jsonl"), false},
		{at("loop1"), at("loop1"), false}, // links that do not end
		{at("sub/x"), at("x"), false},
	} {
		if got := SameFile(tc.a, tc.b); got != tc.want {
			t.Errorf("SameFile(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
