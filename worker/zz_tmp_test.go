package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

func BenchmarkTmpInproc(b *testing.B) {
	h := newHarnessWith(b, queuetest.Options{Config: queue.Config{MaxDepth: 10000},
		Client: queue.ClientOptions{GatewayID: "gw", PollInterval: 100 * time.Millisecond}})
	w, err := New(h.bus, Options{Slots: 8, Executor: ExecutorFunc(okExec), PullWait: time.Second, Logger: queuetest.Logger()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 64 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				id, err := h.c.Submit(context.Background(), queue.Job{Tool: "noop"})
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := h.c.Wait(context.Background(), id, nil); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
