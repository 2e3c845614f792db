package queuetest

import "testing"

// TestRestartKick: Restart whose nodes have no meta leader within
// restartKick (0 here: none can, a raft election takes its timeout)
// restarts them once more and then waits for the leader as
// WaitMetaLeader does.
func TestRestartKick(t *testing.T) {
	c := StartCluster(t)
	c.Stop(0)
	c.Stop(1)
	old := restartKick
	defer func() { restartKick = old }()
	restartKick = 0
	c.Restart(0, 1)
	if c.kicks != 1 {
		t.Fatalf("kicks = %d, want 1", c.kicks)
	}
	if err := c.metaLeader(); err != nil {
		t.Fatalf("after Restart: %v", err)
	}
}
