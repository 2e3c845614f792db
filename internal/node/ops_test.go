package node

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestOpsPprof: --pprof adds Go's profiles under /debug/pprof/ to the
// operations listener; without it they are not found.
func TestOpsPprof(t *testing.T) {
	for _, withPprof := range []bool{false, true} {
		ln, err := listenOps("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := serveOps(ln, newRegistry(), func(context.Context) error { return nil }, withPprof, slog.New(slog.DiscardHandler))
		base := "http://" + ln.Addr().String()
		for path, want := range map[string]string{
			"/debug/pprof/heap?debug=1":      "heap profile: ",
			"/debug/pprof/goroutine?debug=1": "goroutine profile: total ",
			"/debug/pprof/":                  "Types of profiles available:",
			"/healthz":                       "ok\n",
		} {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			served := path == "/healthz" || withPprof
			if served && (resp.StatusCode != 200 || !strings.Contains(string(body), want)) {
				t.Errorf("pprof %v: GET %s: %d, body %.80q; want 200 and %q", withPprof, path, resp.StatusCode, body, want)
			}
			if !served && resp.StatusCode != http.StatusNotFound {
				t.Errorf("pprof %v: GET %s: %d, want 404", withPprof, path, resp.StatusCode)
			}
		}
		s.close()
	}
}
