package batch

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

// Graded batches (docs/operations.md "Graded batches"): an item may say
// what it should return (expect), tests to call (tests with entry) or a
// checker of its result (check); its result line then carries a verdict.

// The verdicts of a graded item.
const (
	// VerdictPass: the program did what the item expects.
	VerdictPass = "pass"
	// VerdictFail: the program's fault — a wrong result, a compile error,
	// a runtime error, a limit, a tested entry missing or whose signature
	// does not take a test's arguments.
	VerdictFail = "fail"
	// VerdictError: the item could not be graded — an invalid item or
	// expectation, a checker that does not compile, an infrastructure
	// outcome (worker_lost, cancelled, …).
	VerdictError = "error"
)

// GradeKind says how an item is graded.
type GradeKind uint8

// The ways of grading an item.
const (
	// GradeExpect compares main's result with Grade.Expect.
	GradeExpect GradeKind = iota + 1
	// GradeTests compares each test's result with Grade.Tests.
	GradeTests
	// GradeCheck reads the checker's answer (check_passed).
	GradeCheck
)

// Grade is what a graded item's result is judged against (Judge). The
// expectations stay here, in the batch: the job carries only what runs.
type Grade struct {
	Kind GradeKind
	// Expect is the expected result (GradeExpect), raw JSON.
	Expect json.RawMessage
	// Tests are each test's expected result (GradeTests), raw JSON.
	Tests []json.RawMessage
	// testArgs is the grade job's tests member (GradeTests, from
	// parseGrade): each test's args, a JSON array of them.
	testArgs json.RawMessage
}

// maxReasonBytes bounds a verdict_reason; maxShownValue each value it
// quotes.
const (
	maxReasonBytes = 300
	maxShownValue  = 100
)

// Bounds of the grading members, as the grade job's (tools).
const (
	maxNameBytes   = tools.MaxNameBytes
	maxSourceBytes = tools.MaxSourceBytes
	maxTests       = tools.MaxTests
)

// Judge returns the verdict of a graded item's result envelope env, and
// for anything but pass a one-line reason: "test 2: expected 9, got 3",
// "step_limit", "check returned false", "runtime_error: division by zero",
// "worker_lost". env is a result as the batch received it (masked: a
// secret in a result reads "***" and never matches an expectation).
func Judge(g *Grade, env []byte) (verdict, reason string) {
	e := readEnvelope(env)
	switch {
	case e.outcome == string(wire.OutcomeOK):
	case programFault(e.outcome):
		return VerdictFail, oneLine(failureReason(e))
	case e.outcome == string(wire.OutcomeInvalidArgs):
		return VerdictError, oneLine(e.message)
	default:
		if e.outcome == "" {
			return VerdictError, "the result has no outcome"
		}
		r := e.outcome
		if e.message != "" {
			r += ": " + e.message
		}
		return VerdictError, oneLine(r)
	}
	switch g.Kind {
	case GradeExpect:
		if e.result == nil {
			return VerdictError, "the result has no result field"
		}
		return compare(g.Expect, e.result, "")
	case GradeTests:
		tests, ok := wire.SplitArray(e.tests)
		if !ok || len(tests) != len(g.Tests) {
			return VerdictError, fmt.Sprintf("the result does not hold the results of %d tests", len(g.Tests))
		}
		for i, raw := range tests {
			t := readEnvelope(raw)
			prefix := fmt.Sprintf("test %d: ", i+1)
			if t.result == nil {
				return VerdictFail, oneLine(prefix + failureReason(t))
			}
			if v, r := compare(g.Tests[i], t.result, prefix); v != VerdictPass {
				return v, r
			}
		}
		return VerdictPass, ""
	case GradeCheck:
		switch {
		case e.checkError != "":
			return VerdictError, oneLine(e.checkError)
		case string(e.checkPassed) == "true":
			return VerdictPass, ""
		case string(e.checkPassed) == "false":
			return VerdictFail, "check returned false"
		}
		return VerdictError, "the result has no answer of the check"
	}
	return VerdictError, "unknown kind of grading"
}

// programFault reports the outcomes that are the program's fault (verdict
// fail): a compile or runtime error, a limit, a denied capability.
func programFault(outcome string) bool {
	switch wire.Outcome(outcome) {
	case wire.OutcomeCompileError, wire.OutcomeRuntimeError, wire.OutcomeStepLimit, wire.OutcomeWallLimit,
		wire.OutcomeMemoryLimit, wire.OutcomeOutputLimit, wire.OutcomePolicyDenied:
		return true
	}
	return false
}

// compare judges a result against its expectation.
func compare(want, got json.RawMessage, prefix string) (verdict, reason string) {
	eq, err := MatchResult(want, got)
	switch {
	case err != nil:
		return VerdictError, oneLine(prefix + "cannot compare: " + err.Error())
	case eq:
		return VerdictPass, ""
	}
	if !hasTagged(want) {
		got = plainOf(got)
	}
	return VerdictFail, oneLine(fmt.Sprintf("%sexpected %s, got %s", prefix, showJSON(want), showJSON(got)))
}

// hasTagged reports whether the JSON value raw holds, at any depth, a
// tagged form as MatchResult reads them (form); false for a value that
// is not valid JSON.
func hasTagged(raw json.RawMessage) bool {
	return jsonenc.Valid(raw) && hasTaggedValid(raw)
}

// hasTaggedValid is hasTagged for raw known to be valid JSON: checked
// once, at the top, its parts are not checked again.
func hasTaggedValid(raw json.RawMessage) bool {
	if elems, ok := wire.SplitValidArray(raw); ok {
		for _, e := range elems {
			if hasTaggedValid(e) {
				return true
			}
		}
		return false
	}
	_, members, ok := splitMembers(raw)
	if !ok {
		return false
	}
	if shapeOfJSON(members).form() != untagged {
		return true
	}
	for _, v := range members {
		if hasTaggedValid(v) {
			return true
		}
	}
	return false
}

// plainOf is the result raw as a fail reason shows it beside an
// expectation written in the plain form (docs/operations.md "Graded
// batches"), so that the two read alike: a record as an object of its
// field names, a variant without a payload as its name, None as null,
// Some(v) as v — as test arguments and `expect` write them. What has no
// plain spelling stays as it came: a variant with a payload (its payload
// shown plain), Some of an option. Lists and maps are shown element by
// element; raw as it is when it is not valid JSON. The tagged forms are
// told as MatchResult tells them (form).
func plainOf(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if !jsonenc.Valid(raw) {
		return raw
	}
	return plainOfValid(raw)
}

// plainOfValid is plainOf for raw known to be valid JSON, without white
// space around it: checked once, at the top, its parts are not checked
// again.
func plainOfValid(raw json.RawMessage) json.RawMessage {
	if elems, ok := wire.SplitValidArray(raw); ok {
		out := []byte{'['}
		for i, e := range elems {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, plainOfValid(e)...)
		}
		return append(out, ']')
	}
	keys, members, ok := splitMembers(raw)
	if !ok {
		return raw
	}
	s := shapeOfJSON(members)
	switch s.form() {
	case recordForm:
		if !s.fieldList {
			break // not the record encoding: as it is
		}
		fields, _ := wire.SplitValidArray(members["fields"])
		names, _ := wire.SplitValidArray(members["field_names"])
		out := []byte{'{'}
		for i := range fields {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, names[i]...)
			out = append(out, ':')
			out = append(out, plainOfValid(fields[i])...)
		}
		return append(out, '}')
	case enumForm:
		if p, ok := members["payload"]; !ok || string(p) == "null" {
			return members["variant"]
		}
	case noneForm:
		return json.RawMessage("null")
	case someForm:
		if v := members["value"]; !formOfJSON(v).isOption() {
			return plainOfValid(v)
		}
		return raw
	}
	out := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			out = append(out, ',')
		}
		kb, _ := jsonenc.Marshal(k) // a string: cannot fail
		out = append(out, kb...)
		out = append(out, ':')
		out = append(out, plainOfValid(members[k])...)
	}
	return append(out, '}')
}

// splitMembers reads the JSON object raw, known to be valid JSON (not
// checked again), as decoding reads it: its member names in the order of
// their first appearance, and each one's last value
// (wire.SplitValidObject's bytes); ok is false when raw is not an object.
func splitMembers(raw json.RawMessage) (keys []string, members map[string]json.RawMessage, ok bool) {
	members = map[string]json.RawMessage{}
	ok = wire.SplitValidObject(raw, func(key string, v json.RawMessage) {
		if _, dup := members[key]; !dup {
			keys = append(keys, key)
		}
		members[key] = v
	})
	return keys, members, ok
}

// shapeOfJSON is the shape (as shapeOf reads a decoded object) of the
// object of members, splitMembers' values.
func shapeOfJSON(members map[string]json.RawMessage) shape {
	s := shape{n: len(members)}
	wire.DecodeString(members["type"], &s.typ)
	wire.DecodeString(members["option"], &s.option)
	notNull := func(key string) bool {
		v, ok := members[key]
		return ok && string(v) != "null"
	}
	s.fields, s.variant = notNull("fields"), notNull("variant")
	fields, ok1 := wire.SplitValidArray(members["fields"])
	names, ok2 := wire.SplitValidArray(members["field_names"])
	s.fieldList = ok1 && ok2 && len(fields) == len(names)
	_, s.value = members["value"]
	return s
}

// formOfJSON is the tagged form of the JSON value raw, known to be valid
// JSON (not checked again); untagged for anything but an object.
func formOfJSON(raw json.RawMessage) form {
	_, members, ok := splitMembers(raw)
	if !ok {
		return untagged
	}
	return shapeOfJSON(members).form()
}

// failureReason is the reason of a failed run: its outcome, with the
// message for an error whose message says what went wrong
// ("runtime_error: division by zero", "compile_error: line 1:20: E003
// undefined name 'x'"); a limit is its outcome alone ("step_limit").
func failureReason(e envelope) string {
	switch wire.Outcome(e.outcome) {
	case wire.OutcomeRuntimeError, wire.OutcomePolicyDenied:
		return withDetail(e.outcome, e.message)
	case wire.OutcomeCompileError:
		return withDetail(e.outcome, e.firstError)
	case wire.OutcomeInvalidArgs:
		// A test whose arguments do not fit the entry's signature (the
		// grade job's per-test answer; a job refused whole is error).
		return e.message
	case "":
		return "no result"
	}
	return e.outcome
}

// withDetail is "outcome: detail", or the outcome alone when there is no
// detail to show.
func withDetail(outcome, detail string) string {
	if strings.TrimSpace(detail) == "" {
		return outcome
	}
	return outcome + ": " + detail
}

// oneLine makes s one line of at most maxReasonBytes (text.Clip).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return text.Clip(s, maxReasonBytes)
}

// showJSON is a value for a reason: compact, clipped.
func showJSON(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		raw = buf.Bytes()
	}
	return text.Clip(string(raw), maxShownValue)
}

// envelope holds the members of a result envelope (or of one test's
// entry) that grading reads.
type envelope struct {
	outcome, message, checkError, firstError string
	result, tests, checkPassed               json.RawMessage
}

// readEnvelope reads env's top-level members without decoding the rest.
func readEnvelope(env []byte) envelope {
	var e envelope
	wire.SplitObject(bytes.TrimSpace(env), func(key string, raw json.RawMessage) {
		switch key {
		case "outcome":
			wire.DecodeString(raw, &e.outcome)
		case "message":
			wire.DecodeString(raw, &e.message)
		case "check_error":
			wire.DecodeString(raw, &e.checkError)
		case "result":
			e.result = raw
		case "tests":
			e.tests = raw
		case "check_passed":
			e.checkPassed = raw
		case "errors":
			var errs []struct {
				Code    string `json:"code"`
				Message string `json:"message"`
				Line    int    `json:"line"`
				Col     int    `json:"col"`
			}
			if json.Unmarshal(raw, &errs) == nil && len(errs) > 0 {
				f := errs[0]
				e.firstError = f.Code + " " + f.Message
				if f.Line > 0 {
					e.firstError = fmt.Sprintf("line %d:%d: %s", f.Line, f.Col, e.firstError)
				}
			}
		}
	})
	return e
}

// EqualJSON reports whether the JSON values a and b are equal: the same
// type, strings equal after decoding, numbers equal by value (1, 1.0 and
// 1e0 are equal; compared exactly as decimals, never through float64),
// arrays element by element, objects with the same member names (in any
// order; a repeated name counts once, its last value) and equal values.
// Errors: either is not valid JSON, or nests deeper than encoding/json
// decodes.
func EqualJSON(a, b []byte) (bool, error) { return compareJSON(a, b, equalValue) }

// compareJSON decodes the expectation want and the result got (numbers
// as json.Number) and compares them with eq; bytes equal but for the
// white space around them are equal without decoding when valid.
func compareJSON(want, got []byte, eq func(want, got any) bool) (bool, error) {
	if bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
		return json.Valid(want), validErr(want)
	}
	w, err := decodeJSON(want)
	if err != nil {
		return false, fmt.Errorf("expectation: %w", err)
	}
	g, err := decodeJSON(got)
	if err != nil {
		return false, fmt.Errorf("result: %w", err)
	}
	return eq(w, g), nil
}

func validErr(a []byte) error {
	if json.Valid(a) {
		return nil
	}
	_, err := decodeJSON(a)
	return err
}

func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func equalValue(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && equalNumber(x, y)
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equalValue(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

// equalNumber compares two JSON numbers exactly by value, in time
// linear in their text (1e999999999 is not expanded).
func equalNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, y := normNumber(string(a)), normNumber(string(b))
	return x.neg == y.neg && x.digits == y.digits && x.exp.Cmp(&y.exp) == 0
}

// decimal is a number as 0.digits × 10^exp, digits without leading or
// trailing zeros; zero has no digits and is never negative.
type decimal struct {
	neg    bool
	digits string
	exp    big.Int
}

// normNumber normalises a JSON number (valid: decoded by encoding/json).
func normNumber(s string) decimal {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, _ := strings.Cut(strings.ToLower(s), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	if expText != "" {
		d.exp.SetString(strings.TrimPrefix(expText, "+"), 10)
	}
	all := intPart + frac
	lead := len(all) - len(strings.TrimLeft(all, "0"))
	digits := strings.TrimRight(all[lead:], "0")
	if digits == "" {
		return decimal{}
	}
	d.digits = digits
	// value = 0.all × 10^(len(intPart)) × 10^exp; dropping lead zeros
	// moves the point left by lead.
	d.exp.Add(&d.exp, big.NewInt(int64(len(intPart)-lead)))
	return d
}

// SeedOf is the seed a graded item without `seed` runs with: the first 63
// bits of SHA-256("axpool batch seed\x00" + id), so that reruns, resumes
// and other machines give the item the same random values, and so the
// same verdict.
func SeedOf(id string) int64 {
	sum := sha256.Sum256([]byte("axpool batch seed\x00" + id))
	return int64(binary.BigEndian.Uint64(sum[:8]) >> 1)
}

// parseGrade reads the grading members of an item (expect, tests, entry,
// check; and task): g is nil for an item without expect, tests or check;
// msg, when not "", says why the members are refused (`"tests" needs
// "entry": the function each test calls`).
func parseGrade(m map[string]json.RawMessage) (g *Grade, task, msg string) {
	str := func(name string) (string, string) {
		raw := m[name]
		if raw[0] != '"' {
			return "", fmt.Sprintf("%q must be a string, got %s", name, wire.JSONType(raw))
		}
		var s string
		wire.DecodeString(raw, &s) // valid JSON (Parse): a string decodes
		if s == "" {
			return "", fmt.Sprintf("%q must not be empty", name)
		}
		return s, ""
	}
	if raw, ok := m["task"]; ok {
		if task, msg = parseTask(raw); msg != "" {
			return nil, "", msg
		}
	}
	var kinds []string
	for _, k := range []string{"expect", "tests", "check"} {
		if _, ok := m[k]; ok {
			kinds = append(kinds, k)
		}
	}
	_, hasEntry := m["entry"]
	switch {
	case len(kinds) > 1:
		return nil, "", fmt.Sprintf(`give one of "expect", "tests" or "check", not %q and %q`, kinds[0], kinds[1])
	case hasEntry && (len(kinds) == 0 || kinds[0] != "tests"):
		return nil, "", `"entry" goes with "tests": the function each test calls`
	case len(kinds) == 0:
		return nil, task, ""
	}
	switch kinds[0] {
	case "expect":
		return &Grade{Kind: GradeExpect, Expect: m["expect"]}, task, ""
	case "check":
		src, msg := str("check")
		if msg != "" {
			return nil, "", msg
		}
		if len(src) > maxSourceBytes {
			return nil, "", fmt.Sprintf(`"check" is %d bytes, at most %d`, len(src), maxSourceBytes)
		}
		return &Grade{Kind: GradeCheck}, task, ""
	}
	if !hasEntry {
		return nil, "", `"tests" needs "entry": the function each test calls`
	}
	entry, msg := str("entry")
	if msg != "" {
		return nil, "", msg
	}
	if len(entry) > maxNameBytes {
		return nil, "", fmt.Sprintf(`"entry" is %d bytes, at most %d`, len(entry), maxNameBytes)
	}
	raw := m["tests"]
	tests, ok := wire.SplitArray(raw)
	if !ok {
		return nil, "", fmt.Sprintf(`"tests" must be an array, got %s`, wire.JSONType(raw))
	}
	switch {
	case len(tests) == 0:
		return nil, "", `"tests" is empty: give at least one {"args": [...], "expect": value}`
	case len(tests) > maxTests:
		return nil, "", fmt.Sprintf(`"tests" has %d tests, at most %d`, len(tests), maxTests)
	}
	g = &Grade{Kind: GradeTests, Tests: make([]json.RawMessage, len(tests))}
	args := make([]json.RawMessage, len(tests))
	for i, t := range tests {
		bad := func(format string, args ...any) (*Grade, string, string) {
			return nil, "", fmt.Sprintf("test %d: ", i+1) + fmt.Sprintf(format, args...)
		}
		if t[0] != '{' {
			return bad(`a test must be an object {"args": [...], "expect": value}, got %s`, wire.JSONType(t))
		}
		var expect json.RawMessage
		var unknown string
		wire.SplitObject(t, func(key string, v json.RawMessage) {
			switch key {
			case "args":
				args[i] = v
			case "expect":
				expect = v
			default:
				if unknown == "" {
					unknown = key
				}
			}
		})
		switch {
		case unknown != "":
			return bad("%s", unknownName("member", "of a test", unknown, []string{"args", "expect"}, "known members: "))
		case args[i] == nil:
			return bad(`the test has no "args"`)
		case args[i][0] != '[':
			return bad(`"args" must be an array, got %s`, wire.JSONType(args[i]))
		case expect == nil:
			return bad(`the test has no "expect"`)
		}
		g.Tests[i] = expect
	}
	g.testArgs = jobTests(args)
	return g, task, ""
}

// parseTask reads an item's `task` (raw: valid JSON): a non-empty string
// of at most maxNameBytes, or msg says why not (`"task" must not be
// empty`).
func parseTask(raw json.RawMessage) (task, msg string) {
	if raw[0] != '"' {
		return "", fmt.Sprintf("%q must be a string, got %s", "task", wire.JSONType(raw))
	}
	wire.DecodeString(raw, &task) // valid JSON (Parse): a string decodes
	switch {
	case task == "":
		return "", `"task" must not be empty`
	case len(task) > maxNameBytes:
		return "", fmt.Sprintf(`"task" is %d bytes, at most %d`, len(task), maxNameBytes)
	}
	return task, ""
}

// jobTests is the tests member of a grade job: the tests' args (valid
// JSON arrays) in an array, as json.Marshal writes them — compacted, with
// <, >, &, U+2028 and U+2029 escaped, so that the job and its run_digest
// stay what they were. Args without those bytes or white space are
// appended as they are, without json.Marshal's reflection.
func jobTests(args []json.RawMessage) json.RawMessage {
	size := 2
	for _, a := range args {
		size += len(a) + 1
		if bytes.ContainsAny(a, "<>&\u2028\u2029 \t\n\r") {
			b, _ := json.Marshal(args) // raw JSON values
			return b
		}
	}
	out := append(make([]byte, 0, size), '[')
	for i, a := range args {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, a...)
	}
	return append(out, ']')
}

// RunDigest is the SHA-256 (lower-case hex) of what a graded item runs —
// its call normalised as the result cache compares calls
// (tools.Args.Digest: the source, policy, limits, seed, the tests'
// arguments, the checker), or its script and arguments — without its
// expectations: --regrade compares it with the line's run_digest to know
// that a saved result is the result of this item. "" for a malformed item.
func RunDigest(it *Item) string {
	switch {
	case it.Malformed():
		return ""
	case it.Call != nil:
		return it.Call.Digest()
	}
	b, _ := json.Marshal(struct {
		Script string          `json:"script"`
		Args   json.RawMessage `json:"args"`
	}{it.Tool, it.Args})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FailureOf is why a result envelope that is not ok failed, one line, as
// a verdict_reason says it ("compile_error: line 1:20: E003 undefined
// name 'x'", "runtime_error: division by zero", "step_limit",
// "worker_lost: …"): what --fail-fast says of an ungraded item that
// stopped the batch.
func FailureOf(env []byte) string {
	e := readEnvelope(env)
	if programFault(e.outcome) {
		return oneLine(failureReason(e))
	}
	return oneLine(withDetail(e.outcome, e.message))
}
