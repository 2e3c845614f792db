package gateway

import (
	"testing"
	"time"

	"github.com/axpool/axpool/gateway/dispatch"
	"github.com/axpool/axpool/internal/mask"
	"github.com/axpool/axpool/queue"
	"github.com/axpool/axpool/queue/queuetest"
	"github.com/axpool/axpool/tools"
)

// TestConfigValidated: New refuses negative durations and a job timeout
// longer than the queue keeps a job, naming the field.
func TestConfigValidated(t *testing.T) {
	qs := queuetest.Start(t, queuetest.Options{Config: queue.Config{MaxAge: time.Minute, Duplicates: time.Minute}})
	base := Config{Local: dispatch.ToolsLocal(&tools.Env{}), Executes: tools.Executes, Logger: queuetest.Logger(), Masker: mask.New(nil)}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Backend = nil }, "gateway: Config.Backend, Local and Executes are required"},
		{func(c *Config) { c.ProgressInterval = -1 },
			"gateway: Config.ProgressInterval must be ≥ 0 (0 means the default 200ms), got -1ns"},
		{func(c *Config) { c.Backend = &dispatch.QueueBackend{} }, "dispatch: QueueBackend.Client is required"},
		{func(c *Config) { c.Backend = &dispatch.QueueBackend{Client: qs.Client, Timeout: -time.Second} },
			"dispatch: QueueBackend.Timeout must be ≥ 0 (0 means the default 5m0s), got -1s"},
		{func(c *Config) { c.Backend = &dispatch.QueueBackend{Client: qs.Client} },
			"dispatch: QueueBackend.Timeout (5m0s) exceeds the queue's MaxAge (1m0s): a job would leave the queue before its deadline"},
		{func(c *Config) { c.Backend = &dispatch.QueueBackend{Client: qs.Client, Timeout: 61 * time.Second} },
			"dispatch: QueueBackend.Timeout (1m1s) exceeds the queue's MaxAge (1m0s): a job would leave the queue before its deadline"},
	} {
		cfg := base
		cfg.Backend = &dispatch.QueueBackend{Client: qs.Client, Timeout: time.Minute}
		c.edit(&cfg)
		if _, err := New(cfg); err == nil || err.Error() != c.want {
			t.Errorf("New: %v\nwant %s", err, c.want)
		}
	}
	cfg := base
	cfg.Backend = &dispatch.QueueBackend{Client: qs.Client, Timeout: time.Minute}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if g.cfg.ProgressInterval != DefaultProgressInterval {
		t.Errorf("default ProgressInterval: %v", g.cfg.ProgressInterval)
	}
}
