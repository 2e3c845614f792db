package queue_test

import (
	"testing"

	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
)

func init() {
	queue.StartTestStack = func(t testing.TB, cfg queue.Config, copts queue.ClientOptions) (*queue.Embedded, *queue.Bus, *queue.Client) {
		s := queuetest.Start(t, queuetest.Options{Config: cfg, Client: copts})
		return s.Embedded, s.Bus, s.Client
	}
	queue.StartTestServer = func(t testing.TB) *queue.Embedded {
		return queuetest.StartEmbedded(t, queue.EmbeddedOptions{})
	}
}
