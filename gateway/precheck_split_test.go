package gateway

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/axpool/axpool/wire"
)

// splitSeeds are messages and params for the split fast paths: the
// benchmark's call, keys in other cases and spellings, repeated keys,
// escapes and non-ASCII in the method and name, null and mistyped members,
// invalid JSON.
var splitSeeds = []string{
	`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"arguments":{"source":"fn main() -\u003e Int { 1 + 2 }"},"name":"boruna_run"}}`,
	`{"jsonrpc":"2.0","id":"a","method":"ping"}`,
	` { "id" : null , "method" : "ping" , "params" : null } `,
	`{"ID":1,"method":"ping"}`,
	`{"id":1,"Method":"ping"}`,
	`{"id":1,"method":"ping","method":"tools/list"}`,
	`{"id":1,"method":5,"method":"ping"}`,
	`{"id":1,"method":"pi\u006eg"}`,
	`{"id":1,"method":"pïng"}`,
	`{"id":1,"method":null}`,
	`{"id":1,"id":2,"method":"ping"}`,
	`{"id":[1],"method":"ping"}`,
	`{"id":1,"method":"ping","extra":{}}`,
	`{"id":1,"method":"ping",}`,
	`{}`,
	`[]`,
	`"x"`,
	`{"name":"boruna_run","arguments":{}}`,
	`{"Name":"boruna_run"}`,
	`{"name":"boruna_run","name":"boruna_check","task":{"ttl":1}}`,
	`{"name":"boru\u006ea_run"}`,
	`{"name":"ſ"}`,
	`{"name":5,"arguments":null,"_meta":{"progressToken":1}}`,
	`{"name":"a","ſask":1}`,
	`{"name":"a\"b"}`,
}

// TestSplitMessageAsUnmarshal: splitMessage and splitCallParams, where they
// take a text, give what json.Unmarshal gives (and take the benchmark's
// call, which is why they exist).
func TestSplitMessageAsUnmarshal(t *testing.T) {
	for _, s := range splitSeeds {
		checkSplitAsUnmarshal(t, []byte(s))
	}
	var msg rpcMessage
	if !splitMessage([]byte(splitSeeds[0]), &msg) || msg.Method != "tools/call" || string(msg.ID) != "2" {
		t.Fatalf("the benchmark's call not split: %+v", msg)
	}
	var p callParams
	if !splitCallParams(msg.Params, &p) || string(p.Name) != `"boruna_run"` {
		t.Fatalf("the benchmark's params not split: %+v", p)
	}
	for _, s := range []string{`{"ID":1,"method":"ping"}`, `{"id":1,"method":"pi\u006eg"}`, `{"id":1,"method":"ping","extra":{}}`} {
		if splitMessage([]byte(s), &rpcMessage{}) {
			t.Errorf("split %s: want it left to encoding/json", s)
		}
	}
}

func checkSplitAsUnmarshal(t *testing.T, data []byte) {
	var fast, slow rpcMessage
	if splitMessage(data, &fast) {
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("split %q, json.Unmarshal: %v", data, err)
		}
		if !bytes.Equal(fast.ID, slow.ID) || fast.Method != slow.Method || !bytes.Equal(fast.Params, slow.Params) {
			t.Fatalf("split %q: %+v, json.Unmarshal %+v", data, fast, slow)
		}
	}
	var pf, ps callParams
	if splitCallParams(data, &pf) {
		if err := json.Unmarshal(data, &ps); err != nil {
			t.Fatalf("split params %q, json.Unmarshal: %v", data, err)
		}
		if !bytes.Equal(pf.Name, ps.Name) || !bytes.Equal(pf.Arguments, ps.Arguments) ||
			!bytes.Equal(pf.Meta, ps.Meta) || !bytes.Equal(pf.Task, ps.Task) {
			t.Fatalf("split params %q: %+v, json.Unmarshal %+v", data, pf, ps)
		}
	}
	if v, plain := wire.PlainString(data); plain && json.Valid(data) { // PlainString reads valid JSON values
		var s string
		if err := json.Unmarshal(data, &s); err != nil || s != v {
			t.Fatalf("wire.PlainString %q = %q: json.Unmarshal gives %q, %v", data, v, s, err)
		}
	}
}

// FuzzSplitMessage: the split fast paths against encoding/json on any
// text (checkSplitAsUnmarshal).
func FuzzSplitMessage(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSplitAsUnmarshal(t, data) })
}
