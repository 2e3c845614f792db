package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/axpool/axpool/internal/text"
)

// Separator joins an upstream's name and one of its tools' names into the
// name programs call it by: "github" and "create_issue" make
// "github__create_issue". Server names never contain it, so the first
// occurrence splits a full name.
const Separator = "__"

// MaxNameLen is the longest server name, in bytes.
const MaxNameLen = 64

// MaxConfigBytes is the largest upstreams file ReadConfig reads.
const MaxConfigBytes = 1 << 20

// Server is one upstream MCP server of the upstreams file, its `${VAR}`
// references expanded. Exactly one of Command (stdio) and URL (Streamable
// HTTP) is set.
type Server struct {
	// Name is the key under "mcpServers": 1–64 characters from
	// [A-Za-z0-9_-], without "__".
	Name string
	// Command, Args and Env start a stdio server: the program, its
	// arguments, and the variables added to its environment (which holds
	// axpool's own variables except those whose names look secret:
	// docs/code-mode.md).
	Command string
	Args    []string
	Env     map[string]string
	// URL and Headers reach a Streamable HTTP server: an http:// or
	// https:// URL, and the headers sent with every request.
	URL     string
	Headers map[string]string
}

// Config is a parsed upstreams file: its servers in name order and the
// values its `${VAR}` references took (the secrets to mask).
type Config struct {
	Servers []Server
	// Secrets are the values of the variables the file references, in
	// the order first referenced, each once.
	Secrets []string
	// Vars are the names of the variables the file references, sorted:
	// the worker processes are started without them.
	Vars []string
}

// serverFields are the members a server entry may have. "type" is what
// `.mcp.json` files of other clients carry ("stdio" or "http").
var serverFields = []string{"command", "args", "env", "url", "headers", "type"}

// ReadConfig reads and parses the upstreams file path, expanding `${VAR}`
// from this process's environment (ParseConfig). Errors name the file:
// "--upstreams up.json: server \"gh\": …"; a file over MaxConfigBytes is
// refused.
func ReadConfig(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--upstreams: %v", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxConfigBytes+1)); err != nil {
		return nil, fmt.Errorf("--upstreams %s: %v", path, err)
	}
	if buf.Len() > MaxConfigBytes {
		return nil, fmt.Errorf("--upstreams %s: the file exceeds %d bytes", path, MaxConfigBytes)
	}
	cfg, err := ParseConfig(buf.Bytes(), os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("--upstreams %s: %v", path, err)
	}
	return cfg, nil
}

// ParseConfig parses an upstreams file (the `.mcp.json` format:
// `{"mcpServers": {"NAME": {"command", "args", "env"} | {"url",
// "headers"}}}`). In every string of a server — command, args, env
// values, url, header values — `${VAR}` is replaced by the variable's
// value as lookup finds it (`${VAR:-default}` by default when it is unset
// or empty); `$` elsewhere is kept. Errors, exactly (server entries are
// checked in name order):
//
//	invalid JSON: <decoder error>
//	line 5:5: duplicate server name "gh" (first on line 2:5)
//	line 4:9: server "gh": duplicate key "command" (first on line 3:9)
//	line 7:1: duplicate key "mcpServers" (first on line 1:2)
//	the file must be a JSON object with "mcpServers"
//	unknown field "servers" (the file has only "mcpServers")
//	"mcpServers" must be an object of servers by name
//	server name "a b": use 1–64 characters from A-Z a-z 0-9 _ -
//	server name "a__b": must not contain "__" (it separates server and tool in NAME__TOOL)
//	server name "f_": must not end with "_" (its tools' NAME__TOOL would read as another server's)
//	server "h": headers "A\r\nX": not a valid HTTP header name
//	server "h": headers "X": its value must not contain CR, LF or NUL
//	server "s": env "A=B": a variable's name must be non-empty without "=" or NUL, and its value without NUL
//	server "s": "command" and "args" must not contain a NUL byte
//	server "gh": must be an object
//	server "gh": unknown field "cmd" (fields: command, args, env, url, headers, type)
//	server "gh": needs "command" (a stdio server) or "url" (a Streamable HTTP server)
//	server "gh": has both "command" and "url"; give one
//	server "gh": "headers" is for a "url" server
//	server "gh": "args" and "env" are for a "command" server
//	server "gh": "type" must be "stdio" or "http", got "sse" (only stdio and Streamable HTTP are supported)
//	server "gh": "type" is "http" but the server has a "command"
//	server "gh": "command" must be a non-empty string
//	server "gh": "args" must be an array of strings
//	server "gh": "env" must be an object of strings
//	server "gh": url "ftp://x": must be an http:// or https:// URL
//	server "gh": url "http://h:99999/mcp": port 99999 is not from 1 to 65535
//	server "gh": headers.Authorization: ${GH_TOKEN} is not set in axpool's environment
//	server "gh": env.TOKEN: unterminated "${" (write $${ for a literal)
//
// No message quotes a value that came from the environment.
func ParseConfig(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var probe any
		if json.Unmarshal(data, &probe) == nil {
			return nil, fmt.Errorf(`the file must be a JSON object with "mcpServers"`)
		}
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	for _, k := range sortedKeys(top) {
		if k != "mcpServers" {
			return nil, fmt.Errorf(`unknown field %q (the file has only "mcpServers")`, k)
		}
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return nil, fmt.Errorf(`the file must be a JSON object with "mcpServers"`)
	}
	var servers map[string]json.RawMessage
	if err := json.Unmarshal(raw, &servers); err != nil || servers == nil {
		return nil, fmt.Errorf(`"mcpServers" must be an object of servers by name`)
	}
	if err := duplicateKey(data); err != nil {
		return nil, err
	}
	cfg := &Config{}
	x := &expander{lookup: lookup}
	for _, name := range sortedKeys(servers) {
		if err := checkName(name); err != nil {
			return nil, err
		}
		s, err := parseServer(name, servers[name], x)
		if err != nil {
			return nil, fmt.Errorf("server %q: %v", name, err)
		}
		cfg.Servers = append(cfg.Servers, s)
	}
	cfg.Secrets = x.secrets
	cfg.Vars = x.vars
	slices.Sort(cfg.Vars)
	return cfg, nil
}

// checkName checks a server name.
func checkName(name string) error {
	if name == "" || len(name) > MaxNameLen || strings.IndexFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		return fmt.Errorf("server name %q: use 1–%d characters from A-Z a-z 0-9 _ -", name, MaxNameLen)
	}
	if strings.Contains(name, Separator) {
		return fmt.Errorf("server name %q: must not contain %q (it separates server and tool in NAME__TOOL)", name, Separator)
	}
	if strings.HasSuffix(name, "_") {
		return fmt.Errorf("server name %q: must not end with \"_\" (its tools' NAME__TOOL would read as another server's)", name)
	}
	return nil
}

// duplicateKey finds the first key of a JSON object that the object
// already has (encoding/json keeps the last one silently, so a second
// server of the same name replaced the first): its line:col, the
// object's place (a server name in "mcpServers", a key of a server's
// entry) and where the first one is. nil when every key is unique, or when
// data is not valid JSON (the decoder's error is reported instead).
func duplicateKey(data []byte) error {
	type frame struct {
		keys    map[string]int // key → offset of its quote; nil in an array
		path    []string       // the keys leading to this container
		key     string         // the last key read
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var stack []*frame
	for {
		off := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or invalid JSON
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.keys != nil && top.wantKey {
			k, ok := tok.(string)
			if !ok { // '}'
				stack = stack[:len(stack)-1]
				continue
			}
			at := off
			for at < len(data) && data[at] != '"' {
				at++ // the space, ',' or '{' before the key
			}
			if first, dup := top.keys[k]; dup {
				return duplicateError(data, top.path, k, at, first)
			}
			top.keys[k], top.key, top.wantKey = at, k, false
			continue
		}
		if top != nil && top.keys != nil {
			top.wantKey = true // after this value
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			var path []string
			if top != nil {
				path = top.path
				if top.keys != nil {
					path = append(slices.Clip(path), top.key)
				}
			}
			f := &frame{path: path}
			if tok == json.Delim('{') {
				f.keys, f.wantKey = map[string]int{}, true
			}
			stack = append(stack, f)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// duplicateError is duplicateKey's error for key k repeated at offset at
// (first at offset first) in the object reached by path.
func duplicateError(data []byte, path []string, k string, at, first int) error {
	l, c := lineCol(data, at)
	fl, fc := lineCol(data, first)
	k = text.Clip(k, 64)
	switch {
	case len(path) == 1 && path[0] == "mcpServers":
		return fmt.Errorf("line %d:%d: duplicate server name %q (first on line %d:%d)", l, c, k, fl, fc)
	case len(path) >= 2 && path[0] == "mcpServers":
		in := ""
		if len(path) > 2 {
			in = fmt.Sprintf(" in %q", text.Clip(strings.Join(path[2:], "."), 64))
		}
		return fmt.Errorf("line %d:%d: server %q: duplicate key %q%s (first on line %d:%d)", l, c, text.Clip(path[1], 64), k, in, fl, fc)
	}
	return fmt.Errorf("line %d:%d: duplicate key %q (first on line %d:%d)", l, c, k, fl, fc)
}

// lineCol is the 1-based line and column (in characters) of offset off
// of data.
func lineCol(data []byte, off int) (int, int) {
	before := data[:off]
	nl := bytes.LastIndexByte(before, '\n')
	return bytes.Count(before, []byte("\n")) + 1, utf8.RuneCount(before[nl+1:]) + 1
}

// parseServer parses one server entry.
func parseServer(name string, raw json.RawMessage, x *expander) (Server, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return Server{}, fmt.Errorf("must be an object")
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(serverFields, k) {
			return Server{}, fmt.Errorf("unknown field %q (fields: %s)", k, strings.Join(serverFields, ", "))
		}
	}
	_, hasCmd := m["command"]
	_, hasURL := m["url"]
	switch {
	case !hasCmd && !hasURL:
		return Server{}, fmt.Errorf(`needs "command" (a stdio server) or "url" (a Streamable HTTP server)`)
	case hasCmd && hasURL:
		return Server{}, fmt.Errorf(`has both "command" and "url"; give one`)
	}
	if t, ok := m["type"]; ok {
		var typ string
		if json.Unmarshal(t, &typ) != nil || typ != "stdio" && typ != "http" {
			return Server{}, fmt.Errorf(`"type" must be "stdio" or "http", got %s (only stdio and Streamable HTTP are supported)`, clipRaw(t))
		}
		if typ == "http" && hasCmd {
			return Server{}, fmt.Errorf(`"type" is "http" but the server has a "command"`)
		}
		if typ == "stdio" && hasURL {
			return Server{}, fmt.Errorf(`"type" is "stdio" but the server has a "url"`)
		}
	}
	s := Server{Name: name}
	if hasCmd {
		if _, ok := m["headers"]; ok {
			return Server{}, fmt.Errorf(`"headers" is for a "url" server`)
		}
		var cmd string
		if json.Unmarshal(m["command"], &cmd) != nil || strings.TrimSpace(cmd) == "" {
			return Server{}, fmt.Errorf(`"command" must be a non-empty string`)
		}
		var err error
		if s.Command, err = x.expand("command", cmd); err != nil {
			return Server{}, err
		}
		if a, ok := m["args"]; ok {
			var args []string
			if json.Unmarshal(a, &args) != nil {
				return Server{}, fmt.Errorf(`"args" must be an array of strings`)
			}
			for i, arg := range args {
				v, err := x.expand(fmt.Sprintf("args[%d]", i), arg)
				if err != nil {
					return Server{}, err
				}
				s.Args = append(s.Args, v)
			}
		}
		if s.Env, err = x.expandMap(m, "env"); err != nil {
			return Server{}, err
		}
		if strings.ContainsRune(s.Command, 0) || slices.ContainsFunc(s.Args, func(a string) bool { return strings.ContainsRune(a, 0) }) {
			return Server{}, fmt.Errorf(`"command" and "args" must not contain a NUL byte`)
		}
		for _, k := range sortedKeys(s.Env) {
			if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(s.Env[k], 0) {
				return Server{}, fmt.Errorf(`env %q: a variable's name must be non-empty without "=" or NUL, and its value without NUL`, clipName(k))
			}
		}
		return s, nil
	}
	if _, ok := m["args"]; ok {
		return Server{}, fmt.Errorf(`"args" and "env" are for a "command" server`)
	}
	if _, ok := m["env"]; ok {
		return Server{}, fmt.Errorf(`"args" and "env" are for a "command" server`)
	}
	var u string
	if json.Unmarshal(m["url"], &u) != nil {
		return Server{}, fmt.Errorf(`"url" must be a string`)
	}
	expanded, err := x.expand("url", u)
	if err != nil {
		return Server{}, err
	}
	if pu, err := url.Parse(expanded); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		// As written: the expanded URL may hold a secret.
		return Server{}, fmt.Errorf("url %q: must be an http:// or https:// URL", text.Clip(u, 200))
	} else if p := pu.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return Server{}, fmt.Errorf("url %q: port %s is not from 1 to 65535", text.Clip(u, 200), text.Clip(p, 16))
		}
	}
	s.URL = expanded
	if s.Headers, err = x.expandMap(m, "headers"); err != nil {
		return Server{}, err
	}
	for _, k := range sortedKeys(s.Headers) {
		if !validHeaderName(k) {
			return Server{}, fmt.Errorf(`headers %q: not a valid HTTP header name`, clipName(k))
		}
		if strings.ContainsAny(s.Headers[k], "\r\n\x00") {
			return Server{}, fmt.Errorf(`headers %q: its value must not contain CR, LF or NUL`, k)
		}
	}
	return s, nil
}

// clipRaw is a JSON value as quoted in a message: at most 64 bytes of it
// (text.Clip).
func clipRaw(v json.RawMessage) string {
	return text.Clip(string(bytes.TrimSpace(v)), 64)
}

// expander expands `${VAR}` and remembers the values it used.
type expander struct {
	lookup  func(string) (string, bool)
	secrets []string
	vars    []string
}

// expandMap expands the object of strings m[field] ("env", "headers").
func (x *expander) expandMap(m map[string]json.RawMessage, field string) (map[string]string, error) {
	raw, ok := m[field]
	if !ok {
		return nil, nil
	}
	var in map[string]string
	if json.Unmarshal(raw, &in) != nil || in == nil {
		return nil, fmt.Errorf("%q must be an object of strings", field)
	}
	out := make(map[string]string, len(in))
	for _, k := range sortedKeys(in) {
		v, err := x.expand(field+"."+k, in[k])
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// expand replaces every `${VAR}` (and `${VAR:-default}`) of s; "$${" is
// a literal "${". where names the string in errors.
func (x *expander) expand(where, s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // $${ is a literal ${
			b.WriteString(s[:i-1] + "${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf(`%s: unterminated "${" (write $${ for a literal)`, where)
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validVarName(name) {
			return "", fmt.Errorf(`%s: ${%s} is not a variable reference (a name from A-Z a-z 0-9 _)`, where, clipName(name))
		}
		v, ok := x.lookup(name)
		if !slices.Contains(x.vars, name) {
			x.vars = append(x.vars, name)
		}
		switch {
		case (!ok || v == "") && hasDef:
			v = def
		case !ok:
			return "", fmt.Errorf("%s: ${%s} is not set in axpool's environment", where, name)
		default:
			if !slices.Contains(x.secrets, v) && v != "" {
				x.secrets = append(x.secrets, v)
			}
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// validVarName reports whether s is an environment variable name.
func validVarName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}) < 0
}

// clipName is a would-be variable name as quoted: at most 64 bytes of
// it (text.Clip).
func clipName(s string) string { return text.Clip(s, 64) }

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// validHeaderName reports whether k is an HTTP header name: one or more
// token characters (RFC 9110 §5.6.2).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
