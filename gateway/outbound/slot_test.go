package outbound

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestSlot: a response encoded with the placeholders is written with the
// result in their place — the text item's string the object indented by
// 2 spaces, structuredContent the object — exactly the response the whole
// result would have encoded to; another message is written as it is; Done
// gives the bytes back once.
func TestSlot(t *testing.T) {
	s := NewSlot()
	obj := []byte(`{"success":true,"protocol_version":1,"result":"` + strings.Repeat("000001", 50000) + `","list":[],"q":"\"<é>\""}`)
	released := 0
	s.Set(obj, func() { released++ })
	encode := func(text string, object any) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(map[string]any{"jsonrpc": "2.0", "id": 7, "result": map[string]any{
			"content": []any{map[string]any{"type": "text", "text": text}}, "structuredContent": object}})
		return b.Bytes()
	}
	response := encode(s.Text(), s.Object())
	if !s.Holds(response) || s.Holds([]byte(`{"jsonrpc":"2.0","method":"notifications/progress"}`)) {
		t.Fatal("Holds")
	}
	var got bytes.Buffer
	if err := s.WriteTo(&got, response); err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	_ = json.Indent(&pretty, obj, "", "  ")
	if want := encode(pretty.String(), json.RawMessage(obj)); !bytes.Equal(got.Bytes(), want) {
		t.Errorf("WriteTo:\n got %.300s\nwant %.300s", got.Bytes(), want)
	}
	other := []byte("event: message\ndata: {}\n\n")
	got.Reset()
	if err := s.WriteTo(&got, other); err != nil || !bytes.Equal(got.Bytes(), other) {
		t.Errorf("WriteTo without placeholders: %q, %v", got.Bytes(), err)
	}
	s.Done()
	s.Done()
	var nilSlot *Slot
	nilSlot.Done()
	if released != 1 || nilSlot.Holds(response) {
		t.Errorf("released %d times, want 1", released)
	}
	if other := NewSlot(); other.Text() == s.Text() || other.Object() == s.Object() || s.Text() == s.Object() {
		t.Error("placeholders are not unique")
	}
}
