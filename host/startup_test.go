package host_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
)

// The first start on a machine runs on wazero's interpreter while a
// background goroutine compiles the plugin into the cache (package doc,
// "Startup"; host/internal/loader). These tests check the two engines, that
// nothing waits for the compile, and that a process killed during it leaves
// a cache the next start works with.

const (
	startupChildEnv = "HOST_STARTUP_CHILD" // the cache directory
	startupWaitEnv  = "HOST_STARTUP_WAIT"  // "1": wait for the background compile, then exit
)

// startupChild opens a store on cache directory dir, stores and loads a
// token, and prints "<engine> <token>" on stdout. Then, with
// HOST_STARTUP_WAIT=1, it waits for the background compile and prints
// "compiled"; else it sleeps until it is killed.
func startupChild(dir string) int {
	ctx := context.Background()
	state := filepath.Join(dir, "..", "state")
	s, err := host.Open(ctx, "startup-app", &host.Options{CacheDir: dir, StateRoot: state, Instance: host.NoInstance, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	s.Store(ctx, "tok-startup")
	tok, _ := s.Load(ctx)
	fmt.Println(s.EngineForTest(), tok)
	if os.Getenv(startupWaitEnv) != "1" {
		time.Sleep(time.Minute)
		return 0
	}
	if err := host.WaitCompileForTest(ctx, dir); err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("compiled")
	return 0
}

// startChild starts a startup child on cache directory dir and returns it
// with its stdout.
func startChild(t *testing.T, dir string, wait bool) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), startupChildEnv+"="+dir)
	if wait {
		cmd.Env = append(cmd.Env, startupWaitEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

// line reads the child's next line, failing the test at its end.
func line(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	if !sc.Scan() {
		t.Fatalf("startup child ended early: %v", sc.Err())
	}
	return sc.Text()
}

// A first start answers from the interpreter and fills the cache in the
// background; the next start runs compiled from it.
func TestStartup_ColdThenWarm(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	cmd, sc := startChild(t, dir, true)
	if got := line(t, sc); got != "interpreted tok-startup" {
		t.Fatalf("first start: %q, want interpreted tok-startup", got)
	}
	if got := line(t, sc); got != "compiled" {
		t.Fatalf("first start, after the background compile: %q", got)
	}
	cmd.Wait() // its lock on the token file goes with it
	if _, err := os.Stat(host.CacheEntryForTest(dir)); err != nil {
		t.Fatalf("no cache entry after the background compile: %v", err)
	}
	_, sc = startChild(t, dir, true)
	if got := line(t, sc); got != "compiled tok-startup" {
		t.Fatalf("second start: %q, want compiled tok-startup", got)
	}
}

// A process killed at any point of its background compile leaves no entry
// a later start would read (only a tmp-* directory), and the next start
// works and finishes the cache.
func TestStartup_KilledMidCompile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	kills, finished := 0, false
	for _, after := range []time.Duration{0, 50 * time.Millisecond, 300 * time.Millisecond, 800 * time.Millisecond} {
		cmd, sc := startChild(t, dir, false)
		if got := line(t, sc); got != "interpreted tok-startup" {
			t.Fatalf("start before the kill at +%v: %q", after, got)
		}
		time.Sleep(after)
		_, err := os.Stat(host.CacheEntryForTest(dir))
		// The child goes either way: it holds the token file's lock, which
		// the start below must find free.
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if err == nil {
			// A finished compile also sweeps the killed ones' tmp-*.
			t.Logf("the compile finished before the kill at +%v", after)
			finished = true
			break
		}
		kills++
	}
	if kills == 0 {
		t.Fatal("no child was killed during its compile")
	}
	temps, _ := filepath.Glob(filepath.Join(filepath.Dir(host.CacheEntryForTest(dir)), "tmp-*"))
	if len(temps) == 0 && !finished {
		t.Error("killed compiles left no tmp-* directory: were they mid-compile?")
	}
	t.Logf("%d kills mid-compile, %d tmp-* directories left", kills, len(temps))
	cmd, sc := startChild(t, dir, true)
	if got := line(t, sc); !strings.HasSuffix(got, " tok-startup") {
		t.Fatalf("start after the kills: %q", got)
	}
	if got := line(t, sc); got != "compiled" {
		t.Fatalf("start after the kills, background compile: %q", got)
	}
	cmd.Wait()
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(host.CacheEntryForTest(dir)), "tmp-*")); len(left) != 0 {
		t.Errorf("the killed processes' directories were not cleaned up: %v", left)
	}
	_, sc = startChild(t, dir, false)
	if got := line(t, sc); got != "compiled tok-startup" {
		t.Fatalf("start after the cache was finished: %q", got)
	}
}

// A finished entry wazero cannot read (corrupted on disk) is dropped: the
// start runs on the interpreter and compiles the entry again.
func TestStartup_CorruptEntry(t *testing.T) {
	// A copy of the finished entry the test binary made (TestMain).
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.CopyFS(host.CacheEntryForTest(dir), os.DirFS(host.CacheEntryForTest(sharedCacheDir))); err != nil {
		t.Fatal(err)
	}
	// CopyFS makes directories 0777 minus the umask; the loader refuses a
	// cache open to others (cache_test.go), and makes its own 0700.
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			err = os.Chmod(path, 0o700)
		}
		return err
	})
	// Flip bytes in the middle of every file of the entry.
	n := 0
	filepath.WalkDir(host.CacheEntryForTest(dir), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || len(b) < 100 {
			return err
		}
		for i := len(b) / 2; i < len(b)/2+64; i++ {
			b[i] ^= 0xff
		}
		n++
		return os.WriteFile(path, b, 0o600)
	})
	if n == 0 {
		t.Fatal("no cache file to corrupt")
	}
	cmd, sc := startChild(t, dir, true)
	if got := line(t, sc); got != "interpreted tok-startup" {
		t.Fatalf("start on a corrupt entry: %q, want interpreted tok-startup", got)
	}
	if got := line(t, sc); got != "compiled" {
		t.Fatalf("background compile after a corrupt entry: %q", got)
	}
	cmd.Wait()
	_, sc = startChild(t, dir, false)
	if got := line(t, sc); got != "compiled tok-startup" {
		t.Fatalf("start after the entry was rebuilt: %q", got)
	}
}

// Close does not wait for the background compile.
func TestStartup_CloseDoesNotWait(t *testing.T) {
	ctx := context.Background()
	// Not under t.TempDir: the compile goes on after the test, into a
	// directory TestMain removes at the end.
	dir := filepath.Join(sharedCacheDir, "close-test")
	s, err := host.Open(ctx, "startup-app", &host.Options{CacheDir: dir, StateRoot: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if s.EngineForTest() != "interpreted" {
		t.Fatalf("engine %q on an empty cache", s.EngineForTest())
	}
	start := time.Now()
	s.Close(ctx)
	took := time.Since(start)
	if _, err := os.Stat(host.CacheEntryForTest(dir)); err == nil {
		t.Skip("the background compile finished before Close; cannot tell")
	}
	if took > 100*time.Millisecond {
		t.Errorf("Close took %v while the background compile ran", took)
	}
}
