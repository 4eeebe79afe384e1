//go:build linux && faults

package faults_test

// The suite's test binary: TestMain builds the real broker and the real Go
// example server once (servertest.Main); each fault's fixture (fx,
// faults_test.go) holds a servertest.Env: its broker, state directory and
// server stderr.

import (
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
)

// bin holds the binaries TestMain builds: examples/broker and
// examples/go-server.
var bin servertest.Binaries

// TestMain builds the broker and the Go example server into a temporary
// directory, runs the tests and removes it. A helper process (FAULTS_HELPER)
// never gets here: init runs its mode and exits.
func TestMain(m *testing.M) {
	servertest.Main(m, "mcp-resume-faults-", &bin)
}
