package host_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The handle store's Go API over the real plugin and real files: every
// method, every sentinel, the error fields, the pool under many
// goroutines, the clock option and the random source of handles.

// openHandles opens a handle store for app under a fresh state root,
// closed when the test ends.
func openHandles(t testing.TB, app string, opts host.HandleOptions) *host.Handles {
	t.Helper()
	if opts.StateRoot == "" {
		opts.StateRoot = filepath.Join(t.TempDir(), "state")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h, err := host.OpenHandles(context.Background(), app, &opts)
	if err != nil {
		t.Fatalf("OpenHandles(%q): %v", app, err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// unknownHandle is well-formed ("mrh1_" + base64url of 24 bytes) and was
// never issued.
var unknownHandle = "mrh1_" + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{7}, 24))

// clock is a settable clock for HandleOptions.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestHandles_EveryMethod(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "state")
	h := openHandles(t, "notes-app", host.HandleOptions{StateRoot: root, IdleTTL: time.Hour, MaxAge: 48 * time.Hour})
	p := h.Policy()
	if p.StateDir != filepath.Join(root, "notes-app", "handles") || p.StateRoot != root {
		t.Errorf("Policy dirs = %q, %q", p.StateDir, p.StateRoot)
	}
	if p.IdleTTL != time.Hour || p.MaxAge != 48*time.Hour || p.Tombstone != 7*24*time.Hour ||
		p.MaxHandles != 10000 || p.MaxHandlesPerPrincipal != 2500 || p.MaxValueBytes != 1<<20 || p.Shards != 64 {
		t.Errorf("Policy = %+v, want the options and the defaults (7 d tombstone, 10,000 handles in 64 shards, 2,500 per principal, 1 MiB)", p)
	}
	if _, err := os.Lstat(filepath.Join(root, "notes-app")); !os.IsNotExist(err) {
		t.Errorf("OpenHandles touched the state root: %v", err)
	}

	before := time.Now().Add(-time.Second)
	c, err := h.Create(ctx, "alice", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat(p.StateDir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("handles directory after the first operation: %v %v, want mode 0700", info, err)
	}
	if c.Generation != 1 || c.IdleTTL != time.Hour || c.MaxAge != 48*time.Hour || c.Created.Before(before) || c.Created.After(time.Now().Add(time.Second)) {
		t.Errorf("Create = %+v", c)
	}
	if !strings.HasPrefix(c.Handle, "mrh1_") || len(c.Handle) != 37 {
		t.Errorf("handle %q is not mrh1_ and 32 characters", c.Handle)
	}
	v, err := h.Get(ctx, c.Handle, "alice")
	if err != nil || string(v.Data) != "v1" || v.Generation != 1 || !v.Created.Equal(c.Created) || v.IdleTTL != time.Hour || v.MaxAge != 48*time.Hour {
		t.Fatalf("Get = %+v, %v", v, err)
	}
	if gen, err := h.Put(ctx, c.Handle, "alice", []byte("v2")); err != nil || gen != 2 {
		t.Fatalf("unconditional Put = %d, %v, want generation 2", gen, err)
	}
	if gen, err := h.Put(ctx, c.Handle, "alice", []byte("v3"), host.IfGeneration(2)); err != nil || gen != 3 {
		t.Fatalf("Put expecting 2 = %d, %v, want 3", gen, err)
	}
	if gen, err := h.Touch(ctx, c.Handle, "alice"); err != nil || gen != 3 {
		t.Errorf("Touch = %d, %v, want generation 3", gen, err)
	}
	if ok, err := h.Exists(ctx, c.Handle, "alice"); !ok || err != nil {
		t.Errorf("Exists(owner) = %v, %v", ok, err)
	}
	for _, who := range []string{"bob", ""} {
		if ok, err := h.Exists(ctx, c.Handle, who); ok || err != nil {
			t.Errorf("Exists(principal %q) = %v, %v, want false, nil", who, ok, err)
		}
	}
	if ok, err := h.Exists(ctx, unknownHandle, "alice"); ok || err != nil {
		t.Errorf("Exists(unknown) = %v, %v", ok, err)
	}
	// The empty value is a value; nil is the empty value.
	empty, err := h.Create(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := h.Get(ctx, empty.Handle, ""); err != nil || v.Data == nil || len(v.Data) != 0 {
		t.Errorf("Get of the empty value = %#v, %v", v.Data, err)
	}

	list, err := h.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if list.Live != 2 || list.Tombstones != 0 || list.Shards != 64 || len(list.Handles) != 2 || list.Bytes <= 0 {
		t.Errorf("List = %+v", list)
	}
	for _, e := range list.Handles {
		if len(e.Key) != 12 || e.State != "live" || e.Generation < 1 || e.Size != 2 && e.Size != 0 || strings.Contains(c.Handle, e.Key) {
			t.Errorf("List entry %+v", e)
		}
	}
	if b, _ := json.Marshal(list); bytes.Contains(b, []byte(c.Handle)) || bytes.Contains(b, []byte("alice")) {
		t.Errorf("List shows a handle or a principal: %s", b)
	}
	gc, err := h.GC(ctx)
	if err != nil || gc.Live != 2 || gc.ExpiredIdle+gc.ExpiredMaxAge+gc.TombstonesDropped+gc.OrphansRemoved+gc.TempsRemoved != 0 {
		t.Errorf("GC = %+v, %v", gc, err)
	}

	if err := h.Delete(ctx, c.Handle, "alice", host.IfGeneration(3)); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Get(ctx, c.Handle, "alice"); !errors.Is(err, host.ErrHandleNotFound) {
		t.Errorf("Get after Delete = %v, want ErrHandleNotFound (no tombstone)", err)
	}
	if err := h.Delete(ctx, empty.Handle, ""); err != nil {
		t.Errorf("unconditional Delete: %v", err)
	}
	// The value is sealed on disk.
	filepath.WalkDir(p.StateDir, func(path string, d fs.DirEntry, err error) error {
		if b, _ := os.ReadFile(path); d != nil && !d.IsDir() && (bytes.Contains(b, []byte("v3")) || bytes.Contains(b, []byte("alice"))) {
			t.Errorf("%s holds a value or a principal in the clear", path)
		}
		return nil
	})
}

// herr returns err as a *Error, failing the test if it is not one.
func herr(t *testing.T, err error) *host.Error {
	t.Helper()
	var he *host.Error
	if !errors.As(err, &he) {
		t.Fatalf("error %v (%T) is not a *Error", err, err)
	}
	return he
}

func TestHandles_Errors(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.UnixMilli(1_800_000_000_000)}
	h := openHandles(t, "errors-app", host.HandleOptions{IdleTTL: time.Hour, MaxAge: 3 * time.Hour, MaxHandles: 3, MaxHandlesPerPrincipal: 3, MaxValueBytes: 16, Now: clk.Now})
	c, err := h.Create(ctx, "alice", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}

	_, err = h.Get(ctx, "not-a-handle", "alice")
	if e := herr(t, err); !errors.Is(err, host.ErrInvalidHandle) || e.Code != "invalid_handle" || e.Message == "" {
		t.Errorf("malformed handle: %+v", e)
	}
	for _, bad := range []string{c.Handle + "A", strings.Replace(c.Handle, "mrh1_", "mrh2_", 1), c.Handle[:36] + "é"} {
		if _, err := h.Get(ctx, bad, "alice"); !errors.Is(err, host.ErrInvalidHandle) {
			t.Errorf("Get(%q) = %v, want ErrInvalidHandle", bad, err)
		}
	}
	for _, who := range []string{"bob", ""} {
		_, err := h.Get(ctx, c.Handle, who)
		if e := herr(t, err); !errors.Is(err, host.ErrHandleNotFound) || e.Code != "handle_not_found" {
			t.Errorf("wrong principal %q: %v", who, err)
		}
		if _, err2 := h.Get(ctx, unknownHandle, who); err2.Error() != err.Error() {
			t.Errorf("a wrong principal (%v) must answer exactly as an unknown handle (%v)", err, err2)
		}
	}
	for _, p := range []string{strings.Repeat("p", 1025), "\xff"} {
		if _, err := h.Get(ctx, c.Handle, p); !errors.Is(err, host.ErrInvalidPrincipal) || herr(t, err).Code != "invalid_principal" {
			t.Errorf("principal of %d bytes: %v, want ErrInvalidPrincipal", len(p), err)
		}
	}
	_, err = h.Create(ctx, "alice", bytes.Repeat([]byte("v"), 17))
	if e := herr(t, err); !errors.Is(err, host.ErrValueTooLarge) || e.Code != "value_too_large" {
		t.Errorf("17-byte value: %v", err)
	}
	if _, err := h.Put(ctx, c.Handle, "alice", bytes.Repeat([]byte("v"), 17)); !errors.Is(err, host.ErrValueTooLarge) {
		t.Errorf("Put of 17 bytes: %v", err)
	}
	gen, err := h.Put(ctx, c.Handle, "alice", []byte("y"), host.IfGeneration(1))
	if err != nil || gen != 2 {
		t.Fatal(gen, err)
	}
	_, err = h.Put(ctx, c.Handle, "alice", []byte("z"), host.IfGeneration(1))
	if e := herr(t, err); !errors.Is(err, host.ErrConflict) || e.Code != "conflict" || e.Generation != 2 {
		t.Errorf("stale Put: %+v, want conflict at generation 2", e)
	}
	if err := h.Delete(ctx, c.Handle, "alice", host.IfGeneration(7)); !errors.Is(err, host.ErrConflict) || herr(t, err).Generation != 2 {
		t.Errorf("stale Delete: %v", err)
	}
	if v, err := h.Get(ctx, c.Handle, "alice"); err != nil || string(v.Data) != "y" {
		t.Errorf("a conflict changed the value: %q, %v", v.Data, err)
	}
	_, err = h.Create(ctx, "alice", nil, host.WithIdleTTL(2*time.Hour))
	if !errors.Is(err, host.ErrInvalidOption) || errors.Is(err, host.ErrHandleNotFound) {
		t.Errorf("an idle TTL longer than the store's: %v, want ErrInvalidOption", err)
	}
	if _, err := h.Create(ctx, "alice", nil, host.WithMaxAge(4*time.Hour)); !errors.Is(err, host.ErrInvalidOption) {
		t.Errorf("a max age longer than the store's: %v", err)
	}

	// Lifetimes, on the store's clock: idle expiry, then max age, each
	// with its reason; after the tombstone period, not found.
	idle, err := h.Create(ctx, "alice", []byte("i"))
	if err != nil {
		t.Fatal(err)
	}
	short, err := h.Create(ctx, "alice", []byte("s"), host.WithIdleTTL(time.Minute), host.WithMaxAge(90*time.Second))
	if err != nil || short.IdleTTL != time.Minute || short.MaxAge != 90*time.Second {
		t.Fatalf("Create with shorter lifetimes = %+v, %v", short, err)
	}
	clk.Add(50 * time.Second)
	if _, err := h.Touch(ctx, short.Handle, "alice"); err != nil {
		t.Fatal(err)
	}
	clk.Add(50 * time.Second) // 100 s: idle 50 s < 60 s, age 100 s > 90 s
	_, err = h.Get(ctx, short.Handle, "alice")
	if e := herr(t, err); !errors.Is(err, host.ErrHandleExpired) || e.Reason != "max_age" {
		t.Errorf("past its max age: %+v, want handle_expired max_age", e)
	}
	clk.Add(time.Hour)
	_, err = h.Get(ctx, idle.Handle, "alice")
	if e := herr(t, err); !errors.Is(err, host.ErrHandleExpired) || e.Code != "handle_expired" || e.Reason != "idle" {
		t.Errorf("idle for an hour: %+v, want handle_expired idle", e)
	}
	if ok, err := h.Exists(ctx, idle.Handle, "alice"); ok || err != nil {
		t.Errorf("Exists(expired) = %v, %v", ok, err)
	}
	clk.Add(7*24*time.Hour + time.Minute)
	if _, err := h.Get(ctx, idle.Handle, "alice"); !errors.Is(err, host.ErrHandleNotFound) {
		t.Errorf("after the tombstone period: %v, want ErrHandleNotFound", err)
	}

	// Eviction: MaxHandles 3 is one shard of 3 (every handle above has
	// expired by now); the least recently used goes. Steps of a minute:
	// the LRU order has the refresh resolution, min(idle TTL / 64, 60 s).
	a, _ := h.Create(ctx, "", []byte("a"))
	clk.Add(time.Minute)
	b, _ := h.Create(ctx, "", []byte("b"))
	clk.Add(time.Minute)
	if _, err := h.Create(ctx, "", []byte("x")); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	if _, err := h.Get(ctx, a.Handle, ""); err != nil { // a is now more recent than b
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	if _, err := h.Create(ctx, "", []byte("d")); err != nil {
		t.Fatal(err)
	}
	_, err = h.Get(ctx, b.Handle, "")
	if e := herr(t, err); !errors.Is(err, host.ErrHandleEvicted) || e.Code != "handle_evicted" {
		t.Errorf("the least recently used handle: %v, want ErrHandleEvicted", err)
	}
	if _, err := h.Get(ctx, a.Handle, ""); err != nil {
		t.Errorf("the recently used handle was evicted: %v", err)
	}
	for _, err := range []error{host.ErrInvalidHandle, host.ErrHandleNotFound} {
		if !errors.Is(&host.Error{Code: map[error]string{host.ErrInvalidHandle: "invalid_handle", host.ErrHandleNotFound: "handle_not_found"}[err]}, err) {
			t.Errorf("Error.Is(%v) = false", err)
		}
	}
	if errors.Is(&host.Error{Code: "conflict"}, host.ErrHandleNotFound) || errors.Is(&host.Error{Code: "not_open"}, host.ErrConflict) {
		t.Error("Error.Is matches another code's sentinel")
	}
}

// A shard lock another process (here: another instance of the host
// functions, as another server would) holds past LockWait answers
// ErrStoreUnavailable after about LockWait; the store works again once the
// lock is released.
func TestHandles_StoreUnavailableWhenShardBusy(t *testing.T) {
	ctx := context.Background()
	h := openHandles(t, "busy-app", host.HandleOptions{MaxHandles: 100, LockWait: 300 * time.Millisecond})
	c, err := h.Create(ctx, "", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	other := primitives.New(primitives.Config{})
	defer other.Close()
	other.SetStateDir(h.Policy().StateDir)
	// One shard (100 handles < 256): its lock file is lock-00. flock alone
	// excludes every Go and Python host.
	if r := other.Call(hostfuncs.FnLock, []byte(`{"name":"lock-00"}`)); !bytes.HasPrefix(r, []byte("{}")) {
		t.Fatalf("holding lock-00: %s", r)
	}
	// Touch takes the shard's lock (a get within a second of the create
	// would read the record alone, without it).
	start := time.Now()
	_, err = h.Touch(ctx, c.Handle, "")
	took := time.Since(start)
	if e := herr(t, err); !errors.Is(err, host.ErrStoreUnavailable) || e.Code != "store_unavailable" || strings.Contains(e.Message, c.Handle) {
		t.Errorf("a busy shard: %+v, want store_unavailable", e)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("store_unavailable after %v, want after about the 300ms LockWait", took)
	}
	other.Call(hostfuncs.FnUnlock, []byte(`{"name":"lock-00"}`))
	if v, err := h.Get(ctx, c.Handle, ""); err != nil || string(v.Data) != "v" {
		t.Errorf("after the release: %q, %v", v.Data, err)
	}
}

func TestOpenHandles_Refusals(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	quiet := slog.New(slog.DiscardHandler)
	for _, c := range []struct {
		app  string
		opts host.HandleOptions
		want error
	}{
		{"a/b", host.HandleOptions{}, host.ErrInvalidApp},
		{"", host.HandleOptions{}, host.ErrInvalidApp},
		{"ok", host.HandleOptions{IdleTTL: -time.Second}, host.ErrInvalidOption},
		{"ok", host.HandleOptions{MaxValueBytes: 4<<20 + 1}, host.ErrInvalidOption},
		{"ok", host.HandleOptions{LockWait: 11 * time.Second}, host.ErrInvalidOption},
		{"ok", host.HandleOptions{Pool: -1}, host.ErrInvalidOption},
	} {
		c.opts.StateRoot, c.opts.Logger = root, quiet
		if h, err := host.OpenHandles(context.Background(), c.app, &c.opts); !errors.Is(err, c.want) {
			t.Errorf("OpenHandles(%q, %+v) = %v, want %v", c.app, c.opts, err, c.want)
			if h != nil {
				h.Close(context.Background())
			}
		}
	}
	// A state root that is a file: the directory cannot be used, which the
	// first operation answers (OpenHandles touches no file).
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	bad := openHandles(t, "ok", host.HandleOptions{StateRoot: file, Logger: quiet})
	_, err := bad.Create(context.Background(), "", nil)
	if e := herr(t, err); !errors.Is(err, host.ErrStoreUnavailable) || e.Message == "" {
		t.Errorf("a state root that is a file: %v, want ErrStoreUnavailable", err)
	}
	// The environment's lifetimes, when no option is given.
	t.Setenv("MCP_RESUME_STATE_IDLE_TTL", "90s")
	t.Setenv("MCP_RESUME_STATE_MAX_AGE", "2h")
	h := openHandles(t, "env-app", host.HandleOptions{})
	if p := h.Policy(); p.IdleTTL != 90*time.Second || p.MaxAge != 2*time.Hour {
		t.Errorf("Policy with the environment's TTLs = %+v", p)
	}
	t.Setenv("MCP_RESUME_STATE_IDLE_TTL", "soon")
	if _, err := host.OpenHandles(context.Background(), "env-app", &host.HandleOptions{StateRoot: root, Logger: quiet}); !errors.Is(err, host.ErrInvalidOption) || !strings.Contains(err.Error(), "MCP_RESUME_STATE_IDLE_TTL") {
		t.Errorf("a bad MCP_RESUME_STATE_IDLE_TTL: %v, want ErrInvalidOption naming it", err)
	}
}

// The clock option is the clock of every operation: Created is the
// clock's time, and an idle TTL passes on the clock, not the wall.
func TestHandles_ClockOption(t *testing.T) {
	ctx := context.Background()
	clk := &clock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	h := openHandles(t, "clock-app", host.HandleOptions{IdleTTL: 10 * time.Minute, Now: clk.Now})
	c, err := h.Create(ctx, "", []byte("v"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Created.Equal(clk.Now()) {
		t.Errorf("Created = %v, want the clock's %v", c.Created, clk.Now())
	}
	clk.Add(9 * time.Minute)
	if _, err := h.Get(ctx, c.Handle, ""); err != nil {
		t.Fatalf("9 minutes idle of 10: %v", err)
	}
	clk.Add(9 * time.Minute) // the Get refreshed the idle time
	if _, err := h.Get(ctx, c.Handle, ""); err != nil {
		t.Fatalf("9 minutes after the refresh: %v", err)
	}
	clk.Add(11 * time.Minute)
	if _, err := h.Get(ctx, c.Handle, ""); !errors.Is(err, host.ErrHandleExpired) {
		t.Errorf("11 minutes idle: %v, want ErrHandleExpired", err)
	}
	list, err := h.List(ctx)
	if err != nil || list.Tombstones != 1 || list.Live != 0 {
		t.Errorf("List on the clock = %+v, %v", list, err)
	}
}

// Two apps under one state root never share a handle: app B given app A's
// handle and principal answers handle_not_found, even with A's record
// copied into B's directory (the keys and the record's name derive from
// the app as well as the handle).
func TestHandles_AnotherAppNeverReads(t *testing.T) {
	root := filepath.Join(t.TempDir(), "state")
	a := openHandles(t, "app-a", host.HandleOptions{StateRoot: root})
	b := openHandles(t, "app-b", host.HandleOptions{StateRoot: root})
	ctx := context.Background()
	c, err := a.Create(ctx, "alice", []byte("a's secret"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, c.Handle, "alice"); !errors.Is(err, host.ErrHandleNotFound) {
		t.Fatalf("app-b read app-a's handle: %v, want ErrHandleNotFound", err)
	}
	if _, err := b.Create(ctx, "alice", []byte("b's own")); err != nil { // app-b's directory exists now
		t.Fatal(err)
	}
	recs, _ := filepath.Glob(filepath.Join(a.Policy().StateDir, "h-*"))
	for _, r := range recs {
		data, _ := os.ReadFile(r)
		if err := os.WriteFile(filepath.Join(b.Policy().StateDir, filepath.Base(r)), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Get(ctx, c.Handle, "alice"); !errors.Is(err, host.ErrHandleNotFound) {
		t.Fatalf("app-b read app-a's record copied into its directory: %v, want ErrHandleNotFound", err)
	}
	if v, err := a.Get(ctx, c.Handle, "alice"); err != nil || string(v.Data) != "a's secret" {
		t.Fatalf("app-a's own read: %q, %v", v.Data, err)
	}
}

// TestHandles_BinaryFormValues sends Create, Get and Put through the
// binary form: every byte value, an empty and a nil value come back
// unchanged (no base64, no JSON), and inputs longer than the form's
// length fields (a principal over 65535 bytes, a handle over 255) are
// still refused with their own codes.
func TestHandles_BinaryFormValues(t *testing.T) {
	ctx := context.Background()
	h := openHandles(t, "binform", host.HandleOptions{})
	all := make([]byte, 0, 512)
	for i := 0; i < 512; i++ {
		all = append(all, byte(i))
	}
	c, err := h.Create(ctx, "pé", all)
	if err != nil || len(c.Handle) != 37 || c.Generation != 1 {
		t.Fatalf("Create = %+v, %v", c, err)
	}
	v, err := h.Get(ctx, c.Handle, "pé")
	if err != nil || !bytes.Equal(v.Data, all) || v.Generation != 1 || !v.Created.Equal(c.Created) || v.IdleTTL != c.IdleTTL || v.MaxAge != c.MaxAge {
		t.Fatalf("Get = %+v, %v; want the 512 bytes and Create's fields %+v", v, err, c)
	}
	for i, value := range [][]byte{{}, nil, {0}} {
		gen, err := h.Put(ctx, c.Handle, "pé", value, host.IfGeneration(int64(i+1)))
		if err != nil || gen != int64(i+2) {
			t.Fatalf("Put(%q) = %d, %v", value, gen, err)
		}
		v, err := h.Get(ctx, c.Handle, "pé")
		if err != nil || v.Data == nil || !bytes.Equal(v.Data, value) || v.Generation != gen {
			t.Errorf("Get after Put(%q) = %q (nil %v) at %d, %v", value, v.Data, v.Data == nil, v.Generation, err)
		}
	}
	if _, err := h.Get(ctx, c.Handle, strings.Repeat("p", 70000)); !errors.Is(err, host.ErrInvalidPrincipal) {
		t.Errorf("a 70000-byte principal: %v, want ErrInvalidPrincipal", err)
	}
	if _, err := h.Create(ctx, strings.Repeat("p", 70000), []byte("x")); !errors.Is(err, host.ErrInvalidPrincipal) {
		t.Errorf("Create with a 70000-byte principal: %v, want ErrInvalidPrincipal", err)
	}
	if _, err := h.Put(ctx, c.Handle+strings.Repeat("A", 300), "pé", []byte("x")); !errors.Is(err, host.ErrInvalidHandle) {
		t.Errorf("a 337-byte handle: %v, want ErrInvalidHandle", err)
	}
}
