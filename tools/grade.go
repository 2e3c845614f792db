package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/policy"
	"github.com/axpool/axpool/tools/toolwire"
	"github.com/axpool/axpool/tools/typed"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// GradeKind is the job kind (queue.Job.Tool) of a graded batch item whose
// grading needs the program's functions (docs/operations.md "Graded
// batches"): `tests` with `entry` (call a function with typed arguments,
// as a named script's main is called) or `check` (call a checker on main's
// result). It is no MCP tool: SpecOf and Names do not list it, and only
// package batch makes its calls. Its expectations never travel in the
// job: the worker returns what ran (each test's result, the checker's
// answer) and the batch compares, so a cached run serves any expectation.
const GradeKind = "grade"

// MaxTests is the most tests one graded item may carry.
const MaxTests = 1000

// gradeSpec is the spec of GradeKind: boruna_run's source, policy and
// limits, with what to call instead of (tests) or after (check) main.
var gradeSpec = ToolSpec{
	Name: GradeKind, Title: "Run a graded batch item", Executes: true, RunsProgram: true, Cacheable: true,
	Params: []Param{
		sourceParam, policyParam, maxStepsParam, maxWallParam, limitsParam, seedParam,
		{Name: "entry", Type: ParamString, MaxBytes: MaxNameBytes, Description: "The function each test calls."},
		{Name: "tests", Type: ParamItems, MaxItems: MaxTests, Description: "Each test's arguments: an array of JSON values, one per parameter of entry."},
		{Name: "check", Type: ParamString, Source: true, Description: ".ax source defining fn check(result: T) -> Bool, T being main's return type."},
		idempotencyParam,
	},
}

// gradeTool runs a GradeKind job. With tests and entry it compiles the
// source (main is not required), converts each test's arguments to the
// parameter types of entry exactly as a named script's arguments are
// converted (tools/typed), and calls entry once per test:
//
//	{"success":true,"protocol_version":1,"tests":[{"result":9,"steps":12},
//	 {"outcome":"runtime_error","message":"division by zero","steps":4}],"steps":16,"outcome":"ok","retryable":false}
//
// With check it runs main as boruna_run does and then check(result) on the
// program compiled together with the checker, adding check_passed (true or
// false) or check_error (one line) before outcome.
//
// A test whose arguments do not fit entry's signature (`function "add"
// takes 2 arguments, got 3`, `function "add": invalid value "x" for
// parameter "b" (expected an integer)`, or a parameter type without a
// JSON form) does not run: its entry is {"outcome":"invalid_args",
// "message":…,"steps":0} — the signature is the program's, so the batch
// grades it fail.
//
// max_steps bounds each run (each test, main, the checker) on its own;
// max_wall_ms bounds the whole job. The program's faults are boruna_run's
// failures (compile errors, MISSING_MAIN; a missing entry is the compile
// error MISSING_ENTRY); tests whose arguments are no array, or a checker
// that cannot be used, are invalid_args (`test 2: the arguments must be
// an array, got object`, `check does not compile: line 1:20: E003 …`),
// outcome invalid_args.
func gradeTool(ctx context.Context, env *Env, a *args, progress ProgressFunc) *wire.Object {
	lim := effectiveLimits(env, a)
	pol, err := policy.ParseRunArg(a.raw("policy"))
	if err != nil {
		return PolicyFailure(err)
	}
	g := &grader{env: env, a: a, lim: lim, pol: pol, start: time.Now(), progress: progress}
	switch {
	case a.has("tests") && a.has("entry"):
		return g.tests(ctx)
	case a.has("check"):
		return g.check(ctx)
	}
	return wire.InvalidArgs(wire.KindInvalidArgs, "a grade job needs tests with entry, or check")
}

// grader holds one grade job's settings.
type grader struct {
	env      *Env
	a        *args
	lim      runLimits
	pol      *policy.Policy
	start    time.Time
	progress ProgressFunc
	steps    int64 // steps of the runs so far, for progress
}

// run runs fn of m with args under the job's limits (the wall-clock
// budget what is left of the job's), as runMain does.
func (g *grader) run(ctx context.Context, m *vm.Module, fn string, args []vm.Value, pol *policy.Policy, value *vm.Value) (*wire.Object, int64) {
	lim := g.lim
	if lim.hasWall {
		left := lim.wallMs - time.Since(g.start).Milliseconds()
		lim.wallMs = max(left, 0)
	}
	var progress ProgressFunc
	if g.progress != nil {
		base := g.steps
		progress = func(steps, total int64) { g.progress(base+steps, total) }
	}
	o, _, steps := runMain(ctx, g.env, m, mainRun{args: args, policy: pol, lim: lim, seed: seedArg(g.a),
		effects: &g.a.effects, entry: fn, value: value}, progress)
	g.steps += max(steps, 0)
	return o, steps
}

// tests runs each test of the job (gradeTool).
func (g *grader) tests(ctx context.Context) *wire.Object {
	entry := g.a.str("entry", "")
	tests, ok := wire.SplitArray(g.a.raw("tests"))
	if !ok { // an array: checked
		return wire.InvalidArgs(wire.KindInvalidArgs, "tests: not a JSON array")
	}
	p := compiler.AnalyzeRecycled([]byte(g.a.str("source", "")), compiler.Options{File: SourceFile, LibsDir: g.env.LibsDir})
	defer p.Recycle()
	if errs := p.Errors(); errs != nil {
		return toolwire.CompileFailure(errs, g.env.LibsDir)
	}
	fn := p.Func(entry)
	if fn == nil {
		return missingEntry(entry)
	}
	conv := typed.NewConverter(entry, "a parameter of a tested function")
	params := make([]typed.Field, len(fn.Params))
	// signature says why no test can call entry (a parameter type without
	// a JSON form): the program's choice, so each test's failure.
	signature := ""
	for i, t := range fn.Params {
		tt, err := conv.TypeOf(t, fn.ParamNames[i])
		if err != nil {
			signature = fmt.Sprintf("entry %q: %v", clipName(entry), err)
			break
		}
		params[i] = typed.Field{Name: fn.ParamNames[i], Type: tt}
	}
	m, errs := p.Compile()
	p.Recycle() // what follows needs only m and params
	if errs != nil {
		return toolwire.CompileFailure(errs, g.env.LibsDir)
	}
	// Every test's arguments are checked before any runs: arguments that
	// are no array make the item ungradable, whatever the others do. A
	// test whose arguments do not fit entry's signature (their number or
	// a type) is that test's failure, as the program chose the signature.
	subject := fmt.Sprintf("function %q", clipName(entry))
	values := make([][]vm.Value, len(tests))
	unfit := make([]string, len(tests))
	for i, raw := range tests {
		if len(raw) == 0 || raw[0] != '[' {
			return wire.InvalidArgs(wire.KindInvalidArgs, fmt.Sprintf("test %d: the arguments must be an array, got %s", i+1, wire.JSONType(raw)))
		}
		if signature != "" {
			unfit[i] = signature
			continue
		}
		values[i], unfit[i] = testArgs(m, subject, params, raw)
	}
	results := make([]*wire.Object, len(tests))
	var total, size int64
	budget := g.env.maxResponse()
	for i := range tests {
		if unfit[i] != "" {
			r := wire.NewObject().Set("outcome", wire.OutcomeInvalidArgs).Set("message", toolwire.ClipMessage(unfit[i])).Set("steps", 0)
			if b, err := r.MarshalJSON(); err == nil {
				size += int64(len(b))
			}
			results[i] = r
			continue
		}
		var v vm.Value
		o, steps := g.run(ctx, m, entry, values[i], g.pol, &v)
		total += max(steps, 0)
		out, _ := o.Get("outcome")
		if out == wire.OutcomeCancelled {
			return o
		}
		r := wire.NewObject()
		if out == wire.OutcomeOK {
			res, _ := o.Get("result")
			r.Set("result", res)
		} else {
			r.Set("outcome", out)
			if lk, ok := o.Get("limit_kind"); ok {
				r.Set("limit_kind", lk)
			}
			msg, _ := o.Get("message")
			r.Set("message", msg)
		}
		r.Set("steps", steps)
		if b, err := r.MarshalJSON(); err == nil {
			size += int64(len(b))
		}
		if budget > 0 && size > budget {
			e := &toolwire.OutputError{Limit: budget, Steps: total,
				Msg: fmt.Sprintf("the results of tests 1 to %d take more than %d bytes (the largest response the queue carries)", i+1, budget)}
			return runFailure(g.env, e, toolwire.HandlerFacts{})
		}
		results[i] = r
	}
	return wire.WithOutcome(wire.Envelope(true).Set("tests", results).Set("steps", total), wire.OutcomeOK)
}

// testArgs converts one test's arguments (raw: a JSON array, one value per
// parameter) to values of m, or says why they do not fit the signature:
// `function "add" takes 2 arguments, got 3`, or typed.CheckObject's
// message.
func testArgs(m *vm.Module, subject string, params []typed.Field, raw json.RawMessage) ([]vm.Value, string) {
	list, ok := wire.SplitArray(raw)
	if !ok { // an array: checked
		return nil, "the arguments must be an array"
	}
	if len(list) != len(params) {
		return nil, fmt.Sprintf("%s takes %d %s, got %d", subject, len(params), plural(len(params), "argument"), len(list))
	}
	obj := wire.NewObject()
	for i, p := range params {
		obj.Set(p.Name, list[i])
	}
	b, err := obj.MarshalJSON()
	if err != nil {
		return nil, err.Error() // raw JSON values: cannot happen
	}
	checked, aerr := typed.CheckObject(subject, params, b)
	if aerr != nil {
		return nil, aerr.Msg
	}
	vals, verr := typed.Values(m, params, checked)
	if verr != nil {
		return nil, verr.Error()
	}
	return vals, ""
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// clipName is a function name for a message.
func clipName(s string) string { return strings.ToValidUTF8(s[:min(len(s), maxQuotedArgName)], "") }

// CodeMissingEntry is the diagnostic code of a graded item whose `entry`
// names no function of its source.
const CodeMissingEntry = "MISSING_ENTRY"

// missingEntry is the compile-errors response of a tested program without
// the function its tests call.
func missingEntry(entry string) *wire.Object {
	e := wire.NewObject().Set("severity", compiler.SeverityError).Set("code", CodeMissingEntry).
		Set("message", fmt.Sprintf("no function %q to test (the item's entry)", clipName(entry))).
		Set("line", 1).Set("col", 1)
	return wire.WithOutcome(wire.Envelope(false).Set("errors", []*wire.Object{e}), wire.OutcomeCompileError)
}

// CheckFile names a graded item's checker in the positions of its
// compile errors (compiler.Options.CheckerFile).
const CheckFile = "check.ax"

// check runs main, then the checker on its result (gradeTool).
//
// The checker is compiled with the program as a second file
// (compiler.Options.Checker): it sees the program's functions and types,
// so T may be any of the program's types, and its own declarations
// shadow the program's, so a checker shared by many samples never clashes
// with what a sample happened to name its functions (its `check`
// included). The program does not see the checker: an error in the
// program's file is the program's own, reported as boruna_run would
// (compileProgram), and so is a missing main.
func (g *grader) check(ctx context.Context) *wire.Object {
	src, chk := g.a.str("source", ""), g.a.str("check", "")
	p := compiler.AnalyzeRecycled([]byte(src), compiler.Options{File: SourceFile, LibsDir: g.env.LibsDir, Script: true,
		Checker: []byte(chk), CheckerFile: CheckFile})
	defer p.Recycle()
	errs := p.Errors()
	programFault := p.Func("main") == nil
	for _, e := range errs {
		programFault = programFault || e.File != CheckFile
	}
	if programFault {
		if failed := g.compileProgram(src); failed != nil {
			return failed
		}
	}
	if errs != nil {
		return invalidCheck(checkCompileMessage(errs, g.env.LibsDir))
	}
	fn, main := p.CheckerFunc("check"), p.Func("main")
	if fn == nil {
		return invalidCheck(noCheckMessage(p.CheckerFunctions))
	}
	want := "fn check(result: " + main.Result.String() + ") -> Bool"
	if len(fn.Params) != 1 || fn.Params[0].String() != main.Result.String() || fn.Result.String() != "Bool" {
		return invalidCheck(fmt.Sprintf("check must be `%s` (main returns %s), got `%s`", want, main.Result.String(), fn.Signature()))
	}
	entry := fn.Entry
	cm, errs := p.Compile()
	p.Recycle() // cm is all that is needed now
	if errs != nil {
		// Code generation found what analysis did not (a limit): the
		// program's fault when the program alone fails too.
		if failed := g.compileProgram(src); failed != nil {
			return failed
		}
		return invalidCheck(checkCompileMessage(errs, g.env.LibsDir))
	}
	var result vm.Value
	o, _ := g.run(ctx, cm, "", nil, g.pol, &result)
	if out, _ := o.Get("outcome"); out != wire.OutcomeOK {
		return o
	}
	// The checker may not reach outside the VM: deny-all.
	co, _ := g.run(ctx, cm, entry, []vm.Value{result}, policy.DenyAll(), nil)
	switch out, _ := co.Get("outcome"); out {
	case wire.OutcomeOK:
		r, _ := co.Get("result")
		setBeforeOutcome(o, "check_passed", json.RawMessage(r.(json.RawMessage)))
	case wire.OutcomeCancelled:
		return co
	default:
		msg, _ := co.Get("message")
		line := fmt.Sprintf("check failed: %v: %v", out, msg)
		if lk, ok := co.Get("limit_kind"); ok {
			line = fmt.Sprintf("check failed: %v (%v)", out, lk)
		}
		setBeforeOutcome(o, "check_error", toolwire.ClipMessage(line))
	}
	return o
}

// compileProgram compiles a checked item's program on its own, as
// boruna_run would: its compile errors or MISSING_MAIN, or nil when it
// compiles and has main.
func (g *grader) compileProgram(src string) *wire.Object {
	m, failed := compileSource(g.env, src, "module", true)
	if failed != nil {
		return failed
	}
	if m.Entry < 0 {
		return toolwire.MissingMain()
	}
	return nil
}

// checkCompileMessage is the one line of a checker that does not compile:
// its first error in the checker's own file, at the checker's line:col
// ("check does not compile: line 2:13: E003 undefined name 'nope'"), else
// the first error anywhere, with its file when it is not the checker's.
func checkCompileMessage(errs compiler.ErrorList, libsDir string) string {
	e := errs[0]
	for _, x := range errs {
		if x.File == CheckFile {
			e = x
			break
		}
	}
	where := ""
	switch {
	case !e.Pos.IsValid():
	case e.File == CheckFile:
		where = fmt.Sprintf("line %d:%d: ", e.Pos.Line, e.Pos.Col)
	case e.File == SourceFile:
		where = fmt.Sprintf("program line %d:%d: ", e.Pos.Line, e.Pos.Col)
	default:
		where = fmt.Sprintf("%s:%d:%d: ", toolwire.DisplayFile(libsDir, e.File), e.Pos.Line, e.Pos.Col)
	}
	return toolwire.ClipMessage("check does not compile: " + where + e.Code + " " + e.Msg)
}

// noCheckMessage is the answer of a checker without `check`, naming the
// nearest of its functions when one is clearly nearest
// ("check defines no function `check` (did you mean `chek`?)").
func noCheckMessage(fns []*compiler.FuncInfo) string {
	msg := "check defines no function `check`"
	names := make([]string, 0, len(fns))
	for _, f := range fns {
		names = append(names, f.Name)
	}
	if s, ok := spell.Nearest("check", names); ok {
		msg += fmt.Sprintf(" (did you mean `%s`?)", clipName(s))
	}
	return msg
}

// invalidCheck is the invalid_args answer of a checker that cannot be used.
func invalidCheck(msg string) *wire.Object {
	return wire.InvalidArgs(wire.KindInvalidArgs, msg)
}

// setBeforeOutcome adds key to o before its outcome and retryable.
func setBeforeOutcome(o *wire.Object, key string, v any) {
	out, has := o.Get("outcome")
	retry, _ := o.Get("retryable")
	o.Delete("outcome")
	o.Delete("retryable")
	o.Set(key, v)
	if has {
		o.Set("outcome", out).Set("retryable", retry)
	}
}
