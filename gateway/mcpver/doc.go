// Package mcpver decides what each MCP request's protocol revision asks of
// the gateway (docs/tools.md §4 "Protocol versions"): the revisions axpool
// serves (Versions), the per-request metadata of 2026-07-28 (SEP-2575:
// protocol version, client capabilities and extensions, log level, W3C
// trace context, read by Parse), the checks of a 2026-07-28 request over
// Streamable HTTP before anything else reads it (CheckHTTP: the
// MCP-Protocol-Version header, Mcp-Method and Mcp-Name with surrounding
// white space ignored, SEP-2243; -32020, -32022), the error codes of the
// revision, the tool list's cache lifetime (ToolsTTL) and the server card
// (SEP-2127, Card). It answers nothing itself: the gateway writes what it
// returns.
//
// Imports: internal/text.
package mcpver
