package typed

import (
	"fmt"

	"github.com/axpool/axpool/compiler"
	"github.com/axpool/axpool/wire"
)

// Kind is the kind of a parameter type: the rows of the table in
// docs/scripts.md "Parameters and the input schema".
type Kind uint8

// The parameter kinds.
const (
	KindString Kind = iota + 1
	KindInt
	KindFloat
	KindBool
	// KindEnum is an enum whose variants are all nullary; its JSON value
	// is the variant name.
	KindEnum
	// KindList is List<T> (Type.Elem).
	KindList
	// KindOption is Option<T> (Type.Elem): absent or null is None.
	KindOption
	// KindRecord is a record type (Type.Fields).
	KindRecord
)

// Type is the static type of a parameter (or of a part of one) that has
// a JSON form, built from a function's signature by Converter.TypeOf.
type Type struct {
	Kind Kind
	// Name is the declared name of an enum or a record.
	Name string
	// TypeID is the enum's or record's index in the compiled module's
	// Types (vm.Module.Types), valid for the compilation Type came from.
	TypeID int
	// Elem is the element type of a List or an Option.
	Elem *Type
	// Variants are an enum's variant names, in declaration order.
	Variants []string
	// Fields are a record's fields, in declaration order.
	Fields []Field
}

// Field is one field of a record parameter type, or one parameter of a
// function (CheckObject, Values).
type Field struct {
	Name string
	Type *Type
}

// String renders t in source syntax (`List<Option<Int>>`, `Env`).
func (t *Type) String() string {
	switch t.Kind {
	case KindString:
		return "String"
	case KindInt:
		return "Int"
	case KindFloat:
		return "Float"
	case KindBool:
		return "Bool"
	case KindList:
		return "List<" + t.Elem.String() + ">"
	case KindOption:
		return "Option<" + t.Elem.String() + ">"
	default:
		return t.Name
	}
}

// TypeError is a parameter type that has no JSON form here: Msg says
// why, naming the parameter (`parameter "m" has type Map<String, Int>; a
// script parameter must be …`).
type TypeError struct{ Msg string }

// Error returns Msg.
func (e *TypeError) Error() string { return e.Msg }

// SupportedTypes is the list of what a parameter may be, for messages.
const SupportedTypes = "String, Int, Float, Bool, an enum without payloads, List<T>, Option<T> or a record of these"

// maxTypeDepth bounds the nesting of a parameter type (List<List<…>>);
// deeper types are refused, so the schema and every argument check stay
// small.
const maxTypeDepth = 32

// maxTypeNodes bounds the types of all the parameters of a script's main
// together, counted as the nodes of their trees (a record used twice
// counts twice: the schema writes it out twice). Without it, records whose
// fields share a record type (`W0 { a: W1, b: W1 }`, `W1 { a: W2, b: W2 }`,
// …) make a schema of 2^depth nodes.
const maxTypeNodes = 4096

// Converter converts the parameter types of one function (NewConverter):
// it bounds their parts together (maxTypeNodes).
type Converter struct {
	records map[*compiler.TypeDecl]bool // records being converted
	nodes   int                         // Type nodes built so far
	noun    string                      // "a script parameter"
	fn      string                      // "main"
}

// NewConverter returns a Converter for the parameters of the function
// named fn; noun names such a parameter in messages ("a script
// parameter", "a parameter of a tested function").
func NewConverter(fn, noun string) *Converter {
	return &Converter{records: map[*compiler.TypeDecl]bool{}, noun: noun, fn: fn}
}

// TypeOf converts the compiler type t of the parameter named path to its
// Type. Errors: *TypeError for a type without a JSON form (Map, Fn, an
// enum with payloads, a record that contains itself, Option<Option<T>>),
// nested more than 32 deep, or past 4,096 parts in all.
func (c *Converter) TypeOf(t *compiler.Type, path string) (*Type, error) {
	out, err := typeOf(t, path, 0, c)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// typeOf converts a compiler type to a parameter type. path names the
// parameter (or the part of it) in messages: "cfg", "target.meta",
// "tags[]". c.records holds the records being converted (a record that
// contains itself has no finite schema).
func typeOf(t *compiler.Type, path string, depth int, c *Converter) (*Type, *TypeError) {
	if depth > maxTypeDepth {
		return nil, &TypeError{fmt.Sprintf("parameter %q is nested more than %d levels deep", path, maxTypeDepth)}
	}
	if c.nodes++; c.nodes > maxTypeNodes {
		return nil, &TypeError{fmt.Sprintf("parameter %q makes the input schema too large: %s's parameter types have more than %d parts in all", path, c.fn, maxTypeNodes)}
	}
	records := c.records
	unsupported := func() (*Type, *TypeError) {
		return nil, &TypeError{fmt.Sprintf("parameter %q has type %s; %s must be %s", path, t.String(), c.noun, SupportedTypes)}
	}
	switch t.Kind() {
	case compiler.KindString:
		return &Type{Kind: KindString}, nil
	case compiler.KindInt:
		return &Type{Kind: KindInt}, nil
	case compiler.KindFloat:
		return &Type{Kind: KindFloat}, nil
	case compiler.KindBool:
		return &Type{Kind: KindBool}, nil
	case compiler.KindList:
		e, err := typeOf(t.Elem(0), path+"[]", depth+1, c)
		if err != nil {
			return nil, err
		}
		return &Type{Kind: KindList, Elem: e}, nil
	case compiler.KindOption:
		if t.Elem(0).Kind() == compiler.KindOption {
			return nil, &TypeError{fmt.Sprintf("parameter %q has type %s; JSON null cannot tell None from Some(None)", path, t.String())}
		}
		e, err := typeOf(t.Elem(0), path, depth+1, c)
		if err != nil {
			return nil, err
		}
		return &Type{Kind: KindOption, Elem: e}, nil
	case compiler.KindEnum:
		d := t.Decl()
		out := &Type{Kind: KindEnum, Name: d.Name, TypeID: d.ID}
		for _, v := range d.Variants {
			if v.Payload != nil || len(v.Fields) > 0 {
				return nil, &TypeError{fmt.Sprintf("parameter %q has type %s, whose variant %s carries a payload; %s enum must have only variants without payloads", path, d.Name, v.Name, c.noun)}
			}
			out.Variants = append(out.Variants, v.Name)
		}
		return out, nil
	case compiler.KindRecord:
		d := t.Decl()
		if records[d] {
			return nil, &TypeError{fmt.Sprintf("parameter %q has type %s, which contains itself; %s needs a finite schema", path, d.Name, c.noun)}
		}
		records[d] = true
		defer delete(records, d)
		out := &Type{Kind: KindRecord, Name: d.Name, TypeID: d.ID}
		for _, f := range d.Fields {
			ft, err := typeOf(f.Type, path+"."+f.Name, depth+1, c)
			if err != nil {
				return nil, err
			}
			out.Fields = append(out.Fields, Field{Name: f.Name, Type: ft})
		}
		return out, nil
	}
	return unsupported()
}

// Schema returns the JSON Schema of a value of type t (docs/scripts.md
// "Parameters and the input schema"): an Option is its element's schema
// (its absence is expressed by `required`), except as a list element,
// where null is allowed explicitly.
func (t *Type) Schema() *wire.Object {
	o := wire.NewObject()
	switch t.Kind {
	case KindString:
		o.Set("type", "string")
	case KindInt:
		o.Set("type", "integer")
	case KindFloat:
		o.Set("type", "number")
	case KindBool:
		o.Set("type", "boolean")
	case KindEnum:
		o.Set("type", "string").Set("enum", t.Variants)
	case KindList:
		items := t.Elem.Schema()
		if t.Elem.Kind == KindOption {
			items = wire.NewObject().Set("anyOf", []any{items, wire.NewObject().Set("type", "null")})
		}
		o.Set("type", "array").Set("items", items)
	case KindOption:
		return t.Elem.Schema()
	case KindRecord:
		props := wire.NewObject()
		required := []string{}
		for _, f := range t.Fields {
			props.Set(f.Name, f.Type.Schema())
			if f.Type.Kind != KindOption {
				required = append(required, f.Name)
			}
		}
		o.Set("type", "object").Set("properties", props)
		if len(required) > 0 {
			o.Set("required", required)
		}
		o.Set("additionalProperties", false)
	}
	return o
}
