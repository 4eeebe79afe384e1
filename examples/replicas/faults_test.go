//go:build linux && replicas

package replicas_test

// The Redis faults (rows R1… of docs/RELIABILITY.md): each injected under
// one HTTP replica of each language, with a redis-server of its own.
// TestRedisFaults, the helpers the rows share, and R1 (SIGKILL under load)
// are here; R2, R3, R6 and R7 in outage_test.go, R4, R5 and R8 in data_test.go.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/examples/replicas"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// deadline is the store's per-operation deadline in the rows that measure
// it (MCP_RESUME_STATE_TIMEOUT); slack is what a call may take beyond it
// (an MCP round trip on a loaded 2-core machine).
const (
	deadline = time.Second
	slack    = 1500 * time.Millisecond
)

// TestRedisFaults runs every fault in every language (the languages of one
// fault in parallel: most of their time is start-up and waiting), then
// checks the table.
func TestRedisFaults(t *testing.T) {
	faults := []struct {
		name string
		run  func(*testing.T, lang)
	}{
		{"kill_under_load", faultKillUnderLoad},
		{"unreachable", faultUnreachable},
		{"frozen", faultFrozen},
		{"script_flush", faultScriptFlush},
		{"garbage", faultGarbage},
		{"restart", faultRestart},
		{"no_persistence", faultNoPersistence},
		{"out_of_memory", faultOutOfMemory},
	}
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			for _, l := range allLangs {
				t.Run(l.name, func(t *testing.T) {
					t.Parallel()
					start := time.Now()
					fault.run(t, l)
					t.Logf("%s/%s took %v", fault.name, l.name, time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
	checkTable(t)
}

// codes collects the error codes answered during a fault.
type codes struct {
	mu sync.Mutex
	m  map[string]int
}

// add records err's code ("transport error" for a failed call); nil is
// ignored.
func (c *codes) add(err error) {
	if err == nil {
		return
	}
	code := mcphost.ErrorCode(err)
	if code == "" {
		code = "transport error"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[code]++
}

// String is the codes seen, sorted, joined by ", "; "no error" for none.
func (c *codes) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) == 0 {
		return "no error"
	}
	return strings.Join(slices.Sorted(maps.Keys(c.m)), ", ")
}

// other is the notebook each fault creates before injecting it, to read
// back afterwards: the "kept serving" check.
type other struct {
	handle string
	notes  []string
}

// makeOther creates a notebook holding one note through c.
func makeOther(t *testing.T, f *fx, c *replicas.Client) other {
	ctx := context.Background()
	nb, err := c.NotebookCreate(ctx)
	if err != nil {
		t.Fatalf("notebook_create (the other notebook): %v", err)
	}
	f.seen(nb.Handle)
	if _, err := c.NotebookAdd(ctx, nb.Handle, "untouched", 1); err != nil {
		t.Fatalf("notebook_add (the other notebook): %v", err)
	}
	return other{nb.Handle, []string{"untouched"}}
}

// serving is "yes" when c's replica answers session_info and reads o back
// unchanged, else what went wrong (logged).
func serving(t *testing.T, c *replicas.Client, o other) string {
	ctx := context.Background()
	if _, err := c.Other(ctx); err != nil {
		t.Errorf("session_info after the fault: %v", err)
		return "session_info failed"
	}
	if o.handle == "" {
		return "yes"
	}
	notes, gen, err := c.NotebookRead(ctx, o.handle)
	if err != nil || gen != 2 || !slices.Equal(notes, o.notes) {
		t.Errorf("the other notebook after the fault: %q generation %d, %v", notes, gen, err)
		return "other notebook changed"
	}
	return "yes"
}

// writer is one client appending to its own notebook by compare-and-set in
// faultKillUnderLoad.
type writer struct {
	k      int
	c      *replicas.Client
	handle string
	gen    int64
	acked  []string        // notes whose notebook_add answered success
	doubt  map[string]bool // notes whose notebook_add failed: written or not
	after  atomic.Int32    // successes after Redis restarted
}

// R1: Redis SIGKILLed and restarted under load, AOF with appendfsync always.
func faultKillUnderLoad(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t, redistest.AOFAlways())
	f := newFx(t)
	// Redis stays down longer than the deadline, so that calls under way
	// fail in every language rather than wait for the restart.
	r := f.start(l, rs.URL, "MCP_RESUME_STATE_TIMEOUT="+deadline.String())
	o := makeOther(t, f, f.client(r, "alice"))
	const writers = 4
	ws := make([]*writer, writers)
	for k := range ws {
		c := f.client(r, "alice")
		nb, err := c.NotebookCreate(ctx)
		if err != nil {
			t.Fatalf("notebook_create: %v", err)
		}
		f.seen(nb.Handle)
		ws[k] = &writer{k: k, c: c, handle: nb.Handle, gen: 1, doubt: map[string]bool{}}
	}
	var seen codes
	var stop, restarted atomic.Bool
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				note := casNote("w", w.k, i)
				g, err := w.c.NotebookAdd(ctx, w.handle, note, w.gen)
				if err == nil {
					if g != w.gen+1 {
						t.Errorf("writer %d: notebook_add expecting %d answered %d", w.k, w.gen, g)
					}
					w.gen = g
					w.acked = append(w.acked, note)
					if restarted.Load() {
						w.after.Add(1)
					}
					continue
				}
				seen.add(err)
				w.doubt[note] = true
				// Learn where the notebook is: the add may have been
				// written before the connection broke.
				for !stop.Load() {
					_, g, err := w.c.NotebookRead(ctx, w.handle)
					if err == nil {
						w.gen = g
						break
					}
					seen.add(err)
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	rs.Kill()
	time.Sleep(deadline + 500*time.Millisecond)
	rs.Restart()
	restarted.Store(true)
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if !slices.ContainsFunc(ws, func(w *writer) bool { return w.after.Load() < 5 }) {
			break
		}
	}
	stop.Store(true)
	wg.Wait()

	var lost, torn, extra, total, late int
	for _, w := range ws {
		notes, gen, err := w.c.NotebookRead(ctx, w.handle)
		if err != nil {
			t.Fatalf("writer %d: final notebook_read: %v", w.k, err)
		}
		if gen != int64(len(notes))+1 {
			t.Errorf("writer %d: %d notes at generation %d", w.k, len(notes), gen)
		}
		have := map[string]bool{}
		last := -1
		for _, n := range notes {
			_, i, ok := parseCASNote(n)
			if !ok || i <= last {
				torn++
				t.Errorf("writer %d: note %q is not whole or out of order", w.k, n)
			}
			last = i
			have[n] = true
			if !slices.Contains(w.acked, n) && !w.doubt[n] {
				extra++
				t.Errorf("writer %d: note %q was never written", w.k, n)
			}
		}
		for _, n := range w.acked {
			if !have[n] {
				lost++
				t.Errorf("writer %d: acknowledged note %q lost", w.k, n)
			}
		}
		total += len(w.acked)
		late += int(w.after.Load())
		if w.after.Load() == 0 {
			t.Errorf("writer %d: no successful notebook_add after Redis restarted", w.k)
		}
	}
	t.Logf("%d acknowledged appends over %d notebooks (%d after the restart), answered %v", total, writers, late, seen.m)
	out := "every acknowledged notebook_add read back, in order; no torn, duplicated or invented note; every writer wrote again through the same replica after the restart"
	if lost+torn+extra > 0 {
		out = fmt.Sprintf("%d acknowledged notes lost, %d torn or out of order, %d invented", lost, torn, extra)
	}
	addRow(l, "R1", "Redis SIGKILLed under load, restarted",
		"4 MCP clients of one replica each append to their own notebook by compare-and-set (after an error: read, continue at the generation read); redis-server (`appendonly yes`, `appendfsync always`) SIGKILLed 0.5 s in, restarted on the same port and directory 1.5 s later (`MCP_RESUME_STATE_TIMEOUT=1s`); the load goes on until every client has 5 appends after the restart",
		result{Outcome: out, Seen: seen.String(), Serving: serving(t, f.client(r, "alice"), o)})
}

// timed runs call and fails t when it took longer than deadline + slack;
// it returns call's error.
func timed(t *testing.T, what string, call func() error) error {
	start := time.Now()
	err := call()
	d := time.Since(start)
	if d > deadline+slack {
		t.Errorf("%s took %v, more than the %v deadline + %v", what, d.Round(time.Millisecond), deadline, slack)
	}
	t.Logf("%s answered %s in %v", what, mcphost.ErrorCode(err), d.Round(time.Millisecond))
	return err
}

// allFail calls the four notebook tools on handle (create included) and
// returns the codes answered, each call timed; with wantCode set, any
// other answer fails t.
func allFail(t *testing.T, c *replicas.Client, handle, wantCode string) *codes {
	ctx := context.Background()
	var seen codes
	calls := []struct {
		name string
		call func() error
	}{
		{"notebook_create", func() error { _, err := c.NotebookCreate(ctx); return err }},
		{"notebook_read", func() error { _, _, err := c.NotebookRead(ctx, handle); return err }},
		{"notebook_add", func() error { _, err := c.NotebookAdd(ctx, handle, "x", 0); return err }},
		{"notebook_add with generation", func() error { _, err := c.NotebookAdd(ctx, handle, "x", 2); return err }},
		{"notebook_delete", func() error { return c.NotebookDelete(ctx, handle, 0) }},
	}
	for _, k := range calls {
		err := timed(t, k.name, k.call)
		seen.add(err)
		if mcphost.ErrorCode(err) != wantCode {
			t.Errorf("%s: %v; want %s", k.name, err, wantCode)
		}
		if _, err := c.Other(ctx); err != nil {
			t.Errorf("session_info after %s: %v", k.name, err)
		}
	}
	return &seen
}

// redisPID is the process id of rs (INFO server).
func redisPID(t *testing.T, rs *redistest.Server) int {
	v, err := rs.Do("INFO", "server")
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	for _, line := range strings.Split(fmt.Sprint(v), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			n, err := strconv.Atoi(p)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("INFO server has no process_id")
	return 0
}
