package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/wire"
)

// WriteRunText writes a boruna_run response as `axpool run` shows it
// without --json: on success the result (compact JSON) on stdout, then
// each ui_output value, then "steps: N"; the program's debug output and a
// trace on stderr. A compile failure is "FILE:LINE:COL: E00N msg" lines
// on stderr; a runtime error or a limit "FILE:LINE:COL: runtime error:
// msg" (or "limit exceeded: msg") and, when the error happened in a called
// function, its call stack; any other failure "error: msg". path names the
// program; positions in a library are shown under libsDir.
func WriteRunText(stdout, stderr io.Writer, path, libsDir string, resp *wire.Object) {
	success := textField[bool](resp, "success")
	// The program's debug output (__builtin_debug, debug_output) goes to
	// stderr first, as it was written.
	if lines, ok := resp.Get("debug_output"); ok {
		for _, line := range lines.([]string) {
			fmt.Fprintln(stderr, line)
		}
	}
	if success {
		fmt.Fprintln(stdout, textJSON(textGet(resp, "result")))
		if ui, ok := resp.Get("ui_output"); ok {
			for _, v := range ui.([]json.RawMessage) {
				fmt.Fprintln(stdout, textJSON(v))
			}
		}
		if tr, ok := resp.Get("trace"); ok {
			for _, line := range tr.([]string) {
				fmt.Fprintln(stderr, line)
			}
			if textField[bool](resp, "trace_truncated") {
				fmt.Fprintf(stderr, "(trace truncated after %d entries)\n", TraceLimit)
			}
		}
		fmt.Fprintf(stdout, "steps: %d\n", textField[int64](resp, "steps"))
		return
	}
	if errs, ok := resp.Get("errors"); ok && !textHas(resp, "error_kind") {
		for _, e := range errs.([]*wire.Object) {
			file := path
			if f, ok := e.Get("file"); ok {
				file = filepath.Join(libsDir, f.(string)) // library files are relative to the libs dir
			}
			sev := ""
			if textField[string](e, "severity") == "warning" {
				sev = "warning: "
			}
			fmt.Fprintf(stderr, "%s: %s%s %s\n", textPos(file, e), sev, textField[string](e, "code"), textField[string](e, "message"))
		}
		return
	}
	kind := textField[string](resp, "error_kind")
	msg := textField[string](resp, "message")
	switch kind {
	case "runtime_error", "limit_exceeded":
		file := path
		if f, ok := resp.Get("file"); ok {
			file = filepath.Join(libsDir, f.(string))
		}
		label := "runtime error"
		if kind == "limit_exceeded" {
			label = "limit exceeded"
		}
		fmt.Fprintf(stderr, "%s: %s: %s\n", textPos(file, resp), label, msg)
		writeStack(stderr, resp, path, libsDir)
	default:
		fmt.Fprintf(stderr, "error: %s\n", msg)
		if errs, ok := resp.Get("errors"); ok {
			if list, ok := errs.([]*wire.Object); ok {
				for _, e := range list {
					fmt.Fprintf(stderr, "  at %q: %s\n", textField[string](e, "path"), textField[string](e, "message"))
				}
			}
		}
	}
}

// writeStack writes the call stack of a failed run (the response's stack
// field) after its error line, outermost frame first, when it has more
// than one frame (a single frame is the error line itself):
//
//	call stack (most recent call last):
//	  prog.ax:7:3: in main
//	  … 968 frames elided …
//	  prog.ax:3:6: in div
func writeStack(w io.Writer, resp *wire.Object, path, libsDir string) {
	v, _ := resp.Get("stack")
	frames, _ := v.([]*wire.Object)
	if len(frames) < 2 {
		return
	}
	fmt.Fprintln(w, "call stack (most recent call last):")
	for _, f := range frames {
		if n, ok := f.Get("elided"); ok {
			fmt.Fprintf(w, "  … %v frames elided …\n", n)
			continue
		}
		file := path
		if lf, ok := f.Get("file"); ok {
			file = filepath.Join(libsDir, lf.(string))
		}
		fmt.Fprintf(w, "  %s: in %s\n", textPos(file, f), textField[string](f, "function"))
	}
}

// textPos renders `file:line:col` (or `file` when the object has no line).
func textPos(file string, o *wire.Object) string {
	if !textHas(o, "line") {
		return file
	}
	return fmt.Sprintf("%s:%v:%v", file, textGet(o, "line"), textGet(o, "col"))
}

// textField returns o[key] as a T (the zero T when absent or of another type).
func textField[T any](o *wire.Object, key string) T {
	var zero T
	v, ok := o.Get(key)
	if !ok {
		return zero
	}
	switch x := v.(type) {
	case T:
		return x
	}
	// Integers are stored as int or int32 by some engines.
	if _, isInt := any(zero).(int64); isInt {
		switch n := v.(type) {
		case int:
			return any(int64(n)).(T)
		case int32:
			return any(int64(n)).(T)
		}
	}
	return zero
}

func textHas(o *wire.Object, key string) bool {
	_, ok := o.Get(key)
	return ok
}

func textGet(o *wire.Object, key string) any {
	v, _ := o.Get(key)
	return v
}

// textJSON renders a value stored in a response object compactly,
// without HTML escaping.
func textJSON(v any) string {
	b, err := jsonenc.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
