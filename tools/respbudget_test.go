package tools

import "testing"

// The red-team repro: seven copies of a 32 MiB string are refused by the
// default response bound before anything is encoded.
func TestRunResultOverResponseBound(t *testing.T) {
	src := "fn main() -> List<String> { let mut s = \"abcdefghabcdefgh\"\n let mut i = 0\n while i < 21 { s = s ++ s\n i = i + 1 }\n [s, s, s, s, s, s, s] }"
	got := runJSON(t, nil, src, "")
	want := `{"success":false,"protocol_version":1,"error_kind":"limit_exceeded","limit_kind":"output_bytes","phase":"serialization","limit":8387584,"message":"serialized output exceeded 8387584 bytes (the largest response the queue carries)","steps":699340,"outcome":"output_limit","retryable":false}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// A call's larger budget is lowered to the host bound; a smaller one is
// kept with the plain message; a negative bound means none.
func TestRunResponseBoundAndCallLimit(t *testing.T) {
	src := `fn main() -> String { "0123456789" }` // 12 bytes encoded
	env := &Env{MaxResponseBytes: 11}
	if got, want := runJSON(t, env, src, `"limits":{"max_output_bytes":100}`),
		`{"success":false,"protocol_version":1,"error_kind":"limit_exceeded","limit_kind":"output_bytes","phase":"serialization","limit":11,"message":"serialized output exceeded 11 bytes (the largest response the queue carries)","steps":2,"outcome":"output_limit","retryable":false}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got, want := runJSON(t, &Env{MaxResponseBytes: 12}, src, `"limits":{"max_output_bytes":5}`),
		`{"success":false,"protocol_version":1,"error_kind":"limit_exceeded","limit_kind":"output_bytes","phase":"serialization","limit":5,"message":"serialized output exceeded 5 bytes","steps":2,"outcome":"output_limit","retryable":false}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, e := range []*Env{{MaxResponseBytes: 12}, {MaxResponseBytes: -1}} {
		if got, want := runJSON(t, e, src, ""),
			`{"success":true,"protocol_version":1,"result":"0123456789","steps":2,"ui_output":[],"outcome":"ok","retryable":false}`; got != want {
			t.Errorf("bound %d: got  %s\nwant %s", e.MaxResponseBytes, got, want)
		}
	}
}
