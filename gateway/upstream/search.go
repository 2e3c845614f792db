package upstream

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Search limits.
const (
	DefaultSearchLimit = 10
	MaxSearchLimit     = 50
)

// Match is a tool Search found, with its score and a call example.
type Match struct {
	Tool
	// Score is the tool's relevance (Search's rule); 0 when the query was
	// empty.
	Score int
	// Example is an .ax call of the tool (CallExample).
	Example string
}

// Search returns at most limit tools of the upstreams that are up, best
// first (limit ≤ 0 means DefaultSearchLimit; at most MaxSearchLimit).
// The query and each tool's full name, title and description are split
// into lower-case words (runs of letters and digits; "create_issue" is
// "create" and "issue"). A tool scores, for each distinct query word:
// 4 when it is a word of the tool's name, 2 when a name word starts with
// it (3 letters or more), 1 when it is a word of the title or description
// (prefixes of 3 letters or more count too); and 5 more when the whole
// query, lower-cased, is a substring of the name. Tools scoring 0 are
// left out; ties go by name. An empty query lists the tools by name.
func (m *Manager) Search(query string, limit int) []Match {
	return SearchTools(m.Tools(), query, limit)
}

// SearchTools is Search over the tools list (the upstreams' with others:
// the gateway's named scripts), by the same rule.
func SearchTools(list []Tool, query string, limit int) []Match {
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	q := words(query)
	whole := strings.ToLower(strings.TrimSpace(query))
	var out []Match
	for _, t := range list {
		score := 0
		if len(q) > 0 {
			score = scoreTool(&t, q, whole)
			if score == 0 {
				continue
			}
		}
		out = append(out, Match{Tool: t, Score: score})
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		if a.Score != b.Score {
			return b.Score - a.Score
		}
		return strings.Compare(a.Name, b.Name)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	for i := range out {
		out[i].Example = CallExample(out[i].Name, out[i].InputSchema)
	}
	return out
}

// HasWords reports whether query has a word Search looks for (a run of
// letters or digits); Search lists every tool for a query without one.
func HasWords(query string) bool {
	return strings.IndexFunc(query, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) >= 0
}

// scoreTool is Search's score of t for the query words q.
func scoreTool(t *Tool, q []string, whole string) int {
	name := words(t.Name)
	text := words(t.Title + " " + t.Description)
	score := 0
	for _, w := range q {
		switch {
		case slices.Contains(name, w):
			score += 4
		case len(w) >= 3 && slices.ContainsFunc(name, func(n string) bool { return strings.HasPrefix(n, w) }):
			score += 2
		}
		if slices.Contains(text, w) || len(w) >= 3 && slices.ContainsFunc(text, func(n string) bool { return strings.HasPrefix(n, w) }) {
			score++
		}
	}
	if whole != "" && strings.Contains(strings.ToLower(t.Name), whole) {
		score += 5
	}
	return score
}

// words splits s into its distinct lower-case words (runs of letters and
// digits), in order.
func words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// CallExample is an .ax call of tool name whose input schema is schema,
// an expression of type Result<Json, String>:
//
//	match json_parse("{\"title\": \"\", \"body\": \"\"}") { Ok(args) => tool_call("github__create_issue", args), Err(e) => Err(e) }
//
// The arguments object holds the schema's required properties (all of
// them when none is required, at most 8), each with a placeholder of its
// type: "" for a string, 0 for a number or an integer, false for a
// boolean, [] for an array, {} for an object, null otherwise.
func CallExample(name string, schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	json.Unmarshal(schema, &s)
	keys := s.Required
	if len(keys) == 0 {
		keys = sortedKeys(s.Properties)
	}
	if len(keys) > 8 {
		keys = keys[:8]
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		kq, _ := json.Marshal(k)
		b.Write(kq)
		b.WriteString(": ")
		b.WriteString(placeholder(s.Properties[k].Type))
	}
	b.WriteByte('}')
	return "match json_parse(" + strconv.Quote(b.String()) + ") { Ok(args) => tool_call(" + strconv.Quote(name) + ", args), Err(e) => Err(e) }"
}

// placeholder is the example value of a JSON schema type (a string, or
// a list of them whose first non-null one counts).
func placeholder(typ any) string {
	t, _ := typ.(string)
	if list, ok := typ.([]any); ok {
		for _, e := range list {
			if s, _ := e.(string); s != "" && s != "null" {
				t = s
				break
			}
		}
	}
	switch t {
	case "string":
		return `""`
	case "number", "integer":
		return "0"
	case "boolean":
		return "false"
	case "array":
		return "[]"
	case "object":
		return "{}"
	}
	return "null"
}
