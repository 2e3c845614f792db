package queue

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// Every NATS subject, stream, consumer and bucket name axpool uses is defined
// here and nowhere else (one place names them all).
const (
	// StreamName is the JetStream stream holding queued jobs (work-queue
	// retention: a message is removed once acknowledged or terminated).
	StreamName = "AXPOOL_JOBS"
	// ConsumerName is the one durable pull consumer every worker slot pulls
	// from. A work-queue stream allows only one consumer per subject.
	ConsumerName = "axpool-workers"

	// jobSubjectPrefix + <tool> is the subject a job is published on.
	jobSubjectPrefix = "axpool.jobs."
	// JobSubjects is the stream's subject filter.
	JobSubjects = jobSubjectPrefix + ">"

	// pullSubject is the JetStream API subject of a pull request on the
	// consumer (answered on the request's reply subject).
	pullSubject = "$JS.API.CONSUMER.MSG.NEXT." + StreamName + "." + ConsumerName

	// eventSubjectPrefix + <gatewayID> + "." + <jobID> carries the progress
	// and result events of one job to the gateway that submitted it.
	eventSubjectPrefix = "axpool.evt."
	// toolsSubjectPrefix + <gatewayID> carries the tool calls of running
	// programs to the gateway that submitted their job (tools.go), and
	// toolsSubjectPrefix + <gatewayID> + ".cancel" their cancellations.
	toolsSubjectPrefix = "axpool.tools."
	// cancelSubjectPrefix + <jobID> asks the worker running a job to stop.
	cancelSubjectPrefix = "axpool.cancel."

	// ResultsBucket is the KV bucket of final results, key = job ID, value =
	// the response envelope (compact JSON), for the results read later or
	// elsewhere: stored when the job asks for it (Job.Keep) or its caller
	// did not confirm the result event (Bus.ConfirmResults,
	// Bus.PublishResult).
	ResultsBucket = "AXPOOL_RESULTS"
	// StateBucket is the KV bucket of per-job state: key claimKey(jobID)
	// holds the ID of the worker that claimed the job (claimValue), a
	// hand-back mark (Bus.MarkHandedBack) or cancelMarker;
	// key idempotencyKey(digest) an IdempotencyRecord.
	StateBucket = "AXPOOL_STATE"
	// CacheBucket is the KV bucket of the result cache (docs/tools.md §7):
	// key cacheKey(digest) holds a cached result envelope. Its TTL is
	// Config.CacheTTL.
	CacheBucket = "AXPOOL_CACHE"

	// TasksBucket is the KV bucket of MCP tasks (docs/tools.md §7): key =
	// task ID, value = the Task record (JSON). Kept as long as results.
	TasksBucket = "AXPOOL_TASKS"

	// WorkerServiceName is the nats micro service every worker process
	// registers ($SRV.PING|INFO|STATS.axpool-worker).
	WorkerServiceName = "axpool-worker"
	// WorkerStatusSubject is the worker service's status endpoint. It is not
	// queue-grouped: every live worker answers, which is how Stats counts
	// workers.
	WorkerStatusSubject = "axpool.workers.status"
	// WorkerUpSubject carries a worker process's announcement that it has
	// started pulling jobs (Bus.AnnounceWorker; the body is its ID): every
	// Client counts its slots at once instead of at its next status poll.
	WorkerUpSubject = "axpool.workers.up"
	// workerSubjectPrefix + <workerID> + ".running" asks one worker whether
	// it is running a job (the request's body: the job ID; the answer "1"
	// or "0").
	workerSubjectPrefix = "axpool.workers."

	// MaxDeliveriesAdvisory is published by the server when a job exhausted
	// the consumer's MaxDeliver (fired on the next pull attempt).
	MaxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + StreamName + "." + ConsumerName
	// JanitorQueueGroup load-balances MaxDeliveriesAdvisory among workers so
	// one janitor handles each advisory.
	JanitorQueueGroup = "axpool-janitor"

	// cancelMarker is the state value meaning "cancel requested". Worker IDs
	// never contain '!'.
	cancelMarker = "!cancel"
)

// JobSubject returns the subject a job for tool is published on.
func JobSubject(tool string) string { return jobSubjectPrefix + tool }

// EventSubject returns the subject on which the events of jobID are sent to
// the gateway gatewayID.
func EventSubject(gatewayID, jobID string) string {
	return eventSubjectPrefix + gatewayID + "." + jobID
}

// MaxReplyLen is the longest reply subject a job may name (Job.Reply), in
// bytes: a gateway's EventSubject is at most 268. A subject longer than the
// server's control line (4 KiB by default) makes the server close the
// publishing connection, which nats.go then does not reconnect.
const MaxReplyLen = 1024

// ValidReply reports whether s can be a job's reply subject (the subject
// of its events): a literal NATS subject — tokens separated by '.', none
// empty, none a wildcard ("*" or ">"), no white space or control bytes —
// of at most MaxReplyLen bytes.
func ValidReply(s string) bool {
	if s == "" || len(s) > MaxReplyLen {
		return false
	}
	// One pass over the bytes (every job's reply is checked on both
	// sides): a byte of a multi-byte character is never white space or a
	// control byte.
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if tok := s[start:i]; tok == "" || tok == "*" || tok == ">" {
				return false
			}
			start = i + 1
		} else if c := s[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// replyProblem describes a reply subject ValidReply refuses, quoting at
// most 64 bytes of it: `"axpool.evt.>" is not a literal NATS subject of
// at most 1024 bytes`.
func replyProblem(s string) string {
	q := fmt.Sprintf("%q", s)
	if len(s) > 64 {
		q = fmt.Sprintf("%q… (%d bytes)", s[:64], len(s))
	}
	return fmt.Sprintf("%s is not a literal NATS subject of at most %d bytes", q, MaxReplyLen)
}

// EventWildcard returns the subject a gateway subscribes to for the events
// of all its jobs.
func EventWildcard(gatewayID string) string { return eventSubjectPrefix + gatewayID + ".>" }

// CancelSubject returns the subject that cancels the running job jobID.
func CancelSubject(jobID string) string { return cancelSubjectPrefix + jobID }

// workerRunningSubject is the subject on which worker workerID answers
// whether it runs a job.
func workerRunningSubject(workerID string) string { return workerSubjectPrefix + workerID + ".running" }

// claimKey is the state-bucket key of a job's claim / cancel marker.
func claimKey(jobID string) string { return "claim." + jobID }

// handOffKey is the state-bucket key of a chunk's hand-off marker
// (Bus.HandOff): "<index of the first item handed off>", with "+"
// appended once the items' chunk is on the stream.
func handOffKey(chunkID string) string { return "handoff." + chunkID }

// cacheKey is the cache-bucket key of the cached result under digest:
// "result." and the first 128 bits of digest's SHA-256 in unpadded
// base64url (22 characters), whatever the digest's length. The server
// keeps every key of the bucket in memory (its subject index, and the
// per-block index of the blocks written in the last 2 minutes), so a key
// of 22 characters instead of the 64 of a hex SHA-256 saves about 80
// bytes of the server's memory per entry. Two digests share a key with
// probability about n²/2^129 for n entries (10^-27 for a million).
func cacheKey(digest string) string {
	var buf [128]byte // a valid digest's length at most: on the stack
	sum := sha256.Sum256(append(buf[:0], digest...))
	const prefix = "result."
	var key [len(prefix) + 22]byte // one allocation: the string
	copy(key[:], prefix)
	base64.RawURLEncoding.Encode(key[len(prefix):], sum[:16])
	return string(key[:])
}

// idempotencyKey is the state-bucket key of the idempotency record under
// digest.
func idempotencyKey(digest string) string { return "idem." + digest }

// ValidID reports whether s is a valid job, tool, gateway or worker ID:
// 1–128 characters from [A-Za-z0-9_-], so that it is one subject token and
// a KV key part.
//
// It reads bytes, not runes (a byte of a multi-byte character is outside
// the set as its character is): IDs are checked several times per job on
// both sides.
func ValidID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !idByte[s[i]] {
			return false
		}
	}
	return true
}

// idByte marks the bytes of [A-Za-z0-9_-].
var idByte = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	return t
}()
