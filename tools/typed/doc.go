// Package typed is the one table of the parameter types that have a JSON
// form (docs/scripts.md "Parameters and the input schema"): a function's
// parameter types as Types (Converter.TypeOf), their JSON Schema
// (Type.Schema), the check of JSON arguments against them with messages
// that name the parameter, the value and the accepted set (CheckObject),
// and their conversion to .ax values (Values) — never by pasting text into
// source. Named scripts (package scripts) convert main's arguments with
// it; graded batch items (tools' grade job) convert the arguments of the
// function their tests call.
//
// It knows nothing of jobs, NATS or MCP.
//
// Imports: compiler, internal/spell, internal/text, vm and wire.
package typed
