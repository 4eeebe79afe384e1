package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The notebook tools end to end: the real go-server binary (the real
// plugin, real files), driven by the official Go SDK's client over stdio.

// client is one launched go-server and its MCP client session.
type client struct {
	t       *testing.T
	session *mcp.ClientSession
	cmd     *exec.Cmd
}

// connect launches the server with e's environment plus extra.
func (e *env) connect(extra ...string) *client {
	e.T.Helper()
	t := e.T.(*testing.T)
	cmd := exec.Command(bin.Server)
	cmd.Env = append(append(os.Environ(), e.Vars()...), extra...)
	cmd.Stderr = e.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "notebook-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, e.Stderr)
	}
	c := &client{t: t, session: session, cmd: cmd}
	t.Cleanup(c.kill)
	return c
}

func (c *client) kill() {
	c.cmd.Process.Kill()
	c.session.Close()
}

// call calls tool with args: its structured content as a map, and isError.
func (c *client) call(tool string, args map[string]any) (map[string]any, bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: %v", tool, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		c.t.Fatalf("%s: structured content %s: %v", tool, raw, err)
	}
	if len(res.Content) != 1 {
		c.t.Fatalf("%s: %d content blocks, want the JSON as one text", tool, len(res.Content))
	}
	var text map[string]any
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || json.Unmarshal([]byte(tc.Text), &text) != nil || fmt.Sprint(text) != fmt.Sprint(out) {
		c.t.Errorf("%s: the text content is not the structured content's JSON: %+v", tool, res.Content[0])
	}
	return out, res.IsError
}

// ok calls tool and fails the test on a tool error.
func (c *client) ok(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	out, isErr := c.call(tool, args)
	if isErr {
		c.t.Fatalf("%s(%v) failed: %v", tool, args, out)
	}
	return out
}

// fails calls tool and checks it answers a tool error holding want.
func (c *client) fails(tool string, args map[string]any, want map[string]any) map[string]any {
	c.t.Helper()
	out, isErr := c.call(tool, args)
	if !isErr {
		c.t.Errorf("%s(%v) = %v, want a tool error", tool, args, out)
	}
	for k, v := range want {
		if fmt.Sprint(out[k]) != fmt.Sprint(v) {
			c.t.Errorf("%s(%v): %s = %v, want %v (%v)", tool, args, k, out[k], v, out)
		}
	}
	if msg, _ := out["message"].(string); msg == "" {
		c.t.Errorf("%s: error without a message: %v", tool, out)
	}
	return out
}

func (c *client) description(tool string) string {
	c.t.Helper()
	res, err := c.session.ListTools(context.Background(), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, tl := range res.Tools {
		if tl.Name == tool {
			return tl.Description
		}
	}
	c.t.Fatalf("no tool %s", tool)
	return ""
}

func notes(out map[string]any) []string {
	var s []string
	for _, n := range out["notes"].([]any) {
		s = append(s, n.(string))
	}
	return s
}

// The four tools, compare-and-set, and a handle that outlives its server
// process: a relaunched server (a new process, a new plugin) reads it.
func TestNotebook_Tools(t *testing.T) {
	e := newEnv(t)
	c := e.connect()
	created := c.ok("notebook_create", map[string]any{})
	h, _ := created["handle"].(string)
	if !strings.HasPrefix(h, "mrh1_") || created["generation"] != 1.0 || created["idle_ttl_seconds"] != 86400.0 || created["max_age_seconds"] != 2592000.0 {
		t.Fatalf("notebook_create = %v", created)
	}
	if d := c.description("notebook_create"); !strings.Contains(d, "expires after 24h0m0s idle and 720h0m0s after creation") || !strings.Contains(d, "handle_expired") {
		t.Errorf("notebook_create's description does not state the store's policy: %q", d)
	}
	if out := c.ok("notebook_add", map[string]any{"handle": h, "note": "first"}); out["generation"] != 2.0 {
		t.Errorf("notebook_add = %v, want generation 2", out)
	}
	if out := c.ok("notebook_add", map[string]any{"handle": h, "note": "second", "generation": 2}); out["generation"] != 3.0 {
		t.Errorf("notebook_add at generation 2 = %v, want 3", out)
	}
	c.fails("notebook_add", map[string]any{"handle": h, "note": "stale", "generation": 2}, map[string]any{"error": "conflict", "generation": 3})
	c.fails("notebook_delete", map[string]any{"handle": h, "generation": 1}, map[string]any{"error": "conflict", "generation": 3})
	c.fails("notebook_add", map[string]any{"handle": h, "note": "x", "generation": 0}, map[string]any{"error": "invalid_option"})
	c.fails("notebook_delete", map[string]any{"handle": h, "generation": -1}, map[string]any{"error": "invalid_option"})
	c.kill()

	again := e.connect()
	read := again.ok("notebook_read", map[string]any{"handle": h})
	if got := notes(read); len(got) != 2 || got[0] != "first" || got[1] != "second" || read["generation"] != 3.0 {
		t.Errorf("notebook_read after a relaunch = %v", read)
	}
	again.fails("notebook_read", map[string]any{"handle": "not-a-handle"}, map[string]any{"error": "invalid_handle"})
	again.fails("notebook_read", map[string]any{"handle": "mrh1_" + strings.Repeat("A", 32)}, map[string]any{"error": "handle_not_found"})
	if out := again.ok("notebook_delete", map[string]any{"handle": h, "generation": 3}); len(out) != 0 {
		t.Errorf("notebook_delete = %v, want {}", out)
	}
	again.fails("notebook_read", map[string]any{"handle": h}, map[string]any{"error": "handle_not_found"})
	// Nothing of the notebook reaches the disk in the clear, nor the logs.
	filepath.WalkDir(filepath.Dir(e.StateDir), func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); d != nil && !d.IsDir() && (strings.Contains(string(b), "first") || strings.Contains(string(b), h)) {
			t.Errorf("%s holds a note or the handle in the clear", p)
		}
		return nil
	})
	if strings.Contains(e.Stderr.String(), h) || strings.Contains(e.Stderr.String(), h[5:]) {
		t.Error("the handle appears in the server's stderr")
	}
}

// MCP_RESUME_STATE_IDLE_TTL sets the lifetime (read by the plugin): a
// notebook idle for longer answers handle_expired, reason idle, and the
// description says so.
func TestNotebook_IdleExpiry(t *testing.T) {
	e := newEnv(t)
	c := e.connect("MCP_RESUME_STATE_IDLE_TTL=1s", "MCP_RESUME_STATE_MAX_AGE=1h")
	created := c.ok("notebook_create", map[string]any{})
	if created["idle_ttl_seconds"] != 1.0 || created["max_age_seconds"] != 3600.0 {
		t.Fatalf("notebook_create = %v", created)
	}
	if d := c.description("notebook_create"); !strings.Contains(d, "after 1s idle and 1h0m0s after creation") {
		t.Errorf("description %q", d)
	}
	time.Sleep(1500 * time.Millisecond)
	c.fails("notebook_read", map[string]any{"handle": created["handle"]}, map[string]any{"error": "handle_expired", "reason": "idle"})
}

// A handle store that cannot open makes the notebook tools answer
// store_unavailable, and every other tool still works.
func TestNotebook_StoreUnavailable(t *testing.T) {
	e := newEnv(t)
	for name, extra := range map[string]string{
		"bad idle TTL": "MCP_RESUME_STATE_IDLE_TTL=soon",
		"no directory": "MCP_RESUME_STATE_DIR=" + writeFile(t),
	} {
		t.Run(name, func(t *testing.T) {
			c := e.connect(extra)
			c.fails("notebook_create", map[string]any{}, map[string]any{"error": "store_unavailable"})
			c.fails("notebook_read", map[string]any{"handle": "mrh1_" + strings.Repeat("A", 32)}, map[string]any{"error": "store_unavailable"})
			res, err := c.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "session_info", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				t.Errorf("session_info without a handle store: %v %+v", err, res)
			}
		})
	}
}

func writeFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(p, nil, 0o600)
	return p
}

// Two servers (two processes) append to one notebook at once without a
// generation: each add reads and retries on a conflict, and the notebook
// ends with exactly the notes whose add succeeded, at the generation that
// counts them.
func TestNotebook_ConcurrentAdds(t *testing.T) {
	e := newEnv(t)
	a, b := e.connect(), e.connect()
	h := a.ok("notebook_create", map[string]any{})["handle"]
	var mu sync.Mutex
	added := map[string]bool{}
	var wg sync.WaitGroup
	for i, c := range []*client{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 10 {
				note := fmt.Sprintf("%d-%d", i, j)
				if _, isErr := c.call("notebook_add", map[string]any{"handle": h, "note": note}); !isErr {
					mu.Lock()
					added[note] = true
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	read := b.ok("notebook_read", map[string]any{"handle": h})
	got := notes(read)
	if len(got) != len(added) || read["generation"] != float64(len(added)+1) {
		t.Errorf("%d notes at generation %v after %d successful adds", len(got), read["generation"], len(added))
	}
	for _, n := range got {
		if !added[n] {
			t.Errorf("note %q is there but its add failed", n)
		}
	}
}
