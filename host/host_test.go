package host_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// These tests run the real plugin with the real identity of this test
// process: its MCP host is the process that started it (the go command).

// open opens app "test-app" whose state directory is dir: the state root
// is its parent.
func open(t testing.TB, dir string, logger *slog.Logger) *host.Store {
	t.Helper()
	if filepath.Base(dir) != "test-app" {
		t.Fatalf("state directory %s is not a test-app directory", dir)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := host.Open(context.Background(), "test-app", &host.Options{StateRoot: filepath.Dir(dir), Logger: logger, CacheDir: sharedCacheDir, Instance: host.NoInstance})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// whoami returns this process's identity, skipping the test when the
// plugin cannot resolve one here (resume is then off by design).
func whoami(t testing.TB, s *host.Store) host.Identity {
	t.Helper()
	id, err := s.Whoami(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if id.Error != "" {
		t.Skip("no MCP host identity for this test process:", id.Error)
	}
	return id
}

func TestOpen_InvalidApp(t *testing.T) {
	for _, app := range []string{"", ".hidden", "a/b", "../x", strings.Repeat("a", 65), "sp ace"} {
		s, err := host.Open(context.Background(), app, &host.Options{CacheDir: sharedCacheDir})
		if !errors.Is(err, host.ErrInvalidApp) || s != nil {
			t.Errorf("Open(%q) = %v, %v; want nil, ErrInvalidApp", app, s, err)
		}
	}
}

// The state root: Options.StateRoot made absolute, else $MCP_RESUME_STATE_DIR
// (read by the plugin from the facts), else the plugin's per-app default.
func TestOpen_StateDir(t *testing.T) {
	ctx := context.Background()
	quiet := &host.Options{CacheDir: sharedCacheDir, Instance: host.NoInstance, Logger: slog.New(slog.DiscardHandler)}

	// A relative root is taken from the directory the process started in
	// (facts.cwd, read at package init), not from where it is when it
	// opens: a server that changes directory first still names the same
	// state directory.
	launched, _ := os.Getwd()
	t.Chdir(t.TempDir())
	o := *quiet
	o.StateRoot = "rel/state"
	s, err := host.Open(ctx, "test-app", &o)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(launched, "rel", "state", "test-app"); s.StateDir() != want {
		t.Errorf("relative StateRoot: %q, want %q", s.StateDir(), want)
	}
	s.Close(ctx)
	if _, err := os.Stat(filepath.Join(launched, "rel")); err == nil {
		t.Errorf("Open created %s", filepath.Join(launched, "rel"))
	}

	env := filepath.Join(t.TempDir(), "from-env")
	t.Setenv(host.EnvStateDir, env)
	s, err = host.Open(ctx, "test-app", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if s.StateDir() != filepath.Join(env, "test-app") || s.StateRoot() != env {
		t.Errorf("StateDir() = %q, StateRoot() = %q, want %q in %q", s.StateDir(), s.StateRoot(), "test-app", env)
	}
	s.Close(ctx)

	t.Setenv(host.EnvStateDir, "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	a, err := host.Open(ctx, "one", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	b, err := host.Open(ctx, "two", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close(ctx)
	if a.StateDir() == b.StateDir() || filepath.Base(a.StateDir()) != "one" ||
		filepath.Dir(a.StateDir()) != a.StateRoot() || !strings.HasPrefix(a.StateRoot(), home+"/") {
		t.Errorf("defaults: %q (root %q), %q", a.StateDir(), a.StateRoot(), b.StateDir())
	}
}

// A nil *Store (a failed Open) is resume off: the README quick start runs.
func TestNilStore(t *testing.T) {
	ctx := context.Background()
	s, err := host.Open(ctx, "bad/app", &host.Options{CacheDir: sharedCacheDir})
	if err == nil || s != nil {
		t.Fatalf("Open = %v, %v", s, err)
	}
	defer s.Close(ctx)
	if tok, ok := s.Load(ctx); ok || tok != "" {
		t.Errorf("Load = %q, %v", tok, ok)
	}
	if err := s.Store(ctx, "tok"); err != nil {
		t.Errorf("Store = %v", err)
	}
	s.Reject(ctx)
	if err := s.Close(ctx); err != nil {
		t.Errorf("Close = %v", err)
	}
	if _, err := s.List(ctx); err == nil {
		t.Error("List on a nil store succeeded")
	}
	if s.StateDir() != "" {
		t.Error("StateDir on a nil store")
	}
}

func TestStore_InvalidToken(t *testing.T) {
	s := open(t, t.TempDir()+"/state/test-app", nil)
	err := s.Store(context.Background(), "two words")
	if !errors.Is(err, host.ErrInvalidToken) {
		t.Fatalf("Store = %v, want ErrInvalidToken", err)
	}
	if strings.Contains(err.Error(), "two words") {
		t.Errorf("error %q quotes the token", err)
	}
}

// A round trip with the real identity, and what list, whoami and prune say.
func TestStore_RoundTripListWhoami(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state", "test-app")
	s := open(t, dir, nil)
	id := whoami(t, s)
	if id.TokenFile == "" || id.LockFile == "" || id.StateDir != dir || len(id.Chain) == 0 || id.Chain[len(id.Chain)-1].Role != "host" {
		t.Fatalf("whoami = %+v", id)
	}
	if err := s.Store(ctx, "tok-1"); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, id.TokenFile))
	if err != nil || string(b) != "tok-1" {
		t.Fatalf("token file %s: %q %v", id.TokenFile, b, err)
	}
	files, err := s.List(ctx)
	if err != nil || len(files) != 1 || files[0].Name != id.TokenFile || files[0].PID != id.PID ||
		files[0].StartTime != id.StartTime || files[0].Host != hostfuncs.HostAlive {
		t.Fatalf("List = %+v, %v", files, err)
	}
	s.Close(ctx)
	again := open(t, dir, nil)
	if tok, ok := again.Load(ctx); !ok || tok != "tok-1" {
		t.Errorf("Load after reopen = %q, %v", tok, ok)
	}
	removed, err := again.Prune(ctx)
	if err != nil || len(removed) != 0 {
		t.Errorf("Prune of a live host's files = %+v, %v", removed, err)
	}
}

// Prune removes the files of a host that is gone (a real child process
// that has exited), labelled host_gone, and keeps the live one's.
func TestStore_PruneGone(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state", "test-app")
	s := open(t, dir, nil)
	id := whoami(t, s)
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	gone := fmt.Sprintf("token-%d-%s", child.Process.Pid, id.StartTime)
	if err := s.Store(ctx, "tok"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, gone), []byte("other"), 0o600); err != nil {
		t.Fatal(err)
	}
	removed, err := s.Prune(ctx)
	if err != nil || len(removed) != 1 || removed[0].Name != gone || removed[0].Reason != hostfuncs.ReasonHostGone || removed[0].Host != hostfuncs.HostGone {
		t.Fatalf("Prune = %+v, %v", removed, err)
	}
	if _, err := os.Stat(filepath.Join(dir, id.TokenFile)); err != nil {
		t.Errorf("prune removed this host's file: %v", err)
	}
}

// A plugin of another ABI version is refused with both versions named.
func TestOpen_RefusesOlderABI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Wasm module")
	}
	wasm := filepath.Join(t.TempDir(), "abi3.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-ldflags=-X=main.abiVersion=3", "-o", wasm, "../sdk-bindings/typescript/test/testdata/testplugin")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("cannot build the test plugin: %v\n%s", err, out)
	}
	module, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer host.SetWasmForTest(module)()
	s, err := host.Open(context.Background(), "test-app", &host.Options{CacheDir: "-", Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, host.ErrPlugin) || s != nil || !strings.Contains(err.Error(), `plugin ABI version "3", this host implements "`+hostfuncs.ABIVersion+`"`) {
		t.Errorf("Open with an ABI 3 plugin = %v, %v", s, err)
	}
}

// Concurrent callers share one plugin instance; -race checks the locking.
func TestStore_Concurrent(t *testing.T) {
	dir := t.TempDir() + "/state/test-app"
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
		s, err := host.Open(ctx, "test-app", &host.Options{StateRoot: t.TempDir() + "/s", Logger: logger, CacheDir: sharedCacheDir, Instance: host.NoInstance})
		if err != nil {
			t.Error(err)
			return
		}
		s.Load(ctx)
		s.Store(ctx, "tok")
		s.Load(ctx)
		s.Reject(ctx)
		s.Store(ctx, "bad token")
		s.Whoami(ctx)
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
