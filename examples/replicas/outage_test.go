//go:build linux && replicas

package replicas_test

// Rows R2, R3, R6 and R7: Redis unreachable, frozen, stopped and
// restarted with and without persistence, under one replica of each
// language (faults_test.go runs them).

import (
	"context"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/examples/replicas"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

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
		nb, err := c.NotebookCreate(ctx)
		if err != nil {
			continue
		}
		f.seen(nb.Handle)
		if _, err := c.NotebookAdd(ctx, nb.Handle, "untouched", 1); err != nil {
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
	readsAgain(t, c, o.handle, "SIGCONT")
	addRow(l, "R3", "Redis frozen",
		"redis-server SIGSTOPped (connections are accepted by the kernel, nothing answers), `MCP_RESUME_STATE_TIMEOUT=1s`; then SIGCONT",
		result{Outcome: "notebook_create, notebook_read, notebook_add (with and without generation) and notebook_delete each answered store_unavailable within the 1 s deadline (+1.5 s for the round trip); session_info answered after each; after SIGCONT the same replica read the other notebook back unchanged",
			Seen: seen.String(), Serving: serving(t, c, o)})
}

// R6: Redis stopped, then restarted: the notebook intact (AOF on).
func faultRestart(t *testing.T, l lang) {
	rs := redistest.Start(t, redistest.AOFAlways())
	f := newFx(t)
	r := f.start(l, rs.URL, "MCP_RESUME_STATE_TIMEOUT="+deadline.String())
	c := f.client(r, "alice")
	o := makeOther(t, f, c)
	rs.Stop()
	seen := allFail(t, c, o.handle, "store_unavailable")
	rs.Restart()
	readsAgain(t, c, o.handle, "the restart")
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
		_, _, err = c.NotebookRead(ctx, lost.handle)
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

// readsAgain checks that replica client c, not restarted, reads handle
// again within 10 s of a fault's end (after what): it reconnects by itself.
func readsAgain(t *testing.T, c *replicas.Client, handle, after string) {
	t.Helper()
	var err error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if _, _, err = c.NotebookRead(context.Background(), handle); err == nil {
			return
		}
	}
	t.Errorf("notebook_read 10 s after %s: %v", after, err)
}
