package tools

import (
	"fmt"
	"slices"
	"strings"

	"github.com/axpool/axpool/internal/spell"
)

// AgentTools are the built-in tools of the "agent" tool list (--tools
// agent, docs/tools.md §1 "Tool lists"), in their listing order: what an
// agent needs to write, check and run programs, and the least it must read
// before its first call.
var AgentTools = []string{"boruna_capability_list", "boruna_check", "boruna_run"}

// ToolListError is a --tools value that names no usable tool list.
type ToolListError struct {
	Name string // the unknown name, "" for an empty list
	Hint string // the nearest tool name, or ""
}

// Error says what is wrong: `unknown tool "boruna_rn" in --tools (did you
// mean "boruna_run"?)`, or that the list is empty.
func (e *ToolListError) Error() string {
	if e.Name == "" {
		return `--tools names no tool; give "all", "agent" or tool names separated by commas`
	}
	msg := fmt.Sprintf("unknown tool %q in --tools", e.Name)
	if e.Hint != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Hint)
	}
	return msg + `; give "all", "agent" or tool names separated by commas`
}

// ToolList parses a --tools value: "all" (or "") is every built-in tool
// (nil), "agent" is AgentTools, anything else is tool names separated by
// commas (white space around a name is ignored; "agent" may be among
// them and adds its tools). The result is in ListOrder, without
// duplicates. Errors: *ToolListError.
func ToolList(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return nil, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(s, ",") {
		switch n = strings.TrimSpace(n); {
		case n == "agent":
			for _, a := range AgentTools {
				want[a] = true
			}
		case n == "all":
			return nil, nil
		case n == "":
		default:
			if _, ok := SpecOf(n); !ok {
				hint, _ := spell.Nearest(n, Names())
				return nil, &ToolListError{Name: n, Hint: hint}
			}
			want[n] = true
		}
	}
	if len(want) == 0 {
		return nil, &ToolListError{}
	}
	var out []string
	for _, n := range ListOrder() {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// ListOrder returns the built-in tool names in the order tools/list gives
// them: AgentTools first (the tools an agent reads first, beginning with
// the one that needs no argument), then the others in registration order
// (Names).
func ListOrder() []string {
	out := append([]string(nil), AgentTools...)
	for _, n := range Names() {
		if !slices.Contains(AgentTools, n) {
			out = append(out, n)
		}
	}
	return out
}
