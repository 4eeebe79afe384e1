package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
)

// A bad app name is one error from both stores: an *Error with code
// invalid_app matching ErrInvalidApp, with the same message.
func TestOneErrorFamily_InvalidApp(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err1 := host.Open(ctx, "a/b", &host.Options{StateRoot: root, Logger: slog.New(slog.DiscardHandler)})
	h, err2 := host.OpenHandles(ctx, "a/b", &host.HandleOptions{StateRoot: root, Logger: slog.New(slog.DiscardHandler)})
	if s != nil || h != nil {
		t.Fatal("a store opened for app a/b")
	}
	var e1, e2 *host.Error
	if !errors.As(err1, &e1) || !errors.As(err2, &e2) {
		t.Fatalf("Open: %v (%T), OpenHandles: %v (%T); want *host.Error from both", err1, err1, err2, err2)
	}
	if e1.Code != "invalid_app" || e2.Code != "invalid_app" || !errors.Is(err1, host.ErrInvalidApp) || !errors.Is(err2, host.ErrInvalidApp) {
		t.Errorf("codes %q, %q; want invalid_app matching ErrInvalidApp", e1.Code, e2.Code)
	}
	if e1.Message != e2.Message || err1.Error() != e1.Message {
		t.Errorf("messages differ: %q vs %q (Error() %q)", e1.Message, e2.Message, err1.Error())
	}
}

// Put and Delete are unconditional without options, compare-and-set with
// IfGeneration, and refuse an IfGeneration below 1 without touching the
// handle.
func TestIfGeneration(t *testing.T) {
	ctx := context.Background()
	h := openHandles(t, "ifgen-app", host.HandleOptions{StateRoot: filepath.Join(t.TempDir(), "s")})
	c, err := h.Create(ctx, "alice", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []int64{0, -1} {
		_, err := h.Put(ctx, c.Handle, "alice", []byte("bad"), host.IfGeneration(g))
		var he *host.Error
		if !errors.Is(err, host.ErrInvalidOption) || !errors.As(err, &he) || he.Code != "invalid_option" {
			t.Errorf("Put IfGeneration(%d): %v, want ErrInvalidOption", g, err)
		}
		if err := h.Delete(ctx, c.Handle, "alice", host.IfGeneration(g)); !errors.Is(err, host.ErrInvalidOption) {
			t.Errorf("Delete IfGeneration(%d): %v, want ErrInvalidOption", g, err)
		}
	}
	if v, err := h.Get(ctx, c.Handle, "alice"); err != nil || string(v.Data) != "v1" || v.Generation != 1 {
		t.Fatalf("after refused writes: %q gen %d, %v; want v1 at 1", v.Data, v.Generation, err)
	}
	if g, err := h.Put(ctx, c.Handle, "alice", []byte("v2")); err != nil || g != 2 {
		t.Fatalf("unconditional Put: %d, %v", g, err)
	}
	if _, err := h.Put(ctx, c.Handle, "alice", []byte("v3"), host.IfGeneration(1)); !errors.Is(err, host.ErrConflict) {
		t.Fatalf("stale IfGeneration: %v, want ErrConflict", err)
	}
	if err := h.Delete(ctx, c.Handle, "alice", host.IfGeneration(2)); err != nil {
		t.Fatalf("Delete at the current generation: %v", err)
	}
}

// A nil *HandleOptions takes every default, and Close takes a ctx like
// Store.Close and may be called twice and on nil.
func TestOpenHandles_NilOptions(t *testing.T) {
	t.Setenv(host.EnvStateDir, t.TempDir())
	ctx := context.Background()
	h, err := host.OpenHandles(ctx, "nil-opts", nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := h.Policy(); p.IdleTTL != 24*time.Hour || p.MaxHandles != 10000 {
		t.Errorf("policy %+v, want the defaults", p)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var none *host.Handles
	if err := none.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// The report types marshal to the plugin's JSON (what `mcp-resume` hands
// the render export) and back.
func TestReportTypes_WireJSON(t *testing.T) {
	l := host.HandleList{Handles: []host.HandleInfo{{Key: "abc", State: "live", Generation: 2, Size: 5, Age: 1500 * time.Millisecond, Idle: 20 * time.Millisecond}}, Live: 1, Shards: 64, Bytes: 5}
	b, _ := json.Marshal(l)
	if want := `{"handles":[{"key":"abc","state":"live","generation":2,"size":5,"age_ms":1500,"idle_ms":20}],"live":1,"tombstones":0,"shards":64,"bytes":5}`; string(b) != want {
		t.Errorf("HandleList JSON %s, want %s", b, want)
	}
	var back host.HandleList
	if err := json.Unmarshal(b, &back); err != nil || back.Handles[0].Age != 1500*time.Millisecond || back.Shards != 64 {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	f := host.TokenFile{Name: "token-1-2", PID: 1, StartTime: "2", Host: "alive", Age: 90 * time.Second}
	b, _ = json.Marshal(f)
	if want := `{"name":"token-1-2","pid":1,"start_time":"2","host":"alive","age_seconds":90}`; string(b) != want {
		t.Errorf("TokenFile JSON %s, want %s", b, want)
	}
	id := host.Identity{PID: 7, StartTime: "9", StateDir: "/s", Chain: []host.Process{{PID: 8, PPID: 7, Name: "x", StartTime: "1", Role: "host"}}}
	b, _ = json.Marshal(id)
	var id2 host.Identity
	if err := json.Unmarshal(b, &id2); err != nil || id2.PID != 7 || len(id2.Chain) != 1 || id2.Chain[0].Role != "host" {
		t.Errorf("Identity round trip %s: %+v, %v", b, id2, err)
	}
}
