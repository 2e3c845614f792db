// Package mask hides secrets in what axpool sends to agents
// (docs/tools.md §4): a Masker replaces the values of secret-looking
// environment variables (IsSecretName) and of those named by --secret-env
// — every run of MinSecretLen bytes of them, so that a secret cut short
// by a size bound leaks nothing either — with "***" in text and in JSON
// documents. The gateway masks every result with it, the workers every
// result envelope, the LLM provider its key in replies and errors,
// `axpool run` and `axpool script run` what they print.
//
// Imports: internal/jsonenc.
package mask

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"unsafe"

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

// Masker replaces secrets with "***" in everything the gateway sends to
// agents: not only whole secrets but every run of MinSecretLen or more
// consecutive bytes of one (raw, or as it appears inside a JSON string),
// so that a secret cut by a size bound (a response body clipped to 1 KiB)
// or echoed in part leaks no 8 bytes of itself. The zero value and nil
// mask nothing. A Masker is immutable and safe for concurrent use.
type Masker struct {
	// windows holds every MinSecretLen-byte window of every secret and
	// of its JSON-escaped form (little-endian); filter is a bitset of
	// their hashes that rejects almost every other window at once.
	windows map[uint64]struct{}
	filter  *[filterBits / 64]uint64
	// pairs is a bitset of the pairs of adjacent bytes in those windows
	// (the first byte low): a pair of a text that is not among them
	// rules out at once the MinSecretLen-1 windows that hold it (next).
	pairs *[pairBits / 64]uint64
}

// filterBits is the size of Masker.filter, in bits; pairBits of
// Masker.pairs (one per pair of bytes).
const (
	filterBits = 1 << 16
	pairBits   = 1 << 16
)

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
// line; lines under MinSecretLen bytes are never masked.
func New(environ []string, names ...string) *Masker {
	var values []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && (IsSecretName(name) || slices.Contains(names, name)) {
			values = append(values, value)
		}
	}
	return Values(values...)
}

// Values builds a Masker of the given secrets, each masked line by line
// as in New (lines under MinSecretLen bytes are never masked).
func Values(secrets ...string) *Masker {
	m := &Masker{}
	add := func(s string) {
		for i := 0; i+MinSecretLen <= len(s); i++ {
			w := window(s, i)
			if m.windows == nil {
				m.windows = map[uint64]struct{}{}
				m.filter = new([filterBits / 64]uint64)
				m.pairs = new([pairBits / 64]uint64)
			}
			m.windows[w] = struct{}{}
			h := filterHash(w)
			m.filter[h/64] |= 1 << (h % 64)
			for k := i; k < i+MinSecretLen-1; k++ {
				p := pair(s, k)
				m.pairs[p/64] |= 1 << (p % 64)
			}
		}
	}
	for _, value := range secrets {
		for _, line := range strings.Split(value, "\n") {
			line = strings.TrimSuffix(line, "\r")
			if len(line) < MinSecretLen {
				continue
			}
			add(line)
			if e := jsonEscape(line); e != line {
				add(e)
			}
		}
	}
	return m
}

// window is the MinSecretLen bytes of s at i, little-endian.
func window(s string, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// filterHash is w's bit in Masker.filter.
func filterHash(w uint64) uint64 { return (w * 0x9E3779B97F4A7C15) >> (64 - 16) }

// pair is the 2 bytes of s at i, the first low.
func pair(s string, i int) uint16 { return uint16(s[i]) | uint16(s[i+1])<<8 }

// next returns the first position at or after i where the MinSecretLen
// bytes of s are a run of a secret (secretAt), or -1. When the last pair
// of bytes of the window at i is in no secret's windows (pairs), neither
// that window nor the MinSecretLen-2 after it, which hold the same pair,
// is a run: all are passed over together, so a text that mentions no
// secret costs about one look-up per MinSecretLen-1 bytes instead of one
// per byte.
func (m *Masker) next(s string, i int) int {
	for i+MinSecretLen <= len(s) {
		p := pair(s, i+MinSecretLen-2)
		if m.pairs[p/64]&(1<<(p%64)) == 0 {
			i += MinSecretLen - 1
			continue
		}
		if m.secretAt(s, i) {
			return i
		}
		i++
	}
	return -1
}

// secretAt reports whether the MinSecretLen bytes of s at i are a run of
// a secret.
func (m *Masker) secretAt(s string, i int) bool {
	w := window(s, i)
	h := filterHash(w)
	if m.filter[h/64]&(1<<(h%64)) == 0 {
		return false
	}
	_, ok := m.windows[w]
	return ok
}

// Empty reports whether m masks nothing.
func (m *Masker) Empty() bool { return m == nil || len(m.windows) == 0 }

// String masks s: each maximal stretch of s covered by runs of
// MinSecretLen bytes of a secret becomes "***".
func (m *Masker) String(s string) string {
	if m.Empty() {
		return s
	}
	var b strings.Builder
	copied, end := 0, -1 // s[:copied] is written; [start, end) is the stretch being masked
	start := 0
	for i := m.next(s, 0); i >= 0; i = m.next(s, i+1) {
		if i > end { // a new stretch: flush the previous one
			if end >= 0 {
				b.WriteString(s[copied:start])
				b.WriteString(Mask)
				copied = end
			}
			start = i
		}
		end = i + MinSecretLen
	}
	if end < 0 {
		return s
	}
	b.WriteString(s[copied:start])
	b.WriteString(Mask)
	b.WriteString(s[end:])
	return b.String()
}

// Writer returns a writer that masks what each Write carries (String)
// before it writes it to w: for text written a line at a time
// (fmt.Fprintln), since a secret split across two writes is masked only
// where 8 of its bytes are in one. It reports len(p) written on success.
func (m *Masker) Writer(w io.Writer) io.Writer {
	if m.Empty() {
		return w
	}
	return maskWriter{m, w}
}

type maskWriter struct {
	m *Masker
	w io.Writer
}

func (mw maskWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(mw.w, mw.m.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
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

// mentions reports whether doc may contain a run of a secret, raw or
// JSON-escaped.
func (m *Masker) mentions(doc []byte) bool {
	return m.next(unsafe.String(unsafe.SliceData(doc), len(doc)), 0) >= 0
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
