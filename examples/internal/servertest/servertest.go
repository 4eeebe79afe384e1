// Package servertest is the harness the Go example server's end-to-end
// tests (examples/go-server) and the fault-injection suite (examples/faults)
// share: a TestMain that builds the real broker and the real Go example
// server once per test binary, and a per-test Env of a real broker, a state
// directory and the stderr of every server the test launches. Each test
// package keeps its own launching and checks; only this common part lives
// here. http.go adds the example servers of all three languages in
// Streamable HTTP mode (StartHTTP, ConnectHTTP), for the tests that run
// them as stateless replicas.
package servertest

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

// The packages Main builds, as `go build` takes them from anywhere in the
// module.
const (
	brokerPkg = "github.com/mcp-resume/mcp-resume/examples/broker"
	serverPkg = "github.com/mcp-resume/mcp-resume/examples/go-server"
)

// Binaries are the paths of the binaries Main builds.
type Binaries struct {
	// Broker is examples/broker (the example token broker); Server is
	// examples/go-server (the Go example server: the real plugin in the Go
	// host).
	Broker, Server string
}

// Main is a test binary's TestMain body: it builds examples/broker and
// examples/go-server with `go build` into a new temporary directory whose
// name starts with prefix, stores the binaries' paths in *bin, runs m,
// removes the directory and exits the process with m.Run's code. It never
// returns. It panics when the temporary directory cannot be made; a failed
// build prints `go build`'s output on stderr and exits with status 1.
func Main(m *testing.M, prefix string, bin *Binaries) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		panic(err)
	}
	bin.Broker, bin.Server = filepath.Join(dir, "broker"), filepath.Join(dir, "go-server")
	for out, pkg := range map[string]string{bin.Broker: brokerPkg, bin.Server: serverPkg} {
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
			os.Exit(1)
		}
	}
	goServer.path = bin.Server // StartHTTP's "go" server
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// SyncBuffer collects a server's stderr (or stdout): an io.Writer that
// exec's goroutines may write while the test reads String. The zero value
// is an empty buffer ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it always returns len(p) and a nil error.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Env is one test's broker, the state directory of the server under test,
// and the stderr of every server it launches.
type Env struct {
	// T is the test the Env belongs to; StartBroker and StateVar fail it.
	T testing.TB
	// Broker is the running broker; StartBroker replaces it.
	Broker *mcphost.Broker
	// App is the app name of the server under test; StateDir is its state
	// directory, <state root>/<App>: the servers get the root (StateVar).
	App      string
	StateDir string
	// Extra are more KEY=value variables every launch gets (Vars).
	Extra []string
	// Stderr collects the stderr of the servers the test launches.
	Stderr *SyncBuffer

	brokerBin string
}

// NewEnv starts a broker from the binary brokerBin (Binaries.Broker) and
// returns t's Env for the server of app name app, whose state directory is
// <t's temporary directory>/state/<app> (not created). The broker current
// when t ends is stopped then. A broker that does not start fails t (Fatal).
func NewEnv(t testing.TB, brokerBin, app string) *Env {
	e := &Env{T: t, App: app, StateDir: filepath.Join(t.TempDir(), "state", app), Stderr: &SyncBuffer{}, brokerBin: brokerBin}
	e.StartBroker()
	t.Cleanup(func() { e.Broker.Stop() })
	return e
}

// StartBroker starts a new broker (with no sessions) and makes it
// e.Broker; the one before, if still running, is the caller's to stop. A
// broker that does not start fails the test (Fatal).
func (e *Env) StartBroker() {
	b, err := mcphost.StartBroker(context.Background(), e.brokerBin, nil)
	if err != nil {
		e.T.Fatal(err)
	}
	e.Broker = b
}

// Vars is the environment every launch gets, as KEY=value: the broker URL
// (MCP_EXAMPLE_BROKER_URL), the state root (StateVar of e.StateDir), then
// e.Extra.
func (e *Env) Vars() []string {
	return append([]string{"MCP_EXAMPLE_BROKER_URL=" + e.Broker.URL, e.StateVar(e.StateDir)}, e.Extra...)
}

// StateVar is the MCP_RESUME_STATE_DIR=... setting under which the server
// under test uses dir as its state directory: dir's parent, the state root
// (the plugin always uses <root>/<app>). A dir whose last element is not
// e.App fails the test (Fatal).
func (e *Env) StateVar(dir string) string {
	if filepath.Base(dir) != e.App {
		e.T.Fatalf("state directory %s is not one of app %s", dir, e.App)
	}
	return "MCP_RESUME_STATE_DIR=" + filepath.Dir(dir)
}
