package upstream

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseConfig(t *testing.T) {
	vars := env(map[string]string{"GH_TOKEN": "ghp_0123456789abcdef", "HOST": "api.example.com", "EMPTY": ""})
	cfg, err := ParseConfig([]byte(`{"mcpServers": {
		"web": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}", "X-Lit": "$${NOT}"}, "type": "http"},
		"fs": {"command": "npx", "args": ["-y", "server-fs", "${EMPTY:-/srv}"], "env": {"TOKEN": "${GH_TOKEN}"}, "type": "stdio"},
		"plain": {"command": "srv"}
	}}`), vars)
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{Servers: []Server{
		{Name: "fs", Command: "npx", Args: []string{"-y", "server-fs", "/srv"}, Env: map[string]string{"TOKEN": "ghp_0123456789abcdef"}},
		{Name: "plain", Command: "srv"},
		{Name: "web", URL: "https://api.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ghp_0123456789abcdef", "X-Lit": "${NOT}"}},
	}, Secrets: []string{"ghp_0123456789abcdef", "api.example.com"}, Vars: []string{"EMPTY", "GH_TOKEN", "HOST"}}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestParseConfigErrors(t *testing.T) {
	vars := env(map[string]string{"SECRET_VALUE": "s3cr3t-value-123"})
	for _, tc := range []struct{ in, want string }{
		{`{"mcpServers": `, "invalid JSON: unexpected end of JSON input"},
		{`[1]`, `the file must be a JSON object with "mcpServers"`},
		{`{}`, `the file must be a JSON object with "mcpServers"`},
		{`{"mcpServers": {}, "servers": {}}`, `unknown field "servers" (the file has only "mcpServers")`},
		{`{"mcpServers": []}`, `"mcpServers" must be an object of servers by name`},
		{`{"mcpServers": {"a b": {"command": "x"}}}`, `server name "a b": use 1–64 characters from A-Z a-z 0-9 _ -`},
		{`{"mcpServers": {"": {"command": "x"}}}`, `server name "": use 1–64 characters from A-Z a-z 0-9 _ -`},
		{`{"mcpServers": {"` + strings.Repeat("a", 65) + `": {"command": "x"}}}`, `server name "` + strings.Repeat("a", 65) + `": use 1–64 characters from A-Z a-z 0-9 _ -`},
		{`{"mcpServers": {"a__b": {"command": "x"}}}`, `server name "a__b": must not contain "__" (it separates server and tool in NAME__TOOL)`},
		{`{"mcpServers": {"h": {"url": "http://127.0.0.1:1/mcp", "headers": {"A\r\nX-Inj": "v"}}}}`, `server "h": headers "A\r\nX-Inj": not a valid HTTP header name`},
		{`{"mcpServers": {"h": {"url": "http://127.0.0.1:1/mcp", "headers": {"X": "a\r\nX-Inj: b"}}}}`, `server "h": headers "X": its value must not contain CR, LF or NUL`},
		{`{"mcpServers": {"s": {"command": "x", "env": {"A=B": "v"}}}}`, `server "s": env "A=B": a variable's name must be non-empty without "=" or NUL, and its value without NUL`},
		{`{"mcpServers": {"s": {"command": "x", "env": {"": "v"}}}}`, `server "s": env "": a variable's name must be non-empty without "=" or NUL, and its value without NUL`},
		{`{"mcpServers": {"s": {"command": "x\u0000y"}}}`, `server "s": "command" and "args" must not contain a NUL byte`},
		// f_'s tool dup would be f___dup, which reads as server f, tool _dup.
		{`{"mcpServers": {"f_": {"command": "x"}, "f": {"command": "y"}}}`, `server name "f_": must not end with "_" (its tools' NAME__TOOL would read as another server's)`},
		{`{"mcpServers": {"gh": 1}}`, `server "gh": must be an object`},
		{`{"mcpServers": {"gh": {"cmd": "x"}}}`, `server "gh": unknown field "cmd" (fields: command, args, env, url, headers, type)`},
		{`{"mcpServers": {"gh": {}}}`, `server "gh": needs "command" (a stdio server) or "url" (a Streamable HTTP server)`},
		{`{"mcpServers": {"gh": {"command": "x", "url": "http://h"}}}`, `server "gh": has both "command" and "url"; give one`},
		{`{"mcpServers": {"gh": {"command": "x", "headers": {}}}}`, `server "gh": "headers" is for a "url" server`},
		{`{"mcpServers": {"gh": {"url": "http://h", "args": []}}}`, `server "gh": "args" and "env" are for a "command" server`},
		{`{"mcpServers": {"gh": {"url": "http://h", "env": {}}}}`, `server "gh": "args" and "env" are for a "command" server`},
		{`{"mcpServers": {"gh": {"url": "http://h", "type": "sse"}}}`, `server "gh": "type" must be "stdio" or "http", got "sse" (only stdio and Streamable HTTP are supported)`},
		{`{"mcpServers": {"gh": {"command": "x", "type": "http"}}}`, `server "gh": "type" is "http" but the server has a "command"`},
		{`{"mcpServers": {"gh": {"url": "http://h", "type": "stdio"}}}`, `server "gh": "type" is "stdio" but the server has a "url"`},
		{`{"mcpServers": {"gh": {"command": " "}}}`, `server "gh": "command" must be a non-empty string`},
		{`{"mcpServers": {"gh": {"command": "x", "args": "a"}}}`, `server "gh": "args" must be an array of strings`},
		{`{"mcpServers": {"gh": {"command": "x", "env": {"A": 1}}}}`, `server "gh": "env" must be an object of strings`},
		{`{"mcpServers": {"gh": {"url": 7}}}`, `server "gh": "url" must be a string`},
		{`{"mcpServers": {"gh": {"url": "ftp://x"}}}`, `server "gh": url "ftp://x": must be an http:// or https:// URL`},
		{`{"mcpServers": {"gh": {"url": "${SECRET_VALUE}"}}}`, `server "gh": url "${SECRET_VALUE}": must be an http:// or https:// URL`},
		{`{"mcpServers": {"gh": {"url": "http://h", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}}`, `server "gh": headers.Authorization: ${GH_TOKEN} is not set in axpool's environment`},
		{`{"mcpServers": {"gh": {"command": "x", "env": {"TOKEN": "${SECRET_VALUE"}}}}`, `server "gh": env.TOKEN: unterminated "${" (write $${ for a literal)`},
		{`{"mcpServers": {"gh": {"command": "x", "args": ["${A-B}"]}}}`, `server "gh": args[0]: ${A-B} is not a variable reference (a name from A-Z a-z 0-9 _)`},
		{`{"mcpServers": {"gh": {"command": "${MISSING}"}}}`, `server "gh": command: ${MISSING} is not set in axpool's environment`},
		{"{\"mcpServers\": {\n  \"gh\": {\"command\": \"a\"},\n  \"gh\": {\"url\": \"http://h\"}}}", `line 3:3: duplicate server name "gh" (first on line 2:3)`},
		{`{"mcpServers": {"gh": {"command": "a", "command": "b"}}}`, `line 1:40: server "gh": duplicate key "command" (first on line 1:24)`},
		{`{"mcpServers": {"gh": {"command": "a", "env": {"A": "1", "é": "2", "é": "3"}}}}`, `line 1:68: server "gh": duplicate key "é" in "env" (first on line 1:58)`},
		{"{\"mcpServers\": {},\n\"mcpServers\": {\"gh\": {\"command\": \"a\"}}}", `line 2:1: duplicate key "mcpServers" (first on line 1:2)`},
		{`{"mcpServers": {"gh": {"url": "http://h:99999/mcp"}}}`, `server "gh": url "http://h:99999/mcp": port 99999 is not from 1 to 65535`},
		{`{"mcpServers": {"gh": {"url": "http://h", "type": "` + strings.Repeat("é", 40) + `"}}}`,
			`server "gh": "type" must be "stdio" or "http", got "` + strings.Repeat("é", 31) + `… (only stdio and Streamable HTTP are supported)`},
		{`{"mcpServers": {"gh": {"url": "https://h:0"}}}`, `server "gh": url "https://h:0": port 0 is not from 1 to 65535`},
	} {
		_, err := ParseConfig([]byte(tc.in), vars)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.in, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: the error shows a secret: %v", tc.in, err)
		}
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "up.json")
	os.WriteFile(p, []byte(`{"mcpServers": {"x": {}}}`), 0o600)
	if _, err := ReadConfig(p); err == nil || err.Error() != "--upstreams "+p+`: server "x": needs "command" (a stdio server) or "url" (a Streamable HTTP server)` {
		t.Errorf("got %v", err)
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, make([]byte, MaxConfigBytes+1), 0o600)
	if _, err := ReadConfig(big); err == nil || err.Error() != "--upstreams "+big+": the file exceeds 1048576 bytes" {
		t.Errorf("got %v", err)
	}
	if _, err := ReadConfig(filepath.Join(dir, "none.json")); err == nil || err.Error() != "--upstreams: open "+filepath.Join(dir, "none.json")+": no such file or directory" {
		t.Errorf("got %v", err)
	}
}

// TestChildEnv: a stdio server's environment has neither the variables
// whose names look secret nor those the upstreams file references (another
// server's credential); its own env entries win.
func TestChildEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "GH=verysecretapikey999", "MYTOKEN=t0k", "PLAIN=p", "OWN=old"}
	got := childEnv(environ, []string{"GH", "OWN"}, map[string]string{"OWN": "mine", "EXTRA": "x"})
	want := []string{"PATH=/bin", "HOME=/h", "PLAIN=p", "EXTRA=x", "OWN=mine"}
	if !slices.Equal(got, want) {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
}
