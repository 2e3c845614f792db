package queue

import (
	"bytes"
	"context"
	"log/slog"
	"runtime/debug"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestDropMemoryConsumers: before the embedded server shuts down, the
// consumers of its memory streams are deleted — one with a pull request
// pending made the shutdown wait 50 ms — and those of its file streams
// (the cache bucket's, in a store directory that outlives the server)
// are kept.
func TestDropMemoryConsumers(t *testing.T) {
	e, nc := connectEmbedded(t, EmbeddedOptions{StoreDir: t.TempDir(), TempDir: t.TempDir()})
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, s := range []struct {
		name    string
		storage jetstream.StorageType
	}{{"MEM", jetstream.MemoryStorage}, {"FILE", jetstream.FileStorage}} {
		stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: s.name, Subjects: []string{s.name + ".>"}, Storage: s.storage})
		if err != nil {
			t.Fatal(err)
		}
		_, err = stream.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "workers", AckPolicy: jetstream.AckExplicitPolicy})
		if err != nil {
			t.Fatal(err)
		}
		// A pull request left pending at the server for a minute, as a
		// worker's last pull is.
		if err := nc.PublishRequest("$JS.API.CONSUMER.MSG.NEXT."+s.name+".workers", nc.NewRespInbox(),
			[]byte(`{"batch":1,"expires":60000000000}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil { // the pull requests are at the server
		t.Fatal(err)
	}
	e.dropMemoryConsumers()
	for name, want := range map[string]int{"MEM": 0, "FILE": 1} {
		stream, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Consumers != want {
			t.Errorf("stream %s has %d consumers after dropMemoryConsumers, want %d", name, info.State.Consumers, want)
		}
	}
}

// TestEmbeddedUnderGOMEMLIMIT: with a soft memory limit of 512 MiB set in
// the process (GOMEMLIMIT=512MiB), the embedded server still opens the
// default queue in memory — the job stream reserves DefaultMaxBytes (1
// GiB) and the cache bucket DefaultCacheMaxBytes. nats-server's default
// cut its memory bound to 384 MiB and refused the job stream
// ("insufficient memory resources available"); DefaultJetStreamMaxMemory
// does not follow the limit.
func TestEmbeddedUnderGOMEMLIMIT(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(512 << 20))
	e, nc := connectEmbedded(t, EmbeddedOptions{TempDir: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bus, err := Open(ctx, nc, Config{Storage: MemoryStorage}, nil)
	if err != nil {
		t.Fatalf("Open under a 512 MiB memory limit: %v", err)
	}
	if !bus.HasCache() {
		t.Error("the default queue has no cache bucket")
	}
	if got, want := e.ns.JetStreamConfig().MaxMemory, DefaultJetStreamMaxMemory(); got != want {
		t.Errorf("the server's JetStream memory bound = %d, want DefaultJetStreamMaxMemory() = %d", got, want)
	}
}

// TestEmbeddedQuietStart: the embedded server starts, takes a client and
// stops without a line at Warn level or above — nats-server's advice
// against a plaintext password ("Plaintext passwords detected, use nkeys
// or bcrypt"), about its 256 random bits, is a Debug line — so that a
// command's stderr holds only what concerns its user.
func TestEmbeddedQuietStart(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e, err := StartEmbedded(EmbeddedOptions{TempDir: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if logs.Len() != 0 {
		t.Errorf("the embedded server logged at Warn level or above:\n%s", logs.String())
	}
}

// TestEmbeddedTMPDIRUnusable: a private store that cannot be made in the
// temporary directory names it and TMPDIR, where the error said only
// "stat /nonexistent: no such file or directory".
func TestEmbeddedTMPDIRUnusable(t *testing.T) {
	t.Setenv("TMPDIR", "/nonexistent-axpool-tmp")
	_, err := StartEmbedded(EmbeddedOptions{})
	want := "queue: embedded store dir: stat /nonexistent-axpool-tmp: no such file or directory (the temporary directory: set TMPDIR to a writable directory)"
	if err == nil || err.Error() != want {
		t.Errorf("StartEmbedded with TMPDIR missing: err = %v, want %s", err, want)
	}
}

// connectEmbedded starts an embedded server with opts and connects to
// it; both are closed when the test ends.
func connectEmbedded(t *testing.T, opts EmbeddedOptions) (*Embedded, *nats.Conn) {
	t.Helper()
	e, err := StartEmbedded(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	nc, err := e.Connect()
	if err != nil {
		t.Fatal(err)
	}
	return e, nc
}
