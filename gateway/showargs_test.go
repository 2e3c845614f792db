package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/wire"
)

// An approval's message shows every argument of the call, each clipped on
// its own (on a rune boundary), strings quoted with " and \ escaped, and
// every control and bidirectional control escaped visibly; the secrets
// are masked before anything is clipped (red team M4, #30).
func TestApprovalMessageShowsEveryArgument(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	g := s.newGateway(t, Config{Masker: mask.Values("sk-live-0123456789")})
	msg := func(args string) string {
		return g.approvalParams(&wire.Suspension{Kind: wire.SuspensionApproval, Tool: "gh__delete_repo", Args: json.RawMessage(args)}).Message
	}
	const head = "A program wants to call the tool gh__delete_repo, which may change or delete data (destructiveHint), with the arguments "
	const tail = ". Approve this call?"
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%02d":%d`, i, i)
	}
	for _, tc := range []struct{ name, args, want string }{
		{"short", `{"repo": "r1"}`, `{"repo":"r1"}`},
		// The red team's: a long first field hid the target, and U+202E
		// reversed it.
		{"long first field", `{"note": "routine` + strings.Repeat(" ", 1000) + `", "repo": "\u202eprod-main"}`,
			`{"note":"routine` + strings.Repeat(" ", 121) + `…","repo":"\u202eprod-main"}`},
		{"controls", `{"a": "x\u001b[2J\u0007\b\r\ny\u0085", "b\u2066": "\u200f\u061c"}`, `{"a":"x\u001b[2J\u0007\b\r\ny\u0085","b\u2066":"\u200f\u061c"}`},
		{"fake argument", `{"note": "x\",\"repo\":\"staging", "repo": "prod"}`, `{"note":"x\",\"repo\":\"staging","repo":"prod"}`},
		{"backslash", `{"path": "C:\\new"}`, `{"path":"C:\\new"}`},
		{"rune boundary", `{"s": "x` + strings.Repeat("é", 100) + `"}`, `{"s":"x` + strings.Repeat("é", 63) + `…"}`},
		{"non-string values", `{"n": 1.50, "list": [1, "\u202e", {"k": null}], "t": true}`, `{"n":1.50,"list":[1,"\u202e",{"k":null}],"t":true}`},
		{"real controls in a list", "{\"list\": [\"\u202e\u0085\", \"a\\u0007\"]}", `{"list":["\u202e\u0085","a\u0007"]}`},
		{"long object value", `{"o": {"text": "` + strings.Repeat("a", 200) + `"}, "repo": "r"}`, `{"o":{"text":"` + strings.Repeat("a", 128-9) + `…,"repo":"r"}`},
		{"long name", `{"` + strings.Repeat("k", 100) + `": 1}`, `{"` + strings.Repeat("k", 64) + `…":1}`},
		{"duplicate keys", `{"repo": "staging", "repo": "prod"}`, `{"repo":"staging","repo":"prod"}`},
		{"secret", `{"token": "sk-live-0123456789", "repo": "r"}`, `{"token":"***","repo":"r"}`},
		{"many", `{` + strings.Join(many, ",") + `}`, `{` + strings.Join(many[:32], ",") + `,… (8 more arguments not shown)}`},
		{"empty", `{}`, `{}`},
		{"not an object", `["a", "\u202e"]`, `["a", "\u202e"]`},
	} {
		if got, want := msg(tc.args), head+tc.want+tail; got != want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, want)
		}
	}
}

// ask()'s question keeps its newlines and shows every other control
// (ESC, BEL, BS, CR) and bidirectional control as an escape, after
// masking and clipping to MaxQuestionBytes on a rune boundary (red team
// L6, #30).
func TestSuspendQuestionEscaped(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	g := s.newGateway(t, Config{Masker: mask.Values("sk-live-0123456789")})
	q := func(m string) string {
		return g.questionParams(&wire.Suspension{Kind: wire.SuspensionAsk, Message: m}).Message
	}
	for _, tc := range []struct{ in, want string }{
		{"Which colour?\nRed or blue", "Which colour?\nRed or blue"},
		{"Approve?\r\n\x1b[2K\x07\x08done \u202eeulb\u202c \\ \"q\"", `Approve?\r` + "\n" + `\u001b[2K\u0007\bdone \u202eeulb\u202c \ "q"`},
		{"key sk-live-0123456789\ttab", `key ***\ttab`},
		{strings.Repeat("é", 3000), strings.Repeat("é", 2048) + "…"},
	} {
		if got := q(tc.in); got != tc.want {
			t.Errorf("question %q:\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
