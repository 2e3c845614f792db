package handlers_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/axpool/axpool/worker/handlers"
)

const testKey = "sk-test-0123456789abcdef"

// fakeLLM is an OpenAI-compatible chat completions server on loopback: it
// answers "echo: <prompt>", echoes the Authorization header for the prompt
// "leak", and fails with 401 (quoting the header) for the prompt "fail".
type fakeLLM struct {
	*httptest.Server
	requests atomic.Int64
}

func newFakeLLM(t *testing.T) *fakeLLM {
	f := &fakeLLM{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil ||
			req.Model != "test-model" || len(req.Messages) != 1 || req.Messages[0].Role != "user" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		auth := r.Header.Get("Authorization")
		prompt := req.Messages[0].Content
		reply := "echo: " + prompt
		switch prompt {
		case "leak":
			reply = "your header was " + auth
		case "fail":
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error":{"message":"invalid key in %s"}}`, auth)
			return
		}
		if auth != "Bearer "+testKey {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": reply}}}})
	}))
	t.Cleanup(f.Close)
	return f
}

func llmSrc(prompts ...string) string {
	body := fmt.Sprintf("llm_complete(%s)", axString(prompts[len(prompts)-1]))
	for i := len(prompts) - 2; i >= 0; i-- {
		body = fmt.Sprintf("match llm_complete(%s) { Err(e) => Err(e), Ok(_) => %s }", axString(prompts[i]), body)
	}
	return "fn main() -> Result<String, String> !{llm.call} { " + body + " }"
}

func TestLLM(t *testing.T) {
	f := newFakeLLM(t)
	set := live(t, handlers.Grants{LLMURL: f.URL + "/v1/chat/completions", LLMModel: "test-model", LLMKey: testKey}, handlers.Options{})
	if got := okValue(t, run(t, set, llmSrc("hi"), "")); got != "echo: hi" {
		t.Errorf("reply = %q", got)
	}
	// The key never reaches a result, whatever the server echoes.
	leak := run(t, set, llmSrc("leak"), "")
	if got := okValue(t, leak); got != "your header was Bearer ***" {
		t.Errorf("echoed key = %q", got)
	}
	fail := run(t, set, llmSrc("fail"), "")
	if got := errValue(t, fail); got != "llm: HTTP 401 Unauthorized: invalid key in Bearer ***" {
		t.Errorf("error = %q", got)
	}
	for _, m := range []map[string]any{leak, fail} {
		if b, _ := json.Marshal(m); strings.Contains(string(b), testKey) {
			t.Errorf("the key is in a result: %s", b)
		}
	}

	// Budget 2: two calls reach the server, the third fails the run.
	before := f.requests.Load()
	m := run(t, set, llmSrc("a", "b", "c"), `"policy":{"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":2}}}`)
	msg, _ := m["message"].(string)
	if m["outcome"] != "policy_denied" || m["error_kind"] != "runtime_error" ||
		msg != "capability budget exceeded: llm.call (CapabilityBudgetExceeded(LlmCall))" {
		t.Errorf("budget: %v", m)
	}
	if n := f.requests.Load() - before; n != 2 {
		t.Errorf("the server saw %d requests under budget 2", n)
	}
	before = f.requests.Load()
	if got := okValue(t, run(t, set, llmSrc("a", "b"), `"policy":{"default_allow":true,"rules":{"llm.call":{"allow":true,"budget":2}}}`)); got != "echo: b" {
		t.Errorf("two calls under budget 2: %q", got)
	}
	if n := f.requests.Load() - before; n != 2 {
		t.Errorf("the server saw %d requests for two calls", n)
	}

	none := live(t, handlers.Grants{}, handlers.Options{})
	if got := deniedMsg(t, run(t, none, llmSrc("hi"), ""), "llm.call"); got != "capability denied: llm.call (not granted by this server; see --llm-url)" {
		t.Errorf("not granted: %q", got)
	}
	if _, err := handlers.NewLive(handlers.Grants{LLMURL: f.URL}, handlers.Options{}); err == nil || err.Error() != "--llm-url needs --llm-model" {
		t.Errorf("no model: %v", err)
	}
}

// An endpoint answering HTTP 400 with `<prompt> auth=<Authorization>`
// (issue 26, item 3): the body is masked before it is clipped to 1 KiB,
// so not one 8-byte run of the 80-byte key reaches the program.
func TestLLMKeyMaskedBeforeClip(t *testing.T) {
	key := "sk-proj-" + strings.Repeat("Zq8xWv2k", 9)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Messages []struct{ Content string } }
		json.NewDecoder(r.Body).Decode(&req)
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "%s auth=%s", req.Messages[0].Content, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	set := live(t, handlers.Grants{LLMURL: srv.URL + "/v1/chat/completions", LLMModel: "m", LLMKey: key}, handlers.Options{})
	// The unmasked body's first 1,024 bytes end 64 bytes into the key.
	prompt := strings.Repeat("p", 1024-64-len(" auth=Bearer "))
	m := run(t, set, llmSrc(prompt), "")
	if got, want := errValue(t, m), "llm: HTTP 400 Bad Request: "+prompt+" auth=Bearer ***"; got != want {
		t.Errorf("error:\n got %q\nwant %q", got, want)
	}
	b, _ := json.Marshal(m)
	for i := 0; i+8 <= len(key); i++ {
		if strings.Contains(string(b), key[i:i+8]) {
			t.Fatalf("the result holds %q of the key: %s", key[i:i+8], b)
		}
	}
	// A longer prompt: the masked body is clipped (and the message, to
	// vm.MaxShownMessage), still without the key.
	long := strings.Repeat("q", 2000)
	if got, want := errValue(t, run(t, set, llmSrc(long), "")), ("llm: HTTP 400 Bad Request: " + long)[:1024]+"…"; got != want {
		t.Errorf("long prompt: %q", got)
	}
}

// --llm-url takes the API's base URL, as every OpenAI-compatible client
// does (issue 26, item 17: https://host/v1 was posted to as is), or the
// full endpoint.
func TestChatCompletionsURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://host/v1":                   "https://host/v1/chat/completions",
		"https://host/v1/":                  "https://host/v1/chat/completions",
		"http://localhost:11434/v1":         "http://localhost:11434/v1/chat/completions",
		"https://host":                      "https://host/chat/completions",
		"https://host/":                     "https://host/chat/completions",
		"https://host/v1/chat/completions":  "https://host/v1/chat/completions",
		"https://host/v1/chat/completions/": "https://host/v1/chat/completions/",
		"https://x.openai.azure.com/openai/deployments/d?api-version=2024-06-01":                  "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01",
		"https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01": "https://x.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-06-01",
	} {
		if got, err := handlers.ChatCompletionsURL(in); err != nil || got != want {
			t.Errorf("ChatCompletionsURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"host/v1", "ftp://host/v1", "https://", "://x"} {
		want := fmt.Sprintf("--llm-url %q: want an http(s) URL: the API's base URL (https://api.openai.com/v1) or its chat completions endpoint", in)
		if _, err := handlers.ChatCompletionsURL(in); err == nil || err.Error() != want {
			t.Errorf("ChatCompletionsURL(%q): %v", in, err)
		}
	}
	// The base URL reaches the fake server's /v1/chat/completions.
	f := newFakeLLM(t)
	for _, base := range []string{f.URL + "/v1", f.URL + "/v1/", f.URL + "/v1/chat/completions"} {
		set := live(t, handlers.Grants{LLMURL: base, LLMModel: "test-model", LLMKey: testKey}, handlers.Options{})
		if got := okValue(t, run(t, set, llmSrc("hi"), "")); got != "echo: hi" {
			t.Errorf("--llm-url %s: %q", base, got)
		}
		if got := set.LLMEndpoint(); got != f.URL+"/v1/chat/completions" {
			t.Errorf("--llm-url %s posts to %s", base, got)
		}
	}
}
