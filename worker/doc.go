// Package worker is axpool's worker process (docs/architecture.md "Jobs",
// "Processes and isolation"): it pulls jobs from the queue, runs them with
// its one Executor (in production internal/engine's, which compiles and
// runs .ax programs in the VM; the worker knows nothing of what a job
// does), heartbeats while they run, publishes throttled
// progress, the program's debug lines when the job asks (queue.Job.Debug;
// the Executor's engine finds the worker's function with wire.DebugLine
// on the run's context) and the result, and acknowledges them. It recovers from its
// own and its peers' crashes: a panic in a job becomes an internal_error
// result, a job whose worker died is redelivered and, on its last
// delivery, ends as worker_lost; a janitor answers jobs that exhausted
// their deliveries.
//
// # Recovery and shutdown
//
// A running job is heartbeaten every AckWait/3, so a job whose worker
// dies is redelivered one AckWait later. A first delivery runs unclaimed
// and claims the job at its first heartbeat (stopping, unanswered, when a
// redelivery claimed it meanwhile); a redelivery claims it at once, after
// asking the worker holding the job's claim whether it still runs it, and
// runs it again only if its caller still waits for it (queue.Bus.Answered):
// an earlier delivery may have sent the result. The answer goes to the
// caller on core NATS without waiting (queue.Event.Later) and is confirmed
// behind the slot, with the other results sent to that caller meanwhile
// (resultConfirmer, confirm.go; queue.Bus.ConfirmResults), before the job
// is acknowledged; it is stored in the results bucket only when the job
// asks for it (stored first, then published) or the caller does not
// confirm it. A result that ends its job otherwise (terminated) waits for
// a confirmation of its own (queue.Bus.PublishResult). Storing a
// claim or an answer is retried with backoff until the job's deadline
// (the bus may be electing a leader); only then is the job handed back,
// with a delay. A watchdog cancels a job once its wall-clock limit,
// counted from its first start, has passed by WatchdogSlack; an engine
// that stops within StopGrace answers it (wall_limit), one that does not
// is answered worker_lost, and one that ignores its cancellation for
// HungGrace makes the process unhealthy. On shutdown the slots stop pulling at once, running
// jobs get ShutdownGrace, then are cancelled and answered `cancelled`;
// nothing is handed back to run again. A job pulled as shutdown began
// (or a chunk's items not started, when they cannot go to another slot)
// is handed back unstarted, marked so on its first delivery
// (queue.Bus.MarkHandedBack, a write on that path only): its redelivery
// starts it afresh, where one that finds no claim counts the job as
// possibly started one AckWait before it. The last delivery MaxDeliver
// allows is never handed back (the server would not deliver it again): a
// job runs within ShutdownGrace, a chunk its first item, the others
// handed to another slot — or, while they cannot be (a redelivery before
// a sure lead, a failed hand-off), run on the slot within ShutdownGrace,
// the hand-off tried again before each.
//
// A chunk (queue.ChunkTool: several jobs in one message) is run item by
// item on its slot, each item handled as the job it is, under one
// heartbeat of the chunk, and acknowledged once every item it still owns
// is answered; an item that runs past Options.HandOffAfter has the items
// not started handed to another slot (queue.Bus.HandOff), on a
// redelivery too; a redelivered chunk — and a chunk handed off by one
// (queue.Job.Redelivered) — leaves the items handed off to their chunk
// and runs only the items whose caller still waits (queue.Bus.Answered),
// claiming each before it runs, and the janitor
// answers a chunk's items one by one, but for those handed off
// (handleChunk, chunk.go).
//
// It also holds the Supervisor that starts N worker processes (the same
// binary, `axpool worker`), each in a process group of its own, restarts
// those that die with capped exponential backoff, kills and replaces one
// whose heartbeat (a byte every HeartbeatInterval on a pipe) stops for
// HeartbeatTimeout — stopped, hung or unhealthy — and stops them on
// shutdown, restarting none once Stop began.
//
// # Capacity
//
// A worker process runs Options.Slots jobs at once; each slot pulls one job
// at a time (queue.Puller), never ahead of running it. The default is
// SlotsPerCPU slots per CPU the process schedules on (GOMAXPROCS), bounded
// by memory (DefaultSlots): short jobs spend most of their time in bus
// round trips, so several slots keep a CPU busy. The Supervisor gives each
// of its N processes a 1/N share of the CPUs (SupervisorOptions.GOMAXPROCS),
// so in single-node mode the processes together schedule on the machine's
// CPUs, next to the gateway, rather than each on all of them.
//
// worker uses queue (the bus) and wire; it never imports the gateway, MCP,
// the tools or the scripts.
//
// Imports: internal/text, queue and wire.
package worker
