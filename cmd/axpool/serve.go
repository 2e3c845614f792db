package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/axpool/axpool/gateway"
)

// `axpool serve --http`: the MCP gateway over Streamable HTTP with bearer
// tokens (docs/tools.md §4).

// closeHTTP closes h (the calls have drained, or the command's context
// ended) and returns what Serve returned.
func closeHTTP(h *gateway.HTTPServer, errc <-chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownSlack)
	defer cancel()
	if err := h.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	h.Close()
	return <-errc
}

var serveFlags struct {
	node             nodeFlags
	http             bool
	addr             string
	tokenFiles       []string
	insecureTokens   bool
	allowNonLoopback bool
	allowedHosts     []string
	maxBody          int64
	maxConns         int
	maxUnauthConns   int
}

var serveCmd = &cobra.Command{
	Use:   "serve --http --token-file FILE [--addr 127.0.0.1:8765]",
	Short: "Serve the MCP tools over Streamable HTTP with bearer-token auth",
	Long: `Serve the 14 boruna_* MCP tools and axpool_batch over Streamable HTTP at /mcp.

--http is required, and so is at least one --token-file: each file holds one
bearer token (surrounding white space is trimmed; it must not be empty) and
its base name without extension names the caller in logs and metrics
("alice.token" → alice). A token file that its group or others can read or
write is refused at start (chmod 600 it, or pass --insecure-token-file).
Every request needs "Authorization: Bearer <token>"; others get 401.

The server binds loopback (127.0.0.1:8765) by default and refuses a
non-loopback --addr unless --allow-non-loopback is given. Requests whose
Host or Origin is not loopback (or an --allowed-host) get 403, bodies over
--max-body-bytes get 413; both, and 401, close the connection without
reading the body. A request's headers and its body must each arrive within
10 s (3 s for the first request of a connection), an idle keep-alive
connection is closed after 30 s, and at most --max-conns connections are
open at once (more wait to be accepted), of which --max-unauth-conns have
not authenticated (the oldest is closed to make room).

Node flags (embedded NATS and workers, or --nats for fleet mode) are those
of ` + "`axpool mcp`" + `. On SIGTERM/SIGINT the server stops accepting
connections and calls, lets the running calls finish for --shutdown-grace,
cancels the rest (their callers get outcome cancelled, retryable) and exits within the
grace + 2 s. A second signal stops at once (workers killed), exit status 1.`,
	Args: noArgs,
	RunE: runServe,
}

func init() {
	f := serveCmd.Flags()
	serveFlags.node.register(f)
	serveFlags.node.registerUpstreams(f)
	f.BoolVar(&serveFlags.http, "http", false, "serve Streamable HTTP (required; the only transport of serve)")
	f.StringVar(&serveFlags.addr, "addr", "127.0.0.1:8765", "listen address host:port")
	f.StringArrayVar(&serveFlags.tokenFiles, "token-file", nil, "bearer token file (repeatable: one token per caller); must not be readable or writable by group or others (chmod 600)")
	f.BoolVar(&serveFlags.insecureTokens, "insecure-token-file", false, "accept token files that group or others can read or write")
	f.BoolVar(&serveFlags.allowNonLoopback, "allow-non-loopback", false, "allow --addr to bind a non-loopback interface")
	f.StringArrayVar(&serveFlags.allowedHosts, "allowed-host", nil, "extra Host/Origin host name to accept (repeatable)")
	f.Int64Var(&serveFlags.maxBody, "max-body-bytes", gateway.DefaultMaxBodyBytes, "largest accepted request body")
	f.IntVar(&serveFlags.maxConns, "max-conns", 0, "most HTTP connections open at once, more wait to be accepted (0 = the file descriptors free at start less 16, at most 10000; fewer than 8 free: serve refuses to start)")
	f.IntVar(&serveFlags.maxUnauthConns, "max-unauth-conns", 0, "most connections open that have not authenticated yet; the oldest is closed to make room (0 = a quarter of --max-conns)")
	rootCmd.AddCommand(serveCmd)
}

func runServe(cmd *cobra.Command, _ []string) error {
	ignoreSIGPIPE()
	if !serveFlags.http {
		return printFail(cmd, exitUsage, "axpool serve: --http is required (for stdio use `axpool mcp`)")
	}
	if len(serveFlags.tokenFiles) == 0 {
		return printFail(cmd, exitUsage, "axpool serve: --token-file is required with --http (a file holding the bearer token)")
	}
	var tokens []gateway.Token
	for _, p := range serveFlags.tokenFiles {
		t, err := gateway.LoadTokenFile(p, serveFlags.insecureTokens)
		if errors.Is(err, gateway.ErrTokenFileMode) {
			return printFail(cmd, exitUsage, "axpool serve: %v (or pass --insecure-token-file to accept it)", err)
		}
		if err != nil {
			return printFail(cmd, exitUsage, "axpool serve: %v", err)
		}
		tokens = append(tokens, t)
	}
	if err := checkListenAddr(serveFlags.addr); err != nil {
		return printFail(cmd, exitUsage, "axpool serve: --addr %q: %v", serveFlags.addr, err)
	}
	if !gateway.IsLoopbackAddr(serveFlags.addr) && !serveFlags.allowNonLoopback {
		return printFail(cmd, exitUsage, "axpool serve: --addr %s is not a loopback address; pass --allow-non-loopback to expose the server", serveFlags.addr)
	}
	if serveFlags.maxBody < 1 {
		return printFail(cmd, exitUsage, "axpool serve: --max-body-bytes must be positive")
	}
	if serveFlags.maxConns < 0 || serveFlags.maxUnauthConns < 0 {
		return printFail(cmd, exitUsage, "axpool serve: --max-conns and --max-unauth-conns must not be negative")
	}
	// Bind before starting the node so a busy port fails fast.
	ln, err := net.Listen("tcp", serveFlags.addr)
	if err != nil {
		return printFail(cmd, exitFail, "axpool serve: listen on %s: %v", serveFlags.addr, err)
	}
	n, err := startNode(cmd, "axpool serve", &serveFlags.node, nodeOptions{tokenFiles: serveFlags.tokenFiles})
	if err != nil {
		ln.Close()
		return err
	}
	defer n.Close()
	h, err := n.Gateway.NewHTTPServer(gateway.HTTPConfig{
		Tokens:         tokens,
		AllowedHosts:   serveFlags.allowedHosts,
		MaxBodyBytes:   serveFlags.maxBody,
		MaxConns:       serveFlags.maxConns,
		MaxUnauthConns: serveFlags.maxUnauthConns,
	})
	if err != nil {
		ln.Close()
		return printFail(cmd, exitFail, "axpool serve: %v", err)
	}
	names := make([]string, len(tokens))
	for i, t := range tokens {
		names[i] = t.Name
	}
	lim := h.Limits()
	n.Log.Info("serving Streamable HTTP", "url", "http://"+ln.Addr().String()+gateway.EndpointPath, "callers", names,
		"max_conns", lim.Max, "max_unauth_conns", lim.MaxUnauth, "fd_limit", lim.FileLimit, "fds_open", lim.FilesOpen)

	sigs := make(chan os.Signal, 2) // a second one is heard too
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	defer signal.Stop(sigs)
	errc := make(chan error, 1)
	go func() { errc <- h.Serve(ln) }()
	select {
	case err = <-errc:
	case <-cmd.Context().Done():
		err = closeHTTP(h, errc)
	case sig := <-sigs:
		// Stop accepting connections at once; the calls in flight get
		// the grace (drain), then the server closes.
		go func() { _ = h.Shutdown(context.Background()) }()
		again := onSecondSignal(cmd, "axpool serve", sigs, n.Hurry)
		n.Drain(sig, serveFlags.node.shutdownGrace)
		err = closeHTTP(h, errc)
		if again() {
			n.Close()
			return silentExit(exitFail) // onSecondSignal said so
		}
	case <-n.Failed():
		// No call could ever be answered: stop, rather than serve. The
		// calls waiting are answered queue_unavailable with the cause.
		failCalls(n)
		_ = closeHTTP(h, errc)
		err = n.Err()
	}
	if err != nil {
		return printFail(cmd, exitFail, "axpool serve: %v", err)
	}
	return nil
}

// checkListenAddr checks a listen address host:port as a usage error
// would: a port that is not 0 to 65535 (or a service name of the local
// services file) is refused before anything starts, where the listen
// failed with exit status 1 after the start-up ("listen tcp: address
// 99999: invalid port").
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("port %q: want 0 to 65535", port)
	}
	return nil
}
