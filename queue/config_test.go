package queue

import (
	"context"
	"testing"
	"time"
)

// TestConfigValidated: Open refuses a negative field and a broken
// invariant with an error naming the field, before touching JetStream; the
// zero Config is DefaultConfig.
func TestConfigValidated(t *testing.T) {
	def := DefaultConfig()
	want := Config{MaxDepth: 1000, MaxBytes: 1 << 30, MaxAge: 15 * time.Minute, MaxMsgSize: 4 << 20, Duplicates: 30 * time.Second,
		AckWait: 3 * time.Second, MaxDeliver: 3, MaxAckPending: 4096, MaxWaiting: 4096, ResultTTL: time.Hour, StateTTL: time.Hour,
		CacheTTL: time.Hour, CacheMaxBytes: 256 << 20, RetryAfter: time.Second, PlacementWait: 10 * time.Second}
	if def != want {
		t.Fatalf("DefaultConfig() = %+v\nwant %+v", def, want)
	}
	nc, err := StartTestServer(t).Connect()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxDepth: -1}, "queue: Config.MaxDepth must be ≥ 0 (0 means the default 1000), got -1"},
		{Config{MaxAge: -time.Second}, "queue: Config.MaxAge must be ≥ 0 (0 means the default 15m0s), got -1s"},
		{Config{AckWait: -1}, "queue: Config.AckWait must be ≥ 0 (0 means the default 3s), got -1ns"},
		{Config{MaxDeliver: -2}, "queue: Config.MaxDeliver must be ≥ 0 (0 means the default 3), got -2"},
		{Config{MaxAckPending: -1}, "queue: Config.MaxAckPending must be ≥ 0 (0 means the default 4096), got -1"},
		{Config{RetryAfter: -time.Millisecond}, "queue: Config.RetryAfter must be ≥ 0 (0 means the default 1s), got -1ms"},
		{Config{PlacementWait: -time.Second}, "queue: Config.PlacementWait must be ≥ 0 (0 means the default 10s), got -1s"},
		{Config{Storage: 7}, "queue: Config.Storage must be queue.FileStorage or queue.MemoryStorage, got 7"},
		{Config{Replicas: 6}, "queue: Config.Replicas must be at most 5, got 6"},
		{Config{MaxAge: 20 * time.Second, StateTTL: time.Minute}, "queue: Config.Duplicates (30s) must not exceed MaxAge (20s)"},
		{Config{StateTTL: 10 * time.Minute}, "queue: Config.StateTTL (10m0s) must exceed MaxAge (15m0s): a job's claim and cancel marker must outlive the job in the queue"},
		{Config{MaxAge: 2 * time.Hour}, "queue: Config.StateTTL (1h0m0s) must exceed MaxAge (2h0m0s): a job's claim and cancel marker must outlive the job in the queue"},
		{Config{CacheTTL: -time.Second}, "queue: Config.CacheTTL must be ≥ 0 (0 means the default 1h0m0s), got -1s"},
		{Config{CacheMaxBytes: -1}, "queue: Config.CacheMaxBytes must be ≥ 0 (0 means the default 268435456), got -1"},
		{Config{ResultTTL: time.Hour, CacheTTL: 2 * time.Hour}, "queue: Config.ResultTTL (1h0m0s) must not be below CacheTTL (2h0m0s): a result must be readable as long as it is cached"},
		{Config{MaxMsgSize: 9 << 20}, "queue: Config.MaxMsgSize (9437184 bytes) exceeds the server's max payload (8388608 bytes)"},
	} {
		c.cfg.Storage = max(c.cfg.Storage, MemoryStorage)
		if _, err := Open(ctx, nc, c.cfg, nil); err == nil || err.Error() != c.want {
			t.Errorf("Open(%+v) = %v\nwant %s", c.cfg, err, c.want)
		}
	}
	if _, err := Attach(ctx, nc, nil); err == nil {
		t.Error("a refused Config set the queue up")
	}
	// At the edges of the invariants, and a default MaxMsgSize lowered to
	// a smaller server's max payload.
	bus, err := Open(ctx, nc, Config{Storage: MemoryStorage, MaxAge: time.Minute, Duplicates: time.Minute, StateTTL: time.Minute + 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bus.MaxAge() != time.Minute || bus.MaxAckPending() != 4096 || bus.RetryAfter() != time.Second {
		t.Errorf("MaxAge %v, MaxAckPending %d, RetryAfter %v", bus.MaxAge(), bus.MaxAckPending(), bus.RetryAfter())
	}
	// A CacheTTL above the default raises ResultTTL's default to it.
	if c, err := (Config{CacheTTL: 3 * time.Hour}).withDefaults(); err != nil || c.ResultTTL != 3*time.Hour {
		t.Errorf("CacheTTL 3h: ResultTTL %v, %v", c.ResultTTL, err)
	}
	small, err := StartEmbedded(EmbeddedOptions{TempDir: t.TempDir(), MaxPayload: 1 << 20, Logger: bus.log})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	snc, err := small.Connect()
	if err != nil {
		t.Fatal(err)
	}
	sbus, err := Open(ctx, snc, Config{Storage: MemoryStorage}, nil)
	if err != nil || sbus.MaxJobSize() != 1<<20 {
		t.Fatalf("default MaxMsgSize on a 1 MiB server: %v, MaxJobSize %d", err, sbus.MaxJobSize())
	}
	if _, err := Open(ctx, snc, Config{Storage: MemoryStorage, MaxMsgSize: 2 << 20}, nil); err == nil ||
		err.Error() != "queue: Config.MaxMsgSize (2097152 bytes) exceeds the server's max payload (1048576 bytes)" {
		t.Errorf("explicit MaxMsgSize over the payload: %v", err)
	}
}

func TestClientAndEmbeddedOptionsValidated(t *testing.T) {
	_, bus, _ := testBus(t, Config{})
	for _, c := range []struct {
		opts ClientOptions
		want string
	}{
		{ClientOptions{PollInterval: -1}, "queue: ClientOptions.PollInterval and MaxPollInterval must be ≥ 0 (0 means the defaults 1s and 8s), got -1ns and 0s"},
		{ClientOptions{MaxPollInterval: -time.Second}, "queue: ClientOptions.PollInterval and MaxPollInterval must be ≥ 0 (0 means the defaults 1s and 8s), got 0s and -1s"},
		{ClientOptions{PollInterval: time.Second, MaxPollInterval: 500 * time.Millisecond}, "queue: ClientOptions.MaxPollInterval (500ms) must not be below PollInterval (1s)"},
		{ClientOptions{MaxPollInterval: 500 * time.Millisecond}, "queue: ClientOptions.MaxPollInterval (500ms) must not be below PollInterval (1s)"},
		{ClientOptions{GatewayID: "a.b"}, `queue: gateway ID "a.b" is not 1-128 characters of [A-Za-z0-9_-]`},
	} {
		if _, err := NewClient(bus, c.opts); err == nil || err.Error() != c.want {
			t.Errorf("NewClient(%+v) = %v\nwant %s", c.opts, err, c.want)
		}
	}
	c, err := NewClient(bus, ClientOptions{PollInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.pollMin != 10*time.Second || c.pollMax != 10*time.Second {
		t.Errorf("poll %v..%v, want 10s..10s (the default maximum is at least the minimum)", c.pollMin, c.pollMax)
	}
	for _, o := range []EmbeddedOptions{{Port: -1}, {Port: 70000}, {MaxPayload: -1}, {JetStreamMaxStore: -1}} {
		if e, err := StartEmbedded(o); err == nil {
			e.Close()
			t.Errorf("StartEmbedded(%+v) succeeded", o)
		}
	}
}
