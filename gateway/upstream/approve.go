package upstream

import (
	"fmt"
	"strings"
)

// Approvals of destructive tools (docs/code-mode.md "Approvals"): a call
// of a tool that NeedsApproval runs only when the caller approves it or
// the operator pre-approved it (--approve-tools PATTERN,…). Patterns have
// the syntax of a policy's tool_policy.allowed_tools: a tool name
// NAME__TOOL, or a prefix ending in the only "*" ("files__*", "*").

// CheckPattern says what is wrong with the tool pattern p ("" when
// nothing): 1 to 200 bytes of A-Z a-z 0-9 _ - . and at most one "*",
// which ends it; without "*" a name NAME__TOOL.
func CheckPattern(p string) string {
	if p == "" {
		return `is empty; write a tool name NAME__TOOL or a prefix ending in * ("files__*")`
	}
	if len(p) > 200 {
		return fmt.Sprintf("is %d bytes long; at most 200", len(p))
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '*':
			if i != len(p)-1 {
				return `has a "*" before its end: a "*" may only end a pattern (a prefix such as "files__*")`
			}
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.':
		default:
			return fmt.Sprintf("has the character %q: tool names are made of A-Z a-z 0-9 _ - .", rune(c))
		}
	}
	if !strings.HasSuffix(p, "*") {
		if srv, tool, ok := strings.Cut(p, Separator); !ok || srv == "" || tool == "" {
			return `matches no tool: an upstream tool is named NAME__TOOL ("files__delete"); end a prefix with * ("files__*")`
		}
	}
	return ""
}

// ParsePatterns checks the patterns of --approve-tools (each trimmed of
// spaces; empty entries are errors): `--approve-tools: "x" <what is
// wrong>`.
func ParsePatterns(flag string, list []string) ([]string, error) {
	out := make([]string, 0, len(list))
	for _, p := range list {
		p = strings.TrimSpace(p)
		if why := CheckPattern(p); why != "" {
			return nil, fmt.Errorf("%s: %q %s", flag, p, why)
		}
		out = append(out, p)
	}
	return out, nil
}

// MatchAny reports whether name matches one of patterns.
func MatchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if p == name {
			return true
		}
	}
	return false
}

// Decision is what a tool call needs before it runs (Decide).
type Decision int

const (
	// Allow: the call runs.
	Allow Decision = iota
	// NeedsApproval: the tool is destructive (Tool.NeedsApproval) and not
	// pre-approved; the caller must approve the call first.
	NeedsApproval
)

// Decide says whether a call of tool t may run as it is: NeedsApproval
// for a tool that NeedsApproval and that no pattern of approved
// (--approve-tools) matches; Allow otherwise. It is the one place
// approvals are decided (CallDecided applies it to the tool as its
// upstream lists it when the call is made); asking the caller (MCP
// elicitation, a task's input_required) would follow a NeedsApproval.
func Decide(t *Tool, approved []string) Decision {
	if !t.NeedsApproval() || MatchAny(approved, t.Name) {
		return Allow
	}
	return NeedsApproval
}

// CodeApprovalRequired is the code of a call refused because it needed an
// approval nobody could give.
const CodeApprovalRequired = "approval_required"

// ApprovalMessage is the refusal of a call of name that needs the
// caller's approval and cannot ask for it.
func ApprovalMessage(name string) string {
	return fmt.Sprintf("tool_call: %q needs the caller's approval (destructiveHint) and this call cannot ask for it; the operator can pre-approve it with --approve-tools %s", name, name)
}
