package gateway

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/axpool/axpool/gateway/agentdocs"
	"github.com/axpool/axpool/queue"
)

// allLibs are the embedded standard libraries, in name order.
var allLibs = []string{"std-authz", "std-db", "std-effect", "std-forms", "std-guard", "std-http", "std-json", "std-llm",
	"std-notifications", "std-routing", "std-storage", "std-sync", "std-testing", "std-ui", "std-validation"}

// checkCompletions runs completion/complete for the prompt's argument and
// the template's variable through c, and reads a library by the template.
func checkCompletions(t *testing.T, c *client.Client, caps mcp.ServerCapabilities) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if caps.Completions == nil {
		t.Error("capabilities.completions is missing")
	}
	complete := func(ref any, arg, value string) *mcp.Completion {
		t.Helper()
		var req mcp.CompleteRequest
		req.Params.Ref, req.Params.Argument = ref, mcp.CompleteArgument{Name: arg, Value: value}
		res, err := c.Complete(ctx, req)
		if err != nil {
			t.Fatalf("complete %v %s=%q: %v", ref, arg, value, err)
		}
		return &res.Completion
	}
	prompt := mcp.PromptReference{Type: "ref/prompt", Name: agentdocs.WriteProgramPrompt}
	lib := mcp.ResourceReference{Type: "ref/resource", URI: agentdocs.LibsTemplate}
	cases := []struct {
		ref        any
		arg, value string
		want       []string
	}{
		{prompt, "task", "NEEDS", []string{"fetch a URL and report its status (needs net.fetch)",
			"ask an LLM to summarise a text (needs llm.call)", "wait for a second with sleep_ms and print the time (needs time.now)"}},
		{prompt, "task", "std-", []string{"build a JSON object with std-json and print it", "validate the fields of a record with std-validation"}},
		{prompt, "task", "no such task", []string{}},
		{lib, "lib", "std-s", []string{"std-storage", "std-sync"}},
		{lib, "lib", "", allLibs},
		{lib, "lib", "x", []string{}},
	}
	for _, tc := range cases {
		got := complete(tc.ref, tc.arg, tc.value)
		if !reflect.DeepEqual(got.Values, tc.want) || got.Total != len(tc.want) || got.HasMore {
			t.Errorf("%v %s=%q: %+v, want %q", tc.ref, tc.arg, tc.value, *got, tc.want)
		}
	}
	all := complete(prompt, "task", "")
	if !reflect.DeepEqual(all.Values, agentdocs.WriteProgramTasks) {
		t.Errorf("every task: %q", all.Values)
	}
	tl, err := c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.ResourceTemplates) != 1 || tl.ResourceTemplates[0].URITemplate.Raw() != "axpool://libs/{lib}" ||
		tl.ResourceTemplates[0].Name != "std-lib" || tl.ResourceTemplates[0].MIMEType != "text/markdown" {
		t.Errorf("resource templates: %+v", tl.ResourceTemplates)
	}
	var req mcp.ReadResourceRequest
	req.Params.URI = "axpool://libs/std-json"
	rr, err := c.ReadResource(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].(mcp.TextResourceContents).Text, "std-json") {
		t.Errorf("axpool://libs/std-json: %+v", rr.Contents)
	}
}

func TestCompletionsStdio(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	c := stdioClient(t, s.gw)
	checkCompletions(t, c, initialize(t, stdioClient(t, s.gw)).Capabilities)
}

func TestCompletionsHTTP(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	url := httpServer(t, s.gw, HTTPConfig{})
	for _, legacy := range []bool{false, true} {
		c := httpClient(t, url, legacy)
		checkCompletions(t, c, initialize(t, httpClient(t, url, legacy)).Capabilities)
	}
}

// An unknown prompt, template or argument, or a reference type MCP does
// not have, is -32602 with what was asked in data, over stdio and HTTP (both
// eras); mcp-go alone would answer -32603 or -32600.
func TestCompletionRefusals(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	r := newRawStdio(t, s.gw)
	url := httpServer(t, s.gw, HTTPConfig{})
	legacy := legacySession(t, url, testToken)
	cases := []struct{ params, want string }{
		{`{"ref":{"type":"ref/prompt","name":"nope"},"argument":{"name":"task","value":""}}`,
			`{"code":-32602,"message":"unknown prompt \"nope\"","data":{"name":"nope"}}`},
		{`{"ref":{"type":"ref/prompt","name":"write_ax_program"},"argument":{"name":"goal","value":""}}`,
			`{"code":-32602,"message":"\"write_ax_program\" has no argument \"goal\"","data":{"argument":"goal"}}`},
		{`{"ref":{"type":"ref/resource","uri":"axpool://docs/{page}"},"argument":{"name":"page","value":""}}`,
			`{"code":-32602,"message":"unknown resource template \"axpool://docs/{page}\"","data":{"uri":"axpool://docs/{page}"}}`},
		{`{"ref":{"type":"ref/resource","uri":"axpool://libs/{lib}"},"argument":{"name":"library","value":"std"}}`,
			`{"code":-32602,"message":"\"axpool://libs/{lib}\" has no argument \"library\"","data":{"argument":"library"}}`},
		// Names are quoted and echoed clipped to 128 bytes.
		{`{"ref":{"type":"ref/prompt","name":"write_ax_program"},"argument":{"name":"` + strings.Repeat("a", 3000) + `","value":""}}`,
			`{"code":-32602,"message":"\"write_ax_program\" has no argument \"` + strings.Repeat("a", 128) + `…\"","data":{"argument":"` + strings.Repeat("a", 128) + `…"}}`},
		{`{"ref":{"type":"ref/tool","name":"boruna_run"},"argument":{"name":"source","value":""}}`,
			`{"code":-32602,"message":"completion/complete: ref.type must be \"ref/prompt\" or \"ref/resource\", got \"ref/tool\""}`},
	}
	for i, tc := range cases {
		id := 40 + i
		want := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"error":` + tc.want + `}`
		legacyMsg := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"completion/complete","params":` + tc.params + `}`
		r.send(legacyMsg)
		if got := string(r.nextRaw()); got != want {
			t.Errorf("stdio %d:\n got %s\nwant %s", i, got, want)
		}
		if status, got := rawDo(t, http.MethodPost, url, legacy, legacyMsg); status != http.StatusOK || got != want+"\n" {
			t.Errorf("http legacy %d: %d\n got %s\nwant %s", i, status, got, want)
		}
		if status, got := rawDo(t, http.MethodPost, url, modernHdr("completion/complete", ""), modernReq(id, "completion/complete", tc.params)); status != http.StatusBadRequest || got != want+"\n" {
			t.Errorf("http modern %d: %d\n got %s\nwant %s", i, status, got, want)
		}
	}
	// A good request is mcp-go's, with resultType in the 2026-07-28 era.
	status, got := rawDo(t, http.MethodPost, url, modernHdr("completion/complete", ""), modernReq(50, "completion/complete",
		`{"ref":{"type":"ref/resource","uri":"axpool://libs/{lib}"},"argument":{"name":"lib","value":"std-j"}}`))
	if status != http.StatusOK || !strings.Contains(got, `"completion":{"values":["std-json"],"total":1}`) || !strings.Contains(got, `"resultType":"complete"`) {
		t.Errorf("http modern good: %d %s", status, got)
	}
}

// A prompts/get of write_ax_program without its task — absent, blank, not
// a string — is -32602 naming the argument, over stdio and HTTP (both
// eras); mcp-go alone answers a prompt handler's error with -32603.
func TestPromptRefusals(t *testing.T) {
	s := newStack(t, 0, queue.Config{})
	defer s.close()
	r := newRawStdio(t, s.gw)
	url := httpServer(t, s.gw, HTTPConfig{})
	legacy := legacySession(t, url, testToken)
	const want = `{"code":-32602,"message":"prompt write_ax_program: argument \"task\" is required (what the program should do)","data":{"argument":"task"}}`
	for i, params := range []string{
		`{"name":"write_ax_program"}`,
		`{"name":"write_ax_program","arguments":{}}`,
		`{"name":"write_ax_program","arguments":{"task":" \t\n"}}`,
		`{"name":"write_ax_program","arguments":{"task":7}}`,
	} {
		id := 60 + i
		want := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"error":` + want + `}`
		msg := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"prompts/get","params":` + params + `}`
		r.send(msg)
		if got := string(r.nextRaw()); got != want {
			t.Errorf("stdio %s:\n got %s\nwant %s", params, got, want)
		}
		if status, got := rawDo(t, http.MethodPost, url, legacy, msg); status != http.StatusOK || got != want+"\n" {
			t.Errorf("http legacy %s: %d\n got %s\nwant %s", params, status, got, want)
		}
		if status, got := rawDo(t, http.MethodPost, url, modernHdr("prompts/get", "write_ax_program"), modernReq(id, "prompts/get", params)); status != http.StatusBadRequest || got != want+"\n" {
			t.Errorf("http modern %s: %d\n got %s\nwant %s", params, status, got, want)
		}
	}
	// A task is mcp-go's answer: the guide, then the task.
	r.send(`{"jsonrpc":"2.0","id":70,"method":"prompts/get","params":{"name":"write_ax_program","arguments":{"task":"add 2 and 3"}}}`)
	if got := string(r.nextRaw()); !strings.Contains(got, `"id":70,"result":{`) || !strings.Contains(got, `add 2 and 3`) {
		t.Errorf("stdio good prompt: %.300s", got)
	}
}
