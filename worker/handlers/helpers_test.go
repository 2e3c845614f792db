package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/vm"
	"github.com/axpool/axpool/worker/handlers"
)

// live returns a live set with grants g, closed when the test ends.
func live(t testing.TB, g handlers.Grants, opts handlers.Options) *handlers.Live {
	t.Helper()
	l, err := handlers.NewLive(g, opts)
	if err != nil {
		t.Fatalf("NewLive: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// loopbackOnly grants net.fetch to any host and the test servers' address.
var loopbackOnly = handlers.Grants{AllowNet: []string{"*"}, AllowPrivateNet: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}

// mapResolver answers the names it holds and resolves the others normally
// (a DNS server that maps chosen names to loopback, as a rebinding attack
// would).
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return a, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, network, host)
}

// call runs tool with args (a JSON object's members, without braces)
// under set and returns the decoded response.
func call(t testing.TB, ctx context.Context, set vm.HandlerSet, tool, args string) map[string]any {
	t.Helper()
	o := tools.Call(ctx, &tools.Env{Handlers: set}, tool, json.RawMessage("{"+args+"}"), nil)
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// run runs source (and any other boruna_run arguments) under set.
func run(t testing.TB, set vm.HandlerSet, source, more string) map[string]any {
	t.Helper()
	args := `"source":` + jsonString(source)
	if more != "" {
		args += "," + more
	}
	return call(t, context.Background(), set, "boruna_run", args)
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// axString is s as an .ax string literal.
func axString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

// getSrc is a program returning http_get(url).
func getSrc(url string) string {
	return fmt.Sprintf("fn main() -> Result<String, String> !{net.fetch} { http_get(%s) }", axString(url))
}

// requestSrc is a program returning http_request(method, url, body).
func requestSrc(method, url, body string) string {
	return fmt.Sprintf("fn main() -> Result<String, String> !{net.fetch} { http_request(%s, %s, %s) }",
		axString(method), axString(url), axString(body))
}

// okValue returns the value of a successful run's Ok result, failing the
// test otherwise.
func okValue(t testing.TB, m map[string]any) string {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if m["success"] != true || r["result"] != "Ok" {
		t.Fatalf("want success with Ok, got %v", m)
	}
	return r["value"].(string)
}

// errValue returns the value of a successful run's Err result.
func errValue(t testing.TB, m map[string]any) string {
	t.Helper()
	r, _ := m["result"].(map[string]any)
	if m["success"] != true || r["result"] != "Err" {
		t.Fatalf("want success with Err, got %v", m)
	}
	return r["value"].(string)
}

// deniedMsg returns the message of a run refused with policy_denied,
// failing the test otherwise.
func deniedMsg(t testing.TB, m map[string]any, capability string) string {
	t.Helper()
	if m["success"] != false || m["outcome"] != "policy_denied" || m["error_kind"] != "runtime_error" || m["capability"] != capability {
		t.Fatalf("want policy_denied for %s, got %v", capability, m)
	}
	return m["message"].(string)
}
