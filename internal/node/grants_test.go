package node

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/axpool/axpool/worker/handlers"
)

// The grant flags are checked before anything opens (exit 2 in cmd/axpool),
// with the inputs (issue 26, item 9).
func TestGrantsCheck(t *testing.T) {
	live := func(g Grants) Grants { g.Handlers = "live"; return g }
	for _, c := range []struct {
		g    Grants
		want string
	}{
		{live(Grants{}), ""},
		{live(Grants{Grants: handlers.Grants{AllowNet: []string{"api.example.com", "*.example.com", "*"}}}), ""},
		{live(Grants{Grants: handlers.Grants{AllowNet: []string{"*."}}}), `--allow-net: "*.": a wildcard needs a domain: *.example.com for the subdomains of example.com, or * for any public host`},
		{live(Grants{Grants: handlers.Grants{AllowNet: []string{"ok.example", ".com"}}}), `--allow-net: ".com": a host name cannot start with "." (did you mean "*.com", the subdomains of com?)`},
		{live(Grants{Grants: handlers.Grants{AllowNet: []string{"127.0.0.1:8080", "[::1]:8080", "api.example.com:443", "*.example.com:443", "*:443"}}}), ""},
		{live(Grants{Grants: handlers.Grants{AllowNet: []string{"127.0.0.1:0"}}}), `--allow-net: "127.0.0.1:0": the port must be a number from 1 to 65535`},
		{live(Grants{Grants: handlers.Grants{AllowNet: []string{"api.example.com:"}}}), `--allow-net: "api.example.com:": a port is missing after ":" (HOST or HOST:PORT)`},
		{live(Grants{AllowPrivateNet: []string{"ten"}}), `--allow-private-net: "ten" is not a CIDR range (e.g. 127.0.0.1/32) or an IP address`},
		{live(Grants{AllowPrivateNet: []string{"0.0.0.0/0", "::/0"}}), ""}, // warned, not refused
		{live(Grants{Grants: handlers.Grants{FSReadOnly: true}}), "--fs-read-only needs --fs-root"},
		{live(Grants{Grants: handlers.Grants{DBReadOnly: true}}), "--db-read-only needs --db"},
		{live(Grants{Grants: handlers.Grants{LLMModel: "m"}}), "--llm-model needs --llm-url"},
		{live(Grants{Grants: handlers.Grants{LLMURL: "https://api.example.com/v1"}}), "--llm-url needs --llm-model"},
		{live(Grants{Grants: handlers.Grants{LLMURL: "api.example.com/v1", LLMModel: "m"}}), `--llm-url "api.example.com/v1": want an http(s) URL: the API's base URL (https://api.openai.com/v1) or its chat completions endpoint`},
		{Grants{Handlers: "mock", Grants: handlers.Grants{DB: "x.db"}}, "--db has no effect with --handlers mock"},
		{Grants{Handlers: "mock", AllowPrivateNet: []string{"10.0.0.0/8"}}, "--allow-private-net has no effect with --handlers mock"},
		{Grants{Handlers: "fake"}, `--handlers "fake": want live or mock`},
	} {
		got := ""
		if err := c.g.Check(); err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("%+v: %q, want %q", c.g, got, c.want)
		}
	}
	// Ports travel to the worker processes as given.
	g := live(Grants{AllowPrivateNet: []string{"127.0.0.1/32"}, Grants: handlers.Grants{AllowNet: []string{"127.0.0.1:8080", "[::1]:8080"}}})
	if got, want := g.Args(), []string{"--handlers", "live", "--allow-net", "127.0.0.1:8080,[::1]:8080", "--allow-private-net", "127.0.0.1/32"}; !slices.Equal(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
	g = live(Grants{AllowPrivateNet: []string{"127.0.0.1/32", "0.0.0.0/0", "::/0"}})
	want := []string{
		"--allow-private-net 0.0.0.0/0 covers every IPv4 address: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need",
		"--allow-private-net ::/0 covers every IPv6 address: every program may reach this host's own services (loopback), the private networks around it and the cloud metadata endpoint (169.254.169.254, fd00:ec2::254); name only the ranges programs need",
	}
	if got := g.Warnings(); !slices.Equal(got, want) {
		t.Errorf("Warnings = %q, want %q", got, want)
	}
}

// A node refuses an --fs-root that holds its own data: the database, the
// scripts, a token file, the libraries…
func TestFSRootOwnData(t *testing.T) {
	dir := t.TempDir()
	files := filepath.Join(dir, "files")
	for _, d := range []string{files, filepath.Join(dir, "scripts"), filepath.Join(dir, "libs")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{LibsDir: filepath.Join(dir, "libs"), ScriptsDir: filepath.Join(dir, "scripts"),
		TokenFiles: []string{filepath.Join(dir, "files", "token")}, AuditLog: filepath.Join(dir, "audit.jsonl"),
		Grants: Grants{Handlers: "live", Grants: handlers.Grants{FSRoot: dir, DB: filepath.Join(dir, "app.db")}}}
	const fix = ": programs could read or change it; give a directory that holds only what programs may read and write"
	_, _, err := cfg.Grants.HandlerSet("", cfg.ownData())
	if want := "--fs-root " + dir + " contains the --db file (" + filepath.Join(dir, "app.db") + ")" + fix; err == nil || err.Error() != want {
		t.Errorf("root holding everything: %v\nwant %s", err, want)
	}
	cfg.Grants.FSRoot = files
	_, _, err = cfg.Grants.HandlerSet("", cfg.ownData())
	if want := "--fs-root " + files + " contains a bearer token file (--token-file) (" + filepath.Join(files, "token") + ")" + fix; err == nil || err.Error() != want {
		t.Errorf("root holding a token file: %v\nwant %s", err, want)
	}
	cfg.TokenFiles = nil
	set, done, err := cfg.Grants.HandlerSet("", cfg.ownData())
	if err != nil || set.Kind() != "live" {
		t.Fatalf("a root of its own: %v", err)
	}
	done()
}
