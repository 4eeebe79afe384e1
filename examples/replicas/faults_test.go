//go:build linux && replicas

package replicas_test

// The Redis faults (rows R1… of docs/RELIABILITY.md): each injected under
// one HTTP replica of each language, with a redis-server of its own.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/examples/replicas"
	"github.com/mcp-resume/mcp-resume/internal/redistest"
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
	nb, err := c.Create(ctx)
	if err != nil {
		t.Fatalf("notebook_create (the other notebook): %v", err)
	}
	f.seen(nb.Handle)
	if _, err := c.Add(ctx, nb.Handle, "untouched", 1); err != nil {
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
	notes, gen, err := c.Read(ctx, o.handle)
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
		nb, err := c.Create(ctx)
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
				g, err := w.c.Add(ctx, w.handle, note, w.gen)
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
					_, g, err := w.c.Read(ctx, w.handle)
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
		notes, gen, err := w.c.Read(ctx, w.handle)
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
	if d := time.Since(start); d > deadline+slack {
		t.Errorf("%s took %v, more than the %v deadline + %v", what, d.Round(time.Millisecond), deadline, slack)
	}
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
		{"notebook_create", func() error { _, err := c.Create(ctx); return err }},
		{"notebook_read", func() error { _, _, err := c.Read(ctx, handle); return err }},
		{"notebook_add", func() error { _, err := c.Add(ctx, handle, "x", 0); return err }},
		{"notebook_add with generation", func() error { _, err := c.Add(ctx, handle, "x", 2); return err }},
		{"notebook_delete", func() error { return c.Delete(ctx, handle, 0) }},
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

// R2: nothing listens at the state URL; then a Redis starts there.
func faultUnreachable(t *testing.T, l lang) {
	ctx := context.Background()
	const pw = "s3cretpw"
	rs := redistest.Start(t, redistest.Password(pw))
	rs.Stop()
	f := newFx(t)
	f.secrets = append(f.secrets, pw)
	r := f.start(l, rs.URL, "MCP_RESUME_STATE_TIMEOUT="+deadline.String())
	c := f.client(r, "alice")
	seen := allFail(t, c, "mrh1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "store_unavailable")
	leak := ""
	if err := c.CallJSON(ctx, "notebook_read", map[string]any{"handle": "mrh1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, nil); err != nil && strings.Contains(err.Error(), pw) {
		leak = "; the password appears in a message"
		t.Errorf("the password appears in a tool's message: %v", err)
	}
	// The same replica, once a server listens there, works: the failures
	// above were the unreachable server's, not a store that never works.
	rs.Restart()
	var o other
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && o.handle == ""; time.Sleep(100 * time.Millisecond) {
		nb, err := c.Create(ctx)
		if err != nil {
			continue
		}
		f.seen(nb.Handle)
		if _, err := c.Add(ctx, nb.Handle, "untouched", 1); err != nil {
			t.Fatalf("notebook_add once Redis listens: %v", err)
		}
		o = other{nb.Handle, []string{"untouched"}}
	}
	if o.handle == "" {
		t.Fatalf("notebook_create still fails 10 s after Redis started on the state URL's port")
	}
	addRow(l, "R2", "Redis unreachable",
		"the replica's `MCP_RESUME_STATE_URL` names a loopback port nothing listens on, with a password (`MCP_RESUME_STATE_TIMEOUT=1s`); later a redis-server (`requirepass`) starts on that port",
		result{Outcome: "notebook_create, notebook_read, notebook_add (with and without generation) and notebook_delete each answered store_unavailable within the 1 s deadline (+1.5 s for the round trip); session_info answered after each; no message or log line held the password; once Redis listened, the same replica created and read a notebook" + leak,
			Seen: seen.String(), Serving: serving(t, c, o)})
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

// R3: Redis frozen (SIGSTOP): connections open, nothing answers.
func faultFrozen(t *testing.T, l lang) {
	rs := redistest.Start(t)
	f := newFx(t)
	r := f.start(l, rs.URL, "MCP_RESUME_STATE_TIMEOUT="+deadline.String())
	c := f.client(r, "alice")
	o := makeOther(t, f, c)
	pid := redisPID(t, rs)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	cont := sync.OnceFunc(func() { syscall.Kill(pid, syscall.SIGCONT) })
	t.Cleanup(cont)
	seen := allFail(t, c, o.handle, "store_unavailable")
	cont()
	// The replica reconnects by itself: give it a few calls.
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, _, err = c.Read(context.Background(), o.handle); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("notebook_read 10 s after SIGCONT: %v", err)
	}
	addRow(l, "R3", "Redis frozen",
		"redis-server SIGSTOPped (connections are accepted by the kernel, nothing answers), `MCP_RESUME_STATE_TIMEOUT=1s`; then SIGCONT",
		result{Outcome: "notebook_create, notebook_read, notebook_add (with and without generation) and notebook_delete each answered store_unavailable within the 1 s deadline (+1.5 s for the round trip); session_info answered after each; after SIGCONT the same replica read the other notebook back unchanged",
			Seen: seen.String(), Serving: serving(t, c, o)})
}

// R4: SCRIPT FLUSH between the calls of a run.
func faultScriptFlush(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t)
	f := newFx(t)
	r := f.start(l, rs.URL)
	c := f.client(r, "alice")
	o := makeOther(t, f, c)
	nb, err := c.Create(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.seen(nb.Handle)
	var seen codes
	const n = 30
	for i := range n {
		if i%3 == 0 {
			if _, err := rs.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		g, err := c.Add(ctx, nb.Handle, casNote("f", 0, i), int64(i+1))
		seen.add(err)
		if err != nil || g != int64(i+2) {
			t.Errorf("notebook_add %d after SCRIPT FLUSH: generation %d, %v", i, g, err)
		}
	}
	notes, gen, err := c.Read(ctx, nb.Handle)
	seen.add(err)
	if err != nil || gen != n+1 || len(notes) != n {
		t.Errorf("notebook_read: %d notes at generation %d, %v; want %d at %d", len(notes), gen, err, n, n+1)
	}
	addRow(l, "R4", "Scripts flushed mid-run",
		"`SCRIPT FLUSH` before every third of 30 notebook_add calls (compare-and-set) on one replica, so the store's `EVALSHA` meets `NOSCRIPT`",
		result{Outcome: "every notebook_add succeeded (generation 31, 30 notes in order): NOSCRIPT was recovered by loading the script, invisibly to the caller",
			Seen: seen.String(), Serving: serving(t, c, o)})
}

// recordKeys lists the record keys (mcp-resume:{…}:h:<hash>) on rs.
func recordKeys(t *testing.T, rs *redistest.Server) []string {
	v, err := rs.Do("KEYS", "mcp-resume:*:h:*")
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	var keys []string
	if a, ok := v.([]any); ok {
		for _, k := range a {
			keys = append(keys, fmt.Sprint(k))
		}
	}
	return keys
}

// R5: garbage planted under a record key.
func faultGarbage(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t)
	f := newFx(t)
	r := f.start(l, rs.URL)
	c := f.client(r, "alice")
	// plant creates a notebook, finds its record key (the one new key),
	// runs cmd on it, and returns the handle and the key.
	plant := func(cmd ...string) (string, string) {
		before := recordKeys(t, rs)
		nb, err := c.Create(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f.seen(nb.Handle)
		var key string
		for _, k := range recordKeys(t, rs) {
			if !slices.Contains(before, k) {
				key = k
			}
		}
		if key == "" {
			t.Fatalf("no new record key after notebook_create (keys %d)", len(before))
		}
		args := append([]string{cmd[0], key}, cmd[1:]...)
		if _, err := rs.Do(args...); err != nil {
			t.Fatalf("%s: %v", cmd[0], err)
		}
		return nb.Handle, key
	}
	a, ka := plant("SET", "garbage")
	b, kb := plant("HSET", "g", "two")
	o := makeOther(t, f, c)
	var seen codes
	var gone []string
	for _, h := range []struct{ name, handle, key string }{{"string", a, ka}, {"text generation", b, kb}} {
		_, _, err := c.Read(ctx, h.handle)
		seen.add(err)
		if mcphost.ErrorCode(err) != "handle_not_found" {
			t.Errorf("notebook_read of the notebook with a %s planted: %v; want handle_not_found", h.name, err)
		}
		n, err := rs.Do("EXISTS", h.key)
		if err != nil || fmt.Sprint(n) != "0" {
			t.Errorf("the record key with a %s planted is still there (EXISTS %v, %v)", h.name, n, err)
		} else {
			gone = append(gone, h.name)
		}
		_, err = c.Add(ctx, h.handle, "x", 0)
		seen.add(err)
		if mcphost.ErrorCode(err) != "handle_not_found" {
			t.Errorf("notebook_add after the %s: %v; want handle_not_found", h.name, err)
		}
	}
	out := "notebook_read and then notebook_add answered handle_not_found for both; both keys were removed; another notebook reads back unchanged"
	if len(gone) != 2 {
		out = fmt.Sprintf("handle_not_found, but only the keys with %q were removed", gone)
	}
	addRow(l, "R5", "Garbage under a record key",
		"two notebooks' record keys overwritten by hand: one with the string `garbage` (`SET`, a wrong type), one with its generation field set to text (`HSET <key> g two`)",
		result{Outcome: out, Seen: seen.String(), Serving: serving(t, c, o)})
}

// R6: Redis stopped, then restarted: the notebook intact (AOF on).
func faultRestart(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t, redistest.AOFAlways())
	f := newFx(t)
	r := f.start(l, rs.URL, "MCP_RESUME_STATE_TIMEOUT="+deadline.String())
	c := f.client(r, "alice")
	o := makeOther(t, f, c)
	rs.Stop()
	seen := allFail(t, c, o.handle, "store_unavailable")
	rs.Restart()
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, _, err = c.Read(ctx, o.handle); err == nil {
			break
		}
	}
	if err != nil {
		t.Errorf("notebook_read 10 s after the restart: %v", err)
	}
	addRow(l, "R6", "Redis stopped, then restarted",
		"redis-server (`appendonly yes`, `appendfsync always`) stopped (SIGTERM), the replica called, redis-server started again on the same port and directory",
		result{Outcome: "while stopped, every notebook call answered store_unavailable within the 1 s deadline and session_info answered; after the restart the same replica read the notebook back unchanged (generation 2)",
			Seen: seen.String(), Serving: serving(t, c, o)})
}

// R7: Redis restarted with persistence off: the documented loss.
func faultNoPersistence(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t)
	f := newFx(t)
	r := f.start(l, rs.URL)
	c := f.client(r, "alice")
	lost := makeOther(t, f, c)
	rs.Stop()
	rs.Restart()
	var seen codes
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		_, _, err = c.Read(ctx, lost.handle)
		if mcphost.ErrorCode(err) != "store_unavailable" {
			break
		}
	}
	seen.add(err)
	if mcphost.ErrorCode(err) != "handle_not_found" {
		t.Errorf("notebook_read after a restart without persistence: %v; want handle_not_found", err)
	}
	o := makeOther(t, f, c)
	addRow(l, "R7", "Redis restarted without persistence",
		"redis-server with `appendonly no` and `save \"\"` (no AOF, no snapshots) stopped and started again",
		result{Outcome: "the notebook acknowledged before the restart answered handle_not_found: without persistence Redis forgets every record (see *What it does not*); new notebooks work at once",
			Seen: seen.String(), Serving: serving(t, c, o)})
}
