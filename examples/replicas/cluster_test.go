//go:build linux && replicas

package replicas_test

// The same replicas on a 3-master Redis Cluster (state URL with
// ?cluster=true): the cross-replica and concurrency tests, and the app's
// keys spread over the masters (the store's buckets are hash tags, each
// bucket's keys in one slot).

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// TestCluster runs crossReplica and concurrency on one 3-master cluster,
// then checks the spread: 30 notebooks created through one replica put
// record keys on every master, and each master's keys are all the app's
// (mcp-resume:{example-notebook:<bucket>}:..., and the app's bucket count
// in mcp-resume:{example-notebook}:layout).
func TestCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	t.Run("cross_replica", func(t *testing.T) { crossReplica(t, c.URL) })
	t.Run("concurrency", func(t *testing.T) { concurrency(t, c.URL) })
	t.Run("spread", func(t *testing.T) {
		ctx := context.Background()
		f := newFx(t)
		cl := f.client(f.start(goLang, c.URL), "alice")
		const n = 30
		for range n {
			nb, err := cl.NotebookCreate(ctx)
			if err != nil {
				t.Fatalf("notebook_create on the cluster: %v", err)
			}
			f.seen(nb.Handle)
			if _, err := cl.NotebookAdd(ctx, nb.Handle, "on the cluster", 1); err != nil {
				t.Fatalf("notebook_add on the cluster: %v", err)
			}
		}
		total := 0
		for i, s := range c.Servers {
			v, err := s.Do("KEYS", "mcp-resume:*:h:*")
			if err != nil {
				t.Fatalf("KEYS on master %d: %v", i, err)
			}
			keys, _ := v.([]any)
			all, err := s.Do("KEYS", "*")
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range all.([]any) {
				if ks := fmt.Sprint(k); !strings.HasPrefix(ks, "mcp-resume:{"+sharedApp+":") && ks != "mcp-resume:{"+sharedApp+"}:layout" {
					t.Errorf("master %d holds key %q, not one of the app's", i, ks)
				}
			}
			t.Logf("master %d (%s): %d record keys, %d keys in all", i, s.Addr, len(keys), len(all.([]any)))
			total += len(keys)
			if len(keys) == 0 {
				t.Errorf("master %d holds none of the %d notebooks' record keys: the app's keys do not spread", i, n)
			}
		}
		// The earlier subtests' notebooks are there too.
		if total < n {
			t.Errorf("%d record keys over the masters, want at least %d", total, n)
		}
	})
}
