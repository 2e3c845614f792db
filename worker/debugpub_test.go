package worker

import (
	"reflect"
	"testing"
	"time"
)

// The first line goes out at once; lines within the interval wait (here an
// hour: only close sends them), close sends them before it returns, and
// nothing is published after close.
func TestDebugPub(t *testing.T) {
	var events [][]string
	p := &debugPub{interval: time.Hour, publish: func(l []string) { events = append(events, l) }}
	p.line("a")
	p.line("b")
	p.line("c")
	if want := [][]string{{"a"}}; !reflect.DeepEqual(events, want) {
		t.Errorf("before close: %q, want %q", events, want)
	}
	p.close()
	p.line("d")
	p.close()
	if want := [][]string{{"a"}, {"b", "c"}}; !reflect.DeepEqual(events, want) {
		t.Errorf("after close: %q, want %q", events, want)
	}
}
