package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// Tools are the tools an item may name with `tool` (docs/tools.md §7);
// DefaultTool is the one an item without `tool` runs.
var Tools = []string{"boruna_run", "boruna_check", "boruna_compile"}

// DefaultTool is the tool of an item without `tool`.
const DefaultTool = "boruna_run"

// Item is one batch item, checked (Parse): the call it stands for, or why
// it is malformed.
type Item struct {
	// ID is the item's id ("" when a malformed item has none that could be
	// read).
	ID string
	// Pos is the item's position, 1-based: its line in a JSONL file, its
	// index + 1 in axpool_batch's items.
	Pos int
	// Tool and Args are the call: the tool's name and its arguments (a
	// JSON object: the item's members other than id and tool, as
	// tools.CheckArgs returned them). For a
	// script item (Script) Tool is the script's name and Args its `args`
	// ({} when absent).
	Tool string
	Args json.RawMessage
	// Call is a tool item's call as tools.CheckMembers checked it (nil for a
	// script item or a malformed one): run it without checking it again.
	Call *tools.Args
	// Script reports a script item: {id, script, args}, a call of a named
	// script (docs/scripts.md), run by Options.Script.
	Script bool
	// Err, when not nil, is the item's result: it is malformed (not an
	// object, no id, an unknown member, …) and is never run. The envelope
	// is wire.InvalidArgs (error_kind invalid_args) with the position in
	// its message.
	Err *wire.Object
	// Grade, when not nil, is how the item is graded (expect, tests or
	// check): its result gets a verdict (Judge). A malformed item that has
	// one of those members is graded too (verdict error).
	Grade *Grade
	// Task is the item's `task` ("" when none: a task of its own).
	Task string
	// Answer, when not nil, is the envelope of the item's call, found
	// before Run reached it (dispatch answers the items of a chunk that
	// the result cache holds with one lookup): Run hands it over as the
	// item's result without calling.
	Answer json.RawMessage
}

// Graded reports whether the item's result gets a verdict.
func (it *Item) Graded() bool { return it.Grade != nil }

// Malformed reports whether the item is refused without running.
func (it *Item) Malformed() bool { return it.Err != nil }

// itemMembers are the names of BatchItemParams, for "did you mean".
var itemMembers = func() []string {
	names := make([]string, len(tools.BatchItemParams))
	for i, p := range tools.BatchItemParams {
		names[i] = p.Name
	}
	return names
}()

// ScriptsUnavailable is the result message of a script item given to a
// Run without Options.Script.
const ScriptsUnavailable = "script items cannot run here: no named scripts"

// scriptMembers are the members a script item may have.
var scriptMembers = map[string]bool{"id": true, "script": true, "args": true, "expect": true, "task": true}

// gradeMembers are the members that say how an item is graded, and task;
// they are the batch's, never passed to the tool.
var gradeMembers = map[string]bool{"expect": true, "tests": true, "entry": true, "check": true, "task": true}

// MaxLineBytes is the longest item `axpool batch` reads from one line of
// its input, in bytes without the newline: 8 MiB, the most one MCP
// message may take (gateway.MaxMessageBytes), so an item that fits on a
// line also fits in an axpool_batch call. A longer line is skipped
// without being held in memory and answered with TooLong.
const MaxLineBytes = 8 << 20

// TooLong is the malformed item at position pos whose raw JSON is n
// bytes, over MaxLineBytes: `line 3: the line is 104857600 bytes, at most
// 8388608 (8 MiB)`. where is as for Parse.
func TooLong(pos int, n int64, where string) Item {
	return Item{Pos: pos, Err: wire.InvalidArgs(wire.KindInvalidArgs,
		fmt.Sprintf("%s %d: the %s is %d bytes, at most %d (8 MiB)", where, pos, where, n, MaxLineBytes))}
}

// maxShownID is the longest id a message quotes whole.
const maxShownID = 128

// Parse checks one item, raw JSON (a JSONL line without its newline, or
// an element of axpool_batch's items) at position pos, and returns it.
// where names the position in messages: "line" or "item". A malformed
// item's Err says what is wrong, e.g. `line 3: the item has no "id"`.
// Duplicate ids are the caller's to find (Seen).
func Parse(raw []byte, pos int, where string) (out Item) {
	it := Item{Pos: pos}
	bad := func(format string, args ...any) Item {
		it.Err = wire.InvalidArgs(wire.KindInvalidArgs, fmt.Sprintf("%s %d: ", where, pos)+fmt.Sprintf(format, args...))
		return it
	}
	graded := false // a member that grades the item was seen
	var rawTask json.RawMessage
	defer func() {
		if graded && out.Grade == nil {
			out.Grade = &Grade{} // malformed: graded, verdict error
		}
		// A malformed item keeps a valid task, whatever was refused
		// before it was read: it is still a sample of its task.
		if out.Task == "" && rawTask != nil {
			out.Task, _ = parseTask(rawTask)
		}
	}()
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return bad("empty line: want a JSON object")
	}
	// wire.ParseObject's object, read by SplitObject, which checks raw
	// once: it fails on anything but one valid JSON object.
	obj := wire.NewObjectSize(8)
	if raw[0] != '{' || !wire.SplitObject(raw, func(k string, v json.RawMessage) { obj.Set(k, v) }) {
		if !jsonenc.Valid(raw) {
			var v any
			err := json.Unmarshal(raw, &v)
			return bad("not valid JSON: %s", text.Clip(err.Error(), 200))
		}
		return bad("an item must be a JSON object, got %s", wire.JSONType(raw))
	}
	var err error
	// The id first, so that every other refusal can name it.
	if v, ok := obj.Get("id"); ok {
		rawID := v.(json.RawMessage)
		if rawID[0] != '"' {
			return bad(`"id" must be a string, got %s`, wire.JSONType(rawID))
		}
		id, _ := stringOf(rawID, "") // valid JSON: a string decodes
		if id == "" {
			return bad(`"id" must not be empty`)
		}
		// Matched byte for byte against its result: an id that would not
		// decode to itself is refused rather than echoed altered.
		if problem := tools.ExactString(rawID); problem != "" {
			return bad(`"id" must be a string of valid UTF-8, got %s (it would be read as U+FFFD)`, problem)
		}
		if len(id) > tools.MaxNameBytes {
			return bad(`"id" is %d bytes, at most %d`, len(id), tools.MaxNameBytes)
		}
		it.ID = id
	} else {
		return bad(`the item has no "id"`)
	}
	tool := DefaultTool
	var hasSource, hasScript, hasArgs, hasTool bool
	var script string
	var scriptArgs json.RawMessage
	// The first member a script item may not have ("" when none: a
	// member named "" is refused as unknown before any script is read).
	other := ""
	args := wire.NewObjectSize(obj.Len())
	grading := map[string]json.RawMessage{}
	for k := range obj.All() {
		if gradeMembers[k] && k != "task" {
			graded = true
		}
	}
	if v, ok := obj.Get("task"); ok {
		rawTask = v.(json.RawMessage)
	}
	for k, v := range obj.All() {
		raw := v.(json.RawMessage)
		switch {
		case gradeMembers[k]:
			grading[k] = raw
			if !scriptMembers[k] && other == "" {
				other = k
			}
			continue
		}
		switch k {
		case "id":
			continue
		case "tool":
			if tool, err = stringOf(raw, tool); err != nil {
				return bad(`"tool" must be a string, got %s`, wire.JSONType(raw))
			}
			hasTool = true
			continue
		case "script":
			hasScript = true
			if script, err = stringOf(raw, script); err != nil {
				return bad(`"script" must be a string, got %s`, wire.JSONType(raw))
			}
		case "args":
			hasArgs = true
			if string(raw) != "null" {
				if raw[0] != '{' {
					return bad(`"args" must be an object, got %s`, wire.JSONType(raw))
				}
				scriptArgs = raw
			}
		case "source":
			hasSource = true
		}
		if !scriptMembers[k] && other == "" {
			other = k
		}
		if findParam(k) == nil {
			return bad("%s", unknownName("member", "of a batch item", k, itemMembers, "known members: "))
		}
		args.Set(k, raw)
	}
	g, task, msg := parseGrade(grading)
	if msg != "" {
		return bad("%s", msg)
	}
	it.Task = task
	switch {
	case hasScript && hasSource:
		return bad(`give "source" or "script", not both`)
	case hasScript:
		it.Grade = g
		return parseScript(it, script, scriptArgs, hasTool, other, bad)
	case hasArgs:
		return bad(`"args" goes with "script"; a source item takes the tool's arguments as members`)
	case !hasSource:
		return bad(`the item has no "source" (or "script")`)
	}
	known := false
	for _, t := range Tools {
		known = known || t == tool
	}
	if !known {
		return bad("%s", unknownName("tool", "for a batch item", tool, Tools, "want "))
	}
	it.Tool = tool
	if g != nil {
		if tool != DefaultTool {
			return bad(`a graded item runs its program: "tool" must be %s, got %q`, DefaultTool, text.Clip(tool, maxShownID))
		}
		// Deterministic verdicts: the same random values on every run. A
		// null seed is none (docs/tools.md §1), not a fresh one each run.
		if v, ok := args.Get("seed"); !ok || string(v.(json.RawMessage)) == "null" {
			args.Set("seed", SeedOf(it.ID))
		}
		if g.Kind != GradeExpect {
			tool = tools.GradeKind
			for _, k := range []string{"entry", "tests", "check"} {
				if v, ok := grading[k]; ok {
					if k == "tests" {
						v = g.testArgs
					}
					args.Set(k, v)
				}
			}
		}
	}
	// The item's members other than id make the arguments, checked as
	// they are, not encoded and parsed again (tools.CheckMembers): the
	// tool's own check (a mistyped or unknown argument, a source over
	// 1 MB), refused here, so that its result carries the position like
	// every other malformed item (docs/tools.md §7).
	call, err := tools.CheckMembers(tool, args)
	if err != nil && !errors.As(err, new(*tools.ArgError)) {
		return bad("%v", err) // raw JSON values only: cannot happen
	}
	if err != nil && tool == tools.GradeKind {
		// The refusal as the item's tool would word it: the grading
		// members were checked by parseGrade.
		plain := args
		for _, k := range []string{"entry", "tests", "check"} {
			plain.Delete(k)
		}
		if _, perr := tools.CheckMembers(DefaultTool, plain); perr != nil && errors.As(perr, new(*tools.ArgError)) {
			err = perr
		}
	}
	if err != nil {
		kind := wire.KindInvalidArgs
		var ae *tools.ArgError
		if errors.As(err, &ae) {
			kind = ae.ErrorKind()
		}
		it.Err = wire.InvalidArgs(kind, fmt.Sprintf("%s %d: %v", where, pos, err))
		return it
	}
	it.Tool, it.Args, it.Call, it.Grade = tool, call.JSON(), call, g
	return it
}

// unknownName is the message for name, which is none of known: `unknown
// <what> "name" <where>` with "did you mean" when one of known is near,
// else with the list after intro: `(known members: id, tool, …)`.
func unknownName(what, where, name string, known []string, intro string) string {
	msg := fmt.Sprintf("unknown %s %q %s", what, text.Clip(name, maxShownID), where)
	if s, ok := spell.Nearest(name, known); ok {
		return msg + fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg + " (" + intro + strings.Join(known, ", ") + ")"
}

// parseScript finishes a script item: {id, script, args}. A script runs
// under its own declared capabilities and directives (docs/scripts.md),
// so the members of a source item other than id are refused.
func parseScript(it Item, name string, args json.RawMessage, hasTool bool, other string, bad func(string, ...any) Item) Item {
	switch {
	case name == "":
		return bad(`"script" must not be empty`)
	case len(name) > tools.MaxNameBytes:
		return bad(`"script" is %d bytes, at most %d`, len(name), tools.MaxNameBytes)
	case hasTool:
		return bad(`"tool" does not go with "script": a script item runs the named script`)
	case other != "":
		return bad(`%q does not go with "script": a script runs with its declared capabilities and directives (docs/scripts.md); a script item has only id, script, args, expect and task`, other)
	}
	if _, ok := tools.SpecOf(name); ok {
		return bad(`%q is a tool, not a script: give it as "tool" with "source"`, text.Clip(name, maxShownID))
	}
	if it.Grade != nil && it.Grade.Kind != GradeExpect {
		return bad(`a script item is graded with "expect" only`)
	}
	if args == nil {
		args = json.RawMessage(`{}`)
	}
	it.Tool, it.Args, it.Script = name, args, true
	return it
}

// stringOf is what json.Unmarshal of raw (valid JSON) into a string
// holding was leaves in it — raw's string, was for null (absent,
// docs/tools.md §1) — without a variable of its own on the heap per call;
// an error for anything but a string or null.
func stringOf(raw []byte, was string) (string, error) {
	if s, ok := wire.PlainString(raw); ok {
		return s, nil
	}
	s := was
	err := json.Unmarshal(raw, &s)
	return s, err
}

func findParam(name string) *tools.Param {
	for i := range tools.BatchItemParams {
		if tools.BatchItemParams[i].Name == name {
			return &tools.BatchItemParams[i]
		}
	}
	return nil
}

// Refuse makes it, a script item its script refused before running (an
// unknown script, arguments that do not fit the script's parameters),
// malformed like an item Parse refuses (docs/tools.md §7): env, the
// refusal's envelope (a JSON object with a message), gets the position
// at the start of its message (`item 3: unknown script "dploy" (did you
// mean "deploy"?)`) and becomes it.Err, so that the result carries the
// position field (Line) and a graded item is an error for that reason.
// It returns the new envelope, for a Call to return; env unchanged when
// it is no object.
func Refuse(it *Item, env json.RawMessage, where string) json.RawMessage {
	o, err := wire.ParseObject(env)
	if err != nil {
		return env
	}
	var msg string
	if v, ok := o.Get("message"); ok {
		wire.DecodeString(v.(json.RawMessage), &msg)
	}
	o.Set("message", fmt.Sprintf("%s %d: %s", where, it.Pos, msg))
	b, err := o.MarshalJSON()
	if err != nil {
		return env
	}
	it.Err = o
	return b
}
