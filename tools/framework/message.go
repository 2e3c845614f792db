package framework

import (
	"strconv"
	"strings"
)

// Message is a parsed framework_test message (reference
// tooling-reference-impl.md §2.3): Tag is the text before the first ':'
// of the trimmed string (not trimmed again), Payload the rest, trimmed;
// HasColon reports whether there was a ':'. The payload's type is decided
// by the App's message type (see Runtime.Send).
type Message struct {
	Raw      string
	Tag      string
	Payload  string
	HasColon bool
}

// ParseMessage splits s into tag and payload. It never fails:
// "increment:1" → (increment, "1"); " name: Bob Smith " → (name, "Bob Smith");
// "a:b:c" → (a, "b:c"); "inc :1" → ("inc ", "1"); "reset" → (reset, no payload).
func ParseMessage(s string) Message {
	t := strings.TrimSpace(s)
	tag, payload, ok := strings.Cut(t, ":")
	if !ok {
		return Message{Raw: s, Tag: t}
	}
	return Message{Raw: s, Tag: tag, Payload: strings.TrimSpace(payload), HasColon: true}
}

// intPayload interprets the payload as an Int payload: a base-10 signed
// 64-bit integer (a leading '+' or '-' allowed, nothing else), 0 when the
// message has no ':'.
func (m Message) intPayload() (int64, bool) {
	if !m.HasColon {
		return 0, true
	}
	n, err := strconv.ParseInt(m.Payload, 10, 64)
	return n, err == nil
}
