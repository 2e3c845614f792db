package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/axpool/axpool/internal/jsonenc"
	"github.com/axpool/axpool/internal/text"
)

// How an approval's message quotes the arguments of the call (red team,
// #30: one clip of the whole object let a long first argument push the
// one that names the target out of sight, and a U+202E in a value
// reversed what the caller read). Each top-level argument is shown on its
// own — `"key":value`, in the order of the call, duplicates too — its name
// clipped to MaxShownArgName bytes and its value to MaxShownArgValue, so
// that every argument stays visible; at most MaxShownArgCount of them,
// then `… (N more arguments not shown)`. Strings are quoted with \" and \\
// escaped (a value cannot fake the next argument), and every control and
// bidirectional control is written as an escape (text.Visible).
const (
	MaxShownArgName  = 64
	MaxShownArgValue = 128
	MaxShownArgCount = 32
)

// showArgs renders the arguments raw (a JSON object) of a call for an
// approval's message, each string masked by mask first; raw that is not
// a JSON object is masked, made visible and clipped to MaxShownArgs whole.
func showArgs(raw []byte, mask func(string) string) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return text.Visible(text.Clip(mask(string(raw)), MaxShownArgs), false)
	}
	var b strings.Builder
	b.WriteByte('{')
	shown, more := 0, 0
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		var v json.RawMessage
		if err != nil || !ok || dec.Decode(&v) != nil {
			return text.Visible(text.Clip(mask(string(raw)), MaxShownArgs), false)
		}
		if shown == MaxShownArgCount {
			more++
			continue
		}
		if shown > 0 {
			b.WriteByte(',')
		}
		shown++
		b.WriteString(quoteShown(mask(key), MaxShownArgName))
		b.WriteByte(':')
		var s string
		if v[0] == '"' && json.Unmarshal(v, &s) == nil {
			b.WriteString(quoteShown(mask(s), MaxShownArgValue))
			continue
		}
		if c, ok := jsonenc.AppendCompact(nil, v); ok {
			v = c
		}
		b.WriteString(text.Visible(text.Clip(mask(string(v)), MaxShownArgValue), false))
	}
	if more > 0 {
		fmt.Fprintf(&b, ",… (%d more arguments not shown)", more)
	}
	b.WriteByte('}')
	return b.String()
}

// quoteShown is s clipped to n bytes (on a rune boundary, "…" marking the
// cut), quoted: `"` and `\` escaped with a backslash, controls made
// visible (text.Visible).
func quoteShown(s string, n int) string {
	s = text.Clip(s, n)
	s = strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
	return `"` + text.Visible(s, false) + `"`
}
