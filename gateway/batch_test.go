package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestBatchProgressReachesTotal: axpool_batch's last notifications/progress,
// sent before its response, says every item is done (progress = total =
// 15), however the items' finishing falls against the progress interval
// (15 trivial items finish well within one 200 ms interval: without the
// final count only "1 of 15" was sent).
func TestBatchProgressReachesTotal(t *testing.T) {
	s := sharedStack(t)
	r := newRawStdio(t, s.gw)
	var items []string
	for i := range 15 {
		items = append(items, fmt.Sprintf(`{"id":"p%d","source":%s}`, i, src(fmt.Sprintf("fn main() -> Int { %d }", 1000+i))))
	}
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"axpool_batch","arguments":{"items":[` +
		strings.Join(items, ",") + `]},"_meta":{"progressToken":"bp"}}}`)
	var progress [][2]float64
	for {
		var m map[string]any
		if err := json.Unmarshal(r.nextRaw(), &m); err != nil {
			t.Fatal(err)
		}
		if m["method"] != "notifications/progress" {
			if m["id"] != 1.0 || m["result"] == nil {
				t.Fatalf("response: %v", m)
			}
			break
		}
		p := m["params"].(map[string]any)
		progress = append(progress, [2]float64{p["progress"].(float64), p["total"].(float64)})
	}
	if len(progress) == 0 || progress[len(progress)-1] != [2]float64{15, 15} {
		t.Fatalf("progress notifications %v: want the last to be 15 of 15", progress)
	}
}
