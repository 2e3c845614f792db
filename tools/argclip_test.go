package tools

import (
	"errors"
	"strings"
	"testing"
)

// An unknown argument name is quoted whole up to 128 bytes, cut beyond it
// (message and ArgError.Arg alike).
func TestUnknownArgumentNameClipped(t *testing.T) {
	long := strings.Repeat("k", 4<<20)
	got := call(t, nil, "boruna_run", `{"source":"fn main() -> Int { 1 }","`+long+`":1}`)
	want := `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":"unknown argument \"` +
		strings.Repeat("k", 128) + `\"… (4194304 bytes) for tool \"boruna_run\" (known arguments: source, policy, max_steps, max_wall_ms, trace, limits, output_schema, seed, idempotency_key)","outcome":"invalid_args","retryable":false}`
	if got != want {
		t.Errorf("got  %.600s\nwant %.600s", got, want)
	}
	_, err := CheckArgs("boruna_run", []byte(`{"source":"x","limits":{"é`+strings.Repeat("é", 100)+`":1}}`))
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Fatalf("CheckArgs error %v", err)
	}
	// "limits." (7 bytes) + 60 two-byte runes = 127 bytes: the 128th byte
	// would split a rune.
	if wantArg := "limits." + strings.Repeat("é", 60); ae.Arg != wantArg {
		t.Errorf("Arg = %q, want %q", ae.Arg, wantArg)
	}
	if wantMsg := `unknown argument "limits.` + strings.Repeat("é", 60) + `"… (209 bytes) for tool "boruna_run"`; !strings.HasPrefix(ae.Msg, wantMsg) {
		t.Errorf("Msg = %q, want prefix %q", ae.Msg, wantMsg)
	}
	// 128 bytes exactly are quoted whole.
	name := strings.Repeat("z", 128)
	if _, err := CheckArgs("boruna_ast", []byte(`{"source":"x","`+name+`":1}`)); err == nil || !strings.HasPrefix(err.Error(), `unknown argument "`+name+`" for tool`) {
		t.Errorf("128-byte name: %v", err)
	}
}
