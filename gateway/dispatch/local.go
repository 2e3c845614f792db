package dispatch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/axpool/axpool/tools"
)

// ToolsLocal returns the production LocalFunc: tools.CallArgs with env in
// the gateway process. It refuses the tools that execute user code, so the
// gateway can never run a VM (docs/architecture.md "Processes and isolation").
func ToolsLocal(env *tools.Env) LocalFunc {
	return func(ctx context.Context, call *tools.Args) (json.RawMessage, error) {
		if tools.Executes(call.Tool()) {
			return nil, fmt.Errorf("gateway: %s executes user code and must run on a worker", call.Tool())
		}
		resp, _ := tools.CallArgs(ctx, env, call, nil)
		return resp.MarshalJSON()
	}
}
