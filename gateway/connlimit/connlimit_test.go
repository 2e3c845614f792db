package connlimit

import (
	"errors"
	"testing"
	"time"
)

// TestResolve: the defaults from the descriptors free, and the refusals
// with their messages.
func TestResolve(t *testing.T) {
	for _, c := range []struct {
		cfg         Config
		limit, open int
		want        Config
		err         string
	}{
		// ulimit -n 64 with 19 descriptors open (a node with 2 workers):
		// 64 - 19 - 16 = 29 connections, a quarter of them unauthenticated.
		{Config{}, 64, 19, Config{Max: 29, MaxUnauth: 7, UnauthHeaderTimeout: 3 * time.Second}, ""},
		{Config{}, 20000, 40, Config{Max: 10000, MaxUnauth: 2500, UnauthHeaderTimeout: 3 * time.Second}, ""},
		{Config{Max: 3, UnauthHeaderTimeout: time.Minute}, 64, 19, Config{Max: 3, MaxUnauth: 1, UnauthHeaderTimeout: time.Minute}, ""},
		{Config{Max: 20, MaxUnauth: 20}, 64, 19, Config{Max: 20, MaxUnauth: 20, UnauthHeaderTimeout: 3 * time.Second}, ""},
		// /proc/self/fd unreadable: half the limit counts as open.
		{Config{}, 1024, -1, Config{Max: 496, MaxUnauth: 124, UnauthHeaderTimeout: 3 * time.Second}, ""},
		// ulimit -n 32: fewer than 8 connections would be left.
		{Config{}, 32, 19, Config{}, "the open-file limit (ulimit -n) is 32 and 19 descriptors are open: 0 are left for HTTP connections (16 are kept for workers and NATS), fewer than the 8 needed; raise the limit (ulimit -n 1024)"},
		{Config{}, 43, 19, Config{Max: 8, MaxUnauth: 2, UnauthHeaderTimeout: 3 * time.Second}, ""},
		{Config{}, 42, 19, Config{}, "the open-file limit (ulimit -n) is 42 and 19 descriptors are open: 7 are left for HTTP connections (16 are kept for workers and NATS), fewer than the 8 needed; raise the limit (ulimit -n 1024)"},
		{Config{Max: 100}, 64, 19, Config{}, "--max-conns 100: the open-file limit (ulimit -n) is 64 and 19 descriptors are open: 29 are left for HTTP connections (16 are kept for workers and NATS); lower --max-conns or raise the limit (ulimit -n 135)"},
	} {
		got, err := c.cfg.resolve(c.limit, c.open)
		if c.err == "" {
			c.want.FileLimit, c.want.FilesOpen = c.limit, c.open
			if err != nil || got != c.want {
				t.Errorf("%+v with limit %d, %d open: %+v, %v; want %+v", c.cfg, c.limit, c.open, got, err, c.want)
			}
			continue
		}
		var fe *FileLimitError
		if !errors.As(err, &fe) || err.Error() != c.err {
			t.Errorf("%+v with limit %d, %d open: err %v\nwant %s", c.cfg, c.limit, c.open, err, c.err)
		}
	}
}

// Descriptors reports the real limit (raised to the hard one) and a count
// of open descriptors.
func TestDescriptors(t *testing.T) {
	limit, open := Descriptors()
	if limit < 64 || open < 3 || open >= limit {
		t.Errorf("Descriptors() = %d, %d", limit, open)
	}
}
