package toolwire

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// SourceFile is the file name MCP sources get in positions and messages.
const SourceFile = "<source>"

// CodeMissingMain is the diagnostic code of a program run without `main`
// (docs/tools.md §2 boruna_check).
const CodeMissingMain = "MISSING_MAIN"

// MissingMainMessage is the message of a MISSING_MAIN error.
const MissingMainMessage = "program has no `main` function: boruna_run calls `fn main()` as the entry point"

// MaxMessageBytes bounds each message, description and rationale of a
// diagnostic or compile error in a response. A compiler message can echo
// a type name as long as the source (1,000 errors naming a 100 KB record
// type would be 100 MB); ClipMessage cuts it.
const MaxMessageBytes = 2048

// ClipMessage is text.Clip(s, MaxMessageBytes): s when it has at most
// MaxMessageBytes bytes, else at most MaxMessageBytes bytes of it (never
// half a rune) followed by "…".
func ClipMessage(s string) string { return text.Clip(s, MaxMessageBytes) }

// DisplayFile names a source file for a caller: a file under libsDir is
// shown relative to it with forward slashes ("std-ui/src/core.ax"), so
// that responses never reveal server paths; other names are unchanged.
func DisplayFile(libsDir, file string) string {
	if libsDir != "" && file != "" {
		if rel, err := filepath.Rel(libsDir, file); err == nil && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel) {
			return filepath.ToSlash(rel)
		}
	}
	return file
}

// CompileFailure is the compile-errors response (reference §3.1,
// docs/tools.md §2): {success:false, protocol_version:1, errors:[{severity:
// "error", code, message, line?, col?, end_line?, end_col?, file?}],
// outcome:"compile_error", retryable:false}, no error_kind. Warnings are
// left out; line and col appear when the position is known, end_line and
// end_col when the end is; file only for an error outside the user's
// source, relative to libsDir (DisplayFile). A failure without any error
// gets one E008 "compilation failed" entry, never an empty list. Messages
// are cut to MaxMessageBytes (ClipMessage), so the list stays within a few MB
// (the compiler records at most 1,000 errors).
func CompileFailure(errs compiler.ErrorList, libsDir string) *wire.Object {
	list := make([]*wire.Object, 0, len(errs))
	for _, e := range errs {
		if e.IsWarning() {
			continue
		}
		o := wire.NewObject().Set("severity", compiler.SeverityError).Set("code", e.Code).Set("message", ClipMessage(e.Msg))
		if e.Pos.IsValid() {
			o.Set("line", e.Pos.Line).Set("col", e.Pos.Col)
			if e.End.IsValid() {
				o.Set("end_line", e.End.Line).Set("end_col", e.End.Col)
			}
		}
		if f := DisplayFile(libsDir, e.File); f != "" && f != SourceFile {
			o.Set("file", f)
		}
		list = append(list, o)
	}
	if len(list) == 0 {
		list = append(list, wire.NewObject().Set("severity", compiler.SeverityError).Set("code", compiler.CodeCodegen).
			Set("message", "compilation failed"))
	}
	return wire.WithOutcome(wire.Envelope(false).Set("errors", list), wire.OutcomeCompileError)
}

// MissingMain is the compile-errors response of a program run without
// `main` (docs/language.md "Semantics"): one error {severity:"error",
// code:CodeMissingMain, message:MissingMainMessage, line:1, col:1},
// outcome "compile_error".
func MissingMain() *wire.Object {
	e := wire.NewObject().
		Set("severity", compiler.SeverityError).
		Set("code", CodeMissingMain).
		Set("message", MissingMainMessage).
		Set("line", 1).
		Set("col", 1)
	return wire.WithOutcome(wire.Envelope(false).Set("errors", []*wire.Object{e}), wire.OutcomeCompileError)
}

// PolicyFailure is the response to a `policy` argument refused by
// policy.ParseRunArg (reference mcp-contract §5.2): error_kind is the
// *policy.ValidationError's kind (the legacy invalid_policy, or a
// policy.* kind which also carries its extras path, field, found, hint,
// in that order) and message its message; any other error is
// invalid_policy with the error's text. Outcome "invalid_args".
func PolicyFailure(err error) *wire.Object {
	o := wire.Envelope(false)
	var ve *policy.ValidationError
	if errors.As(err, &ve) {
		o.Set("error_kind", ve.Kind).Set("message", ve.Message)
		if strings.HasPrefix(ve.Kind, "policy.") {
			d := ve.Details()
			for _, k := range ve.DetailKeys() {
				if k != "error_kind" && k != "message" {
					o.Set(k, d[k])
				}
			}
		}
	} else {
		o.Set("error_kind", wire.KindInvalidPolicy).Set("message", err.Error())
	}
	return wire.WithOutcome(o, wire.OutcomeInvalidArgs)
}

// SetLocation adds the additive position fields of a run failure to o:
// line and col when the VM knows the position, function when it knows the
// function, file when the failure is outside the user's source (relative
// to libsDir, DisplayFile), and stack when the VM knows the call stack
// (Stack).
func SetLocation(o *wire.Object, loc vm.Location, libsDir string) {
	if loc.Pos.Line > 0 {
		o.Set("line", loc.Pos.Line).Set("col", loc.Pos.Col)
	}
	if loc.Func != "" {
		o.Set("function", loc.Func)
	}
	if f := DisplayFile(libsDir, loc.File); f != "" && f != SourceFile {
		o.Set("file", f)
	}
	if s := Stack(loc.Stack, libsDir); s != nil {
		o.Set("stack", s)
	}
}

// Stack is the additive `stack` field of a run failure (docs/tools.md §2
// boruna_run): the failing actor's call stack, outermost frame first,
// each frame {function, line?, col?, file?} (line and col of the call, or
// of the failing instruction in the last frame; file as in SetLocation),
// and {elided: N} in place of the N middle frames of a stack deeper than
// vm.MaxCallStack. Nil for an empty stack.
func Stack(s vm.CallStack, libsDir string) []*wire.Object {
	if len(s.Frames) == 0 {
		return nil
	}
	out := make([]*wire.Object, 0, len(s.Frames)+1)
	for i, f := range s.Frames {
		if i == s.ElidedAt() {
			out = append(out, wire.NewObject().Set("elided", s.Elided))
		}
		o := wire.NewObject().Set("function", f.Func)
		if f.Pos.IsValid() {
			o.Set("line", f.Pos.Line).Set("col", f.Pos.Col)
		}
		if file := DisplayFile(libsDir, f.File); file != "" && file != SourceFile {
			o.Set("file", file)
		}
		out = append(out, o)
	}
	return out
}

// CheckOutput enforces an output budget of limit bytes on a successful
// run (reference mcp-contract §4.4, limits.max_output_bytes): the compact
// JSON size of the result must not exceed it (equal passes), then each
// ui_output value is checked against what remains. Within budget it
// returns nil; over it, an *OutputError with Limit = limit, the run's
// steps and the message "serialized output exceeded <limit> bytes". Its work is O(limit) whatever the size of the values
// (vm.EncodedSizeAtLeast first).
func CheckOutput(res *vm.Result, limit int64) *OutputError {
	over := func() *OutputError {
		return &OutputError{Limit: limit, Steps: res.Steps, Msg: fmt.Sprintf("serialized output exceeded %d bytes", limit)}
	}
	// A lower bound first: O(limit) work however large the values are.
	remaining := limit
	for i := -1; i < len(res.UIOutput); i++ {
		v := res.Value
		if i >= 0 {
			v = res.UIOutput[i]
		}
		n, exceeded := vm.EncodedSizeAtLeast(v, remaining)
		if exceeded {
			return over()
		}
		remaining -= n
	}
	// Within the bound, so the exact sizes cost O(limit) too.
	remaining = limit
	for i := -1; i < len(res.UIOutput); i++ {
		v := res.Value
		if i >= 0 {
			v = res.UIOutput[i]
		}
		size := int64(vm.EncodedSize(v))
		if size > remaining {
			return over()
		}
		remaining -= size
	}
	return nil
}
