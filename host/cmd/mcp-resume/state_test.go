package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// stateFixture makes handle stores for app-a (two handles, one of them
// with a 1 ms idle TTL, so expired by the time the CLI looks) and app-b
// (one handle) under the fixture root, plus app-c with token files only.
// It returns the root and the handles.
func stateFixture(t *testing.T) (string, []string) {
	t.Helper()
	root, _ := fixtureRoot(t)
	os.MkdirAll(filepath.Join(root, "app-c"), 0o700)
	ctx := context.Background()
	var handles []string
	for app, n := range map[string]int{"app-a": 2, "app-b": 1} {
		hs, err := host.OpenHandles(context.Background(), app, &host.HandleOptions{StateRoot: root, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			var opts []host.CreateOption
			if i == 1 {
				opts = append(opts, host.WithIdleTTL(time.Millisecond))
			}
			c, err := hs.Create(ctx, "", []byte("secret-value"), opts...)
			if err != nil {
				t.Fatal(err)
			}
			handles = append(handles, c.Handle)
		}
		hs.Close(context.Background())
	}
	time.Sleep(20 * time.Millisecond)
	return root, handles
}

func TestStateListGC(t *testing.T) {
	root, handles := stateFixture(t)
	code, out, stderr := runCLI("state", "list")
	if code != 0 {
		t.Fatalf("state list: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"APP    KEY", "app-a: 1 live, 1 tombstones, 64 shards, 12 bytes in " + filepath.Join(root, "app-a", "handles"),
		"app-b: 1 live, 0 tombstones, 64 shards, 12 bytes in " + filepath.Join(root, "app-b", "handles"), "expired_idle"} {
		if !strings.Contains(out, want) {
			t.Errorf("state list lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range append(handles, "secret-value", "app-c") {
		if strings.Contains(out, secret) {
			t.Errorf("state list shows %q:\n%s", secret, out)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "app-c", "handles")); !os.IsNotExist(err) {
		t.Errorf("state list created a handle store for app-c: %v", err)
	}

	code, out, stderr = runCLI("state", "list", "--json", "app-b")
	var rows []struct {
		App      string `json:"app"`
		StateDir string `json:"state_dir"`
		host.HandleList
	}
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].App != "app-b" ||
		rows[0].Live != 1 || len(rows[0].Handles) != 1 || rows[0].Handles[0].Generation != 1 || len(rows[0].Handles[0].Key) != 12 {
		t.Errorf("state list --json app-b (exit %d, %s): %s", code, stderr, out)
	}

	code, out, stderr = runCLI("state", "gc", "--json", "--state-dir", root)
	var gcRows []struct {
		App string `json:"app"`
		host.GCResult
	}
	if err := json.Unmarshal([]byte(out), &gcRows); code != 0 || err != nil || len(gcRows) != 2 || gcRows[0].App != "app-a" || gcRows[0].Live != 1 || gcRows[1].Live != 1 {
		t.Errorf("state gc --json (exit %d, %s): %s", code, stderr, out)
	}
	code, out, _ = runCLI("state", "gc")
	if code != 0 || !strings.HasPrefix(out, "APP    EXPIRED IDLE") || !strings.Contains(out, filepath.Join(root, "app-b", "handles")) {
		t.Errorf("state gc text (exit %d):\n%s", code, out)
	}
}

func TestState_Usage(t *testing.T) {
	stateFixture(t)
	for _, args := range [][]string{{"state"}, {"state", "show"}, {"state", "list", "a", "b"}, {"state", "list", "--app", "app-a", "app-b"}, {"state", "gc", "--nope"}} {
		if code, out, stderr := runCLI(args...); code != 2 || out != "" || !strings.Contains(stderr, "usage: mcp-resume") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2 and the usage", args, code, out, stderr)
		}
	}
	if code, out, _ := runCLI("state", "list", "app-c"); code != 0 || out != "no handle stores\n" {
		t.Errorf("state list of an app without a store: exit %d, %q", code, out)
	}
	if code, _, stderr := runCLI("state", "list", "a/b"); code != 1 || !strings.HasPrefix(stderr, "mcp-resume state list: invalid app name") {
		t.Errorf("state list a/b: exit %d, %q", code, stderr)
	}
}

// With MCP_RESUME_STATE_URL set, state list and state gc read the app's
// handle store on that Redis server (the environment opens it), show the
// server by its URL without the password, and need the app named.
func TestStateRedis(t *testing.T) {
	srv := redistest.Start(t, redistest.Password("pw-xyzzy"))
	fixtureRoot(t)
	t.Setenv(host.EnvStateURL, srv.URL+"/0")
	ctx := context.Background()
	hs, err := host.OpenHandles(context.Background(), "app-r", &host.HandleOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var handles []string
	for i := range 2 {
		var opts []host.CreateOption
		if i == 1 {
			opts = append(opts, host.WithIdleTTL(time.Millisecond))
		}
		c, err := hs.Create(ctx, "alice", []byte("secret-value"), opts...)
		if err != nil {
			t.Fatal(err)
		}
		handles = append(handles, c.Handle)
	}
	hs.Close(context.Background())
	time.Sleep(20 * time.Millisecond)

	code, out, stderr := runCLI("state", "list", "--json", "app-r")
	var rows []struct {
		App      string `json:"app"`
		StateDir string `json:"state_dir"`
		host.HandleList
	}
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].App != "app-r" ||
		!strings.HasPrefix(rows[0].StateDir, "redis://") || !strings.Contains(rows[0].StateDir, "***") || rows[0].Live != 1 || rows[0].Tombstones != 1 || len(rows[0].Handles) != 2 {
		t.Fatalf("state list --json app-r on Redis (exit %d, %s): %s", code, stderr, out)
	}
	code, text, stderr := runCLI("state", "list", "app-r")
	if code != 0 || !strings.Contains(text, "app-r: 1 live, 1 tombstones, 64 shards, 12 bytes in redis://") || !strings.Contains(text, "expired_idle") {
		t.Errorf("state list app-r on Redis (exit %d, %s):\n%s", code, stderr, text)
	}
	code, gcOut, stderr := runCLI("state", "gc", "--json", "app-r")
	var gcRows []struct {
		App string `json:"app"`
		host.GCResult
	}
	if err := json.Unmarshal([]byte(gcOut), &gcRows); code != 0 || err != nil || len(gcRows) != 1 || gcRows[0].Live != 1 {
		t.Errorf("state gc --json app-r on Redis (exit %d, %s): %s", code, stderr, gcOut)
	}
	for _, s := range append(handles, "secret-value", "alice", "pw-xyzzy") {
		if strings.Contains(out+text+gcOut, s) {
			t.Errorf("state list/gc on Redis shows %q", s)
		}
	}
	// Without the app: a Redis server has no directories to list apps from.
	code, out, stderr = runCLI("state", "list")
	if code != 1 || out != "" || !strings.HasPrefix(stderr, "mcp-resume state list: the handle stores are on redis://") ||
		!strings.Contains(stderr, "state list APP") || strings.Contains(stderr, "pw-xyzzy") {
		t.Errorf("state list without an app on Redis: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
}
