package main

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
)

// TestCacheBoundMessage: a result cache kept on disk (axpool batch
// --cache-dir) whose bound — here the default of --cache-max-bytes — the
// disk can no longer hold fails with the bound in use, where it comes
// from, and --cache-dir "" as a way out. It said "lower --cache-max-bytes
// (Config.CacheMaxBytes)" to a user who had not given the flag. The error
// is the server's own: an embedded store of 64 MiB, a cache kept there
// with a bound of 32 MiB, opened again with the default, 256 MiB.
func TestCacheBoundMessage(t *testing.T) {
	dir := t.TempDir()
	var be *queue.BoundError
	for i, bound := range []int64{32 << 20, queue.DefaultCacheMaxBytes} {
		e, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: dir, TempDir: t.TempDir(), JetStreamMaxStore: 64 << 20})
		if err != nil {
			t.Fatal(err)
		}
		nc, err := e.Connect()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err = queue.Open(ctx, nc, queue.Config{Storage: queue.MemoryStorage, CacheOnDisk: true, CacheMaxBytes: bound}, nil)
		cancel()
		nc.Close()
		e.Close()
		if i == 0 && err != nil {
			t.Fatalf("Open with a bound of 32 MiB: %v", err)
		}
		if i == 1 && !errors.As(err, &be) {
			t.Fatalf("Open with the default bound: %v, want a *queue.BoundError", err)
		}
	}
	const cause = "queue: change the TTL and bound of bucket AXPOOL_CACHE: nats: API error: code=500 err_code=10047 description=insufficient storage resources available"
	for _, c := range []struct {
		given, fleet bool
		storeDir     string
		want         string
	}{
		{false, false, dir, "axpool batch: the result cache kept in " + dir + " cannot take its bound of 268435456 bytes (the default of --cache-max-bytes): its disk has too little space left (" + cause +
			`); free some space, give a lower --cache-max-bytes, or use --cache-dir "" for a cache in memory (this run only)`},
		{true, false, dir, "axpool batch: the result cache kept in " + dir + " cannot take its bound of 268435456 bytes (--cache-max-bytes): its disk has too little space left (" + cause +
			`); free some space, give a lower --cache-max-bytes, or use --cache-dir "" for a cache in memory (this run only)`},
		{false, true, dir, "axpool batch: the result cache (bucket AXPOOL_CACHE) cannot take its bound of 268435456 bytes (the default of --cache-max-bytes): the NATS server cannot reserve it (" + cause +
			"); give a lower --cache-max-bytes, or the server more JetStream storage"},
		{false, false, "", "axpool batch: the result cache cannot take its bound of 268435456 bytes (the default of --cache-max-bytes): the embedded server cannot reserve it in memory (" + cause +
			"); give a lower --cache-max-bytes"},
	} {
		if got := cacheBoundMessage("axpool batch", be, c.given, c.fleet, c.storeDir); got != c.want {
			t.Errorf("given %v, fleet %v, store %q:\n got %s\nwant %s", c.given, c.fleet, c.storeDir, got, c.want)
		}
	}
}

// TestBatchCacheBoundRaised: axpool batch whose kept cache cannot take
// the --cache-max-bytes given (more than the disk) says so with the bound
// and --cache-dir "" as a way out, exit 1, and runs nothing.
func TestBatchCacheBoundRaised(t *testing.T) {
	dir := t.TempDir()
	in := writeFile(t, dir, "in.jsonl", `{"id":"a","source":"fn main() -> Int { 1 }"}`+"\n")
	cache := filepath.Join(dir, "cache")
	if _, stderr, code := runBatchBin(t, in, "--cache-dir", cache, "--cache-max-bytes", "1000000", "-o", filepath.Join(dir, "out1.jsonl")); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	const pib = "1125899906842624" // more than any test machine's disk
	out, stderr, code := runBatchBin(t, in, "--cache-dir", cache, "--cache-max-bytes", pib, "-o", filepath.Join(dir, "out2.jsonl"))
	want := "axpool batch: the result cache kept in " + cache + " cannot take its bound of " + pib + " bytes (--cache-max-bytes): its disk has too little space left " +
		"(queue: change the TTL and bound of bucket AXPOOL_CACHE: nats: API error: code=500 err_code=10047 description=insufficient storage resources available); " +
		`free some space, give a lower --cache-max-bytes, or use --cache-dir "" for a cache in memory (this run only)` + "\n"
	if code != 1 || out != "" || stderr != want {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1, stderr:\n%s", code, out, stderr, want)
	}
}
