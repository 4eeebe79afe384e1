package host_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

// The handle store under many goroutines and pools, its random source, and
// Close (handles_test.go has the operations and their errors).

// Many goroutines, two stores (two pools of instances, as two servers
// would be) on one directory, compare-and-set increments on one handle:
// the final count equals the number of successful puts, whatever
// interleaving the pool and the shard lock allowed.
func TestHandles_ConcurrentCASIncrements(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "state")
	a := openHandles(t, "cas-app", host.HandleOptions{StateRoot: root, Pool: 4})
	b := openHandles(t, "cas-app", host.HandleOptions{StateRoot: root, Pool: 4})
	c, err := a.Create(ctx, "", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, tries = 8, 15
	var puts, conflicts atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		store := []*host.Handles{a, b}[g%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range tries {
				v, err := store.Get(ctx, c.Handle, "")
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := strconv.Atoi(string(v.Data))
				_, err = store.Put(ctx, c.Handle, "", []byte(strconv.Itoa(n+1)), host.IfGeneration(v.Generation))
				switch {
				case err == nil:
					puts.Add(1)
				case errors.Is(err, host.ErrConflict):
					conflicts.Add(1)
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	v, err := b.Get(ctx, c.Handle, "")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(string(v.Data))
	if int64(n) != puts.Load() || v.Generation != puts.Load()+1 {
		t.Errorf("count %d, generation %d after %d successful puts (%d conflicts)", n, v.Generation, puts.Load(), conflicts.Load())
	}
	if puts.Load() == 0 {
		t.Error("no put succeeded")
	}
	t.Logf("%d puts, %d conflicts", puts.Load(), conflicts.Load())
}

// Handles come from the guest's WASI random source, which the loader wires
// to the OS CSPRNG: two stores opened the same way issue different handles,
// each decodes to 24 bytes, and 10,000 creates never repeat one.
func TestHandles_RandomSource(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 creates")
	}
	ctx := context.Background()
	first := map[string]bool{}
	for _, app := range []string{"rand-a", "rand-b"} {
		h := openHandles(t, "rand-app", host.HandleOptions{})
		c, err := h.Create(ctx, "", []byte(app))
		if err != nil {
			t.Fatal(err)
		}
		first[c.Handle] = true
	}
	if len(first) != 2 {
		t.Errorf("two fresh stores issued the same handle: %v", first)
	}
	// On tmpfs when there is one: ext4 makes a write-then-rename wait for
	// its blocks (auto_da_alloc), ~0.5 ms a file, and 10,000 creates
	// write 20,000 files.
	root := ""
	if shm, err := os.MkdirTemp("/dev/shm", "mcp-resume-handles-"); err == nil {
		t.Cleanup(func() { os.RemoveAll(shm) })
		root = shm
	}
	h := openHandles(t, "rand-many", host.HandleOptions{StateRoot: root, MaxHandles: 20000, MaxHandlesPerPrincipal: 20000})
	const n = 10000
	seen := make(map[string]bool, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 4 {
				c, err := h.Create(ctx, "", nil)
				if err != nil {
					t.Error(err)
					return
				}
				raw, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimPrefix(c.Handle, "mrh1_"))
				mu.Lock()
				if err != nil || len(raw) != 24 || seen[c.Handle] {
					t.Errorf("handle %d: %d bytes, %v, repeated %v", i, len(raw), err, seen[c.Handle])
				}
				seen[c.Handle] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d distinct handles of %d creates", len(seen), n)
	}
}

// Close ends the store: later calls fail with fs.ErrClosed, a second Close
// is nil.
func TestHandles_Close(t *testing.T) {
	h := openHandles(t, "close-app", host.HandleOptions{})
	if err := h.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := h.Create(context.Background(), "", nil); !errors.Is(err, fs.ErrClosed) {
		t.Errorf("Create after Close: %v, want fs.ErrClosed", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h2 := openHandles(t, "close-app", host.HandleOptions{})
	if _, err := h2.Get(ctx, unknownHandle, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled ctx: %v", err)
	}
}
