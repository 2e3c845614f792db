package vm

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// jobT is a third user type for receive checks (Types[2] of specModule).
var jobT = &TypeDesc{ID: 2, Name: "Job", Kind: RecordType, Fields: []string{"id", "label", "prio"}}

var (
	specInt    = &TypeSpec{Kind: KindInt}
	specString = &TypeSpec{Kind: KindString}
	specJob    = &TypeSpec{Kind: KindRecord, Type: jobT}
	specShape  = &TypeSpec{Kind: KindEnum, Type: shapeT}
	specAny    = &TypeSpec{Kind: KindAny}
)

func listSpec(e *TypeSpec) *TypeSpec   { return &TypeSpec{Kind: KindList, Elem: e} }
func optSpec(e *TypeSpec) *TypeSpec    { return &TypeSpec{Kind: KindOption, Elem: e} }
func mapSpec(e *TypeSpec) *TypeSpec    { return &TypeSpec{Kind: KindMap, Elem: e} }
func resSpec(t, e *TypeSpec) *TypeSpec { return &TypeSpec{Kind: KindResult, Elem: t, Err: e} }

// specModule sends msg to itself and receives it with RECEIVE 1 checked
// against spec (RECEIVE 0 when spec is nil), then returns it.
func specModule(spec *TypeSpec, msg Value) *Module {
	recv := "RECEIVE 1"
	if spec == nil {
		recv = "RECEIVE 0"
	}
	m := module([]Value{ActorID(0), msg},
		fn("main", 0, 0, code("CONST 0; CONST 1; SEND; POP", recv, "RET")))
	m.Types = []*TypeDesc{pointT, shapeT, jobT}
	if spec != nil {
		m.TypeSpecs = []*TypeSpec{spec}
	}
	return m
}

func TestReceiveTypeCheck(t *testing.T) {
	i, s := Int, Str
	point := NewRecord(pointT, i(1), i(2))
	job := NewRecord(jobT, i(1), s("a"), i(3))
	l := func(vs ...Value) Value { return NewList(vs) }
	cases := []struct {
		name string
		spec *TypeSpec
		msg  Value
		want string // "" = accepted
	}{
		{"int ok", specInt, i(5), ""},
		{"int got string", specInt, s("hello"), "receive: expected a message of type Int, got String"},
		{"float got int", &TypeSpec{Kind: KindFloat}, i(1), "receive: expected a message of type Float, got Int"},
		{"unit ok", &TypeSpec{Kind: KindUnit}, Unit(), ""},
		{"bool got unit", &TypeSpec{Kind: KindBool}, Unit(), "receive: expected a message of type Bool, got Unit"},
		{"record ok", specJob, job, ""},
		{"record got other record", specJob, point, "receive: expected a message of type Job, got Point"},
		{"record got int", specJob, i(1), "receive: expected a message of type Job, got Int"},
		{"enum ok", specShape, NewEnum(shapeT, 1, Float(1.5)), ""},
		{"enum got record", specShape, point, "receive: expected a message of type Shape, got Point"},
		{"list ok", listSpec(specInt), l(i(1), i(2)), ""},
		{"empty list ok", listSpec(specJob), l(), ""},
		{"list bad element", listSpec(specInt), l(i(1), s("a"), i(3)), "receive: expected a message of type List<Int>, got List<String>"},
		{"list got map", listSpec(specInt), NewMap(nil), "receive: expected a message of type List<Int>, got Map<String, _>"},
		{"nested list", listSpec(optSpec(specJob)), l(Some(job), None(), Some(point)),
			"receive: expected a message of type List<Option<Job>>, got List<Option<Point>>"},
		{"map ok", mapSpec(specInt), NewMap(map[string]Value{"a": i(1)}), ""},
		{"map bad value", mapSpec(specInt), NewMap(map[string]Value{"a": i(1), "b": s("x")}),
			"receive: expected a message of type Map<String, Int>, got Map<String, String>"},
		{"none ok", optSpec(specString), None(), ""},
		{"some ok", optSpec(specString), Some(s("x")), ""},
		{"some bad", optSpec(specString), Some(i(1)), "receive: expected a message of type Option<String>, got Option<Int>"},
		{"ok ok", resSpec(specInt, specString), Ok(i(1)), ""},
		{"err ok", resSpec(specInt, specString), Err(s("e")), ""},
		{"err bad", resSpec(specInt, specString), Err(i(1)), "receive: expected a message of type Result<Int, String>, got Result<_, Int>"},
		{"ok bad", resSpec(specInt, specString), Ok(s("x")), "receive: expected a message of type Result<Int, String>, got Result<String, _>"},
		{"any", specAny, point, ""},
		{"list of any", listSpec(specAny), l(i(1), s("a")), ""},
		{"option of any", optSpec(specAny), Some(point), ""},
		{"fn ok", &TypeSpec{Kind: KindFn}, FnRef(0), ""},
		{"fn got int", &TypeSpec{Kind: KindFn}, i(0), "receive: expected a message of type Fn, got Int"},
		{"actor ok", &TypeSpec{Kind: KindActor}, ActorID(3), ""},
		{"actor got string", &TypeSpec{Kind: KindActor}, s("3"), "receive: expected a message of type ActorId, got String"},
		{"unchecked", nil, s("hello"), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := run(t, specModule(c.spec, c.msg), Options{})
			if c.want == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if !Equal(res.Value, c.msg) || res.Steps != 6 {
					t.Fatalf("got %s in %d steps", res.Value, res.Steps)
				}
				return
			}
			re := runtimeErr(t, err, c.want)
			if re.Func != "main" || re.Pos.Line != 5 || re.Steps != 5 || res.Steps != 5 {
				t.Fatalf("at %s, steps %d/%d", re.Location, re.Steps, res.Steps)
			}
		})
	}
}

// The red-team case: a record of the wrong type reached a FIELD that does
// not exist on it. Checked, it is a receive error; unchecked (a module
// without specs), it is an internal error without Go runtime text, with
// the detail on the debug writer.
func TestReceiveWrongRecord(t *testing.T) {
	point := NewRecord(pointT, Int(1), Int(2))
	mk := func(recv string) *Module {
		m := module([]Value{ActorID(0), point},
			fn("main", 0, 0, code("CONST 0; CONST 1; SEND; POP", recv, "FIELD 2; RET")))
		m.Types = []*TypeDesc{pointT, shapeT, jobT}
		m.TypeSpecs = []*TypeSpec{specJob}
		return m
	}
	_, err := run(t, mk("RECEIVE 1"), Options{})
	runtimeErr(t, err, "receive: expected a message of type Job, got Point")
	var debug bytes.Buffer
	res, err := run(t, mk("RECEIVE 0"), Options{Debug: &debug})
	re := runtimeErr(t, err, "internal error in main at 6:1")
	if re.Steps != 6 || res.Steps != 6 {
		t.Fatalf("steps %d/%d", re.Steps, res.Steps)
	}
	if got := debug.String(); got != "internal error in main at 6:1: expected a record with field 2, got Record\n" {
		t.Fatalf("debug %q", got)
	}
}

func TestTypeSpecVerification(t *testing.T) {
	cyclic := &TypeSpec{Kind: KindList}
	cyclic.Elem = optSpec(cyclic)
	shared := listSpec(specInt)
	foreignJob := &TypeDesc{ID: 2, Name: "Job", Kind: RecordType, Fields: []string{"id"}}
	deep := specInt
	for range MaxSpecDepth + 1 {
		deep = listSpec(deep)
	}
	cases := []struct {
		name  string
		specs []*TypeSpec
		recv  int
		want  string
	}{
		{"operand too large", []*TypeSpec{specInt}, 2, "bytecode error: main:4: RECEIVE type spec 2 out of range"},
		{"operand negative", nil, -1, "bytecode error: main:4: RECEIVE type spec -1 out of range"},
		{"nil spec", []*TypeSpec{specInt, nil}, 1, "bytecode error: type spec 2: nil spec"},
		{"missing element", []*TypeSpec{{Kind: KindList}}, 1, "bytecode error: type spec 1: nil spec"},
		{"missing error", []*TypeSpec{{Kind: KindResult, Elem: specInt}}, 1, "bytecode error: type spec 1: nil spec"},
		{"cycle", []*TypeSpec{cyclic}, 1, "bytecode error: type spec 1: cyclic spec"},
		{"too deep", []*TypeSpec{deep}, 1, "bytecode error: type spec 1: nested deeper than 5000"},
		{"foreign type", []*TypeSpec{{Kind: KindRecord, Type: foreignJob}}, 1,
			"bytecode error: type spec 1: Record spec without one of the module's types"},
		{"no type", []*TypeSpec{{Kind: KindEnum}}, 1, "bytecode error: type spec 1: Enum spec without one of the module's types"},
		{"enum spec of a record", []*TypeSpec{{Kind: KindEnum, Type: pointT}}, 1, "bytecode error: type spec 1: Enum spec with type Point"},
		{"int with element", []*TypeSpec{{Kind: KindInt, Elem: specInt}}, 1, "bytecode error: type spec 1: Int spec with an element spec"},
		{"option with error spec", []*TypeSpec{{Kind: KindOption, Elem: specInt, Err: specInt}}, 1,
			"bytecode error: type spec 1: Option spec with an error spec"},
		{"int with type", []*TypeSpec{{Kind: KindInt, Type: pointT}}, 1, "bytecode error: type spec 1: Int spec with a type"},
		{"unknown kind", []*TypeSpec{{Kind: 77}}, 1, "bytecode error: type spec 1: unknown kind 77"},
		{"shared sub-specs", []*TypeSpec{{Kind: KindResult, Elem: shared, Err: shared}, shared}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := specModule(specInt, Int(1))
			m.TypeSpecs = c.specs
			m.Functions[0].Code[4].A = int32(c.recv)
			err := m.Prepare()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var be *BytecodeError
			if !errors.As(err, &be) || err.Error() != c.want {
				t.Fatalf("err = %v, want %s", err, c.want)
			}
		})
	}
}

func TestTypeSpecDisplay(t *testing.T) {
	spec := listSpec(resSpec(mapSpec(specJob), optSpec(specAny)))
	if got := spec.String(); got != "List<Result<Map<String, Job>, Option<_>>>" {
		t.Fatalf("String = %q", got)
	}
	m := specModule(spec, NewList(nil))
	got := Disassemble(m)
	for _, want := range []string{
		"type specs:\n  1 List<Result<Map<String, Job>, Option<_>>>\n",
		"     4  RECEIVE 1          ; List<Result<Map<String, Job>, Option<_>>>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	res := mustRun(t, m, Options{Trace: true})
	if res.Trace[4] != "[main:4] RECEIVE 1  stack_depth=0" {
		t.Fatalf("trace %q", res.Trace[4])
	}
	// A long record name is cut in messages.
	long := &TypeDesc{ID: 0, Name: strings.Repeat("R", 300), Kind: RecordType}
	if got := (&TypeSpec{Kind: KindRecord, Type: long}).String(); got != strings.Repeat("R", 100)+"…" {
		t.Fatalf("long name %q", got)
	}
}

// A big message is checked deeply (and the check forces a clock check).
func TestReceiveCheckLargeMessage(t *testing.T) {
	elems := make([]Value, 100_000)
	for k := range elems {
		elems[k] = Some(Int(int64(k)))
	}
	ok := NewList(elems)
	elems[99_999] = Some(Str("late"))
	bad := NewList(elems)
	if _, err := run(t, specModule(listSpec(optSpec(specInt)), ok), Options{}); err != nil {
		t.Fatal(err)
	}
	_, err := run(t, specModule(listSpec(optSpec(specInt)), bad), Options{})
	runtimeErr(t, err, "receive: expected a message of type List<Option<Int>>, got List<Option<String>>")
}
