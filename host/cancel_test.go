package host_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A done ctx: Load offers nothing, Store writes nothing and says why, Reject
// deletes nothing; the token file and the store are as before, so the next
// calls with a live ctx resume normally.
func TestStore_CancelledContext(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "test-app")
	s := open(t, dir, nil)
	id := whoami(t, s)
	live := context.Background()
	if err := s.Store(live, "token-one"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, id.TokenFile)

	done, cancel := context.WithCancel(live)
	cancel()
	if tok, ok := s.Load(done); ok || tok != "" {
		t.Errorf("Load(cancelled) = %q, %v; want nothing", tok, ok)
	}
	if err := s.Store(done, "token-two"); !errors.Is(err, context.Canceled) {
		t.Errorf("Store(cancelled) = %v; want an error wrapping context.Canceled", err)
	}
	s.Reject(done)
	if _, err := s.List(done); !errors.Is(err, context.Canceled) {
		t.Errorf("List(cancelled) = %v; want context.Canceled", err)
	}
	if _, err := s.Whoami(done); !errors.Is(err, context.Canceled) {
		t.Errorf("Whoami(cancelled) = %v; want context.Canceled", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "token-one" {
		t.Fatalf("token file after cancelled calls = %q, %v; want token-one", b, err)
	}
	if tok, ok := s.Load(live); !ok || tok != "token-one" {
		t.Errorf("Load(live) after cancelled calls = %q, %v; want token-one", tok, ok)
	}
}

// A ctx that ends while another call holds the plugin instance ends the
// wait: the method returns promptly instead of queueing behind it.
func TestStore_ContextEndsWhileWaiting(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "test-app")
	s := open(t, dir, nil)
	whoami(t, s)
	release := s.HoldForTest()
	released := false
	defer func() {
		if !released {
			release()
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	tok, ok := s.Load(ctx)
	if ok || tok != "" {
		t.Errorf("Load while held = %q, %v; want nothing", tok, ok)
	}
	if err := s.Store(ctx, "token-x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Store while held = %v; want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("calls waited %v for a held store; want about 100ms", d)
	}
	release()
	released = true
	if err := s.Store(context.Background(), "token-y"); err != nil {
		t.Fatal(err)
	}
	if tok, ok := s.Load(context.Background()); !ok || tok != "token-y" {
		t.Errorf("Load after release = %q, %v; want token-y", tok, ok)
	}
}
