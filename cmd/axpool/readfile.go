package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/axpool/axpool/gateway"
	"github.com/axpool/axpool/internal/limitread"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/tools/template"
)

// Size limits of the files the CLI reads: the same inputs are bounded the
// same way over MCP, so a file that works here also fits in a tool call.
const (
	// MaxSourceFileBytes bounds an .ax source file (run, check, repair,
	// app, compile, ast, disasm): tools.MaxSourceBytes, the limit of a
	// `source` argument (docs/tools.md §1, "source exceeds 1 MB limit").
	MaxSourceFileBytes = tools.MaxSourceBytes
	// MaxWorkflowFileBytes bounds a workflow.json file. The workflow tool
	// sets no limit of its own (reference §10: a 5 MB workflow_json is
	// processed); over MCP the bound is the transport's message limit,
	// gateway.MaxMessageBytes.
	MaxWorkflowFileBytes = gateway.MaxMessageBytes
	// MaxMessagesFileBytes bounds the --messages-file of `app test`: like
	// the messages argument of boruna_framework_test, only the transport's
	// message limit applies.
	MaxMessagesFileBytes = gateway.MaxMessageBytes
	// MaxTemplateFileBytes bounds each file of a template (its manifest and
	// its source template): the largest source a template may render,
	// template.MaxSourceBytes.
	MaxTemplateFileBytes = template.MaxSourceBytes
)

// FileTooLargeError reports a file over its size limit. Its message is
// `<path>: <what> exceeds <N> MB limit (<limit> bytes)`, e.g.
// `prog.ax: source exceeds 1 MB limit (1048576 bytes)`.
type FileTooLargeError struct {
	// Path is the file as named on the command line.
	Path string
	// What names the contents: "source", "workflow", "template file", ….
	What string
	// Limit is the largest accepted size in bytes.
	Limit int64
}

// Error returns the message.
func (e *FileTooLargeError) Error() string {
	return fmt.Sprintf("%s: %s exceeds %s limit (%d bytes)", e.Path, e.What, sizeName(e.Limit), e.Limit)
}

// sizeName writes a limit as people say it: "1 MB" for a whole number of
// MiB (as the MCP message "source exceeds 1 MB limit" does), else "N-byte".
func sizeName(n int64) string {
	if n > 0 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d-byte", n)
}

// ReadFileLimit reads the file at path if it holds at most limit bytes.
// It reads at most limit+1 bytes whatever the file is (a huge file, a
// device such as /dev/zero, an endless pipe), so memory and time stay
// bounded by the limit. Errors: *FileTooLargeError naming what
// the file holds, or the *os.PathError of opening or reading it.
func ReadFileLimit(path, what string, limit int64) ([]byte, error) {
	data, err := limitread.File(path, limit)
	if errors.Is(err, limitread.ErrTooLarge) {
		return nil, &FileTooLargeError{Path: path, What: what, Limit: limit}
	}
	return data, err
}

// ReadSourceFile reads an .ax source file of at most MaxSourceFileBytes.
// The error is ready to return from a command's RunE: exit status 1 (the
// file cannot be processed, like an unreadable one) with the message
// `error: <path>: source exceeds 1 MB limit (1048576 bytes)` or
// `error: <os error>`.
func ReadSourceFile(path string) ([]byte, error) {
	src, err := ReadFileLimit(path, "source", MaxSourceFileBytes)
	if err != nil {
		return nil, fail(exitFail, "error: %v", err)
	}
	return src, nil
}

// checkFileSize reports a file over limit (a *FileTooLargeError) without
// keeping its contents, reading at most limit+1 bytes. A file that cannot
// be opened or read, a named pipe and a socket are not checked (their
// reader reports or handles them): opening a pipe would wait for a writer.
func checkFileSize(path, what string, limit int64) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(f, limit+1))
	if err == nil && n > limit {
		return &FileTooLargeError{Path: path, What: what, Limit: limit}
	}
	return nil
}

// checkTemplateFiles bounds the files `axpool template apply` and `template
// list` read through package template, which reads them whole: for apply
// (name set) the manifest and source template of dir/name, for list (name
// "") the manifest of each sub-directory that is a regular file (list skips
// the others). Each must hold at most MaxTemplateFileBytes. A name that is
// not a plain directory name is left to template.Apply to refuse.
func checkTemplateFiles(dir, name string) error {
	if name != "" {
		if name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
			return nil
		}
		for _, f := range []string{template.ManifestFile, template.SourceFile} {
			if err := checkFileSize(filepath.Join(dir, name, f), "template file", MaxTemplateFileBytes); err != nil {
				return err
			}
		}
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // List reports it
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name(), template.ManifestFile)
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := checkFileSize(path, "template file", MaxTemplateFileBytes); err != nil {
			return err
		}
	}
	return nil
}
