// Package node assembles the processes of the one binary for cmd/axpool
// (docs/architecture.md "Modes"): Start brings up a node — the embedded
// NATS server and the supervised worker processes of single-node mode, or
// the connection to a fleet's NATS cluster; the job queue and its client;
// the dispatcher of calls; with Config.Gateway the MCP gateway; the
// metrics listener and the audit log — and Close stops what it started in
// the reverse order, once. Drain is the first half of a shutdown on a
// signal. RunWorker and SuperviseWorker are the two halves of `axpool
// worker`. WorkerArgs is the worker command line a single-node node gives
// its processes, whose secrets travel on a pipe, not in their environment
// (secrets.go); Grants carries the operator's capability grants from the
// flags — checked (Check) and warned about (Warnings) — to the handler
// set, to that command line, and to `axpool run` (LocalHandlers).
//
// node holds no product rule of its own beyond assembly: the queue's
// timeouts follow the job timeout (Config.Queue), the result cache's scope
// is every setting that changes a result (cacheScope).
//
// Imports: gateway, gateway/dispatch, gateway/upstream, internal/engine,
// internal/mask, internal/version, policy, queue, scripts, tools, vm, worker and
// worker/handlers.
package node
