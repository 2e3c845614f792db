package framework

import (
	"slices"
	"testing"
)

// TestMessageLines: one message per line, "\r\n" as "\n", blank lines
// skipped, a last line without a newline kept.
func TestMessageLines(t *testing.T) {
	got := MessageLines([]byte("Inc\r\n\n  \nAdd(2)\r\nReset"))
	if want := []string{"Inc", "Add(2)", "Reset"}; !slices.Equal(got, want) {
		t.Errorf("MessageLines = %q, want %q", got, want)
	}
	if got := MessageLines(nil); got != nil {
		t.Errorf("MessageLines(nil) = %q", got)
	}
}
