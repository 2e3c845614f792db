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

// matchValue is MatchResult on decoded values.
func matchValue(want, got any) bool {
	gm, ok := got.(map[string]any)
	if !ok {
		return matchPlain(want, got)
	}
	switch {
	case gm["type"] == "record" && gm["fields"] != nil:
		return matchRecord(want, gm)
	case gm["type"] == "enum" && gm["variant"] != nil:
		return matchEnum(want, gm)
	case gm["option"] == "None" && len(gm) == 1:
		if want == nil {
			return true
		}
		wm, ok := want.(map[string]any)
		return ok && len(wm) == 1 && wm["option"] == "None"
	case gm["option"] == "Some" && len(gm) == 2:
		if wm, ok := want.(map[string]any); ok && len(wm) == 2 && wm["option"] == "Some" {
			if v, ok := wm["value"]; ok && matchValue(v, gm["value"]) {
				return true
			}
		}
		if isOption(gm["value"]) {
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

// isOption reports whether v is the tagged form of an option.
func isOption(v any) bool {
	m, ok := v.(map[string]any)
	return ok && (m["option"] == "None" || m["option"] == "Some")
}

// matchRecord matches want against the record g.
func matchRecord(want any, g map[string]any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return false
	}
	fields, _ := g["fields"].([]any)
	names, _ := g["field_names"].([]any)
	if len(names) != len(fields) {
		return matchPlain(want, g) // not the record encoding: as it is
	}
	if w["type"] == "record" && w["fields"] != nil {
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
			if m, isObj := fields[i].(map[string]any); isObj && len(m) == 1 && m["option"] == "None" {
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
	if !ok || w["type"] != "enum" || w["variant"] != g["variant"] {
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
