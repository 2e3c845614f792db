package batch

// MatchResult reports whether got, a result as the result envelope
// encodes it (docs/tools.md "value encoding"), meets want, an item's
// expectation (docs/operations.md "Graded batches", "Comparison"). The
// comparison follows got's shape: where got is one of the tagged forms
// below, want may be that form or the plain form test arguments take;
// anywhere else the values must be equal as EqualJSON says.
//
//   - a record {"type":"record","type_id":N,"name":"P","fields":[…],"field_names":[…]}:
//     want is that form, compared without "type_id" (a type is known by
//     its name: the id depends on the order of the declarations), or an
//     object of the field names ({"x":1,"y":2}, any order); a field that
//     is None may be left out or given as null;
//   - an enum variant {"type":"enum","type_id":N,"variant":"Red","payload":p}:
//     that form without "type_id", or for a variant without payload
//     (p null) its name, "Red";
//   - None {"option":"None"}: that form or null;
//   - Some(v) {"option":"Some","value":v}: that form or v's own form (3
//     for Some(3)), unless v is itself an option (Option<Option<T>>:
//     null would be read both as None and as Some(None)), which takes the
//     tagged form.
//
// Inside a tagged form written in full, the values (fields, payload,
// value) may again be plain. An object with "type":"record" and
// "fields" (or "type":"enum" and "variant") is read as the tagged form
// of a record (an enum), never as the plain form of a record with such
// field names. Errors are EqualJSON's: either is not valid JSON.
func MatchResult(want, got []byte) (bool, error) { return compareJSON(want, got, matchValue) }

// form is the tagged form (MatchResult's list) that an object is read
// as. shape.form holds the one set of rules, which MatchResult applies to
// decoded values (shapeOf) and a fail reason to raw JSON (hasTagged,
// plainOf, shapeOfJSON), so that a reason shows a result as it was
// compared.
type form uint8

const (
	untagged   form = iota
	recordForm      // "type":"record" and "fields" that is not null
	enumForm        // "type":"enum" and a "variant" that is not null
	noneForm        // {"option":"None"} and nothing else
	someForm        // {"option":"Some","value":v} and nothing else
)

// shape is what form reads of an object's members.
type shape struct {
	typ, option     string // the "type" and "option" members when strings, else ""
	fields, variant bool   // "fields", "variant" members that are not null
	value           bool   // a "value" member (null too: Some(()))
	n               int    // the number of distinct member names
	// fieldList: "fields" and "field_names" are arrays of one length, as
	// a record is encoded; a record form without them is compared and
	// shown as the object it is.
	fieldList bool
}

// form is the tagged form of an object of shape s.
func (s shape) form() form {
	switch {
	case s.typ == "record" && s.fields:
		return recordForm
	case s.typ == "enum" && s.variant:
		return enumForm
	case s.option == "None" && s.n == 1:
		return noneForm
	case s.option == "Some" && s.value && s.n == 2:
		return someForm
	}
	return untagged
}

// isOption reports whether f is an option's form (None or Some).
func (f form) isOption() bool { return f == noneForm || f == someForm }

// shapeOf is the shape of the decoded object m.
func shapeOf(m map[string]any) shape {
	s := shape{n: len(m)}
	s.typ, _ = m["type"].(string)
	s.option, _ = m["option"].(string)
	s.fields, s.variant = m["fields"] != nil, m["variant"] != nil
	fields, ok1 := m["fields"].([]any)
	names, ok2 := m["field_names"].([]any)
	s.fieldList = ok1 && ok2 && len(fields) == len(names)
	_, s.value = m["value"]
	return s
}

// formOf is the tagged form of the decoded value v; untagged for
// anything but an object.
func formOf(v any) form {
	m, ok := v.(map[string]any)
	if !ok {
		return untagged
	}
	return shapeOf(m).form()
}

// matchValue is MatchResult on decoded values.
func matchValue(want, got any) bool {
	gm, ok := got.(map[string]any)
	if !ok {
		return matchPlain(want, got)
	}
	s := shapeOf(gm)
	switch s.form() {
	case recordForm:
		return matchRecord(want, gm, s)
	case enumForm:
		return matchEnum(want, gm)
	case noneForm:
		return want == nil || formOf(want) == noneForm
	case someForm:
		if wm, ok := want.(map[string]any); ok && shapeOf(wm).form() == someForm && matchValue(wm["value"], gm["value"]) {
			return true
		}
		if formOf(gm["value"]).isOption() {
			return false
		}
		return matchValue(want, gm["value"])
	}
	return matchPlain(want, got)
}

// matchPlain compares values of the same JSON shape, member by member
// and element by element with matchValue (a map's values, a list's
// elements, a result's value may be tagged forms).
func matchPlain(want, got any) bool {
	switch g := got.(type) {
	case []any:
		w, ok := want.([]any)
		if !ok || len(w) != len(g) {
			return false
		}
		for i := range g {
			if !matchValue(w[i], g[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		w, ok := want.(map[string]any)
		if !ok || len(w) != len(g) {
			return false
		}
		for k, v := range g {
			x, ok := w[k]
			if !ok || !matchValue(x, v) {
				return false
			}
		}
		return true
	}
	return equalValue(want, got)
}

// matchRecord matches want against the record g, of shape s.
func matchRecord(want any, g map[string]any, s shape) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return false
	}
	if !s.fieldList {
		return matchPlain(want, g) // not the record encoding: as it is
	}
	fields, names := g["fields"].([]any), g["field_names"].([]any)
	if shapeOf(w).form() == recordForm {
		// The tagged form: name, fields and field_names; type_id ignored.
		if w["name"] != g["name"] || !matchValue(w["field_names"], g["field_names"]) {
			return false
		}
		for k := range w {
			switch k {
			case "type", "type_id", "name", "fields", "field_names":
			default:
				return false
			}
		}
		wf, ok := w["fields"].([]any)
		if !ok || len(wf) != len(fields) {
			return false
		}
		for i := range fields {
			if !matchValue(wf[i], fields[i]) {
				return false
			}
		}
		return true
	}
	// The plain form: an object of the field names.
	seen := 0
	for i, n := range names {
		name, _ := n.(string)
		v, ok := w[name]
		if !ok {
			if formOf(fields[i]) == noneForm {
				continue // an absent Option field is None, as in arguments
			}
			return false
		}
		seen++
		if !matchValue(v, fields[i]) {
			return false
		}
	}
	return seen == len(w)
}

// matchEnum matches want against the enum variant g.
func matchEnum(want any, g map[string]any) bool {
	if s, ok := want.(string); ok {
		return g["payload"] == nil && s == g["variant"]
	}
	w, ok := want.(map[string]any)
	if !ok || shapeOf(w).form() != enumForm || w["variant"] != g["variant"] {
		return false
	}
	for k := range w {
		switch k {
		case "type", "type_id", "variant", "payload":
		default:
			return false
		}
	}
	return matchValue(w["payload"], g["payload"])
}
