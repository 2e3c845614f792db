package main

import (
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

// ReadSourceFile reads an .ax source file of at most MaxSourceFileBytes.
// The error is ready to return from a command's RunE: exit status 1 (the
// file cannot be processed, like an unreadable one) with the message
// `error: <path>: source exceeds 1 MB limit (1048576 bytes)` or
// `error: <os error>`.
func ReadSourceFile(path string) ([]byte, error) {
	src, err := limitread.FileNamed(path, "source", MaxSourceFileBytes)
	if err != nil {
		return nil, fail(exitFail, "error: %v", err)
	}
	return src, nil
}
