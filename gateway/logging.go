package gateway

import (
	"context"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/axpool/axpool/queue"
)

// ProgramLogger is the logger of the notifications/message that carry a
// running program's debug output (docs/tools.md §7 "Logging").
const ProgramLogger = "axpool.program"

// logLevel is the least severe level the client asked to be sent for the
// request of ctx: the request's _meta level in the 2026-07-28 era
// (io.modelcontextprotocol/logLevel; "" when it asked for none), else the
// session's (logging/setLevel; mcp-go's default is error).
func logLevel(ctx context.Context) mcp.LoggingLevel {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.LogLevel
	}
	if s, ok := server.ClientSessionFromContext(ctx).(server.SessionWithLogging); ok {
		return s.GetLogLevel()
	}
	return ""
}

// withProgramLog returns ctx asking the job of the call for its debug
// output while it runs (queue.WithDebugSink) when the client asked for
// debug messages: each line, masked, is sent as a notifications/message
// of level debug, logger ProgramLogger, data the line. Otherwise ctx.
func (g *Server) withProgramLog(ctx context.Context) context.Context {
	srv := server.ServerFromContext(ctx)
	if srv == nil || !mcp.LoggingLevelDebug.ShouldSendTo(logLevel(ctx)) {
		return ctx
	}
	return queue.WithDebugSink(ctx, func(lines []string) {
		for _, l := range lines {
			err := sendLog(ctx, srv, mcp.NewLoggingMessageNotification(mcp.LoggingLevelDebug, ProgramLogger, g.mask.String(l)))
			if err != nil {
				if errors.Is(err, server.ErrNotificationChannelBlocked) {
					g.log.Debug("debug message dropped: session buffer full")
				} else {
					g.log.Debug("debug message not sent", "err", err)
				}
				return
			}
		}
	})
}

// The log levels of a stdio connection's session (logging/setLevel).
func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) { s.level.Store(string(level)) }

// GetLogLevel returns the level logging/setLevel set, mcp.LoggingLevelError
// before any (as mcp-go's HTTP sessions).
func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	if l, _ := s.level.Load().(string); l != "" {
		return mcp.LoggingLevel(l)
	}
	return mcp.LoggingLevelError
}

// sendLog sends m to the client of the call of ctx if the level it asked
// for lets m through: on the call's own event stream over HTTP
// (notify.go), else as mcp-go sends it.
func sendLog(ctx context.Context, srv *server.MCPServer, m mcp.LoggingMessageNotification) error {
	n := notification(m.Method, map[string]any{"level": m.Params.Level, "logger": m.Params.Logger, "data": m.Params.Data})
	return notify(ctx, n, func() error { return srv.SendLogMessageToClient(ctx, m) }, func() bool {
		return m.Params.Level.ShouldSendTo(logLevel(ctx))
	})
}
