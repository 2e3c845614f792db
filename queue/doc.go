// Package queue is axpool's job bus on NATS JetStream (docs/architecture.md
// "Jobs", "NATS design").
//
// It owns:
//   - the embedded nats-server of single-node mode (StartEmbedded) and
//     connections to external servers (Connect);
//   - the job stream, its one durable pull consumer and the KV buckets —
//     results, state (claims, cancel markers, idempotency records) and the
//     result cache (cache.go), besides the MCP tasks —
//     (Open creates what is missing and never changes what exists,
//     Configure changes it explicitly, Attach looks it up, Bus.Bucket is
//     the one place a bucket is created, with the bus's replication);
//     every subject and bucket name lives in subjects.go;
//   - the versioned messages (Job, Event);
//   - the gateway's client API (Client: Submit, Wait, Cancel, Result, Stats);
//   - the worker-side primitives (Puller, Delivery, Bus.Claim,
//     Bus.StoreResult, Bus.PublishEvent, …) that package worker builds on;
//   - the tool calls of running programs to the gateway that submitted
//     their job (tools.go: Bus.CallTool on the worker side, Bus.ServeTools
//     on the gateway's).
//
// queue knows nothing of MCP, the compiler or the VM: a job's arguments and
// its result are opaque JSON. It uses wire (a leaf package) for the
// service-level failure envelopes it writes itself (a cancelled queued
// job, the job metadata).
//
// Imports: internal/jsonenc and wire.
//
// # Delivery guarantees
//
// A job is published once (deduplicated on its ID within Config.Duplicates)
// and is pulled by one worker slot at a time. The final result is stored in
// the results KV bucket (the worker waits for the server's confirmation)
// before the result event is published and before the message is
// acknowledged, so a lost event or a worker crash never loses a result:
// Client.Wait falls back to reading the bucket. The acknowledgement itself
// is fire-and-forget (Delivery.Ack): a lost ack only makes the job come
// back after AckWait to a worker that finds the stored result and sends it
// again.
//
// Per job the bus costs three round trips on the worker side — the pull,
// the claim and the result store — plus one-way messages for the result
// event and the ack, and one round trip (the publish) on the gateway side.
// A worker heartbeats a running job every AckWait/3; a job whose worker
// dies is redelivered one AckWait (3 s by default) after its last
// heartbeat, and run at most Config.MaxDeliver times: the last allowed
// delivery of a job whose previous worker died, or the one extra delivery
// after the last run died, ends as outcome worker_lost (package worker);
// the MAX_DELIVERIES advisory answers any job that slips through. A
// redelivered job whose claim holder still runs it (Bus.WorkerRunning) is
// left to that worker. The claim and result stores answer
// *UnavailableError while a node or leader is missing, and workers retry
// them until the job's deadline rather than hand the job back.
//
// # Single node (the gateway owns the server)
//
//	emb, err := queue.StartEmbedded(queue.EmbeddedOptions{Logger: log})
//	nc, err := emb.Connect()                      // in process, authenticated
//	bus, err := queue.Open(ctx, nc, queue.Config{Storage: queue.MemoryStorage}, log)
//	client, err := queue.NewClient(bus, queue.ClientOptions{Logger: log})
//	sup, err := worker.StartSupervisor(worker.SupervisorOptions{N: runtime.NumCPU(),
//		Command: worker.WorkerCommand(exe, emb.URL(), emb.Credentials())})
//	...
//	sup.Stop(); client.Close(); emb.Close()      // in this order
//
// Credentials reach child processes in their environment
// (AXPOOL_NATS_USER / AXPOOL_NATS_PASSWORD, see Credentials.Env), never on
// the command line: /proc/<pid>/cmdline is readable by every local user,
// /proc/<pid>/environ only by the owner.
//
// # Fleet
//
// The gateway calls Connect(url, WithCredentials(...)) and Open; workers
// (`axpool worker --nats url`) call Attach, which waits for Open's stream.
// Subjects and buckets are the same.
//
// # Per job
//
//	id, err := client.Submit(ctx, queue.Job{Tool: "boruna_run", Args: args, Deadline: d, Progress: true})
//	// errors.Is(err, queue.ErrQueueFull) → answer queue_full at once
//	res, err := client.Wait(ctx, id, func(steps, total int64) { ... })
//	// ctx ended (MCP cancel): client.Cancel(context.WithoutCancel(ctx), id)
package queue
