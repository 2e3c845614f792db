package dispatch

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/axpool/axpool/internal/pooltest"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/tools"
	"github.com/axpool/axpool/wire"
)

func TestMain(m *testing.M) { pooltest.Main(m) }

// TestInvalidJobError: a job the queue refused is invalid_args; one over
// its message limit gets the caller's message — from the sizes Submit
// measured, or from the server's words when the server refused it — and
// any other refusal keeps the queue's error.
func TestInvalidJobError(t *testing.T) {
	const resumed = "the resumed run's job — its source and arguments (JSON-escaped) and the recorded state of the suspended run (the results of its capability calls before it asked) — is "
	const resumeAdvice = "; the run cannot be resumed: call again with a program that records less before it asks (fewer or smaller tool results), or a shorter source"
	for _, c := range []struct {
		err     *queue.InvalidJobError
		resumed bool
		want    string
	}{
		{&queue.InvalidJobError{Field: "size", Reason: "r", Err: queue.ErrJobTooLarge, Size: 5000, Limit: 4096}, false,
			"the job is 5000 bytes once encoded (source and arguments, JSON-escaped), above the queue's message limit of 4096 bytes; send a shorter source or fewer or smaller arguments"},
		{&queue.InvalidJobError{Field: "size", Reason: "message size exceeds maximum allowed", Err: queue.ErrJobTooLarge}, false,
			"the job is above the queue's message limit (message size exceeds maximum allowed); send a shorter source or fewer or smaller arguments"},
		// A resume job (a suspended run's state with it) says so.
		{&queue.InvalidJobError{Field: "size", Reason: "r", Err: queue.ErrJobTooLarge, Size: 5000, Limit: 4096}, true,
			resumed + "5000 bytes once encoded, above the queue's message limit of 4096 bytes" + resumeAdvice},
		{&queue.InvalidJobError{Field: "size", Reason: "message size exceeds maximum allowed", Err: queue.ErrJobTooLarge}, true,
			resumed + "above the queue's message limit (message size exceeds maximum allowed)" + resumeAdvice},
		{&queue.InvalidJobError{Field: "args", Reason: "the encoded job nests arrays and objects more than 10000 deep (the arguments 9999 at most)"}, false,
			"invalid_args: queue: invalid job args: the encoded job nests arrays and objects more than 10000 deep (the arguments 9999 at most)"},
	} {
		var err error = c.err // as Submit returns it
		je := invalidJobError(c.err, err, c.resumed)
		env, _ := je.Envelope().MarshalJSON()
		want := `{"success":false,"protocol_version":1,"error_kind":"invalid_args","message":` + strconv.Quote(c.want) + `,"outcome":"invalid_args","retryable":false}`
		if je.Outcome != wire.OutcomeInvalidArgs || je.Err != err || string(env) != want {
			t.Errorf("invalidJobError(%v) = %+v, envelope\n%s\nwant\n%s", c.err, je, env, want)
		}
	}
}

// TestUnsubmitted: a refusal before any job was created carries the job
// fields of none after its own.
func TestUnsubmitted(t *testing.T) {
	for _, c := range []struct {
		o    *wire.Object
		want string
	}{
		{wire.QuotaExceeded("too many; retry after 1500 ms", 1500*time.Millisecond),
			`{"success":false,"protocol_version":1,"error_kind":"quota_exceeded","message":"too many; retry after 1500 ms","outcome":"quota_exceeded","retryable":true,"retry_after_ms":1500,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`},
		{wire.QueueFull("full; retry after 1000 ms", time.Second),
			`{"success":false,"protocol_version":1,"error_kind":"queue_full","message":"full; retry after 1000 ms","outcome":"queue_full","retryable":true,"retry_after_ms":1000,"job_id":"","queue_ms":0,"run_ms":0,"worker":""}`},
	} {
		if got := string(Unsubmitted(c.o)); got != c.want {
			t.Errorf("Unsubmitted =\n%s\nwant\n%s", got, c.want)
		}
	}
}

// checked is tools.Check of arguments a test knows are valid (it panics
// otherwise; safe on any goroutine).
func checked(tool string, raw json.RawMessage) *tools.Args {
	a, err := tools.Check(tool, raw)
	if err != nil {
		panic(err)
	}
	return a
}
