package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

func fixedIdentity() (int, string, error) { return 4242, "98765.ab", nil }

func open(t testing.TB, dir string, logger *slog.Logger) *host.Store {
	t.Helper()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := host.Open(context.Background(), "test-app", &host.Options{StateDir: dir, Logger: logger, CacheDir: sharedCacheDir, Identity: fixedIdentity, Instance: host.NoInstance})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func TestOpen_InvalidApp(t *testing.T) {
	for _, app := range []string{"", ".hidden", "a/b", "../x", strings.Repeat("a", 65), "sp ace"} {
		_, err := host.Open(context.Background(), app, &host.Options{CacheDir: sharedCacheDir})
		if !errors.Is(err, host.ErrInvalidApp) {
			t.Errorf("Open(%q) error = %v, want ErrInvalidApp", app, err)
		}
	}
}

func TestOpen_EnvStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "from-env")
	t.Setenv(host.EnvStateDir, dir)
	s, err := host.Open(context.Background(), "test-app", &host.Options{CacheDir: sharedCacheDir, Identity: fixedIdentity, Instance: host.NoInstance, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if s.StateDirectory() != dir {
		t.Errorf("StateDirectory() = %q, want %q", s.StateDirectory(), dir)
	}
	if err := s.Store(context.Background(), "tok"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "token-4242-98765.ab")); err != nil {
		t.Error(err)
	}
}

func TestStateDir_PerApp(t *testing.T) {
	a, b := host.StateDir("one"), host.StateDir("two")
	if a == b || filepath.Base(a) != "one" || filepath.Base(filepath.Dir(a)) != "mcp-resume" {
		t.Errorf("StateDir(one) = %q, StateDir(two) = %q", a, b)
	}
}

func TestStore_InvalidToken(t *testing.T) {
	s := open(t, t.TempDir()+"/state", nil)
	err := s.Store(context.Background(), "two words")
	if !errors.Is(err, host.ErrInvalidToken) {
		t.Fatalf("Store = %v, want ErrInvalidToken", err)
	}
	if strings.Contains(err.Error(), "two words") || !strings.Contains(err.Error(), "0x20 at offset 3") {
		t.Errorf("error %q should locate the bad byte without quoting the token", err)
	}
}

// Concurrent callers share one plugin instance; -race checks the locking.
func TestStore_Concurrent(t *testing.T) {
	dir := t.TempDir() + "/state"
	s := open(t, dir, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				if err := s.Store(ctx, fmt.Sprintf("tok-%d-%d", g, i)); err != nil {
					t.Error(err)
				}
				s.Load(ctx)
				if i%10 == 0 {
					s.Reject(ctx)
				}
			}
		}()
	}
	wg.Wait()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

// Nothing of ours reaches stdout: not the plugin, not the runtime, not even
// a call on a closed store (go-sdk prints to stdout if reset fails).
func TestStore_StdoutUntouched(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	func() {
		defer func() { os.Stdout = saved }()
		ctx := context.Background()
		logger := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug}))
		s, err := host.Open(ctx, "test-app", &host.Options{StateDir: t.TempDir() + "/s", Logger: logger, CacheDir: sharedCacheDir, Identity: fixedIdentity, Instance: host.NoInstance})
		if err != nil {
			t.Error(err)
			return
		}
		s.Load(ctx)
		s.Store(ctx, "tok")
		s.Load(ctx)
		s.Reject(ctx)
		s.Store(ctx, "bad token")
		s.Close(ctx)
		s.Close(ctx)
		if tok, ok := s.Load(ctx); ok {
			t.Errorf("Load after Close = %q", tok)
		}
		s.Store(ctx, "tok2")
		s.Reject(ctx)
	}()
	w.Close()
	out, _ := io.ReadAll(r)
	if len(out) != 0 {
		t.Errorf("stdout received %q", out)
	}
}

func TestStore_List(t *testing.T) {
	dir := t.TempDir() + "/state"
	s := open(t, dir, nil)
	ctx := context.Background()
	if err := s.Store(ctx, "tok"); err != nil {
		t.Fatal(err)
	}
	files, err := s.List(ctx)
	if err != nil || len(files) != 1 || files[0].PID != 4242 || files[0].StartTime != "98765.ab" {
		t.Fatalf("List = %+v, %v", files, err)
	}
}
