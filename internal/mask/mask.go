// Package mask hides secrets in what axpool sends to agents
// (docs/tools.md §4): a Masker replaces the values of secret-looking
// environment variables (IsSecretName) and of those named by --secret-env
// with "***" in text and in JSON documents. The gateway masks every result
// with it, the workers every result envelope, `axpool script run` what it
// prints.
//
// Imports: internal/jsonenc.
package mask

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/axpool/axpool/internal/jsonenc"
)

// secretNameParts are the case-insensitive substrings that make an
// environment variable's value a secret (docs/tools.md §4).
var secretNameParts = []string{
	"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY",
	"PRIVATE_KEY", "ACCESS_KEY", "CREDENTIAL", "AUTH",
}

// secretNameExempt are variables whose names match but hold no secret.
var secretNameExempt = map[string]bool{
	"SSH_AUTH_SOCK": true, "GIT_AUTHOR_NAME": true, "GIT_AUTHOR_EMAIL": true,
	"GIT_AUTHOR_DATE": true, "XAUTHORITY": true,
}

// MinSecretLen is the shortest value that is masked, in bytes
// (docs/tools.md §4): a shorter one would corrupt ordinary results (a port
// such as 8080), and a program could find it by enumeration, learning a
// 4-digit PIN from which of 10,000 strings comes back masked.
const MinSecretLen = 8

// Mask is what a secret is replaced with.
const Mask = "***"

// Masker replaces the values of secret-looking environment variables with
// "***" in everything the gateway sends to agents. The zero value and nil
// mask nothing. A Masker is immutable and safe for concurrent use.
type Masker struct {
	secrets  []string // longest first
	escaped  []string // JSON-escaped forms that differ from the raw form
	replacer *strings.Replacer
}

// IsSecretName reports whether an environment variable named name holds a
// secret (docs/tools.md §4; exemptions as Rune's: SSH_AUTH_SOCK, GIT_AUTHOR_*,
// XAUTHORITY).
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	if secretNameExempt[up] {
		return false
	}
	for _, p := range secretNameParts {
		if strings.Contains(up, p) {
			return true
		}
	}
	return false
}

// FromEnviron is New(os.Environ(), names...): the masker of this
// process's environment.
func FromEnviron(names ...string) *Masker { return New(os.Environ(), names...) }

// New builds a Masker from "NAME=value" entries (os.Environ()): the
// values of the variables whose names look secret (IsSecretName) or are
// among names (`--secret-env NAME`). Multi-line values are masked line by
// line; lines under MinSecretLen bytes are never masked; when secrets
// overlap the longest wins.
func New(environ []string, names ...string) *Masker {
	seen := map[string]bool{}
	var secrets []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !IsSecretName(name) && !slices.Contains(names, name) {
			continue
		}
		for _, line := range strings.Split(value, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if len(line) < MinSecretLen || seen[line] {
				continue
			}
			seen[line] = true
			secrets = append(secrets, line)
		}
	}
	if len(secrets) == 0 {
		return &Masker{}
	}
	sort.SliceStable(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	pairs := make([]string, 0, 2*len(secrets))
	var escaped []string
	for _, s := range secrets {
		pairs = append(pairs, s, Mask)
		if e := jsonEscape(s); e != s {
			escaped = append(escaped, e)
		}
	}
	return &Masker{secrets: secrets, escaped: escaped, replacer: strings.NewReplacer(pairs...)}
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.secrets) == 0 }

// String masks s.
func (m *Masker) String(s string) string {
	if m.Empty() {
		return s
	}
	return m.replacer.Replace(s)
}

// JSON masks every string (keys included) and every number literal of a
// JSON document, keeping its structure and key order; a number whose text
// contains a secret becomes the masked string. The result is compact.
// Invalid JSON is masked as plain text.
func (m *Masker) JSON(doc []byte) []byte {
	if m.Empty() || !m.mentions(doc) {
		return doc
	}
	out, err := m.maskJSON(doc)
	if err != nil {
		return []byte(m.String(string(doc)))
	}
	return out
}

// mentions reports whether doc may contain a secret, raw or JSON-escaped.
func (m *Masker) mentions(doc []byte) bool {
	for _, s := range m.secrets {
		if bytes.Contains(doc, []byte(s)) {
			return true
		}
	}
	for _, s := range m.escaped {
		if bytes.Contains(doc, []byte(s)) {
			return true
		}
	}
	return false
}

// maskJSON re-emits doc token by token, masking strings and numbers.
func (m *Masker) maskJSON(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	type frame struct {
		obj bool
		n   int // tokens written in this container (keys and values)
	}
	var (
		buf   bytes.Buffer
		stack []frame
	)
	sep := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		switch {
		case top.obj && top.n%2 == 1:
			buf.WriteByte(':')
		case top.n > 0:
			buf.WriteByte(',')
		}
		top.n++
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				sep()
				buf.WriteByte(byte(t))
				stack = append(stack, frame{obj: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				buf.WriteByte(byte(t))
			}
		case string:
			sep()
			buf.WriteString(quoteJSON(m.String(t)))
		case json.Number:
			sep()
			if ms := m.String(string(t)); ms != string(t) {
				buf.WriteString(quoteJSON(ms))
			} else {
				buf.WriteString(string(t))
			}
		case bool:
			sep()
			if t {
				buf.WriteString("true")
			} else {
				buf.WriteString("false")
			}
		default: // nil
			sep()
			buf.WriteString("null")
		}
	}
	return buf.Bytes(), nil
}

// quoteJSON returns s as a JSON string literal without HTML escaping.
func quoteJSON(s string) string {
	b, _ := jsonenc.Marshal(s) // a string always encodes
	return string(b)
}

// jsonEscape returns s as it appears inside a JSON string literal.
func jsonEscape(s string) string {
	q := quoteJSON(s)
	return q[1 : len(q)-1]
}
