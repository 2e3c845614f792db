package queue

import "testing"

// Real servers and buses for the package's internal tests: queuetest.Start
// and queuetest.StartEmbedded, set by stack_test.go (package queue_test),
// which can import queuetest where these files cannot.
var (
	StartTestStack  func(t testing.TB, cfg Config, copts ClientOptions) (*Embedded, *Bus, *Client)
	StartTestServer func(t testing.TB) *Embedded
)
