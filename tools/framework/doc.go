// Package framework implements the App protocol (Elm-style init / update /
// view, reference/tooling-reference-impl.md §2) on top of the compiler's
// typed program and the VM: the static protocol check behind
// `boruna_validate_app`, the message-driven runtime behind
// `boruna_framework_test`, and the tool-level functions that return their
// complete responses (ValidateAppTool, FrameworkTestTool).
//
// # Protocol
//
// An App declares, in the user's file:
//
//	fn init() -> S                           any capabilities (run with allow-all, mock handler)
//	fn update(state: S, msg: M) -> U         pure: no capability annotation
//	fn view(state: S) -> T                   pure
//	fn policies() -> P                       optional, pure
//
// where U is a record whose first field is the new state (type S) and whose
// second field is List<E>, E being an effect record whose first field is
// the kind (String) and third the callback tag (String); M is a record of
// exactly two fields, a String tag and a payload of type String or Int; P
// is a record whose first field is List<String> (capability names),
// second (optional) Int max effects per cycle (0 = unlimited) and third
// (optional) Int max steps per update/view call. Type and field names do
// not matter, positions and types do. Check reports every violation with
// its position; ValidateAppTool answers them as `valid:false` with
// `errors` (docs/tools.md §2), never as a failure.
//
// # Decisions (docs/tools.md §2 over the reference notes)
//
//   - validate_app type-checks and compiles the program (compile errors use
//     the compile `errors` shape) and checks the types above; the
//     reference only parsed and checked arities, so `fn init() -> Int { x }`
//     was "valid" there and is a compile error here (tooling §6 item 8).
//   - state_type / message_type are the types of init's result and of
//     update's message parameter, not the last type whose name ends in
//     State / Msg.
//   - Messages (reference §2.3): the string is trimmed; the tag is the text
//     before the first ':' (not trimmed again), the payload the rest,
//     trimmed. The payload is given the type the program declares: for a
//     String payload the text itself ("" without ':'); for an Int payload a
//     base-10 i64 (0 without ':'), any other text failing the cycle with
//     `invalid message: …`. The message value is a real record of the
//     program's message type (tooling §6 item 9).
//   - The update result is read by position from a statically checked
//     record, so the reference's "update returned the state itself" case
//     (tooling §6 item 10) is a validation error, not a runtime surprise.
//   - Brief encoding is vm.EncodeBrief: records as arrays of their fields,
//     None as "None", Some/Ok/Err tagged ({"Some":v}) wherever they come
//     from (tooling §6 item 11, docs/tools.md §2).
//   - Effects (tooling §6 item 12) are counted, policed and never run.
//     Effects of an unknown kind are not counted or policed (as in the
//     reference) but listed in the cycle's additive `unknown_effects`, so a
//     misspelt kind is visible. policies() capability names must be
//     canonical: an alias or unknown name fails the test with a hint
//     instead of silently denying every effect. A negative max_effects or
//     max_steps is refused. max_steps, when positive, bounds each update()
//     and view() call (the reference ignored it); every call is also
//     bounded by the run's step limit (10,000,000 by default).
//   - At most MaxCycles messages; a longer list is refused before anything
//     runs. The cycles of one response hold at most MaxResponseBytes of
//     encoded values.
//   - Every VM call runs under a policy (allow-all for init, deny-all for
//     policies, update and view) intersected with the operator's ceiling
//     policy when Options.Ceiling is set (docs/tools.md §3), so init() and
//     the actors it spawns can use only what the operator allows.
//
// framework shares the compile-errors shape and the run-failure outcomes
// with boruna_run through tools/toolwire; it knows nothing of NATS or MCP.
//
// Imports: compiler, compiler/syntax, internal/text, policy,
// tools/toolwire, vm and wire.
package framework
