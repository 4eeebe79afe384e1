//go:build linux && replicas

package replicas_test

// The suite's spine: flags, TestMain, the three example servers, and the
// per-test fixture that starts HTTP replicas of them on one Redis and
// connects clients as alice or bob.

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
	"github.com/mcp-resume/mcp-resume/examples/replicas"
)

var (
	require   = flag.Bool("replicas.require", false, "fail, rather than skip, when a language's server cannot run (make test-replicas)")
	casOps    = flag.Int("replicas.cas-ops", 3, "concurrency test: successful appends per client (3 replicas × 8 clients)")
	updateTbl = flag.Bool("update-replica-table", false, "rewrite the Redis fault table in docs/RELIABILITY.md from this run")
)

// bin holds the binaries TestMain builds (the Go example server; the
// broker too, which these tests do not use: HTTP mode has no resume).
var bin servertest.Binaries

func TestMain(m *testing.M) {
	servertest.Main(m, "mcp-resume-replicas-", &bin)
}

// sharedApp is the app name of every replica (EXAMPLE_APP): a handle is
// only valid within one app, and the app names its Redis keys.
const sharedApp = "example-notebook"

// lang is one language whose example server the suite runs.
type lang struct{ name, title string }

var (
	goLang = lang{"go", "Go"}
	pyLang = lang{"python", "Python"}
	tsLang = lang{"typescript", "TypeScript"}
	// allLangs are the languages in table-column order.
	allLangs = []lang{goLang, pyLang, tsLang}
)

// repoRoot is the repository root (the test runs in examples/replicas).
func repoRoot(t testing.TB) string {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// serverArgv returns l's example server command (absolute paths), or skips
// the test (fails under -replicas.require) when it is not built, naming
// the make target.
func serverArgv(t testing.TB, l lang) []string {
	t.Helper()
	root := repoRoot(t)
	missing := func(what, target string) []string {
		msg := fmt.Sprintf("the %s example server is not built (%s): run `make %s`", l.title, what, target)
		if *require {
			t.Fatal(msg)
		}
		t.Skip(msg)
		return nil
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	switch l.name {
	case "go":
		return []string{bin.Server}
	case "python":
		py := filepath.Join(root, ".venv", "bin", "python")
		if !exists(py) {
			return missing(py+" is missing", "python-setup")
		}
		if out, err := exec.Command(py, "-c", "import mcp_resume, mcp, redis").CombinedOutput(); err != nil {
			return missing(fmt.Sprintf("%s cannot import mcp_resume, mcp and redis: %v %s", py, err, bytes.TrimSpace(out)), "python-setup")
		}
		return []string{py, filepath.Join(root, "examples", "python-server", "server.py")}
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
		return []string{node, filepath.Join(root, "examples", "typescript-server", "dist", "server.js")}
	}
	t.Fatalf("unknown language %q", l.name)
	return nil
}

// fx is one test's fixture: the principals' tokens, the stderr of every
// replica it starts, and the handles seen, which must never appear there.
type fx struct {
	t          testing.TB
	tokens     map[string]string
	principals string // MCP_EXAMPLE_PRINCIPALS=...
	stderr     *servertest.SyncBuffer
	mu         sync.Mutex
	handles    []string
	secrets    []string // passwords of state URLs, never to be logged
}

// fullKeyHash matches a whole 32-hex key hash (a Redis record key's tail).
var fullKeyHash = regexp.MustCompile(`:h:[0-9a-f]{32}\b`)

// newFx returns t's fixture. When t ends, no handle seen, no whole key hash
// and no password may appear in the replicas' stderr; on failure it is
// logged.
func newFx(t testing.TB) *fx {
	f := &fx{t: t, stderr: &servertest.SyncBuffer{}}
	f.tokens, f.principals = replicas.Principals()
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		logs := f.stderr.String()
		for _, h := range f.handles {
			if strings.Contains(logs, h) {
				t.Errorf("a handle appears in the replicas' stderr")
			}
		}
		for _, s := range f.secrets {
			if strings.Contains(logs, s) {
				t.Errorf("a state URL's password appears in the replicas' stderr")
			}
		}
		if fullKeyHash.MatchString(logs) {
			t.Errorf("a whole key hash (a Redis record key) appears in the replicas' stderr")
		}
		if strings.Contains(logs, "STDOUT: ") {
			t.Errorf("a replica wrote to its stdout")
		}
		if t.Failed() {
			t.Logf("replicas' stderr:\n%s", logs)
		}
	})
	return f
}

// seen records handles that must stay secret (checked at cleanup).
func (f *fx) seen(h ...string) {
	f.mu.Lock()
	f.handles = append(f.handles, h...)
	f.mu.Unlock()
}

// start runs a replica of l's example server in HTTP mode with its handle
// store on stateURL (MCP_RESUME_STATE_URL), the principals alice and bob,
// app sharedApp, and env; it is stopped when the test ends. A replica that
// does not start fails the test.
func (f *fx) start(l lang, stateURL string, env ...string) *replicas.Replica {
	f.t.Helper()
	argv := serverArgv(f.t, l)
	all := append([]string{"MCP_RESUME_STATE_URL=" + stateURL, f.principals, "EXAMPLE_APP=" + sharedApp,
		// A state root of the test's own: HTTP mode opens no resume store
		// and a Redis store no directory, but nothing may land in $HOME.
		"MCP_RESUME_STATE_DIR=" + filepath.Join(f.t.TempDir(), "state")}, env...)
	r, err := replicas.StartReplica(context.Background(), argv, all, prefixed{f.stderr, l.name + ": "})
	if err != nil {
		f.t.Fatalf("starting the %s replica: %v\nstderr:\n%s", l.title, err, f.stderr)
	}
	f.t.Cleanup(func() { r.Stop() })
	return r
}

// client connects to r as who ("alice" or "bob"); closed when the test
// ends. A failed handshake fails the test.
func (f *fx) client(r *replicas.Replica, who string) *replicas.Client {
	f.t.Helper()
	c, err := replicas.Connect(context.Background(), r.URL, f.tokens[who])
	if err != nil {
		f.t.Fatalf("connecting to %s as %s: %v", r.URL, who, err)
	}
	f.t.Cleanup(c.Close)
	return c
}

// prefixed writes each line to w with a prefix (the replica's language).
type prefixed struct {
	w      *servertest.SyncBuffer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	p.w.Write([]byte(p.prefix))
	return p.w.Write(b)
}
