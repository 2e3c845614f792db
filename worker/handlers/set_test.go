package handlers_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/axpool/axpool/worker/handlers"
)

const randomSrc = `fn main() -> String !{random, time.now} {
  let a = random_int(1, 1000000)
  let b = random_int(-9223372036854775807 - 1, 9223372036854775807)
  let f = random_float()
  __builtin_int_to_string(a) ++ " " ++ __builtin_int_to_string(b) ++ " " ++ __builtin_float_to_string(f) ++ " " ++ __builtin_int_to_string(now_ms())
}`

func TestClockAndSeededRandom(t *testing.T) {
	clock := time.UnixMilli(1_234_567_890_123)
	set := live(t, handlers.Grants{}, handlers.Options{Now: func() time.Time { return clock }})
	first := run(t, set, randomSrc, `"seed":42`)
	again := run(t, set, randomSrc, `"seed":42`)
	other := run(t, set, randomSrc, `"seed":43`)
	if first["success"] != true || first["random_seed"] != 42.0 || again["random_seed"] != 42.0 {
		t.Fatalf("seeded runs: %v / %v", first, again)
	}
	v := first["result"].(string)
	if v != again["result"] || v == other["result"] || !strings.HasSuffix(v, " 1234567890123") {
		t.Errorf("seed 42: %q and %q; seed 43: %q", v, again["result"], other["result"])
	}
	// Without a seed a fresh one is drawn, reported, and reproduces the run.
	fresh := run(t, set, randomSrc, "")
	seed, ok := fresh["random_seed"].(float64)
	if !ok || seed < 0 || seed > 1<<53-1 {
		t.Fatalf("fresh seed: %v", fresh)
	}
	if again := run(t, set, randomSrc, fmt.Sprintf(`"seed":%.0f`, seed)); again["result"] != fresh["result"] {
		t.Errorf("seed %.0f: %v, then %v", seed, fresh["result"], again["result"])
	}
	// The real clock by default.
	real := live(t, handlers.Grants{}, handlers.Options{})
	before := time.Now().UnixMilli()
	m := run(t, real, "fn main() -> Int !{time.now} { now_ms() }", "")
	after := time.Now().UnixMilli()
	if n, _ := m["result"].(float64); int64(n) < before || int64(n) > after {
		t.Errorf("now_ms = %v, want within [%d, %d]", m["result"], before, after)
	}
}

func TestMockSet(t *testing.T) {
	m := run(t, handlers.Mock(), `fn main() -> String !{net.fetch, time.now} {
  match http_get("http://127.0.0.1/") { Ok(s) => s ++ " " ++ __builtin_int_to_string(now_ms()), Err(e) => e }
}`, `"seed":7`)
	b, _ := json.Marshal(m)
	if m["handlers"] != "mock" || m["result"] != `{"mock": true, "url": "http://127.0.0.1/"} 1700000000` || strings.Contains(string(b), "random_seed") {
		t.Errorf("mock run: %s", b)
	}
	// Field order: the facts come right before outcome.
	o := run(t, handlers.Mock(), "fn main() -> Int { 1 }", "")
	if o["handlers"] != "mock" {
		t.Errorf("pure run under mock: %v", o)
	}
}

// boruna_run_sealed records a live run's calls in its event log and
// replays them without calling out: the server sees each request once.
func TestSealedReplaysLiveRun(t *testing.T) {
	s := newServer(t)
	set := live(t, loopbackOnly, handlers.Options{})
	src := fmt.Sprintf(`fn main() -> String !{net.fetch, random, time.now} {
  let a = match http_get(%s) { Ok(s) => s, Err(e) => e }
  let b = match http_request("POST", %s, "body") { Ok(s) => s, Err(e) => e }
  a ++ " | " ++ b ++ " | " ++ __builtin_int_to_string(random_int(1, 6)) ++ " | " ++ __builtin_int_to_string(now_ms())
}`, axString(s.URL+"/ok"), axString(s.URL+"/ok"))
	m := call(t, t.Context(), set, "boruna_run_sealed", `"source":`+jsonString(src)+`,"seed":5`)
	if m["success"] != true || m["replay_verified"] != true || m["random_seed"] != 5.0 {
		t.Fatalf("sealed: %v", m)
	}
	if r := m["result"].(string); !strings.HasPrefix(r, "hello GET   | hello POST text/plain; charset=utf-8 body | ") {
		t.Errorf("result = %q", r)
	}
	if n := s.hits.Load(); n != 2 {
		t.Errorf("the server saw %d requests for a sealed run of 2 fetches, want 2 (the replay must not call out)", n)
	}
	events, _ := json.Marshal(m["event_log"])
	if !strings.Contains(string(events), `{"capability":"net.fetch","event":"cap_result","result":{"result":"Ok","value":"hello GET  "}}`) {
		t.Errorf("event log: %s", events)
	}
	if m["event_count"] != 8.0 {
		t.Errorf("event_count = %v, want 4 calls and 4 results", m["event_count"])
	}
}
