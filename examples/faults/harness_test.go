//go:build linux && faults

package faults_test

// The suite's test binary and its per-test environment: TestMain builds the
// real broker and the real Go example server once; env is one test's
// broker, state directory and server stderr.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// bin holds the binaries TestMain builds: examples/broker and
// examples/go-server.
var bin struct{ broker, server string }

// TestMain builds the broker and the Go example server into a temporary
// directory, runs the tests and removes it. A helper process (FAULTS_HELPER)
// never gets here: init runs its mode and exits.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-resume-faults-")
	if err != nil {
		panic(err)
	}
	bin.broker, bin.server = filepath.Join(dir, "broker"), filepath.Join(dir, "go-server")
	for out, pkg := range map[string]string{bin.broker: "../broker", bin.server: "../go-server"} {
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects a server's stderr (written from exec's goroutines).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one test's broker, the server under test's state directory, and
// the stderr of every server it launches.
type env struct {
	t      *testing.T
	broker *mcphost.Broker
	// app is the app name of the server under test; stateDir is its state
	// directory, <state root>/<app>: the servers get the root.
	app      string
	stateDir string
	// extra are more variables every launch gets.
	extra  []string
	stderr *syncBuffer
}

// newEnv starts a broker (stopped when t ends) and a state directory under
// t's temporary directory, for the Go server's app.
func newEnv(t *testing.T) *env {
	e := &env{t: t, app: "example-go", stateDir: filepath.Join(t.TempDir(), "state", "example-go"), stderr: &syncBuffer{}}
	e.startBroker()
	t.Cleanup(func() { e.broker.Stop() })
	return e
}

func (e *env) startBroker() {
	b, err := mcphost.StartBroker(context.Background(), bin.broker, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.broker = b
}

// vars is the environment every launch gets: the broker URL, the state
// root, and extra.
func (e *env) vars() []string {
	return append([]string{"MCP_EXAMPLE_BROKER_URL=" + e.broker.URL, e.stateVar(e.stateDir)}, e.extra...)
}

// stateVar is the MCP_RESUME_STATE_DIR setting under which the server
// under test uses dir as its state directory: dir's parent, the state
// root (the plugin always uses <root>/<app>). dir must end in the app name.
func (e *env) stateVar(dir string) string {
	if filepath.Base(dir) != e.app {
		e.t.Fatalf("state directory %s is not one of app %s", dir, e.app)
	}
	return "MCP_RESUME_STATE_DIR=" + filepath.Dir(dir)
}
