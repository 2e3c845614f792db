package scripts

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/axpool/axpool/tools/typed"
	"github.com/axpool/axpool/wire"
)

// The command line's side of named scripts (docs/scripts.md "CLI"): a
// call's arguments from key=value pairs, and the catalogue as JSON.

// CLIArgs builds a call's JSON arguments from --args-json and key=value
// pairs (`axpool script run`), each value parsed by its parameter's type. A value that does not
// parse is passed on as a string, so the checker reports it with the
// message an MCP call gets.
func CLIArgs(s *Script, argsJSON string, pairs []string) (json.RawMessage, error) {
	obj := wire.NewObject()
	if argsJSON != "" {
		o, err := wire.ParseObject([]byte(argsJSON))
		if err != nil || !json.Valid([]byte(argsJSON)) {
			return nil, fmt.Errorf("--args-json must be one JSON object")
		}
		obj = o
	}
	seen := map[string]bool{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q: want key=value", kv)
		}
		var t *typed.Type
		for _, p := range s.Params {
			if p.Name == k {
				t = p.Type
			}
		}
		if seen[k] {
			return nil, fmt.Errorf("argument %q given twice", k)
		}
		seen[k] = true
		obj.Set(k, cliValue(t, v))
	}
	return obj.MarshalJSON()
}

// cliValue converts a key=value value by type t (nil: an unknown
// argument, left to the checker).
func cliValue(t *typed.Type, v string) json.RawMessage {
	str := func() json.RawMessage { b, _ := json.Marshal(v); return b }
	if t == nil {
		return str()
	}
	if t.Kind == typed.KindOption {
		t = t.Elem
	}
	switch t.Kind {
	case typed.KindInt, typed.KindFloat, typed.KindBool, typed.KindRecord:
		if json.Valid([]byte(v)) && v != "" && strings.TrimSpace(v) == v && !strings.HasPrefix(v, "\"") {
			return json.RawMessage(v)
		}
	case typed.KindList:
		if strings.HasPrefix(v, "[") && json.Valid([]byte(v)) {
			return json.RawMessage(v)
		}
		items := []json.RawMessage{}
		if v != "" {
			for _, part := range strings.Split(v, ",") {
				items = append(items, cliValue(t.Elem, part))
			}
		}
		b, _ := json.Marshal(items)
		return b
	}
	return str()
}

// JSON renders the annotations as MCP's hint names.
func (a Annotations) JSON() *wire.Object {
	return wire.NewObject().Set("readOnlyHint", a.ReadOnly).Set("destructiveHint", a.Destructive).
		Set("idempotentHint", a.Idempotent).Set("openWorldHint", a.OpenWorld)
}

// ListJSON is the catalogue as `axpool script list --json` prints it:
// {"scripts": [{name, path, description, input_schema, annotations,
// script_digest, confirm?, on_failure?, timeout_ms?, policy?}, …],
// "context": name or null, "failed": [{name, path, errors}, …]}.
func (c *Catalogue) ListJSON() *wire.Object {
	list := make([]*wire.Object, 0, len(c.Tools))
	for _, s := range c.Tools {
		o := wire.NewObject().Set("name", s.Name).Set("path", s.Path).Set("description", s.Description).
			Set("input_schema", InputSchema(s.Params)).Set("annotations", s.Annotations().JSON()).
			Set("script_digest", s.Digest)
		if s.Confirm != "" {
			o.Set("confirm", s.Confirm)
		}
		if s.OnFailure != "" {
			o.Set("on_failure", s.OnFailure)
		}
		if s.TimeoutMs > 0 {
			o.Set("timeout_ms", s.TimeoutMs)
		}
		if s.Task != TaskOptional {
			o.Set("task", string(s.Task))
		}
		if s.PolicyJSON != nil {
			o.Set("policy", s.PolicyJSON)
		}
		list = append(list, o)
	}
	failed := make([]*wire.Object, 0, len(c.Failed))
	for _, f := range c.Failed {
		errs := make([]string, len(f.Diagnostics))
		for i, d := range f.Diagnostics {
			errs[i] = d.String()
		}
		failed = append(failed, wire.NewObject().Set("name", f.Name).Set("path", f.Path).Set("errors", errs))
	}
	out := wire.NewObject().Set("scripts", list)
	if c.Context != nil {
		out.Set("context", c.Context.Name)
	} else {
		out.Set("context", nil)
	}
	out.Set("failed", failed)
	return out
}

// WriteResultText writes a script's result (its compact JSON envelope)
// as `axpool script run` shows it without --json, and reports success: on
// success the result on stdout (a string as is), each ui_output value and
// "steps: N"; on failure "FILE:LINE:COL: CODE msg" per compile error, or
// "[FILE:LINE:COL: ]error_kind: message", then the fix suggestion of a
// failure hook, on stderr.
func WriteResultText(stdout, stderr io.Writer, out []byte) bool {
	o, err := wire.ParseObject(out)
	if err != nil {
		fmt.Fprintf(stderr, "error: the result is not JSON: %v\n", err)
		return false
	}
	get := func(k string) json.RawMessage {
		v, _ := o.Get(k)
		raw, _ := v.(json.RawMessage)
		return raw
	}
	text := func(k string) string {
		var s string
		_ = json.Unmarshal(get(k), &s)
		return s
	}
	success := string(get("success")) == "true"
	show := func(raw json.RawMessage) string {
		if len(raw) > 0 && raw[0] == '"' {
			var s string
			_ = json.Unmarshal(raw, &s)
			return s
		}
		return string(raw)
	}
	if success {
		fmt.Fprintln(stdout, show(get("result")))
		var ui []json.RawMessage
		_ = json.Unmarshal(get("ui_output"), &ui)
		for _, u := range ui {
			fmt.Fprintln(stdout, show(u))
		}
		fmt.Fprintf(stdout, "steps: %s\n", get("steps"))
		return true
	}
	if errs := get("errors"); errs != nil && get("error_kind") == nil {
		var list []struct {
			Code, Message, File string
			Line, Col           int
		}
		_ = json.Unmarshal(errs, &list)
		for _, e := range list {
			fmt.Fprintf(stderr, "%s:%d:%d: %s %s\n", e.File, e.Line, e.Col, e.Code, e.Message)
		}
	} else {
		pos := ""
		if line := get("line"); line != nil {
			file := text("file")
			if file == "" {
				file = text("script")
			}
			pos = fmt.Sprintf("%s:%s:%s: ", file, line, get("col"))
		}
		fmt.Fprintf(stderr, "%s%s: %s\n", pos, text("error_kind"), text("message"))
	}
	if s := text("fix_suggestion"); s != "" {
		fmt.Fprintf(stderr, "fix suggestion:\n%s\n", s)
	}
	if s := text("fix_suggestion_error"); s != "" {
		fmt.Fprintf(stderr, "warning: %s\n", s)
	}
	return false
}
