//go:build linux && handles

package handles_test

// The suite's spine: flags, TestMain (which also runs this binary's helper
// modes), the three example servers and the per-test fixture that launches
// them on one shared state directory.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

var (
	require   = flag.Bool("handles.require", false, "fail, rather than skip, when a language's server or helper cannot run (make test-handles)")
	kills     = flag.Int("handles.kills", 60, "crash test: put loops to SIGKILL through the Go API")
	killsSlow = flag.Int("handles.kills-slow", 30, "crash test: put loops to SIGKILL through the Python and TypeScript APIs (each starts a runtime)")
	casOps    = flag.Int("handles.cas-ops", 15, "concurrency test: successful increments per thread")
	updateTbl = flag.Bool("update-handle-table", false, "rewrite the handle fault table in docs/RELIABILITY.md from this run")
)

// bin holds the binaries TestMain builds: examples/broker and
// examples/go-server.
var bin servertest.Binaries

// TestMain runs a helper mode when HANDLES_HELPER is set (helpers_test.go),
// else builds the broker and the Go server and runs the tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("HANDLES_HELPER"); mode != "" {
		os.Exit(runHelper(mode))
	}
	servertest.Main(m, "mcp-resume-handles-", &bin)
}

// sharedApp is the app name every server of a test runs as (EXAMPLE_APP),
// so that they share one handle store: the keys of a handle are derived from
// the app name, so a handle is only ever valid within one app.
const sharedApp = "example-notebook"

// lang is one language whose example server and API the suite runs.
type lang struct{ name, title string }

// allLangs are the languages in table-column order.
var allLangs = []lang{{"go", "Go"}, {"python", "Python"}, {"typescript", "TypeScript"}}

// server is one language's example server and stress helper.
type server struct {
	lang
	// argv is the server's command line (absolute paths).
	argv []string
	// helper runs this language's stress helper (HANDLES_HELPER modes
	// cas and putloop) through its public API.
	helper []string
}

// repoRoot is the repository root (the test runs in examples/handles).
func repoRoot(t testing.TB) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// findServer returns l's server, or skips the test (fails under
// -handles.require) when it is not built, naming the make target.
func findServer(t testing.TB, l lang) *server {
	t.Helper()
	root := repoRoot(t)
	missing := func(what, target string) *server {
		msg := fmt.Sprintf("the %s example server is not built (%s): run `make %s`", l.title, what, target)
		if *require {
			t.Fatal(msg)
		}
		t.Skip(msg)
		return nil
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	testdata := filepath.Join(root, "examples", "handles", "testdata")
	switch l.name {
	case "go":
		return &server{lang: l, argv: []string{bin.Server}, helper: []string{self}}
	case "python":
		py := filepath.Join(root, ".venv", "bin", "python")
		if !exists(py) {
			return missing(py+" is missing", "python-setup")
		}
		if out, err := exec.Command(py, "-c", "from mcp_resume import HandleStore; import mcp").CombinedOutput(); err != nil {
			return missing(fmt.Sprintf("%s cannot import mcp_resume.HandleStore and mcp: %v %s", py, err, bytes.TrimSpace(out)), "python-setup")
		}
		return &server{lang: l, argv: []string{py, filepath.Join(root, "examples", "python-server", "server.py")},
			helper: []string{py, filepath.Join(testdata, "handles_helper.py")}}
	case "typescript":
		node, err := exec.LookPath("node")
		if err != nil {
			return missing("node is not on PATH", "typescript-setup")
		}
		for _, p := range []string{filepath.Join(root, "examples", "typescript-server", "dist", "server.js"), filepath.Join(root, "sdk-bindings", "typescript", "dist", "index.js")} {
			if !exists(p) {
				return missing(p+" is missing", "typescript-setup")
			}
		}
		return &server{lang: l, argv: []string{node, filepath.Join(root, "examples", "typescript-server", "dist", "server.js")},
			helper: []string{node, filepath.Join(testdata, "handles_helper.mjs")}}
	}
	t.Fatalf("unknown language %q", l.name)
	return nil
}

// fx is one test's fixture: a broker, a state root shared by every server
// it launches (all as app sharedApp), their stderr, and the handles seen,
// which must never appear in that stderr or in any file.
type fx struct {
	*servertest.Env
	mu      sync.Mutex
	handles []string
}

// fullKeyHash matches a record file name: h- and a whole key hash.
var fullKeyHash = regexp.MustCompile(`\bh-[0-9a-f]{32}\b`)

// newFx starts t's broker; the state directory is <tmp>/state/example-notebook
// and its handle store <that>/handles. When t ends, no handle seen may
// appear in the servers' stderr.
func newFx(t *testing.T) *fx {
	f := &fx{Env: servertest.NewEnv(t, bin.Broker, sharedApp)}
	f.Extra = []string{"EXAMPLE_APP=" + sharedApp}
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, h := range f.handles {
			if strings.Contains(f.Stderr.String(), h) {
				t.Errorf("a handle appears in the servers' stderr")
			}
		}
		// Log lines name a handle only by the first 12 hex digits of its
		// key hash, never by the whole hash (its record's file name).
		if m := fullKeyHash.FindString(f.Stderr.String()); m != "" {
			t.Errorf("a whole key hash (record file name %s…) appears in the servers' stderr; log lines may name only its first 12 hex digits", m[:14])
		}
		if t.Failed() {
			t.Logf("servers' stderr:\n%s", f.Stderr)
		}
	})
	return f
}

// handlesDir is the handle store's directory: <state dir>/handles.
func (f *fx) handlesDir() string { return filepath.Join(f.StateDir, "handles") }

// stateRoot is the root every server and helper gets (MCP_RESUME_STATE_DIR).
func (f *fx) stateRoot() string { return filepath.Dir(f.StateDir) }

// seen records handles that must stay secret (checked at cleanup).
func (f *fx) seen(h ...string) {
	f.mu.Lock()
	f.handles = append(f.handles, h...)
	f.mu.Unlock()
}

// launch starts argv as an MCP server with the fixture's environment plus
// env, and kills it when the test ends. A server that does not complete the
// handshake fails the test.
func (f *fx) launch(argv []string, env ...string) *mcphost.Server {
	f.T.Helper()
	srv, err := mcphost.Launch(context.Background(), argv, append(f.Vars(), env...), f.Stderr)
	if err != nil {
		f.T.Fatalf("launching %v: %v\nstderr:\n%s", argv, err, f.Stderr)
	}
	f.T.Cleanup(srv.Kill)
	return srv
}

// create calls notebook_create and records the handle; an error fails the test.
func (f *fx) create(srv *mcphost.Server) mcphost.Notebook {
	f.T.Helper()
	nb, err := srv.NotebookCreate(context.Background())
	if err != nil {
		f.T.Fatalf("notebook_create: %v", err)
	}
	f.seen(nb.Handle)
	if !strings.HasPrefix(nb.Handle, "mrh1_") || len(nb.Handle) != 37 || nb.Generation != 1 {
		f.T.Fatalf("notebook_create answered handle of %d chars (prefix %q), generation %d; want mrh1_ + 32 chars, generation 1",
			len(nb.Handle), nb.Handle[:min(5, len(nb.Handle))], nb.Generation)
	}
	return nb
}

// recordFiles lists the record files (h-*) in the handle store's directory.
func (f *fx) recordFiles() []string {
	m, _ := filepath.Glob(filepath.Join(f.handlesDir(), "h-*"))
	return m
}
