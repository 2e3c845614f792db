// Package tasks keeps MCP tasks (docs/tools.md §7 "Tasks") in the queue's
// durable store, so that every gateway of a fleet answers for every task
// and a restarted gateway still knows them: a task (queue.Task in the
// AXPOOL_TASKS bucket) is stored before its handle is answered, its result
// is stored under the task's ID in the results bucket — by the worker for
// a built-in tool's job (submitted under the task's ID), by the gateway
// that runs a script's or a batch's call (Store.Run) — and its state is
// read from both (Store.State): working until a result is stored, then
// completed (a tool result, isError for a failure), cancelled (tasks/cancel
// or a cancelled run) or failed (a protocol error: no tool result could be
// made). A boruna_run task of the Tasks extension is interactive: when its
// run suspends to ask its caller (an approval, ask()), the worker stores
// the suspended result, the task is input_required (tasks/get carries the
// input requests), and tasks/update records the answer as the task's next
// resume (compare-and-set on the task record, so any gateway may answer,
// once) and submits the resume job, whose result is the task's next one
// (queue.Task.RunID). It also holds the wire forms of both task APIs: the
// Tasks extension of 2026-07-28 (SEP-2663: a flat CreateTaskResult,
// tasks/get inlining the result or the input requests, tasks/update, an
// empty tasks/cancel ack; Flat) and the task status of 2025-11-25 (mcp-go's
// types). Handler answers the task requests
// a transport hands it; the gateway writes its answers as JSON-RPC.
//
// Imports: gateway/dispatch, gateway/mcpver, internal/text, queue, tools
// and wire.
package tasks
