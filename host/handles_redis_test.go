package host_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// The handle store's Go API on the Redis backend, over the real plugin and
// a real redis-server: the options, the policy, the operations from many
// goroutines sharing the store's one client, a second store (another
// replica) seeing the same handles, and failures within Timeout.

func TestHandlesRedis_EveryMethodAndPolicy(t *testing.T) {
	ctx := context.Background()
	s := redistest.Start(t, redistest.Password("pw-xyzzy"))
	h := openHandles(t, "notes-app", host.HandleOptions{StateURL: s.URL + "/0", Timeout: 1500 * time.Millisecond, IdleTTL: time.Hour})
	p := h.Policy()
	if p.Backend != "redis" || p.StateDir != "" || p.StateRoot != "" || p.Timeout != 1500*time.Millisecond || p.IdleTTL != time.Hour {
		t.Errorf("Policy = %+v", p)
	}
	if strings.Contains(p.StateURL, "pw-xyzzy") || !strings.Contains(p.StateURL, "***") || !strings.Contains(p.StateURL, s.Addr) {
		t.Errorf("Policy.StateURL = %q, want the URL with its password as ***", p.StateURL)
	}
	c, err := h.Create(ctx, "alice", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	if gen, err := h.Put(ctx, c.Handle, "alice", []byte("v2"), host.IfGeneration(1)); err != nil || gen != 2 {
		t.Fatalf("Put = %d, %v", gen, err)
	}
	// Another store on the same server (another replica) reads it.
	other := openHandles(t, "notes-app", host.HandleOptions{StateURL: s.URL})
	if v, err := other.Get(ctx, c.Handle, "alice"); err != nil || string(v.Data) != "v2" || v.Generation != 2 {
		t.Fatalf("Get from another store = %+v, %v", v, err)
	}
	if _, err := other.Get(ctx, c.Handle, "bob"); err == nil {
		t.Fatal("another principal read the handle")
	}
	// Many goroutines, one pool, one client: every increment lands once.
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				v, err := h.Get(ctx, c.Handle, "alice")
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := h.Put(ctx, c.Handle, "alice", append(v.Data, 'x'), host.IfGeneration(v.Generation)); err == nil {
					return
				} else if !errors.Is(err, host.ErrConflict) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v, err := other.Get(ctx, c.Handle, "alice"); err != nil || string(v.Data) != "v2"+strings.Repeat("x", 16) || v.Generation != 18 {
		t.Fatalf("after 16 compare-and-set puts: %q gen %d, %v", v.Data, v.Generation, err)
	}
	list, err := h.List(ctx)
	if err != nil || list.Live != 1 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := h.Delete(ctx, c.Handle, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Get(ctx, c.Handle, "alice"); !errors.Is(err, host.ErrHandleNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
}

func TestHandlesRedis_UnavailableWithinTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	h := openHandles(t, "app", host.HandleOptions{StateURL: "redis://u:s3cretpw@" + addr, Timeout: 500 * time.Millisecond})
	start := time.Now()
	_, err = h.Create(context.Background(), "alice", []byte("v"))
	if !errors.Is(err, host.ErrStoreUnavailable) {
		t.Fatalf("Create on a closed port = %v, want ErrStoreUnavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v with Timeout 500ms", took)
	}
	if strings.Contains(err.Error(), "s3cretpw") {
		t.Errorf("error quotes the password: %v", err)
	}

	// A server that stops answering (SIGSTOP would do; a busy script is
	// portable): ErrStoreUnavailable after about Timeout, not later.
	s := redistest.Start(t)
	busy := openHandles(t, "app", host.HandleOptions{StateURL: s.URL, Timeout: 300 * time.Millisecond})
	if _, err := busy.Create(context.Background(), "alice", []byte("v")); err != nil {
		t.Fatal(err)
	}
	go s.Do("EVAL", "local t = redis.call('TIME') while true do local n = redis.call('TIME') if (n[1]-t[1])*1000000 + n[2]-t[2] > 1500000 then break end end return 1", "0")
	time.Sleep(100 * time.Millisecond)
	start = time.Now()
	if _, err := busy.Create(context.Background(), "alice", []byte("v")); !errors.Is(err, host.ErrStoreUnavailable) {
		t.Fatalf("Create on a busy server = %v, want ErrStoreUnavailable", err)
	}
	if took := time.Since(start); took < 250*time.Millisecond || took > 1200*time.Millisecond {
		t.Errorf("busy server: answered after %v with Timeout 300ms", took)
	}
}

func TestHandlesRedis_Refusals(t *testing.T) {
	for name, opts := range map[string]host.HandleOptions{
		"scheme":   {StateURL: "http://127.0.0.1:1"},
		"query":    {StateURL: "redis://127.0.0.1:1/0?db=2"},
		"timeout":  {StateURL: "redis://127.0.0.1:1", Timeout: time.Minute + time.Millisecond},
		"negative": {StateURL: "redis://127.0.0.1:1", Timeout: -time.Second},
	} {
		opts.Logger = slog.New(slog.DiscardHandler)
		if _, err := host.OpenHandles(context.Background(), "app", &opts); !errors.Is(err, host.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	// The password never reaches the message.
	_, err := host.OpenHandles(context.Background(), "app", &host.HandleOptions{StateURL: "redis://u:s3cretpw@127.0.0.1:1/0?x=1", Logger: slog.New(slog.DiscardHandler)})
	if err == nil || strings.Contains(err.Error(), "s3cretpw") {
		t.Errorf("bad URL with a password: %v", err)
	}
}
