package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/upstream"
	"github.com/axpool/axpool/internal/text"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/wire"
)

// Code mode (docs/code-mode.md): with Config.Upstreams the gateway holds
// the connections to the operator's upstream MCP servers. Their tools are
// never listed in tools/list — an agent finds them with
// boruna_tool_search, and programs call them through the gateway's tool
// service (CallTool, on queue.ToolsSubject) — so the tool list is the
// same with 5 upstream tools or 500.

// ToolSearchName is the tool that searches the upstreams' tools; listed
// only when the gateway has upstreams.
const ToolSearchName = "boruna_tool_search"

// toolSearchDescription is boruna_tool_search's description: short, as
// the tool list is read by every session (docs/tools.md §1 "Tool lists").
const toolSearchDescription = "Find the upstream MCP servers' tools (not listed here) by words: their schemas and .ax call examples."

// toolSearchSchema is boruna_tool_search's input schema.
const toolSearchSchema = `{"type":"object","properties":{` +
	`"query":{"type":"string","description":"\"\" lists all"},` +
	`"limit":{"type":"integer","minimum":1,"maximum":50,"default":10}},` +
	`"required":["query"],"additionalProperties":false}`

// UpstreamInstructions is added to Instructions when the server has
// upstream MCP servers.
const UpstreamInstructions = "\n\nThis server also reaches upstream MCP servers whose tools are not in the tool list: find them with " + ToolSearchName +
	"(query), which answers each tool's input schema and an .ax call example; a program calls them as tool_call(\"NAME__TOOL\", args)."

// toolSearchTool is boruna_tool_search's mcp.Tool.
func (g *Server) toolSearchTool() server.ServerTool {
	ro, closed := true, false
	return server.ServerTool{Tool: mcp.Tool{
		Name:           ToolSearchName,
		Title:          "Search upstream tools",
		Description:    toolSearchDescription,
		RawInputSchema: json.RawMessage(toolSearchSchema),
		Annotations:    mcp.ToolAnnotation{ReadOnlyHint: &ro, OpenWorldHint: &closed},
	}, Handler: g.handle}
}

// isToolSearch reports whether name is boruna_tool_search on a gateway
// with upstreams (false for a nil g).
func (g *Server) isToolSearch(name string) bool {
	return g != nil && g.cfg.Upstreams != nil && name == ToolSearchName
}

// toolSearch answers boruna_tool_search: its arguments are checked here,
// and a bad one is an invalid_args result (isError), like a script's.
// MaxSearchQueryBytes caps boruna_tool_search's query (an invalid_args
// refusal above it): a few words find a tool; a megabyte only made the
// answer, which echoes the query, a megabyte.
const MaxSearchQueryBytes = 1024

func (g *Server) toolSearch(raw json.RawMessage) []byte {
	var args map[string]json.RawMessage
	if err := json.Unmarshal(orEmpty(raw), &args); err != nil || args == nil {
		return refusal("arguments must be a JSON object")
	}
	query, limit := "", 0
	for k, v := range args {
		switch k {
		case "query":
			if string(v) == "null" || json.Unmarshal(v, &query) != nil {
				return refusal(`query must be a string, got ` + wire.JSONType(v))
			}
			if len(query) > MaxSearchQueryBytes {
				return refusal(fmt.Sprintf("query exceeds %d bytes (%d bytes): give a few words", MaxSearchQueryBytes, len(query)))
			}
		case "limit":
			if string(v) == "null" {
				continue
			}
			if json.Unmarshal(v, &limit) != nil || limit < 1 || limit > upstream.MaxSearchLimit {
				return refusal(fmt.Sprintf("limit must be an integer from 1 to %d, got %s", upstream.MaxSearchLimit, clipJSON(v)))
			}
		default:
			return refusal(fmt.Sprintf("unknown argument %q for tool %q (arguments: query, limit)", k, ToolSearchName))
		}
	}
	if _, ok := args["query"]; !ok {
		return refusal(`missing required argument "query"`)
	}
	if query != "" && !upstream.HasWords(query) {
		// It would list every tool, as "" does, which is not what a
		// query of "*" or "?" means to find.
		return refusal(fmt.Sprintf(`query %s has no words (runs of letters or digits) to search for: give words of a tool's name or description, or "" to list every tool by name`, text.Quote(query)))
	}
	type annotations struct {
		ReadOnly    *bool `json:"readOnlyHint,omitempty"`
		Destructive *bool `json:"destructiveHint,omitempty"`
		Idempotent  *bool `json:"idempotentHint,omitempty"`
		OpenWorld   *bool `json:"openWorldHint,omitempty"`
	}
	type found struct {
		Name        string          `json:"name"`
		Title       string          `json:"title,omitempty"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
		Annotations annotations     `json:"annotations"`
		Example     string          `json:"example"`
	}
	up := g.cfg.Upstreams
	all := append(slices.Clip(up.Tools()), g.scriptSearchTools()...)
	matches := upstream.SearchTools(all, query, limit)
	list := make([]found, len(matches))
	for i, m := range matches {
		h := m.Hints
		list[i] = found{Name: m.Name, Title: m.Title, Description: m.Description, InputSchema: m.InputSchema, Example: m.Example,
			Annotations: annotations{ReadOnly: h.ReadOnly, Destructive: h.Destructive, Idempotent: h.Idempotent, OpenWorld: h.OpenWorld}}
	}
	o := wire.Envelope(true).Set("query", query).Set("tools", list).Set("total_tools", len(all)).Set("upstreams", up.Servers())
	b, err := o.MarshalJSON()
	if err != nil {
		return refusal("internal error: " + err.Error())
	}
	return b
}

// refusal is an invalid_args result of boruna_tool_search.
func refusal(msg string) []byte {
	b, _ := wire.InvalidArgs(wire.KindInvalidArgs, msg).MarshalJSON()
	return b
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return json.RawMessage("{}")
	}
	return raw
}

// clipJSON is a JSON value as quoted in a message: at most 64 bytes, cut
// on a rune boundary and marked "…" (text.Clip).
func clipJSON(v json.RawMessage) string {
	return text.Clip(string(bytes.TrimSpace(v)), 64)
}

// CallTool answers a running program's tool call (a queue.ToolHandler,
// served on queue.ToolsSubject(gateway ID) by the node): one of the
// gateway's named scripts by its tool name (callScriptTool: its job, run
// nested by the calling worker), else an upstream's tool by its name
// NAME__TOOL, through Config.Upstreams, bound to ctx
// (the call's deadline and its cancellation). The value is masked with
// the gateway's masker besides the upstreams' secrets. A gateway without
// upstreams, or another name, answers code unknown_tool. A destructive
// tool (upstream.Tool.NeedsApproval) that Config.ApproveTools does not
// pre-approve needs the caller's approval: code approval_required,
// upstream.ApprovalMessage (upstream.Decide, applied by
// upstream.Manager.CallDecided) — the run of a caller that can be asked
// suspends on it (suspend.go) — unless req.Approved says the caller
// approved this very call. The answer of an approved or pre-approved
// destructive call of a job is recorded (answers.go), and the same call
// of a rerun of the job (req.JobID, req.Seq, the same name and arguments)
// gets it without a second call of the upstream.
func (g *Server) CallTool(ctx context.Context, req *queue.ToolRequest) queue.ToolResult {
	if s, cat, ok := g.d.Scripts().Lookup(req.Name); ok {
		return g.callScriptTool(ctx, req, s, cat)
	}
	res := g.callUpstreamTool(ctx, req)
	if res.Code == upstream.CodeUnknownTool {
		if cat := g.d.Scripts().Catalogue(); cat != nil {
			if near, ok := cat.Suggest(req.Name); ok {
				res.Error += fmt.Sprintf("; did you mean the named script %q?", near)
			}
		}
	}
	return res
}

// callUpstreamTool is CallTool of a name that is no named script: an
// upstream tool's.
func (g *Server) callUpstreamTool(ctx context.Context, req *queue.ToolRequest) queue.ToolResult {
	up := g.cfg.Upstreams
	if up == nil {
		return queue.ToolResult{Code: upstream.CodeUnknownTool, Error: fmt.Sprintf("unknown tool %q: this server has no upstream MCP servers (--upstreams)", g.mask.String(req.Name))}
	}
	if !g.recordsAnswer(req) {
		return g.callUpstream(ctx, req)
	}
	key := answerKey{job: req.JobID, seq: req.Seq, digest: callDigest(req.Name, req.Args)}
	res, replayed := g.answers.do(ctx, req.Name, key, func() queue.ToolResult { return g.callUpstream(ctx, req) })
	if replayed {
		g.log.Info("upstream tool call answered from its record (the job ran again)", "tool", up.Mask(req.Name), "job", req.JobID, "seq", req.Seq)
	}
	return res
}

// callUpstream makes the call of req on its upstream (CallTool).
func (g *Server) callUpstream(ctx context.Context, req *queue.ToolRequest) queue.ToolResult {
	start := time.Now()
	up := g.cfg.Upstreams
	approved := g.cfg.ApproveTools
	if req.Approved { // the caller approved this call (a resumed run, suspend.go)
		approved = []string{req.Name}
	}
	res, err := up.CallDecided(ctx, req.Name, req.Args, approved)
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.Debug("upstream tool call", "tool", up.Mask(req.Name), "job", req.JobID, "ms", time.Since(start).Milliseconds(), "is_error", res.IsError, "err", err)
	}
	if err != nil {
		var e *upstream.Error
		if !errors.As(err, &e) {
			e = &upstream.Error{Code: upstream.CodeUpstreamError, Msg: up.Mask(err.Error())}
		}
		return queue.ToolResult{Code: e.Code, Error: g.mask.String(e.Msg)}
	}
	return queue.ToolResult{Value: g.mask.JSON(res.Value), IsError: res.IsError, Text: g.mask.String(res.Text)}
}

// callScriptTool answers a program's tool call of the public script s
// (of the catalogue cat): checked as an MCP call of s is (scripts.Caller.
// Check: the destructive grant, then the arguments), a refusal is a tool
// error whose text is scripts.ErrText (`script "add" failed
// (invalid_args): invalid value "x" for parameter "a" (expected an
// integer)`), masked; a call that passes is answered with the script's
// job (queue.ToolResult.Script), which the calling worker runs nested in
// the calling run, in its own slot (docs/code-mode.md "Calling named scripts"):
// queueing it as a job of its own could wait for a slot that the caller
// holds.
func (g *Server) callScriptTool(ctx context.Context, req *queue.ToolRequest, s *scripts.Script, cat *scripts.Catalogue) queue.ToolResult {
	checked, refusal := g.d.Caller(cat).Check(s, orEmpty(req.Args))
	if g.log.Enabled(ctx, slog.LevelDebug) {
		g.log.Debug("script tool call", "tool", s.Name, "job", req.JobID, "refused", refusal != nil)
	}
	if refusal != nil {
		return queue.ToolResult{IsError: true, Text: g.mask.String(scripts.ErrText(s.Name, refusal))}
	}
	return queue.ToolResult{Script: s.NewJob(checked).Marshal()}
}

// scriptSearchTools are the gateway's public named scripts as
// boruna_tool_search finds them, next to the upstreams' tools: by their
// tool name (which a program passes to tool_call), description (masked),
// input schema and derived annotations; none without scripts.
func (g *Server) scriptSearchTools() []upstream.Tool {
	cat := g.d.Scripts().Catalogue()
	if cat == nil {
		return nil
	}
	out := make([]upstream.Tool, 0, len(cat.Tools))
	for _, s := range cat.Tools {
		schema, _ := scripts.InputSchema(s.Params).MarshalJSON()
		a := s.Annotations()
		out = append(out, upstream.Tool{Name: s.Name, Tool: s.Name, Description: g.mask.String(s.Description), InputSchema: g.mask.JSON(schema),
			Hints: upstream.Hints{ReadOnly: &a.ReadOnly, Destructive: &a.Destructive, Idempotent: &a.Idempotent, OpenWorld: &a.OpenWorld}})
	}
	return out
}
