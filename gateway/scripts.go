package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/scripts"
	"github.com/axpool/axpool/tools"
)

// Named scripts as tools (docs/scripts.md): every public script of the
// catalogue is a tool next to the 14 boruna_* tools, with the schema and
// the annotations the scripts package derives. A call goes through
// scripts.Caller (grant, checks, job, failure hook) with the queue Backend
// as its runner; its refusals and failures are results with isError true,
// never JSON-RPC errors. With ScriptsConfig.Watch the directory is
// watched: a change rebuilds the catalogue (only changed files are
// compiled) and sends notifications/tools/list_changed to every session.
// A call in flight keeps the catalogue, and so the script version, it
// started with: its job carries the source.

// ScriptsConfig exposes a scripts directory as tools.
type ScriptsConfig struct {
	// Catalogue is the directory as loaded (scripts.Load). Required.
	Catalogue *scripts.Catalogue
	// LibsDir resolves imports when the catalogue is reloaded.
	LibsDir string
	// AllowDestructive names the `confirm` scripts that may run
	// (--allow-destructive).
	AllowDestructive []string
	// Watch reloads the catalogue when a file of its directory changes.
	Watch bool
	// ReloadDelay is how long a reload waits for more changes after the
	// first one (editors write in several steps); 0 means 100 ms. Changes
	// that never pause are reloaded 1 s after the first
	// (scripts.DefaultMaxReloadDelay).
	ReloadDelay time.Duration
}

// scriptState is the gateway's scripts side: the catalogue itself is the
// dispatcher's (dispatch.Scripts); the gateway watches its directory.
type scriptState struct {
	cfg     ScriptsConfig
	set     *dispatch.Scripts
	mu      sync.Mutex // serialises reloads
	watcher *scripts.Watcher
}

// isScript reports whether name is a script tool now (false for a nil g).
func (g *Server) isScript(name string) bool {
	return g != nil && g.d.Scripts().IsScript(name)
}

// unknownToolMessage is tools.UnknownToolMessage, suggesting a script
// when no boruna_* tool is near and one script name is (spell.Nearest's
// rule, through Catalogue.Suggest).
func (g *Server) unknownToolMessage(name string) string {
	msg := tools.UnknownToolMessage(name)
	if g == nil || g.scripts == nil || strings.Contains(msg, "did you mean") {
		return msg
	}
	if s, ok := g.scripts.set.Catalogue().Suggest(name); ok {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return msg
}

// contextInstructions runs the context script and returns the text
// appended to Instructions ("" when there is none).
func (g *Server) contextInstructions() string {
	cat := g.scripts.set.Catalogue()
	if cat.Context == nil {
		return ""
	}
	text, detail := g.d.Caller(cat).ContextText(context.Background())
	if detail != "" {
		g.log.Warn("context script failed; proceeding without project context", "script", cat.Context.Name, "err", detail)
	}
	if text == "" {
		return ""
	}
	return "\n\nProject context (from script " + cat.Context.Name + "):\n" + g.mask.String(text)
}

// scriptTools returns the tools of cat's public scripts.
func (g *Server) scriptTools(cat *scripts.Catalogue) []server.ServerTool {
	out := make([]server.ServerTool, 0, len(cat.Tools))
	for _, s := range cat.Tools {
		schema, _ := scripts.InputSchema(s.Params).MarshalJSON()
		schema = g.mask.JSON(schema) // `param` descriptions
		a := s.Annotations()
		title := s.Name
		var exec *mcp.ToolExecution
		if g.tasks != nil && s.Task != scripts.TaskNever {
			exec = &mcp.ToolExecution{TaskSupport: mcp.TaskSupport(s.Task)}
		}
		out = append(out, server.ServerTool{Tool: mcp.Tool{
			Execution:      exec,
			Name:           s.Name,
			Title:          title,
			Description:    g.mask.String(s.Description),
			RawInputSchema: schema,
			Annotations: mcp.ToolAnnotation{
				Title:           title,
				ReadOnlyHint:    &a.ReadOnly,
				DestructiveHint: &a.Destructive,
				IdempotentHint:  &a.Idempotent,
				OpenWorldHint:   &a.OpenWorld,
			},
		}, Handler: g.handle})
	}
	return out
}

// allTools is the full tool list: the built-in tools, then the scripts.
func (g *Server) allTools(cat *scripts.Catalogue) []server.ServerTool {
	return append(g.builtinTools(), g.scriptTools(cat)...)
}

// callScript answers a call of script s (the current catalogue's, cat)
// with its result object and the arguments it was called with: refusals
// and results alike are tool results (Server.result sets isError when
// success is false).
func (g *Server) callScript(ctx context.Context, req mcp.CallToolRequest, info *callInfo, s *scripts.Script, cat *scripts.Catalogue, raw json.RawMessage) ([]byte, json.RawMessage, error) {
	relay := g.newRelay(ctx, info, req)
	var progress func(steps, total int64)
	if relay != nil {
		progress = relay.update
	}
	out, args := g.d.Script(ctx, s, cat, raw, progress)
	if relay != nil {
		relay.stop()
	}
	return out, args, nil
}

// startWatch watches the scripts directory (scripts.Watch): a change
// reloads the catalogue.
func (st *scriptState) startWatch(g *Server) error {
	w, err := scripts.Watch(st.cfg.Catalogue.Dir, st.cfg.ReloadDelay, 0, g.reloadScripts,
		func(err error) { g.log.Warn("watching the scripts directory", "err", err) })
	if err != nil {
		return fmt.Errorf("gateway: watch scripts: %w", err)
	}
	st.watcher = w
	return nil
}

// reloadScripts rebuilds the catalogue and, when a tool changed (its
// name, source, policy or annotations), replaces the tool list: mcp-go
// then sends notifications/tools/list_changed to every session. A changed
// private script (a failure hook) is used from the next call on, without
// a notification.
func (g *Server) reloadScripts() {
	st := g.scripts
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.set.Catalogue()
	cat, err := scripts.Load(old.Dir, scripts.Options{LibsDir: st.cfg.LibsDir, Previous: old})
	if err != nil {
		g.log.Warn("reload scripts: keeping the loaded scripts", "err", err)
		return
	}
	if cat.Version() == old.Version() {
		return
	}
	for _, d := range cat.Diagnostics {
		g.log.Warn("script not loaded: " + d.String())
	}
	st.set.Store(cat)
	g.log.Info("scripts reloaded", "tools", len(cat.Tools), "compiled", cat.Compiled, "failed", len(cat.Failed))
	if cat.ToolsVersion() != old.ToolsVersion() {
		g.toolsChanged.Store(time.Now().UnixNano())
		g.mcp.SetTools(g.allTools(cat)...)
	}
}

// Close stops watching the scripts directory and stops the tasks' sweep
// of ended interactive tasks (tasks.Handler.Close), waiting for one under
// way. Calls in flight are not affected. Idempotent.
func (g *Server) Close() {
	if st := g.scripts; st != nil && st.watcher != nil {
		st.watcher.Close()
	}
	if g.taskHandler != nil {
		g.taskHandler.Close()
	}
}
