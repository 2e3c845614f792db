package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// WriteSummaryFile replaces the content of f, the --summary file, with b.
func WriteSummaryFile(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Close()
}

// ResumeCommand is the command line that finishes an interrupted batch:
// argv (the process's os.Args) with --resume, the program named as it was invoked ("./axpool"
// stays "./axpool"; a `go run` build, in the Go build cache, is "axpool"),
// without an earlier --resume (or --resume=…) and the boolean flags named in drop ("--fail-fast" drops
// "--fail-fast" and "--fail-fast=…").
func ResumeCommand(argv []string, in, out string, drop ...string) string {
	prog := progName(argv)
	if out == "-" {
		return fmt.Sprintf("%s batch %s -o OUT.jsonl (write to a file to be able to resume)", prog, in)
	}
	args := []string{prog}
	drop = append(slices.Clip(drop), "--resume")
	for _, a := range argv[1:] {
		if !slices.ContainsFunc(drop, func(f string) bool { return a == f || strings.HasPrefix(a, f+"=") }) {
			args = append(args, ShellQuote(a))
		}
	}
	return strings.Join(append(args, "--resume"), " ")
}

// ShellQuote quotes s for a POSIX shell when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// SameFile reports whether paths a and b name one file: the same
// existing file, or — where one does not exist yet, such as an OUT about
// to be created — the same absolute path once cleaned and its symbolic
// links followed as far as they lead (a link to a file not created yet
// names that file: resolvePath).
func SameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	if err1 == nil && err2 == nil {
		return os.SameFile(sa, sb)
	}
	ra, ok1 := resolvePath(a)
	rb, ok2 := resolvePath(b)
	return ok1 && ok2 && ra == rb
}

// resolvePath returns path absolute and cleaned, its directory's links
// followed where it exists and a link at its end followed to its target
// (which need not exist), up to 40 links; ok is false when path cannot be
// made absolute or the links do not end.
func resolvePath(path string) (string, bool) {
	for range 40 {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", false
		}
		dir, base := filepath.Split(abs)
		if d, err := filepath.EvalSymlinks(dir); err == nil {
			dir = d
		}
		abs = filepath.Join(dir, base)
		fi, err := os.Lstat(abs)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return abs, true
		}
		target, err := os.Readlink(abs)
		if err != nil {
			return "", false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(dir, target)
		}
		path = target
	}
	return "", false
}

// progName is how argv (the process's os.Args) invoked axpool, quoted:
// "./axpool" stays "./axpool"; a `go run` build is "axpool".
func progName(argv []string) string {
	if len(argv) > 0 && argv[0] != "" && !strings.Contains(argv[0], "go-build") {
		return ShellQuote(argv[0])
	}
	return "axpool"
}

// RerunCommand is the plain command that runs the items of in that out
// lacks or holds of another run: `axpool batch IN -o OUT --resume`, the
// program named as argv invoked it (ResumeCommand).
func RerunCommand(argv []string, in, out string) string {
	return fmt.Sprintf("%s batch %s -o %s --resume", progName(argv), ShellQuote(in), ShellQuote(out))
}

// ErrInputStopped is what a reader of UntilDone returns once its context
// has ended: the batch stopped, and reads no more input.
var ErrInputStopped = errors.New("batch: the input is no longer read: the batch stopped")

// UntilDone returns a reader of r whose reads end with ErrInputStopped
// as soon as ctx ends, a read waiting for r included: a batch reading
// stdin, which waits for a line as long as stdin stays open, stops at
// Ctrl-C or SIGTERM without waiting for the next line. r is read on a
// goroutine of its own, which a read of r that never returns leaves
// behind.
func UntilDone(ctx context.Context, r io.Reader) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, r)
		pw.CloseWithError(err) // nil: io.EOF
	}()
	context.AfterFunc(ctx, func() { pw.CloseWithError(ErrInputStopped) })
	return pr
}
