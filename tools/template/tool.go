package template

import (
	"errors"

	"github.com/axpool/axpool/wire"
)

// ListTool implements `boruna_template_list` (reference mcp-contract
// §3.11, docs/tools.md §2): the full response envelope.
//
// Success: success, protocol_version, count, templates [{name, version,
// description, dependencies, capabilities, args (names, sorted)}] sorted
// by name. Failure: error_kind "template_error", message (a missing
// directory included).
func ListTool(dir string) *wire.Object {
	ms, err := List(dir)
	if err != nil {
		return failure(err)
	}
	list := make([]*wire.Object, len(ms))
	for i := range ms {
		m := &ms[i]
		list[i] = wire.NewObject().
			Set("name", m.Name).
			Set("version", m.Version).
			Set("description", m.Description).
			Set("dependencies", nonNil(m.Dependencies)).
			Set("capabilities", nonNil(m.Capabilities)).
			Set("args", m.ArgNames())
	}
	return wire.Envelope(true).
		Set("count", len(list)).
		Set("templates", list)
}

// ApplyTool implements `boruna_template_apply` (reference mcp-contract
// §3.12, docs/tools.md §2): args are "key=value" strings (see ParseArgs,
// checked before the disk is touched), then Apply. With validate, the
// rendered source is compiled (compiler.Compile with libsDir, file name
// output_file) and the reply carries validation {passed:true} or
// {passed:false, error:"template output does not compile: <file:line:col:
// E00N msg>"}; a failed validation is still success:true.
//
// Success: success, protocol_version, template_name, output_file, source,
// dependencies, capabilities[, validation]. Failure: error_kind
// "invalid_args" or "template_error", message.
func ApplyTool(dir, name string, args []string, validate bool, libsDir string) *wire.Object {
	kv, err := ParseArgs(args)
	if err != nil {
		return failure(err)
	}
	r, err := Apply(dir, name, kv)
	if err != nil {
		return failure(err)
	}
	out := wire.Envelope(true).
		Set("template_name", r.TemplateName).
		Set("output_file", r.OutputFile).
		Set("source", r.Source).
		Set("dependencies", nonNil(r.Dependencies)).
		Set("capabilities", nonNil(r.Capabilities))
	if validate {
		v := wire.NewObject()
		if msg := compileError(r, libsDir); msg == "" {
			v.Set("passed", true)
		} else {
			v.Set("passed", false).Set("error", "template output does not compile: "+msg)
		}
		out.Set("validation", v)
	}
	return out
}

// ErrorKind returns the wire error_kind of an error from List, Apply or
// ParseArgs: "invalid_args" for ErrArgFormat and ErrArgValue, otherwise
// "template_error". It is the one place that mapping is made.
func ErrorKind(err error) string {
	var te *Error
	if errors.As(err, &te) && (te.Code == ErrArgFormat || te.Code == ErrArgValue) {
		return wire.KindInvalidArgs
	}
	return wire.KindTemplateError
}

func failure(err error) *wire.Object {
	return wire.Envelope(false).
		Set("error_kind", ErrorKind(err)).
		Set("message", err.Error())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
