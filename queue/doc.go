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
//   - the versioned messages (Job, Event), and chunks: several jobs in
//     one message (chunk.go: ChunkTool, Client.SubmitChunk,
//     Delivery.Items and Settle, Bus.Answered), each item answered as
//     its own job, and the hand-off of a chunk's items not started to
//     another slot (handoff.go: Bus.HandOff, Bus.HandedOff);
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
// and is pulled by one worker slot at a time. The happy path of a
// synchronous call makes one replicated write, the publish:
//
//   - A first delivery (Delivery.NumDelivered 1) runs without a claim. A
//     job still running at its first heartbeat (AckWait/3) is claimed then
//     (Bus.ClaimRunning), with its start, so that a redelivery finds its
//     worker; the claim finds a cancel marker or a redelivery's claim,
//     and the run stops. A redelivery claims the job at once (Bus.Claim,
//     Bus.ClaimSince): the claim dance stops a second run while the
//     holder lives; one that finds no claim counts the earlier delivery
//     as lost within its first heartbeat (Claim.Created). A first
//     delivery handed back unstarted (its worker began to stop as it
//     pulled it) leaves a hand-back mark instead (Bus.MarkHandedBack, a
//     write on that path only), and its redelivery starts the job afresh
//     (Claim.HandedBack).
//   - The result goes to the caller on the job's Reply, sent without
//     waiting (Event.Later), and the worker asks the Client which results
//     it holds with one request for many (Bus.ConfirmResults; a result
//     that ends a job otherwise, e.g. terminated, is a request of its own,
//     Bus.PublishResult): for those the Client holds it acknowledges the
//     job without storing anything. The
//     result is stored in the results bucket, before the ack, only when
//     someone needs it later: the job asks for it (Job.Keep: tasks,
//     idempotency keys), or the caller did not confirm it — no listener
//     (the server's no-responders), a listener that does not hold the
//     job, no answer within the worker's wait (a lost event): Client.Wait
//     then finds it by reading the bucket. A kept result is stored first
//     (the first stored result wins) and then published.
//   - A cacheable result (Event.Cacheable) is stored in the cache bucket
//     by the Client that receives it, in batches off the response path
//     (Bus.StoreCachedLater; cachestore.go).
//   - A cancel of a queued job reaches a first delivery through the
//     cancels its worker heard on the cancel subject, or through the
//     marker (Bus.Cancelled) when the job was published before the
//     worker's subscription was complete (Bus.LastJobSeq).
//
// The acknowledgement is fire-and-forget (Delivery.Ack): a lost ack makes
// the job come back after AckWait to a worker that re-publishes a stored
// result, or else runs the job again — at least once; its caller keeps
// the first answer. Per job the bus costs, on the worker side, the pull
// and the result request (round trips) and the ack (one way), and on the
// gateway side the publish (a round trip).
//
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
