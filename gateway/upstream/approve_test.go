package upstream

import (
	"strings"
	"testing"
)

func TestParsePatterns(t *testing.T) {
	got, err := ParsePatterns("--approve-tools", []string{"files__delete", " github__* ", "*", "a___b"})
	if err != nil || strings.Join(got, ",") != "files__delete,github__*,*,a___b" {
		t.Fatalf("ParsePatterns = %q, %v", got, err)
	}
	for in, want := range map[string]string{
		"":             `--approve-tools: "" is empty; write a tool name NAME__TOOL or a prefix ending in * ("files__*")`,
		"*__delete":    `--approve-tools: "*__delete" has a "*" before its end: a "*" may only end a pattern (a prefix such as "files__*")`,
		"files/delete": `--approve-tools: "files/delete" has the character '/': tool names are made of A-Z a-z 0-9 _ - .`,
		"delete":       `--approve-tools: "delete" matches no tool: an upstream tool is named NAME__TOOL ("files__delete"); end a prefix with * ("files__*")`,
		"__delete":     `--approve-tools: "__delete" matches no tool: an upstream tool is named NAME__TOOL ("files__delete"); end a prefix with * ("files__*")`,
		strings.Repeat("a", 99) + "__" + strings.Repeat("b", 100): `--approve-tools: "` + strings.Repeat("a", 99) + "__" + strings.Repeat("b", 100) + `" is 201 bytes long; at most 200`,
	} {
		if _, err := ParsePatterns("--approve-tools", []string{"ok__x", in}); err == nil || err.Error() != want {
			t.Errorf("ParsePatterns(%q) = %v, want %s", in, err, want)
		}
	}
}

func TestMatchAny(t *testing.T) {
	pats := []string{"files__delete", "gh__del*"}
	for name, want := range map[string]bool{
		"files__delete": true, "files__delete2": false, "files__delet": false,
		"gh__delete_repo": true, "gh__del": true, "gh__create": false, "": false,
	} {
		if got := MatchAny(pats, name); got != want {
			t.Errorf("MatchAny(%q) = %v", name, got)
		}
	}
	if MatchAny(nil, "a__b") || !MatchAny([]string{"*"}, "a__b") {
		t.Error("nil or *")
	}
}

func TestDecide(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		hints    Hints
		approved []string
		want     Decision
	}{
		{Hints{Destructive: &yes}, nil, NeedsApproval},
		{Hints{Destructive: &yes, ReadOnly: &no}, []string{"x__*"}, NeedsApproval},
		{Hints{Destructive: &yes}, []string{"a__*"}, Allow},
		{Hints{Destructive: &yes}, []string{"a__del"}, Allow},
		{Hints{Destructive: &yes, ReadOnly: &yes}, nil, Allow},
		{Hints{Destructive: &no}, nil, Allow},
		{Hints{}, nil, Allow},
	} {
		tool := Tool{Name: "a__del", Hints: c.hints}
		if got := Decide(&tool, c.approved); got != c.want {
			t.Errorf("Decide(%+v, %q) = %v, want %v", c.hints, c.approved, got, c.want)
		}
	}
	if got := ApprovalMessage("fs__delete"); got != `tool_call: "fs__delete" needs the caller's approval (destructiveHint) and this call cannot ask for it; the operator can pre-approve it with --approve-tools fs__delete` {
		t.Errorf("ApprovalMessage = %s", got)
	}
}
