package sealed

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
//     a unit variant's "Unit"), {"ActorId":n}, {"FnRef":n};
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
	var out bytes.Buffer
	out.Grow(len(b) * 2)
	// b is valid JSON by construction, so Indent cannot fail.
	if err := json.Indent(&out, b, "", "  "); err != nil {
		panic("sealed: canonical log is not valid JSON: " + err.Error())
	}
	return out.Bytes()
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

// appendValue appends the externally tagged form of v.
func appendValue(b []byte, v vm.Value) []byte {
	tagged := func(tag string) []byte {
		b = append(b, `{"`...)
		b = append(b, tag...)
		return append(b, `":`...)
	}
	switch v.Kind() {
	case vm.KindUnit:
		return append(b, `"Unit"`...)
	case vm.KindBool:
		b = tagged("Bool")
		b = strconv.AppendBool(b, v.AsBool())
	case vm.KindInt:
		b = tagged("Int")
		b = strconv.AppendInt(b, v.AsInt(), 10)
	case vm.KindFloat:
		b = tagged("Float")
		b = vm.AppendFloatJSON(b, v.AsFloat())
	case vm.KindString:
		b = tagged("String")
		b = appendString(b, v.AsString())
	case vm.KindOption:
		if v.IsNone() {
			return append(b, `"None"`...)
		}
		b = tagged("Some")
		b = appendValue(b, v.Inner())
	case vm.KindResult:
		if v.IsOk() {
			b = tagged("Ok")
		} else {
			b = tagged("Err")
		}
		b = appendValue(b, v.Inner())
	case vm.KindList:
		b = tagged("List")
		b = appendValues(b, v.Elems())
	case vm.KindMap:
		b = tagged("Map")
		b = append(b, '{')
		for i, k := range v.MapKeys() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			x, _ := v.MapGet(k)
			b = appendValue(b, x)
		}
		b = append(b, '}')
	case vm.KindRecord:
		b = tagged("Record")
		b = appendRecord(b, v.Type().ID, v.Fields())
	case vm.KindEnum:
		t := v.Type()
		b = tagged("Enum")
		b = append(b, `{"type_id":`...)
		b = strconv.AppendInt(b, int64(t.ID), 10)
		b = append(b, `,"variant":`...)
		b = strconv.AppendInt(b, int64(v.Variant()), 10)
		b = append(b, `,"payload":`...)
		if i := v.Variant(); i >= 0 && i < len(t.Variants) && t.Variants[i].Shape == vm.StructVariant {
			b = append(b, `{"Record":`...)
			b = appendRecord(b, t.ID, v.Fields())
			b = append(b, '}')
		} else {
			b = appendValue(b, v.Payload())
		}
		b = append(b, '}')
	case vm.KindActor:
		b = tagged("ActorId")
		b = strconv.AppendInt(b, v.AsActorID(), 10)
	case vm.KindFn:
		b = tagged("FnRef")
		b = strconv.AppendInt(b, int64(v.AsFnRef()), 10)
	default:
		return append(b, `"Unit"`...)
	}
	return append(b, '}')
}

func appendValues(b []byte, vs []vm.Value) []byte {
	b = append(b, '[')
	for i, x := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendValue(b, x)
	}
	return append(b, ']')
}

func appendRecord(b []byte, typeID int, fields []vm.Value) []byte {
	b = append(b, `{"type_id":`...)
	b = strconv.AppendInt(b, int64(typeID), 10)
	b = append(b, `,"fields":`...)
	b = appendValues(b, fields)
	return append(b, '}')
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
