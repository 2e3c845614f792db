package scripts

import (
	"encoding/json"
	"fmt"

	"github.com/axpool/axpool/tools/typed"
)

// ArgError is a script call refused before anything runs (docs/scripts.md
// "Calls"). It is answered with a success:false result,
// error_kind and outcome "invalid_args" (never a JSON-RPC error), so the
// agent reads the message in its context.
type ArgError struct {
	// Script is the script's name; Param the offending argument's path
	// ("env", "tags[2]", "target.host"; "" when the arguments are not an
	// object).
	Script, Param string
	// Msg is the complete message.
	Msg string
}

// Error returns the message.
func (e *ArgError) Error() string { return e.Msg }

// CheckArgs checks the arguments of a call to s against main's parameter
// types (the one checker of MCP calls and `axpool script run`) and returns
// them normalised: a compact JSON object without null members (null means
// absent, docs/tools.md §1), integers written in plain decimal (1e3 →
// 1000). Absent or null arguments are {}.
//
// Of several problems the first unknown argument is reported, else the
// first invalid value (in member order), else the first missing one:
//
//	unknown argument "enve" for script "deploy" (did you mean "env"?)
//	script "deploy": invalid value "qa" for parameter "env" (allowed values: "Staging", "Prod")
//	script "deploy": invalid value "x" for parameter "replicas" (expected an integer)
//	script "deploy" is missing required argument "env"
//
// with list elements named "tags[2]" and record fields "target.host".
func (s *Script) CheckArgs(raw json.RawMessage) (json.RawMessage, *ArgError) {
	return checkArgs(s.Name, s.Params, raw)
}

func checkArgs(script string, params []*Param, raw json.RawMessage) (json.RawMessage, *ArgError) {
	out, err := typed.CheckObject(fmt.Sprintf("script %q", script), fields(params), raw)
	if err != nil {
		return nil, &ArgError{Script: script, Param: err.Param, Msg: err.Msg}
	}
	return out, nil
}

// fields are params as typed.Fields.
func fields(params []*Param) []typed.Field {
	out := make([]typed.Field, len(params))
	for i, p := range params {
		out[i] = typed.Field{Name: p.Name, Type: p.Type}
	}
	return out
}

// maxShownValue bounds the bytes of a name or value quoted in a message.
const maxShownValue = 64
