package queuetest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/axpool/axpool/queue"
)

// ClusterSize is the number of nodes StartCluster starts.
const ClusterSize = 3

// Cluster is an in-process JetStream cluster of ClusterSize nats-server
// nodes on 127.0.0.1, joined by cluster routes, each with its own store
// directory under the test's temp dir and the same random user and
// password (Credentials). Nodes can be stopped and restarted (same name,
// ports and store) to test failover. Safe for use by one test goroutine.
type Cluster struct {
	t     testing.TB
	name  string
	creds queue.Credentials
	nodes []*clusterNode
	kicks int // Restart's second restarts (restartKick)
}

type clusterNode struct {
	opts *server.Options
	mu   sync.Mutex
	srv  *server.Server // nil while stopped
}

// StartCluster starts the cluster for t, waits until JetStream has a meta
// leader that every node follows (WaitMetaLeader), and shuts it down when
// t ends. Client and route ports are random free loopback ports. Errors
// fail t. With -short it skips t: the fleet tests are not part of the fast
// tier (`go test -short ./...`).
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a 3-node cluster: skipped with -short")
	}
	id := randomHex(t, 4)
	c := &Cluster{t: t, name: "axpool-test-" + id,
		creds: queue.Credentials{User: "axpool", Password: randomHex(t, 16)}}
	routePorts := freePorts(t, ClusterSize)
	var routes []*url.URL
	for _, p := range routePorts {
		routes = append(routes, &url.URL{Scheme: "nats", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p))})
	}
	dir := t.TempDir()
	for i := range ClusterSize {
		c.nodes = append(c.nodes, &clusterNode{opts: &server.Options{
			ServerName:             fmt.Sprintf("n%d-%s", i+1, id),
			Host:                   "127.0.0.1",
			Port:                   server.RANDOM_PORT,
			NoSigs:                 true,
			JetStream:              true,
			StoreDir:               filepath.Join(dir, fmt.Sprintf("n%d", i+1)),
			DisableJetStreamBanner: true,
			MaxPayload:             queue.DefaultMaxPayload,
			Username:               c.creds.User,
			Password:               c.creds.Password,
			Cluster: server.ClusterOpts{
				Name: c.name,
				Host: "127.0.0.1",
				Port: routePorts[i],
			},
			Routes: routes,
			// Tests place one-replica streams on a node of their choice
			// (jetstream.Placement{Tags: []string{NodeTag(i)}}).
			Tags: []string{NodeTag(i)},
		}})
	}
	t.Cleanup(c.shutdown)
	// Started together, the nodes find each other's routes at once.
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes))
	for i := range c.nodes {
		wg.Go(func() { errs[i] = c.startNode(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	// A restarted node gets the client port it had.
	for _, n := range c.nodes {
		n.opts.Port = n.srv.Addr().(*net.TCPAddr).Port
	}
	c.WaitMetaLeader()
	return c
}

// NodeTag is the server tag of node i ("node:1" for node 0), for placing
// a stream on it.
func NodeTag(i int) string { return fmt.Sprintf("node:%d", i+1) }

// Credentials returns the user and password every client must present.
func (c *Cluster) Credentials() queue.Credentials { return c.creds }

// URLs returns the client URL of every node, stopped ones included.
func (c *Cluster) URLs() []string {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = fmt.Sprintf("nats://127.0.0.1:%d", n.opts.Port)
	}
	return urls
}

// URL returns URLs() comma-separated, as `--nats` takes them.
func (c *Cluster) URL() string { return joinURLs(c.URLs()) }

// Connect connects to the cluster (every node's URL) with its credentials
// and the quiet logger; opts come after those. The connection is closed
// when the test ends.
func (c *Cluster) Connect(opts ...queue.ConnectOption) *nats.Conn {
	c.t.Helper()
	nc, err := queue.Connect(c.URL(), append([]queue.ConnectOption{queue.WithCredentials(c.creds), queue.WithLogger(Logger())}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// Command returns a command that runs the test binary again as a child
// process (RunChild) connected to the cluster: ChildURL is every node's
// URL (URL), the credentials are in its environment
// (queue.CredentialsFromEnv), with env added.
func (c *Cluster) Command(args []string, env ...string) *exec.Cmd {
	extra := append([]string{envURL + "=" + c.URL()}, c.creds.Env()...)
	return Command(args, append(extra, env...)...)
}

// NodeIndex returns the index of the running node named name (a server
// name, as in a stream's cluster info), -1 if none.
func (c *Cluster) NodeIndex(name string) int {
	for i := range c.nodes {
		if srv := c.Node(i); srv != nil && srv.Name() == name {
			return i
		}
	}
	return -1
}

// Node returns node i's server, nil while it is stopped.
func (c *Cluster) Node(i int) *server.Server {
	n := c.nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.srv
}

// Stop shuts node i down and waits for it; its store stays for Restart.
func (c *Cluster) Stop(i int) {
	n := c.nodes[i]
	n.mu.Lock()
	srv := n.srv
	n.srv = nil
	n.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart starts the stopped nodes again, at once, each with its name,
// ports and store, then waits for a meta leader every running node
// follows. Restarting two of three stopped nodes together gives them back
// the meta group's quorum (one at a time, the first would wait for the
// second); a node still stopped then is a meta group peer the leader has
// never heard of. Two nodes restarted so have been seen, once, on a
// 2-core machine loaded with other builds and runs under -race, to elect
// no leader in 3 minutes (both current, neither leading): when the nodes
// have no leader after restartKick, Restart stops and starts them once
// more (logged), then waits as WaitMetaLeader does.
func (c *Cluster) Restart(nodes ...int) {
	c.t.Helper()
	c.start(nodes)
	err := c.waitMetaLeader(restartKick)
	if err == nil {
		return
	}
	c.t.Logf("queuetest: no JetStream meta leader %v after restarting nodes %v (%v): restarting them again", restartKick, nodes, err)
	c.kicks++
	for _, i := range nodes {
		c.Stop(i)
	}
	c.start(nodes)
	c.WaitMetaLeader()
}

// restartKick is how long Restart waits for a meta leader before it
// restarts its nodes once more.
var restartKick = 60 * time.Second

// start starts the stopped nodes at once; it fails the test if one does
// not start.
func (c *Cluster) start(nodes []int) {
	c.t.Helper()
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, i := range nodes {
		wg.Go(func() { errs[k] = c.startNode(i) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.t.Fatal(err)
	}
}

// WaitMetaLeader waits until one running node is the JetStream meta leader,
// every running node is current with it, and the leader has heard every
// running node's statistics (JetStreamClusterPeers: until then placement
// refuses that node as "peer offline"), at most 180 s (cluster formation
// takes a few raft elections, longer on a loaded machine: two restarted
// nodes of three once took more than 60 s under -race at a load of 8 on
// 2 cores); then it fails the test.
func (c *Cluster) WaitMetaLeader() {
	c.t.Helper()
	const limit = 180 * time.Second
	if err := c.waitMetaLeader(limit); err != nil {
		// What was missing, for whoever reads a failed run.
		c.t.Fatalf("queuetest: JetStream meta leader: not after %v: %v", limit, err)
	}
}

// waitMetaLeader waits at most limit for what WaitMetaLeader waits for,
// and returns what was still missing then (metaLeader), nil once there.
func (c *Cluster) waitMetaLeader(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := c.metaLeader()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metaLeader returns nil when exactly one running node leads the meta
// group, all running nodes are current and the leader can place streams
// on all of them, else errNoLeader wrapped with what is missing (a node
// not current, the count of leaders, the nodes the leader has heard).
func (c *Cluster) metaLeader() error {
	leaders, running, placeable := 0, 0, 0
	for i := range c.nodes {
		srv := c.Node(i)
		if srv == nil {
			continue
		}
		running++
		if !srv.JetStreamIsCurrent() {
			return fmt.Errorf("%w: node %d is not current with the meta group", errNoLeader, i+1)
		}
		if srv.JetStreamIsLeader() {
			leaders++
			placeable = len(srv.JetStreamClusterPeers())
		}
	}
	switch {
	case running == 0:
		return fmt.Errorf("%w: no node runs", errNoLeader)
	case leaders != 1:
		return fmt.Errorf("%w: %d of the %d running nodes lead", errNoLeader, leaders, running)
	case placeable < running:
		return fmt.Errorf("%w: the leader has heard %d of the %d running nodes", errNoLeader, placeable, running)
	}
	return nil
}

// startNode starts node i; it is safe to call for different nodes at once.
func (c *Cluster) startNode(i int) error {
	n := c.nodes[i]
	srv, err := server.NewServer(n.opts)
	if err != nil {
		return fmt.Errorf("queuetest: cluster node %d: %w", i+1, err)
	}
	srv.SetLoggerV2(queue.ServerLogger(Logger().With("component", "nats-server", "node", i+1)), false, false, false)
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return fmt.Errorf("queuetest: cluster node %d not ready after 30s", i+1)
	}
	n.mu.Lock()
	n.srv = srv
	n.mu.Unlock()
	return nil
}

func (c *Cluster) shutdown() {
	for i := range c.nodes {
		c.Stop(i)
	}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. The listeners
// are closed before the ports are used, so another process could take one
// in between; nats-server then fails to start and the test says so.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
