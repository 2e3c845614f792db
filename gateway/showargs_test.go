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

// An approval's message shows the arguments the tool's input schema
// declares first (required, then the others, in the schema's order),
// never hidden, each value clipped to 1,024 bytes; then the ones it does
// not declare, marked, each clipped to 128, at most 32; strings quoted
// with " and \ escaped; every control, bidirectional control, format
// character, tag and filler escaped; secrets masked before anything is
// clipped; and "Not everything is shown: …" first when something is
// hidden or clipped (red team M4, #30, and the suspension review).
func TestApprovalMessageShowsEveryArgument(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	g := s.newGateway(t, Config{Masker: mask.Values("sk-live-0123456789")})
	// The fake upstream's delete_repo, as mcp-go lists it.
	const fakeSchema = `{"type":"object","properties":{"repo":{"type":"string"}},"required":["repo"]}`
	const schema = `{"type":"object","properties":{"owner":{"type":"string"},"repo":{"type":"string"},"opts":{"type":"object"}},"required":["repo"]}`
	msg := func(args, schema string) string {
		var sc []byte
		if schema != "" {
			sc = []byte(schema)
		}
		return g.approvalText(&wire.Suspension{Kind: wire.SuspensionApproval, Tool: "gh__delete_repo", Args: json.RawMessage(args)}, sc)
	}
	const head = "A program wants to call the tool gh__delete_repo, which may change or delete data (destructiveHint), with "
	const tail = ". Approve this call?"
	const undecl = " and the arguments its input schema does not declare "
	const onlyUndecl = "the arguments its input schema does not declare "
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%02d":%d`, i, i)
	}
	// The red team's: 31 padding arguments z00…z30 and a fake "re\u200bpo"
	// before the real target.
	pad := make([]string, 31)
	for i := range pad {
		pad[i] = fmt.Sprintf(`"z%02d":""`, i)
	}
	redTeam := `{"re\u200bpo": "test-sandbox", ` + strings.Join(pad, ", ") + `, "repo": "prod-main"}`
	x := strings.Repeat("x", 200)
	for _, tc := range []struct{ name, args, schema, notice, want string }{
		{"short", `{"repo": "r1"}`, schema, "", `the arguments {"repo":"r1"}`},
		{"red team", redTeam, fakeSchema, "",
			`the arguments {"repo":"prod-main"}` + undecl + `{"re\u200bpo":"test-sandbox",` + strings.Join(pad, ",") + `}`},
		{"red team, no schema", redTeam, "", "Not everything is shown: 1 argument hidden. ",
			onlyUndecl + `{"re\u200bpo":"test-sandbox",` + strings.Join(pad, ",") + `,… (1 more arguments not shown)}`},
		{"red team nested", `{"opts": {"pad": "` + x + `", "repo": "prod"}}`, schema, "",
			`the arguments {"opts":{"pad":"` + x + `","repo":"prod"}}`},
		{"nested beyond the declared clip", `{"opts": {"pad": "` + strings.Repeat("x", 2000) + `", "repo": "prod"}}`, schema,
			"Not everything is shown: 1 value clipped. ", `the arguments {"opts":{"pad":"` + strings.Repeat("x", 1024-8) + `…}`},
		{"nested undeclared", `{"o": {"pad": "` + x + `", "repo": "prod"}, "repo": "r"}`, schema, "Not everything is shown: 1 value clipped. ",
			`the arguments {"repo":"r"}` + undecl + `{"o":{"pad":"` + strings.Repeat("x", 128-8) + `…}`},
		{"schema order", `{"opts": 1, "x": 2, "owner": "o", "repo": "r"}`, schema, "", `the arguments {"repo":"r","owner":"o","opts":1}` + undecl + `{"x":2}`},
		{"long first field", `{"note": "routine` + strings.Repeat(" ", 1000) + `", "repo": "\u202eprod-main"}`, schema, "Not everything is shown: 1 value clipped. ",
			`the arguments {"repo":"\u202eprod-main"}` + undecl + `{"note":"routine` + strings.Repeat(" ", 121) + `…"}`},
		{"controls", `{"a": "x\u001b[2J\u0007\b\r\ny\u0085", "b\u2066": "\u200f\u061c"}`, "", "",
			onlyUndecl + `{"a":"x\u001b[2J\u0007\b\r\ny\u0085","b\u2066":"\u200f\u061c"}`},
		{"format, tags, fillers", `{"re\u200dpo": "\u00ad\ufeff\u2060\udb40\udc41\u3164\u115f"}`, "", "",
			onlyUndecl + `{"re\u200dpo":"\u00ad\ufeff\u2060\U000e0041\u3164\u115f"}`},
		{"fake argument", `{"note": "x\",\"repo\":\"staging", "repo": "prod"}`, schema, "",
			`the arguments {"repo":"prod"}` + undecl + `{"note":"x\",\"repo\":\"staging"}`},
		{"backslash", `{"path": "C:\\new"}`, "", "", onlyUndecl + `{"path":"C:\\new"}`},
		{"rune boundary", `{"s": "x` + strings.Repeat("é", 100) + `"}`, "", "Not everything is shown: 1 value clipped. ",
			onlyUndecl + `{"s":"x` + strings.Repeat("é", 63) + `…"}`},
		{"non-string values", `{"n": 1.50, "list": [1, "\u202e", {"k": null}], "t": true}`, "", "",
			onlyUndecl + `{"n":1.50,"list":[1,"\u202e",{"k":null}],"t":true}`},
		{"real controls in a list", "{\"list\": [\"\u202e\u0085\u200b\", \"a\\u0007\"]}", "", "", onlyUndecl + `{"list":["\u202e\u0085\u200b","a\u0007"]}`},
		{"long name", `{"` + strings.Repeat("k", 100) + `": 1}`, "", "Not everything is shown: 1 argument name clipped. ",
			onlyUndecl + `{"` + strings.Repeat("k", 64) + `…":1}`},
		{"duplicate keys", `{"repo": "staging", "repo": "prod"}`, schema, "", `the arguments {"repo":"staging","repo":"prod"}`},
		{"a declared key thrice", `{"repo": "a", "repo": "b", "repo": "c"}`, schema, "Not everything is shown: 1 argument hidden. ", `the arguments {"repo":"a","repo":"c"}`},
		{"undeclared duplicates", `{"x": "a", "x": "b", "x": "c"}`, schema, "", onlyUndecl + `{"x":"a","x":"b","x":"c"}`},
		{"secret", `{"token": "sk-live-0123456789", "repo": "r"}`, schema, "", `the arguments {"repo":"r"}` + undecl + `{"token":"***"}`},
		{"many", `{` + strings.Join(many, ",") + `}`, "", "Not everything is shown: 8 arguments hidden. ",
			onlyUndecl + `{` + strings.Join(many[:32], ",") + `,… (8 more arguments not shown)}`},
		{"many and clipped", `{"repo": "` + strings.Repeat("r", 1100) + `", "long": "` + x + `", "k` + strings.Repeat("k", 70) + `": 0, ` + strings.Join(many, ",") + `}`, schema,
			"Not everything is shown: 10 arguments hidden, 2 values clipped, 1 argument name clipped. ",
			`the arguments {"repo":"` + strings.Repeat("r", 1024) + `…"}` + undecl + `{"long":"` + strings.Repeat("x", 128) + `…","` + strings.Repeat("k", 64) + `…":0,` + strings.Join(many[:30], ",") + `,… (10 more arguments not shown)}`},
		{"empty", `{}`, schema, "", `the arguments {}`},
		{"not an object", `["a", "\u202e"]`, schema, "", `the arguments ["a", "\u202e"]`},
		{"long, not an object", `"` + strings.Repeat("y", 2000) + `"`, "", "Not everything is shown: 1 value clipped. ", `the arguments "` + strings.Repeat("y", 1023) + `…`},
	} {
		if got, want := msg(tc.args, tc.schema), tc.notice+head+tc.want+tail; got != want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, want)
		}
	}
}

// schemaArgs orders the declared arguments: the required ones in the
// order of "properties", required ones it lacks in the order of
// "required", then the other properties; a schema it cannot read
// declares none.
func TestApprovalSchemaArgs(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object","properties":{"a":{},"b":{},"c":{},"d":{}},"required":["d","b","x"]}`: "b,d,x,a,c",
		`{"required":["r"],"properties":{"p":{}}}`:                                              "r,p",
		`{"properties":{"p":{}},"required":"p"}`:                                                "p",
		`{"type":"object"}`:                                                                     "",
		`{"properties":[1]}`:                                                                    "",
		`{"properties":{"a":{},"b":{}},"properties":{"a":{},"c":{}},"required":["c"]}`:          "c,a,b",
		`{"required":["r"],"properties":{"p":{}},"required":null}`:                              "p",
		`{"required":["r"],"properties":{"p":{}},"properties":5}`:                               "",
		`{"properties":{"p":{}},"required":["p"`:                                                "",
		`[]`:                                                                                    "",
		``:                                                                                      "",
	} {
		if got := strings.Join(schemaArgs([]byte(schema)), ","); got != want {
			t.Errorf("schemaArgs(%s) = %q, want %q", schema, got, want)
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
		{"Delete re\u200bpo\u00ad?\U000e0041\u3164\ufeff\n", `Delete re\u200bpo\u00ad?\U000e0041\u3164\ufeff` + "\n"},
		{strings.Repeat("é", 3000), "Not everything is shown: the question is clipped to 4096 bytes. " + strings.Repeat("é", 2048) + "…"},
		{strings.Repeat("é", 2048), strings.Repeat("é", 2048)},
	} {
		if got := q(tc.in); got != tc.want {
			t.Errorf("question %q:\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}
