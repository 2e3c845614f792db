// Package upstream connects axpool's gateway to the MCP servers an
// operator names in an upstreams file (`--upstreams FILE`, the
// `.mcp.json` format: docs/code-mode.md), so that programs can call their
// tools through the gateway: the config and its `${VAR}` secrets
// (ParseConfig), one mcp-go client per upstream — stdio or Streamable
// HTTP — kept connected, with a reconnect after a crash and a down
// upstream reported but never fatal (Manager), the tools each lists
// (with their annotations, for approvals), calls by the name
// `NAME__TOOL` bound to the caller's context (Manager.Call), the
// approval decision for destructive tools (Decide, --approve-tools
// patterns: ParsePatterns; Manager.CallDecided applies it), and a ranked
// search over the tools (Manager.Search). Every string an
// upstream sends back — results, errors, its log lines — is masked of
// the secrets before anything else looks at it.
//
// The package knows nothing of NATS or jobs: the gateway answers the
// workers' tool calls with it.
//
// Imports: internal/mask and internal/text.
package upstream
