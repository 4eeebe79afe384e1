package host_test

import (
	"os"
	"testing"
)

// sharedCacheDir is one wazero compilation cache for the whole test binary,
// so only the first Open compiles the plugin.
var sharedCacheDir string

func TestMain(m *testing.M) {
	if name := os.Getenv(benchChildEnv); name != "" {
		// A benchmark child (bench_test.go): this process is the MCP server,
		// its parent the MCP host.
		sharedCacheDir = os.Getenv(benchCacheEnv)
		os.Exit(benchChild(name))
	}
	dir, err := os.MkdirTemp("", "mcp-resume-cache-")
	if err != nil {
		panic(err)
	}
	sharedCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
