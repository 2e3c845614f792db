package dispatch

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/axpool/axpool/tools"
)

// ToolsLocal returns the production LocalFunc: tools.Call with env in the
// gateway process. It refuses the tools that execute user code, so the
// gateway can never run a VM (docs/architecture.md "Processes and isolation").
func ToolsLocal(env *tools.Env) LocalFunc {
	return func(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
		if tools.Executes(tool) {
			return nil, fmt.Errorf("gateway: %s executes user code and must run on a worker", tool)
		}
		return tools.Call(ctx, env, tool, args, nil).MarshalJSON()
	}
}
