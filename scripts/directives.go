package scripts

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/axpool/axpool/internal/spell"
	"github.com/axpool/axpool/internal/text"
)

// The comment block directly above `fn main` (docs/scripts.md "A script is
// one file"): its `//` lines are the description, its `//!` lines the
// directives. A blank line or any other line ends the block.

// MaxDescriptionBytes caps a composed description (the comment text plus
// the "Returns:" trailer); a longer one is cut at a UTF-8 boundary and
// ends with "\n[truncated]".
const MaxDescriptionBytes = 8 << 10

// MaxTimeoutMs is the largest `timeout_ms` a script may declare (24 h).
const MaxTimeoutMs = 24 * 60 * 60 * 1000

// directiveNames are the known directives, in documentation order.
var directiveNames = []string{"returns", "param", "confirm", "private", "context", "on_failure", "timeout_ms", "task"}

// directives is what the comment block above main declares.
type directives struct {
	description  string
	returns      string
	params       map[string]string // param name → description
	paramPos     map[string]lineCol
	confirm      string
	private      bool
	context      bool
	onFailure    string
	onFailurePos lineCol
	timeoutMs    int64
	task         TaskSupport
}

// lineCol is a 1-based position in a script file (Col counts bytes).
type lineCol struct{ line, col int }

// parseBlock reads the comment block that ends on the line before
// mainLine (1-based) and every `//!` line elsewhere in src (an error: a
// directive outside the block has no effect). diag reports a problem.
func parseBlock(src []byte, mainLine int, diag func(p lineCol, format string, args ...any)) *directives {
	lines := strings.Split(string(src), "\n")
	for i := range lines {
		lines[i] = strings.TrimSuffix(lines[i], "\r")
	}
	first := mainLine - 1 // index of main's line; the block ends before it
	for first > 0 {
		if t := strings.TrimLeft(lines[first-1], " \t"); strings.HasPrefix(t, "//") {
			first--
			continue
		}
		break
	}
	for i, l := range lines {
		if i >= first && i < mainLine-1 {
			continue
		}
		if t := strings.TrimLeft(l, " \t"); strings.HasPrefix(t, "//!") {
			diag(lineCol{i + 1, len(l) - len(t) + 1}, "directive outside the comment block directly above fn main (it would have no effect)")
		}
	}
	d := &directives{params: map[string]string{}, paramPos: map[string]lineCol{}}
	seen := map[string]int{} // directive (or "param NAME") → its line
	var desc []string
	for i := first; i < mainLine-1; i++ {
		l := lines[i]
		t := strings.TrimLeft(l, " \t")
		indent := len(l) - len(t)
		if !strings.HasPrefix(t, "//!") {
			text := strings.TrimPrefix(t, "//")
			text = strings.TrimPrefix(text, " ")
			desc = append(desc, strings.TrimRight(text, " \t"))
			continue
		}
		p := &dirParser{line: i + 1, text: l, off: indent + 3, diag: diag}
		p.directive(d, seen)
	}
	for len(desc) > 0 && desc[0] == "" {
		desc = desc[1:]
	}
	for len(desc) > 0 && desc[len(desc)-1] == "" {
		desc = desc[:len(desc)-1]
	}
	d.description = strings.Join(desc, "\n")
	return d
}

// dirParser reads one `//!` line; off is the byte offset after "//!".
type dirParser struct {
	line int
	text string
	off  int
	diag func(p lineCol, format string, args ...any)
	ok   bool // the directive parsed
}

func (p *dirParser) pos() lineCol { return lineCol{p.line, p.off + 1} }

func (p *dirParser) skipSpace() {
	for p.off < len(p.text) && (p.text[p.off] == ' ' || p.text[p.off] == '\t') {
		p.off++
	}
}

// word reads [A-Za-z0-9_-]* at the current offset.
func (p *dirParser) word() string {
	start := p.off
	for p.off < len(p.text) {
		c := p.text[p.off]
		if c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			p.off++
			continue
		}
		break
	}
	return p.text[start:p.off]
}

// token reads up to the next space.
func (p *dirParser) token() string {
	start := p.off
	for p.off < len(p.text) && p.text[p.off] != ' ' && p.text[p.off] != '\t' {
		p.off++
	}
	return p.text[start:p.off]
}

// str reads a quoted string with the language's escapes (\\ \" \n \t \r
// \0 \'); ok is false after a reported error.
func (p *dirParser) str(dir string) (string, bool) {
	p.skipSpace()
	if p.off >= len(p.text) || p.text[p.off] != '"' {
		p.diag(p.pos(), "directive %q needs a quoted string", dir)
		return "", false
	}
	start := p.pos()
	p.off++
	var b strings.Builder
	for p.off < len(p.text) {
		c := p.text[p.off]
		switch c {
		case '"':
			p.off++
			if b.Len() == 0 {
				p.diag(start, "directive %q needs a non-empty string", dir)
				return "", false
			}
			return b.String(), true
		case '\\':
			if p.off+1 >= len(p.text) {
				p.off++
				continue
			}
			esc := p.text[p.off+1]
			r, ok := map[byte]byte{'\\': '\\', '"': '"', 'n': '\n', 't': '\t', 'r': '\r', '0': 0, '\'': '\''}[esc]
			if !ok {
				p.diag(p.pos(), "unknown escape sequence '\\%c' in directive %q", esc, dir)
				return "", false
			}
			b.WriteByte(r)
			p.off += 2
		default:
			b.WriteByte(c)
			p.off++
		}
	}
	p.diag(start, "unterminated string in directive %q", dir)
	return "", false
}

// end reports text after a complete directive.
func (p *dirParser) end(dir string) bool {
	p.skipSpace()
	if p.off < len(p.text) {
		p.diag(p.pos(), "unexpected text after directive %q: %s", dir, strconv.Quote(text.Cut(p.text[p.off:], maxShownValue)))
		return false
	}
	return true
}

// directive parses one directive line into d.
func (p *dirParser) directive(d *directives, seen map[string]int) {
	p.skipSpace()
	at := p.pos()
	name := p.word()
	if name == "" {
		p.diag(at, "empty directive (known directives: %s)", strings.Join(directiveNames, ", "))
		return
	}
	key := name
	// A directive counts as seen once it parsed; a duplicate of a
	// malformed one gets the malformed one's error only.
	dup := func() bool {
		if l, ok := seen[key]; ok {
			p.diag(at, "duplicate directive %q (first at line %d)", key, l)
			return true
		}
		return false
	}
	defer func() {
		if _, ok := seen[key]; !ok && p.ok {
			seen[key] = p.line
		}
	}()
	switch name {
	case "returns", "confirm", "on_failure":
		if dup() {
			return
		}
		at := p.pos()
		s, ok := p.str(name)
		if !ok || !p.end(name) {
			return
		}
		p.ok = true
		switch name {
		case "returns":
			d.returns = s
		case "confirm":
			d.confirm = s
		case "on_failure":
			p.off = at.col - 1
			p.skipSpace()
			d.onFailure, d.onFailurePos = s, p.pos()
		}
	case "param":
		p.skipSpace()
		pat := p.pos()
		pname := p.word()
		if pname == "" {
			p.diag(pat, "directive \"param\" needs a parameter name, then a quoted string")
			return
		}
		key = "param " + pname
		if dup() {
			return
		}
		s, ok := p.str("param")
		if !ok || !p.end("param") {
			return
		}
		d.params[pname] = s
		d.paramPos[pname] = pat
		p.ok = true
	case "private", "context":
		if dup() || !p.end(name) {
			return
		}
		p.ok = true
		if name == "private" {
			d.private = true
		} else {
			d.context = true
		}
	case "timeout_ms":
		if dup() {
			return
		}
		p.skipSpace()
		nat := p.pos()
		w := p.token()
		n, err := strconv.ParseInt(w, 10, 64)
		if err != nil || n < 1 || n > MaxTimeoutMs || strings.TrimLeft(w, "0123456789") != "" {
			p.diag(nat, "directive \"timeout_ms\" needs a whole number of milliseconds from 1 to %d", MaxTimeoutMs)
			return
		}
		if !p.end(name) {
			return
		}
		d.timeoutMs = n
		p.ok = true
	case "task":
		if dup() {
			return
		}
		p.skipSpace()
		wat := p.pos()
		w := p.token()
		switch TaskSupport(w) {
		case TaskRequired, TaskOptional, TaskNever:
		default:
			p.diag(wat, "directive \"task\" needs required, optional or never, got %q", w)
			return
		}
		if !p.end(name) {
			return
		}
		d.task = TaskSupport(w)
		p.ok = true
	default:
		msg := fmt.Sprintf("unknown directive %q", name)
		if s, ok := spell.Nearest(name, directiveNames); ok {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else {
			msg += " (known directives: " + strings.Join(directiveNames, ", ") + ")"
		}
		p.diag(at, "%s", msg)
	}
}

// composeDescription is the tool description: the comment text, then, with
// `returns`, a blank line and "Returns: …"; capped at MaxDescriptionBytes.
func composeDescription(d *directives) string {
	s := d.description
	if d.returns != "" {
		if s != "" {
			s += "\n\n"
		}
		s += "Returns: " + d.returns
	}
	return capText(s, MaxDescriptionBytes)
}

// capText cuts s to max bytes at a UTF-8 boundary and appends
// "\n[truncated]" (outside the cap) when it was longer.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return text.Cut(s, max) + "\n[truncated]"
}
