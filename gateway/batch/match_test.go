package batch

import (
	"context"
	"testing"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/vm"
)

// TestMatchResult: records, enums and options match their tagged form
// without type_id and their plain forms (as test arguments are written);
// anything else is EqualJSON.
func TestMatchResult(t *testing.T) {
	const (
		rec     = `{"type":"record","type_id":1,"name":"P","fields":[1,{"option":"None"}],"field_names":["x","note"]}`
		red     = `{"type":"enum","type_id":0,"variant":"Red","payload":null}`
		circle  = `{"type":"enum","type_id":2,"variant":"Circle","payload":{"type":"record","type_id":2,"name":"Circle","fields":[2.5],"field_names":["r"]}}`
		some3   = `{"option":"Some","value":3}`
		none    = `{"option":"None"}`
		someNil = `{"option":"Some","value":{"option":"None"}}`
	)
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		// records: tagged form with any type_id (or none), plain form
		{`{"type":"record","type_id":0,"name":"P","fields":[1,{"option":"None"}],"field_names":["x","note"]}`, rec, true},
		{`{"type":"record","name":"P","fields":[1,null],"field_names":["x","note"]}`, rec, true},
		{`{"type":"record","type_id":1,"name":"Q","fields":[1,{"option":"None"}],"field_names":["x","note"]}`, rec, false},
		{`{"x":1,"note":null}`, rec, true},
		{`{"note":null,"x":1.0}`, rec, true},
		{`{"x":1}`, rec, true},
		{`{"x":2}`, rec, false},
		{`{"x":1,"note":"a"}`, rec, false},
		{`{"x":1,"y":2}`, rec, false},
		{`{}`, rec, false},
		// enums: tagged form without type_id; a variant without payload by name
		{`"Red"`, red, true},
		{`"Green"`, red, false},
		{`{"type":"enum","type_id":7,"variant":"Red","payload":null}`, red, true},
		{`{"type":"enum","variant":"Red","payload":null}`, red, true},
		{`"Circle"`, circle, false},
		{`{"type":"enum","variant":"Circle","payload":{"r":2.5}}`, circle, true},
		{`{"type":"enum","variant":"Circle","payload":{"r":2}}`, circle, false},
		// options
		{`null`, none, true},
		{none, none, true},
		{`3`, none, false},
		{`3`, some3, true},
		{`3.0`, some3, true},
		{some3, some3, true},
		{`null`, some3, false},
		{`4`, some3, false},
		{`null`, someNil, false},
		{someNil, someNil, true},
		{`{"option":"Some","value":null}`, someNil, true},
		// nested: lists of records, Some(enum), maps
		{`[{"x":1},{"x":1,"note":null}]`, `[` + rec + `,` + rec + `]`, true},
		{`["Red"]`, `[{"option":"Some","value":` + red + `}]`, true},
		{`{"k":"Red"}`, `{"k":` + red + `}`, true},
		{`{"k":"Red","j":1}`, `{"k":` + red + `}`, false},
		// a map that only looks like a tagged form (form): compared as
		// the object it is
		{`{"x":"y","option":"Some"}`, `{"option":"Some","x":"y"}`, true},
		{`null`, `{"option":"Some","x":"y"}`, false},
		{`{"option":"None","k":"x"}`, `{"option":"Some","value":{"option":"None","k":"x"}}`, true},
		{`{"fields":5,"type":"record"}`, `{"type":"record","fields":5}`, true},
		// not tagged: EqualJSON
		{`1e3`, `1000`, true},
		{`"Red"`, `"Red"`, true},
		{`null`, `null`, true},
		{`null`, `0`, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
	} {
		ok, err := MatchResult([]byte(c.want), []byte(c.got))
		if err != nil || ok != c.ok {
			t.Errorf("MatchResult(%s, %s) = %v, %v; want %v", c.want, c.got, ok, err, c.ok)
		}
	}
	if _, err := MatchResult([]byte(`{`), []byte(`1`)); err == nil || err.Error() != "expectation: unexpected EOF" {
		t.Errorf("invalid expectation: %v", err)
	}
}

// TestMatchResultRealValues: the plain forms and the tagged forms meet
// the results of real programs as the VM encodes them; adding a type
// declared before P (its type_id moves) does not turn a pass into a fail.
func TestMatchResultRealValues(t *testing.T) {
	for _, c := range []struct {
		src, want string
		ok        bool
	}{
		{`type P { x: Int, note: Option<String> }
fn main() -> P { P { x: 1, note: None } }`, `{"type":"record","type_id":0,"name":"P","fields":[1,{"option":"None"}],"field_names":["x","note"]}`, true},
		{`type Q { y: Int }
type P { x: Int, note: Option<String> }
fn main() -> P { P { x: 1, note: None } }`, `{"type":"record","type_id":0,"name":"P","fields":[1,{"option":"None"}],"field_names":["x","note"]}`, true},
		{`type Q { y: Int }
type P { x: Int, note: Option<String> }
fn main() -> P { P { x: 1, note: Some("a") } }`, `{"x":1,"note":"a"}`, true},
		{`enum Color { Red, Green }
fn main() -> List<Color> { [Color::Green, Color::Red] }`, `["Green","Red"]`, true},
		{`fn main() -> Option<Int> { None }`, `null`, true},
		{`fn main() -> Option<Int> { Some(3) }`, `3`, true},
		{`fn main() -> Option<Int> { Some(3) }`, `null`, false},
	} {
		m, errs := compiler.Compile([]byte(c.src), compiler.Options{})
		if errs != nil {
			t.Fatalf("%s: %v", c.src, errs)
		}
		res, err := vm.Run(context.Background(), m, vm.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		got, _ := res.Value.MarshalJSON()
		if ok, err := MatchResult([]byte(c.want), got); err != nil || ok != c.ok {
			t.Errorf("%s\nresult %s, expectation %s: %v, %v; want %v", c.src, got, c.want, ok, err, c.ok)
		}
	}
}
