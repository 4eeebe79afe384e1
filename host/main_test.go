package host_test

import (
	"os"
	"testing"
)

// sharedCacheDir is one wazero compilation cache for the whole test binary,
// so only the first Open compiles the plugin.
var sharedCacheDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-resume-cache-")
	if err != nil {
		panic(err)
	}
	sharedCacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
