package gateway

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/wire"
)

// How an approval's message quotes the arguments of the call (red team,
// #30 and the suspension review: one clip of the whole object let a long
// first argument push the one that names the target out of sight, a
// U+202E in a value reversed what the caller read, and 32 padding
// arguments before the real target hid it while a "re\u200bpo" beside
// them passed for it).
//
// The arguments the tool's input schema declares (its "properties" and
// "required") are shown first, in a group of their own: the required
// ones, then the others, each group in the order of the schema's
// properties; a declared argument is never hidden (a key given more than
// twice shows its first and last values, the ones a JSON reader takes,
// the ones between are hidden), its value clipped to
// MaxShownDeclaredValue bytes. The arguments the schema does not declare
// come after, in a second group marked as such, in the order of the call
// (a key given twice shows twice), each value clipped to
// MaxShownArgValue; at most MaxShownArgCount of them, then `… (N more
// arguments not shown)`. Every name is clipped to MaxShownArgName.
// Strings are quoted with \" and \\ escaped (a value cannot fake the
// next argument), and every control, format character, tag and filler
// is written as an escape (text.Visible). When anything is hidden or
// clipped, the message says so first (shownArgs.notice).
const (
	MaxShownArgName       = 64
	MaxShownArgValue      = 128
	MaxShownDeclaredValue = 1024
	MaxShownArgCount      = 32
)

// shownArgs is the arguments of a call as an approval's message shows
// them: declared and undeclared are JSON-like objects ("" when the group
// is empty; all arguments are in undeclared when the schema declares
// none), hidden counts the arguments not shown and clippedValues,
// clippedNames the values and names cut short.
type shownArgs struct {
	declared, undeclared        string
	hidden                      int
	clippedValues, clippedNames int
}

// notice is what the message says first when something is not shown in
// full — "Not everything is shown: 1 argument hidden, 1 value clipped. "
// (only the counts that are not 0, in that order, names last) — or "".
func (a *shownArgs) notice() string {
	var parts []string
	plural := func(n int, one, many string) {
		if n == 1 {
			parts = append(parts, "1 "+one)
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	plural(a.hidden, "argument hidden", "arguments hidden")
	plural(a.clippedValues, "value clipped", "values clipped")
	plural(a.clippedNames, "argument name clipped", "argument names clipped")
	if parts == nil {
		return ""
	}
	return "Not everything is shown: " + strings.Join(parts, ", ") + ". "
}

// phrase is the arguments as the message's sentence names them, after
// "with ": "the arguments {…}", "the arguments {…} and the arguments its
// input schema does not declare {…}", or "the arguments its input schema
// does not declare {…}" when it declares none of them.
func (a *shownArgs) phrase() string {
	switch {
	case a.undeclared == "":
		return "the arguments " + cmp.Or(a.declared, "{}")
	case a.declared == "":
		return "the arguments its input schema does not declare " + a.undeclared
	}
	return "the arguments " + a.declared + " and the arguments its input schema does not declare " + a.undeclared
}

// schemaArgs returns the top-level arguments the JSON schema declares,
// in the order an approval shows them: the required ones in the order
// of "properties" (then required ones "properties" lacks, in the order
// of "required"), then the other properties in their order. A schema
// that is not one JSON object (wire.SplitObject: an upstream's input
// schema is always one, compact), whose "properties" is not an object,
// or that has neither, declares none; a "required" that is not a list of
// names requires nothing.
func schemaArgs(schema []byte) []string {
	var props, required []string
	bad := false // "properties" is not an object
	ok := wire.SplitObject(schema, func(key string, val json.RawMessage) {
		switch key {
		case "properties":
			if !wire.SplitObject(val, func(name string, _ json.RawMessage) {
				if !slices.Contains(props, name) {
					props = append(props, name)
				}
			}) {
				bad = true
			}
		case "required":
			var r []string
			if json.Unmarshal(val, &r) != nil {
				required = nil // not a list of names: nothing is required
			} else {
				required = r
			}
		}
	})
	if !ok || bad {
		return nil
	}
	out := make([]string, 0, len(props)+len(required))
	for _, p := range props {
		if slices.Contains(required, p) {
			out = append(out, p)
		}
	}
	for _, r := range required {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	for _, p := range props {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// showArgs renders the arguments raw (a JSON object) of a call of a tool
// whose input schema is schema (nil when unknown: then no argument is
// declared) for an approval's message, each string masked by mask first;
// raw that is not a JSON object is masked, made visible and clipped to
// MaxShownArgs whole, in declared ("the arguments [1,2]"; one value
// clipped when it is cut).
func showArgs(raw, schema []byte, mask func(string) string) shownArgs {
	whole := func() shownArgs {
		m := mask(string(raw))
		a := shownArgs{declared: cmp.Or(text.Visible(text.Clip(m, MaxShownArgs), false), `""`)}
		if len(m) > MaxShownArgs {
			a.clippedValues = 1
		}
		return a
	}
	type arg struct {
		key string
		v   json.RawMessage
	}
	var args []arg
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return whole()
	}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		var v json.RawMessage
		if err != nil || !ok || dec.Decode(&v) != nil {
			return whole()
		}
		args = append(args, arg{key, v})
	}
	var a shownArgs
	one := func(b *strings.Builder, key string, v json.RawMessage, limit int) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k := mask(key)
		if len(k) > MaxShownArgName {
			a.clippedNames++
		}
		b.WriteString(quoteShown(k, MaxShownArgName))
		b.WriteByte(':')
		var s string
		if v[0] == '"' && json.Unmarshal(v, &s) == nil {
			s = mask(s)
			if len(s) > limit {
				a.clippedValues++
			}
			b.WriteString(quoteShown(s, limit))
			return
		}
		if c, ok := jsonenc.AppendCompact(nil, v); ok {
			v = c
		}
		s = mask(string(v))
		if len(s) > limit {
			a.clippedValues++
		}
		b.WriteString(text.Visible(text.Clip(s, limit), false))
	}
	declared := schemaArgs(schema)
	var b strings.Builder
	b.WriteByte('{')
	for _, name := range declared {
		var at []int
		for i, x := range args {
			if x.key == name {
				at = append(at, i)
			}
		}
		if len(at) > 2 { // the first and the last: what JSON readers take
			a.hidden += len(at) - 2
			at = []int{at[0], at[len(at)-1]}
		}
		for _, i := range at {
			one(&b, name, args[i].v, MaxShownDeclaredValue)
		}
	}
	if b.Len() > 1 {
		b.WriteByte('}')
		a.declared = b.String()
	}
	b.Reset()
	b.WriteByte('{')
	shown, more := 0, 0
	for _, x := range args {
		if slices.Contains(declared, x.key) {
			continue
		}
		if shown == MaxShownArgCount {
			more++
			continue
		}
		shown++
		one(&b, x.key, x.v, MaxShownArgValue)
	}
	if more > 0 {
		fmt.Fprintf(&b, ",… (%d more arguments not shown)", more)
		a.hidden += more
	}
	if b.Len() > 1 {
		b.WriteByte('}')
		a.undeclared = b.String()
	}
	return a
}

// quoteShown is s clipped to n bytes (on a rune boundary, "…" marking the
// cut), quoted: `"` and `\` escaped with a backslash, controls made
// visible (text.Visible).
func quoteShown(s string, n int) string {
	s = text.Clip(s, n)
	s = quoteEscaper.Replace(s)
	return `"` + text.Visible(s, false) + `"`
}

// quoteEscaper escapes `\` and `"` for quoteShown.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)
