package sealed

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"unicode/utf8"

	"github.com/axpool/axpool/vm"
)

// EventLogVersion is the version of the event-log format (reference
// mcp-contract §3.5).
const EventLogVersion = 2

// CanonicalLog returns the canonical serialisation of an event log, the
// bytes whose SHA-256 is the seal's digest. It is the form the reference
// implementation hashes (Rust serde_json's pretty printer over its event
// log), so the two agree byte for byte on the shapes they share; the
// reference goldens for the empty log and for one step_input("upstream")
// call are locked by tests:
//
//   - the document is {"version": 2, "events": [...]}, pretty-printed with
//     a 2-space indent, ": " after keys, "[]" for an empty array, no
//     trailing newline;
//   - events are externally tagged, keys in this order:
//     {"CapCall":{"capability":"net.fetch","args":[V…]}},
//     {"CapResult":{"capability":…,"result":V}},
//     {"ActorSpawn":{"actor_id":N,"function":"f"}},
//     {"MessageSend":{"from":N,"to":N,"payload":V}},
//     {"MessageReceive":{"actor_id":N,"payload":V}},
//     {"UiEmit":{"tree":V}}, {"SchedulerTick":{"round":N,"active_actor":N}},
//     {"ContractCheck":{"function":"f","kind":"requires","index":N,"passed":B}};
//   - values V are externally tagged: "Unit", {"Bool":b}, {"Int":n},
//     {"Float":x} (serde/ryu digits: 3.0, 1e16; NaN/±Inf null),
//     {"String":s}, "None", {"Some":V}, {"Ok":V}, {"Err":V}, {"List":[V…]},
//     {"Map":{"k":V…}} (keys sorted), {"Record":{"type_id":N,"fields":[V…]}},
//     {"Enum":{"type_id":N,"variant":I,"payload":V}} (I the variant index;
//     a struct variant's payload is {"Record":{"type_id":N,"fields":[…]}},
//     a unit variant's "Unit"), {"ActorId":n}, {"FnRef":n}, {"Json":D} (D
//     the Json value's document: object keys in their order, untagged);
//   - strings are escaped as serde_json does: \" \\ \b \f \n \r \t, other
//     control characters as \u00XX (lower-case hex), everything else
//     literal; invalid UTF-8 bytes become U+FFFD.
//
// Values axpool types differently from the reference (a source-level
// Some(x) is an Option here, an Enum there) hash differently, which
// docs/tools.md allows: the digest identifies an axpool event log.
func CanonicalLog(events []vm.Event) []byte {
	b := make([]byte, 0, 64+64*len(events))
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, EventLogVersion, 10)
	b = append(b, `,"events":[`...)
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendEvent(b, e)
	}
	b = append(b, "]}"...)
	return indent(b)
}

// indent pretty-prints compact JSON as json.Indent(dst, b, "", "  ") does
// (a newline and two spaces per level before each element and closing
// bracket, ": " after keys, "[]" and "{}" for empty containers), in one
// pass with a depth counter, so any depth is fine (json.Indent stops at
// 10,000 levels).
func indent(b []byte) []byte {
	out := make([]byte, 0, len(b)*2)
	depth := 0
	newline := func() {
		out = append(out, '\n')
		for range depth {
			out = append(out, "  "...)
		}
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case '"':
			j := i + 1
			for ; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			out = append(out, b[i:j+1]...)
			i = j
		case '{', '[':
			out = append(out, c)
			if i+1 < len(b) && (b[i+1] == '}' || b[i+1] == ']') {
				out = append(out, b[i+1])
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
	}
	return out
}

// Digest returns the lower-case hex SHA-256 of CanonicalLog(events).
func Digest(events []vm.Event) string {
	sum := sha256.Sum256(CanonicalLog(events))
	return hex.EncodeToString(sum[:])
}

func appendEvent(b []byte, e vm.Event) []byte {
	switch e.Kind {
	case vm.EventCapCall:
		b = append(b, `{"CapCall":{"capability":`...)
		b = appendString(b, e.Capability.String())
		b = append(b, `,"args":[`...)
		for i, a := range e.Args {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendValue(b, a)
		}
		b = append(b, ']')
	case vm.EventCapResult:
		b = append(b, `{"CapResult":{"capability":`...)
		b = appendString(b, e.Capability.String())
		b = append(b, `,"result":`...)
		b = appendValue(b, e.Value)
	case vm.EventActorSpawn:
		b = append(b, `{"ActorSpawn":{"actor_id":`...)
		b = strconv.AppendInt(b, e.Actor, 10)
		b = append(b, `,"function":`...)
		b = appendString(b, e.Function)
	case vm.EventMessageSend:
		b = append(b, `{"MessageSend":{"from":`...)
		b = strconv.AppendInt(b, e.From, 10)
		b = append(b, `,"to":`...)
		b = strconv.AppendInt(b, e.To, 10)
		b = append(b, `,"payload":`...)
		b = appendValue(b, e.Value)
	case vm.EventMessageReceive:
		b = append(b, `{"MessageReceive":{"actor_id":`...)
		b = strconv.AppendInt(b, e.Actor, 10)
		b = append(b, `,"payload":`...)
		b = appendValue(b, e.Value)
	case vm.EventUIEmit:
		b = append(b, `{"UiEmit":{"tree":`...)
		b = appendValue(b, e.Value)
	case vm.EventSchedulerTick:
		b = append(b, `{"SchedulerTick":{"round":`...)
		b = strconv.AppendInt(b, e.Round, 10)
		b = append(b, `,"active_actor":`...)
		b = strconv.AppendInt(b, e.Actor, 10)
	case vm.EventContractCheck:
		b = append(b, `{"ContractCheck":{"function":`...)
		b = appendString(b, e.Function)
		b = append(b, `,"kind":`...)
		b = appendString(b, e.Contract)
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(e.Index), 10)
		b = append(b, `,"passed":`...)
		b = strconv.AppendBool(b, e.Passed)
	default:
		// An event kind added to the VM later: tagged by its wire name.
		b = append(b, `{`...)
		b = appendString(b, string(e.Kind))
		b = append(b, `:{`...)
	}
	return append(b, "}}"...)
}

// appendValue appends the externally tagged form of v, iteratively (any
// depth; canonicalValue bounds it).
func appendValue(b []byte, v vm.Value) []byte {
	w := taggedWriter{b: b}
	_ = vm.Walk(v, &w, 0)
	return w.b
}

// taggedWriter writes the externally tagged form of a value (a vm.Visitor).
// json counts the open Json arrays and objects: a Json value is written
// {"Json":<its document>}, its nodes untagged.
type taggedWriter struct {
	b    []byte
	json int
}

func (w *taggedWriter) tag(t string) {
	w.b = append(w.b, `{"`...)
	w.b = append(w.b, t...)
	w.b = append(w.b, `":`...)
}

func (w *taggedWriter) Enter(v vm.Value) {
	switch v.Kind() {
	case vm.KindUnit:
		w.b = append(w.b, `"Unit"`...)
	case vm.KindBool:
		w.tag("Bool")
		w.b = append(strconv.AppendBool(w.b, v.AsBool()), '}')
	case vm.KindInt:
		w.tag("Int")
		w.b = append(strconv.AppendInt(w.b, v.AsInt(), 10), '}')
	case vm.KindFloat:
		w.tag("Float")
		w.b = append(vm.AppendFloatJSON(w.b, v.AsFloat()), '}')
	case vm.KindString:
		w.tag("String")
		w.b = append(appendString(w.b, v.AsString()), '}')
	case vm.KindOption:
		if v.IsNone() {
			w.b = append(w.b, `"None"`...)
		} else {
			w.tag("Some")
		}
	case vm.KindResult:
		if v.IsOk() {
			w.tag("Ok")
		} else {
			w.tag("Err")
		}
	case vm.KindList:
		w.tag("List")
		w.b = append(w.b, '[')
	case vm.KindMap:
		w.tag("Map")
		w.b = append(w.b, '{')
	case vm.KindRecord:
		w.tag("Record")
		w.recordHead(v.Type().ID)
	case vm.KindEnum:
		t := v.Type()
		w.tag("Enum")
		w.b = append(w.b, `{"type_id":`...)
		w.b = strconv.AppendInt(w.b, int64(t.ID), 10)
		w.b = append(w.b, `,"variant":`...)
		w.b = strconv.AppendInt(w.b, int64(v.Variant()), 10)
		w.b = append(w.b, `,"payload":`...)
		switch shape(v) {
		case vm.StructVariant:
			w.b = append(w.b, `{"Record":`...)
			w.recordHead(t.ID)
		case vm.UnitVariant:
			w.b = append(w.b, `"Unit"`...)
		}
	case vm.KindActor:
		w.tag("ActorId")
		w.b = append(strconv.AppendInt(w.b, v.AsActorID(), 10), '}')
	case vm.KindFn:
		w.tag("FnRef")
		w.b = append(strconv.AppendInt(w.b, int64(v.AsFnRef()), 10), '}')
	case vm.KindJSON:
		if w.json == 0 {
			w.tag("Json")
		}
		switch v.JSONKind() {
		case vm.JSONArray:
			w.b = append(w.b, '[')
			w.json++
		case vm.JSONObject:
			w.b = append(w.b, '{')
			w.json++
		case vm.JSONString:
			str, _ := vm.JSONStringText(v)
			w.b = appendString(w.b, str)
		default:
			raw, _ := v.JSONRaw() // null, a bool or a number: cannot fail
			w.b = append(w.b, raw...)
		}
		if w.json == 0 {
			w.b = append(w.b, '}')
		}
	default:
		w.b = append(w.b, `"Unit"`...)
	}
}

func (w *taggedWriter) recordHead(typeID int) {
	w.b = append(w.b, `{"type_id":`...)
	w.b = strconv.AppendInt(w.b, int64(typeID), 10)
	w.b = append(w.b, `,"fields":[`...)
}

func (w *taggedWriter) Child(parent vm.Value, i int, key string) {
	if i > 0 {
		w.b = append(w.b, ',')
	}
	if parent.Kind() == vm.KindMap || parent.Kind() == vm.KindJSON && parent.JSONKind() == vm.JSONObject {
		w.b = appendString(w.b, key)
		w.b = append(w.b, ':')
	}
}

func (w *taggedWriter) Leave(v vm.Value) {
	switch v.Kind() {
	case vm.KindOption:
		if v.IsSome() {
			w.b = append(w.b, '}')
		}
	case vm.KindResult:
		w.b = append(w.b, '}')
	case vm.KindList:
		w.b = append(w.b, "]}"...)
	case vm.KindMap:
		w.b = append(w.b, "}}"...)
	case vm.KindRecord:
		w.b = append(w.b, "]}}"...)
	case vm.KindEnum:
		if shape(v) == vm.StructVariant {
			w.b = append(w.b, "]}}"...)
		}
		w.b = append(w.b, "}}"...)
	case vm.KindJSON:
		if v.JSONKind() == vm.JSONArray {
			w.b = append(w.b, ']')
		} else {
			w.b = append(w.b, '}')
		}
		if w.json--; w.json == 0 {
			w.b = append(w.b, '}')
		}
	}
}

// shape returns the shape of enum value v's variant (UnitVariant for an
// index out of range, as the walk treats it).
func shape(v vm.Value) vm.VariantShape {
	t, i := v.Type(), v.Variant()
	if i < 0 || i >= len(t.Variants) {
		return vm.UnitVariant
	}
	return t.Variants[i].Shape
}

const hexDigits = "0123456789abcdef"

// appendString appends s as serde_json escapes strings.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b = append(b, `\"`...)
			case '\\':
				b = append(b, `\\`...)
			case '\b':
				b = append(b, `\b`...)
			case '\f':
				b = append(b, `\f`...)
			case '\n':
				b = append(b, `\n`...)
			case '\r':
				b = append(b, `\r`...)
			case '\t':
				b = append(b, `\t`...)
			default:
				if c < 0x20 {
					b = append(b, `\u00`...)
					b = append(b, hexDigits[c>>4], hexDigits[c&0xF])
				} else {
					b = append(b, c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
