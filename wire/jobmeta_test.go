package wire

import (
	"strings"
	"testing"
	"time"
)

func TestJobMeta(t *testing.T) {
	got, err := AddJobMeta([]byte(`{"success":true,"protocol_version":1,"result":{"b":1,"a":2},"outcome":"ok"}`),
		JobMeta{JobID: "j", Queue: 1500 * time.Microsecond, Run: -time.Second, Worker: "w"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"success":true,"protocol_version":1,"result":{"b":1,"a":2},"outcome":"ok","job_id":"j","queue_ms":1,"run_ms":0,"worker":"w"}`
	if string(got) != want {
		t.Errorf("AddJobMeta = %s\nwant %s", got, want)
	}
	if _, err := AddJobMeta([]byte(`[1]`), JobMeta{}); err == nil {
		t.Error("AddJobMeta accepted a non-object")
	}
	f := FailureResult(WorkerLost("lost"), JobMeta{JobID: "j", Worker: "w9"})
	if string(f) != `{"success":false,"protocol_version":1,"error_kind":"worker_lost","message":"lost","outcome":"worker_lost","retryable":true,"job_id":"j","queue_ms":0,"run_ms":0,"worker":"w9"}` {
		t.Errorf("FailureResult = %s", f)
	}
	// All four job fields are always present (docs/tools.md §5); "" when unknown.
	f = FailureResult(Cancelled("c"), JobMeta{JobID: "j", Queue: 2 * time.Millisecond})
	if string(f) != `{"success":false,"protocol_version":1,"error_kind":"cancelled","message":"c","outcome":"cancelled","retryable":false,"job_id":"j","queue_ms":2,"run_ms":0,"worker":""}` {
		t.Errorf("FailureResult without a worker = %s", f)
	}
	got, err = AddJobMeta([]byte(`{"success":true,"outcome":"ok"}`), JobMeta{})
	if err != nil || string(got) != `{"success":true,"outcome":"ok","job_id":"","queue_ms":0,"run_ms":0,"worker":""}` {
		t.Errorf("AddJobMeta of empty meta = %s, %v", got, err)
	}
	// The envelope's bytes are kept as they are (no re-encoding: "<" stays,
	// numbers keep their form), an empty object gets no comma, and the
	// worker's name is encoded without HTML escaping.
	got, err = AddJobMeta([]byte(" {\"result\":\"a<b\",\"f\":1.50} \n"), JobMeta{JobID: "j", Worker: "h<1>"})
	if err != nil || string(got) != `{"result":"a<b","f":1.50,"job_id":"j","queue_ms":0,"run_ms":0,"worker":"h<1>"}` {
		t.Errorf("AddJobMeta kept bytes = %s, %v", got, err)
	}
	if got, err = AddJobMeta([]byte(`{ }`), JobMeta{JobID: "j"}); err != nil || string(got) != `{ "job_id":"j","queue_ms":0,"run_ms":0,"worker":""}` {
		t.Errorf("AddJobMeta of {} = %s, %v", got, err)
	}
	for _, bad := range []string{``, `{`, `}`, `"x"`, `[1]`, `null`} {
		if _, err := AddJobMeta([]byte(bad), JobMeta{}); err == nil {
			t.Errorf("AddJobMeta accepted %q", bad)
		}
	}
}

// TestAddJobMetaMatchesAppendFields: AddJobMeta writes the job metadata as
// bytes, and FailureResult sets it on an Object (setOn); both must give the
// bytes AppendFields gives for the members setOn sets, for any metadata
// (zero, all set, partial, negative and sub-millisecond durations, strings
// to escape) on any envelope (with members, empty, white space around).
func TestAddJobMetaMatchesAppendFields(t *testing.T) {
	metas := []JobMeta{
		{},
		{JobID: "0f8fad5b-d9cb-469f-a165-70867728950e", Queue: 1500 * time.Millisecond, Run: 2 * time.Hour, Worker: "host-1-abc"},
		{JobID: "j"},
		{Worker: "w"},
		{Queue: 3 * time.Millisecond},
		{JobID: "j", Run: 999 * time.Microsecond, Worker: "w"},
		{Queue: -time.Second, Run: -time.Nanosecond},
		{Queue: -time.Nanosecond, Run: -2 * time.Second},
		{JobID: "a\"b\\c\n\u0001", Worker: "h<1>&\u2028é\x01\t"},
	}
	envs := []string{
		`{"success":true,"protocol_version":1,"result":{"b":1,"a":2},"outcome":"ok"}`,
		`{}`,
		`{ }`,
		" {\"result\":\"a<b\",\"f\":1.50} \n",
	}
	for _, m := range metas {
		for _, env := range envs {
			got, err := AddJobMeta([]byte(env), m)
			if err != nil {
				t.Fatalf("AddJobMeta(%q, %+v): %v", env, m, err)
			}
			want, err := AppendFields([]byte(env), m.setOn(NewObject()))
			if err != nil {
				t.Fatalf("AppendFields(%q, %+v): %v", env, m, err)
			}
			if string(got) != string(want) {
				t.Errorf("AddJobMeta(%q, %+v) = %s\nAppendFields gives %s", env, m, got, want)
			}
		}
	}
}

// BenchmarkAddJobMeta: the job metadata added to a result of 1 MiB.
//
//	go test -run '^$' -bench AddJobMeta ./wire/
func BenchmarkAddJobMeta(b *testing.B) {
	env := []byte(`{"success":true,"protocol_version":1,"result":"` + strings.Repeat("x<y ", 1<<18) + `","outcome":"ok","retryable":false}`)
	m := JobMeta{JobID: "0f8fad5b-d9cb-469f-a165-70867728950e", Queue: time.Millisecond, Run: time.Second, Worker: "host-1-abc"}
	b.SetBytes(int64(len(env)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AddJobMeta(env, m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSlotsKeepsRecentRounds: Slots is the most of the last three status
// rounds, so one round the workers miss (too busy to answer in time) does
// not shrink it, and a worker gone leaves it after three rounds.
