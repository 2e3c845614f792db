// Command fakeupstream is an MCP server over stdio for the tests of
// package upstream (built by them with `go build`). Its tools:
//
//   - echo (read-only): {"text"} → the text;
//
//   - add: {"a", "b"} → structuredContent {"sum": a+b};
//
//   - json_text (read-only): → the text `{"items": [1, 2]}`;
//
//   - fail (read-only): {"reason"} → isError with "failed: <reason>";
//
//   - delete_repo (destructiveHint true): {"repo"} → "deleted <repo>";
//
//   - slow: {"ms"} → writes "slow: started" to stderr, then answers
//     "slept" after ms milliseconds (0: never) or writes "slow: cancelled"
//     when the call is cancelled;
//
//   - crash: exits the process (status 3) in the middle of the call;
//
//   - secret: → the value of $FAKE_SECRET as text, and the same line on
//     stderr, then a line "long: " + 1010 "x" + the value + 2000 "y"; secret_error → isError "bad credentials <value>".
//
//   - count (read-only): {"tool"} → structuredContent {"calls": n}, the
//     calls of that tool this process answered (count's own included).
//
// With -many N it serves N tools instead: tool_0000 … ("Tool number i of
// the many."), listed 100 per page. -name sets the server's name.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	many := flag.Int("many", 0, "serve this many numbered tools instead")
	name := flag.String("name", "fake", "server name")
	flag.Parse()
	s := server.NewMCPServer(*name, "1.0.0", server.WithToolCapabilities(false), server.WithPaginationLimit(100))
	if *many > 0 {
		for i := range *many {
			s.AddTool(mcp.NewTool(fmt.Sprintf("tool_%04d", i), mcp.WithDescription(fmt.Sprintf("Tool number %d of the many.", i)),
				mcp.WithString("x", mcp.Description("anything"))),
				func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return mcp.NewToolResultText(fmt.Sprint(i)), nil
				})
		}
	} else {
		addTools(s)
	}
	fmt.Fprintln(os.Stderr, "fakeupstream: serving")
	if err := server.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "fakeupstream:", err)
		os.Exit(1)
	}
}

// calls counts the calls of each tool (the count tool).
var (
	callsMu sync.Mutex
	calls   = map[string]int{}
)

// counted wraps a tool's handler to count its calls.
func counted(name string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		callsMu.Lock()
		calls[name]++
		callsMu.Unlock()
		return h(ctx, r)
	}
}

func addTools(srv *server.MCPServer) {
	s := countingServer{srv}
	s.AddTool(mcp.NewTool("count", mcp.WithDescription("How many calls a tool got."), mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithString("tool", mcp.Required())),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			callsMu.Lock()
			n := calls[r.GetString("tool", "")]
			callsMu.Unlock()
			return mcp.NewToolResultStructured(map[string]any{"calls": n}, fmt.Sprint(n)), nil
		})
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echo the text back."), mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithString("text", mcp.Required(), mcp.Description("what to echo"))),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(r.GetString("text", "")), nil
		})
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Add two numbers; the sum is structured content."), mcp.WithReadOnlyHintAnnotation(true),
		mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required())),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sum := r.GetFloat("a", 0) + r.GetFloat("b", 0)
			return mcp.NewToolResultStructured(map[string]any{"sum": sum}, fmt.Sprint(sum)), nil
		})
	s.AddTool(mcp.NewTool("json_text", mcp.WithDescription("Answer JSON as text."), mcp.WithReadOnlyHintAnnotation(true)),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(`{"items": [1, 2]}`), nil
		})
	s.AddTool(mcp.NewTool("fail", mcp.WithDescription("Always fail."), mcp.WithReadOnlyHintAnnotation(true), mcp.WithString("reason")),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("failed: " + r.GetString("reason", "")), nil
		})
	s.AddTool(mcp.NewTool("delete_repo", mcp.WithDescription("Delete a repository for good."), mcp.WithDestructiveHintAnnotation(true),
		mcp.WithString("repo", mcp.Required())),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("deleted " + r.GetString("repo", "")), nil
		})
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("Sleep for ms milliseconds (0: until cancelled)."), mcp.WithNumber("ms")),
		func(ctx context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "slow: started")
			var after <-chan time.Time
			if ms := r.GetFloat("ms", 0); ms > 0 {
				after = time.After(time.Duration(ms) * time.Millisecond)
			}
			select {
			case <-after:
				return mcp.NewToolResultText("slept"), nil
			case <-ctx.Done():
				fmt.Fprintln(os.Stderr, "slow: cancelled")
				return nil, ctx.Err()
			}
		})
	s.AddTool(mcp.NewTool("crash", mcp.WithDescription("Exit the server in the middle of the call.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "crash: exiting")
			os.Exit(3)
			return nil, nil
		})
	s.AddTool(mcp.NewTool("secret", mcp.WithDescription("Echo $FAKE_SECRET.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "secret is "+os.Getenv("FAKE_SECRET"))
			fmt.Fprintln(os.Stderr, "long: "+strings.Repeat("x", 1010)+os.Getenv("FAKE_SECRET")+strings.Repeat("y", 2000))
			return mcp.NewToolResultText("the secret is " + os.Getenv("FAKE_SECRET")), nil
		})
	s.AddTool(mcp.NewTool("secret_error", mcp.WithDescription("Fail with $FAKE_SECRET in the error.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultError("bad credentials " + os.Getenv("FAKE_SECRET")), nil
		})
}

// countingServer adds tools whose calls are counted.
type countingServer struct{ *server.MCPServer }

func (s countingServer) AddTool(t mcp.Tool, h server.ToolHandlerFunc) {
	s.MCPServer.AddTool(t, counted(t.Name, h))
}
