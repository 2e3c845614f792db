// Package worker is axpool's worker process (ARCHITECTURE.md "Jobs",
// "Processes and isolation"): it pulls jobs from the queue, runs them with
// an Executor (in production tools.Call, which compiles and runs .ax
// programs in the VM), heartbeats while they run, publishes throttled
// progress and the result, and acknowledges them. It recovers from its
// own and its peers' crashes: a panic in a job becomes an internal_error
// result, a job whose worker died is redelivered and, on its last
// delivery, ends as worker_lost; a janitor answers jobs that exhausted
// their deliveries.
//
// It also holds the Supervisor that starts N worker processes (the same
// binary, `axpool worker`), restarts those that die with capped
// exponential backoff, and stops them on shutdown.
//
// worker imports queue (the bus), tools (the engine) and wire; it never
// imports the gateway or MCP.
package worker
