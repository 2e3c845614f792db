package typed

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/wire"
)

// Values converts arguments checked by CheckObject against params to the
// values of those parameters in order, for vm.Options.Args. m is the
// module whose records and enums the Types name (Type.TypeID). Errors:
// a value that does not fit its Type (arguments not checked against it),
// a type the module does not have.
func Values(m *vm.Module, params []Field, args json.RawMessage) ([]vm.Value, error) {
	obj, err := wire.ParseObject(args)
	if err != nil {
		return nil, err
	}
	out := make([]vm.Value, len(params))
	for i, p := range params {
		raw := json.RawMessage("null")
		if v, ok := obj.Get(p.Name); ok {
			raw = v.(json.RawMessage)
		}
		if out[i], err = Value(m, p.Type, raw); err != nil {
			return nil, fmt.Errorf("argument %q: %w", p.Name, err)
		}
	}
	return out, nil
}

// Value converts one checked JSON value of type t (null only for an
// Option) to an .ax value of m.
func Value(m *vm.Module, t *Type, raw json.RawMessage) (vm.Value, error) {
	switch t.Kind {
	case KindString:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return vm.Value{}, err
		}
		return vm.Str(s), nil
	case KindInt:
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return vm.Int(n), err
	case KindFloat:
		f, ok := ParseFloat(raw)
		if !ok {
			return vm.Value{}, fmt.Errorf("not a finite number: %s", raw)
		}
		return vm.Float(f), nil
	case KindBool:
		return vm.Bool(string(raw) == "true"), nil
	case KindEnum:
		td, err := typeDesc(m, t, vm.EnumType)
		if err != nil {
			return vm.Value{}, err
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return vm.Value{}, err
		}
		for i, v := range td.Variants {
			if v.Name == s {
				return vm.NewEnum(td, i, vm.Unit()), nil
			}
		}
		return vm.Value{}, fmt.Errorf("enum %s has no variant %q", td.Name, s)
	case KindList:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return vm.Value{}, err
		}
		elems := make([]vm.Value, len(items))
		for i, it := range items {
			v, err := Value(m, t.Elem, it)
			if err != nil {
				return vm.Value{}, err
			}
			elems[i] = v
		}
		return vm.NewList(elems), nil
	case KindOption:
		if string(raw) == "null" {
			return vm.None(), nil
		}
		v, err := Value(m, t.Elem, raw)
		if err != nil {
			return vm.Value{}, err
		}
		return vm.Some(v), nil
	case KindRecord:
		td, err := typeDesc(m, t, vm.RecordType)
		if err != nil {
			return vm.Value{}, err
		}
		obj, err := wire.ParseObject(raw)
		if err != nil {
			return vm.Value{}, err
		}
		fields := make([]vm.Value, len(t.Fields))
		for i, f := range t.Fields {
			fr := json.RawMessage("null")
			if v, ok := obj.Get(f.Name); ok {
				fr = v.(json.RawMessage)
			}
			if fields[i], err = Value(m, f.Type, fr); err != nil {
				return vm.Value{}, err
			}
		}
		return vm.NewRecord(td, fields...), nil
	}
	return vm.Value{}, fmt.Errorf("unsupported parameter kind %d", t.Kind)
}

// typeDesc returns the module's descriptor of t's record or enum.
func typeDesc(m *vm.Module, t *Type, kind vm.TypeKind) (*vm.TypeDesc, error) {
	if t.TypeID < 0 || t.TypeID >= len(m.Types) || m.Types[t.TypeID].Name != t.Name || m.Types[t.TypeID].Kind != kind {
		return nil, fmt.Errorf("type %s not found in the module", t.Name)
	}
	td := m.Types[t.TypeID]
	if kind == vm.RecordType && len(td.Fields) != len(t.Fields) {
		return nil, fmt.Errorf("record %s has %d fields, want %d", t.Name, len(td.Fields), len(t.Fields))
	}
	return td, nil
}
