package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters (no replicas) on loopback ports,
// made by redis-cli --cluster create.
type Cluster struct {
	// URL is redis://127.0.0.1:<first port>/0?cluster=true: the form the
	// handle store's state_url takes for a cluster (hostfuncs/README.md,
	// "The Redis backend").
	URL string
	// Servers are the masters, in the order redis-cli was given them.
	Servers []*Server

	mu     sync.Mutex
	client *redis.ClusterClient
}

// StartCluster starts n (at least 3, Redis Cluster's minimum of masters)
// redis-servers with cluster mode on, joins them with redis-cli --cluster
// create (slots split evenly) and waits until every node reports
// cluster_state:ok. Everything stops at t.Cleanup. Options apply to every
// node. Missing redis-server or redis-cli fails or skips t (package doc).
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	requireBinaries(t, ServerBinary(), CLIBinary())
	if n < 3 {
		t.Fatalf("redistest: a Redis Cluster needs at least 3 masters, not %d", n)
	}
	c := &Cluster{}
	t.Cleanup(c.close)
	var pass string
	for _, o := range opts {
		var cfg config
		o(&cfg)
		if cfg.password != "" {
			pass = cfg.password
		}
	}
	nodeOpts := append(append([]Option{}, opts...), Args(
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "5000"))
	addrs := make([]string, n)
	for i := range n {
		s, err := launch(t, t.TempDir(), false, nodeOpts)
		if err != nil {
			t.Fatalf("redistest: cluster node %d: %v", i, err)
		}
		c.Servers = append(c.Servers, s)
		addrs[i] = s.Addr
	}
	c.URL = c.Servers[0].URL + "/0?cluster=true"

	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if pass != "" {
		args = append(args, "-a", pass, "--no-auth-warning")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, CLIBinary(), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitOK(); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// waitOK waits until every node answers cluster_state:ok.
func (c *Cluster) waitOK() error {
	deadline := time.Now().Add(startWait)
	for _, s := range c.Servers {
		for {
			info, err := s.Do("CLUSTER", "INFO")
			if str, _ := info.(string); err == nil && strings.Contains(str, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("cluster node %s not ok within %v: %v %v", s.Addr, startWait, info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Client is a go-redis cluster client of the fixture's own (default
// retries, follows MOVED), created on first use and closed with the cluster.
func (c *Cluster) Client() *redis.ClusterClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client == nil {
		addrs := make([]string, len(c.Servers))
		for i, s := range c.Servers {
			addrs[i] = s.Addr
		}
		c.client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: c.Servers[0].password})
	}
	return c.client
}

// Do sends one command through the cluster client, which routes it by its
// first key; results as Server.Do. It gives up after 10 s.
func (c *Cluster) Do(args ...string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Client().Do(ctx, anys(args)...).Result()
}

// Owner returns the master that owns key's hash slot (CLUSTER KEYSLOT, then
// the slot ranges of CLUSTER SLOTS), or nil if none is known.
func (c *Cluster) Owner(key string) *Server {
	slotV, err := c.Servers[0].Do("CLUSTER", "KEYSLOT", key)
	if err != nil {
		return nil
	}
	slot := slotV.(int64)
	ranges, err := c.Client().ClusterSlots(context.Background()).Result()
	if err != nil {
		return nil
	}
	for _, r := range ranges {
		if int64(r.Start) <= slot && slot <= int64(r.End) && len(r.Nodes) > 0 {
			for _, s := range c.Servers {
				if s.Addr == r.Nodes[0].Addr {
					return s
				}
			}
		}
	}
	return nil
}

// close stops every node and the fixture's client.
func (c *Cluster) close() {
	c.mu.Lock()
	cl := c.client
	c.client = nil
	c.mu.Unlock()
	if cl != nil {
		cl.Close()
	}
	for _, s := range c.Servers {
		s.Close()
	}
}
