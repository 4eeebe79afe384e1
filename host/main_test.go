package host_test

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance"
)

// sharedCacheDir is one wazero compilation cache for the whole test binary,
// filled before the tests run, so they run on the compiled plugin (the
// first-start path, on the interpreter, has its own tests in startup_test.go).
var sharedCacheDir string

func TestMain(m *testing.M) {
	if name := os.Getenv(benchChildEnv); name != "" {
		// A benchmark child (bench_test.go): this process is the MCP server,
		// its parent the MCP host.
		sharedCacheDir = os.Getenv(benchCacheEnv)
		os.Exit(benchChild(name))
	}
	if report := os.Getenv(fdsChildEnv); report != "" {
		// A child started with one of fds 0-2 closed (fds_test.go).
		os.Exit(fdsChild(report))
	}
	if dir := os.Getenv(cacheChildEnv); dir != "" {
		// A cache child (cache_test.go).
		os.Exit(cacheChild(dir))
	}
	if dir := os.Getenv(startupChildEnv); dir != "" {
		// A startup child (startup_test.go), killed or waited for by the test.
		os.Exit(startupChild(dir))
	}
	dir, err := os.MkdirTemp("", "mcp-resume-cache-")
	if err != nil {
		panic(err)
	}
	sharedCacheDir = dir
	// Fill the cache: open once, wait for the background compile.
	ctx := context.Background()
	if s, err := host.Open(ctx, "test-app", &host.Options{CacheDir: dir, StateRoot: dir + "/state", Logger: slog.New(slog.DiscardHandler)}); err == nil {
		s.Close(ctx)
	}
	host.WaitCompileForTest(ctx, dir)
	host.SetHandlesCacheDirForTest(dir)
	code := m.Run()
	conformance.StopRedis() // the redis-mode cases' server, if they started it
	os.RemoveAll(dir)
	os.Exit(code)
}
