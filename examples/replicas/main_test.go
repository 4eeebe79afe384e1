//go:build linux && replicas

package replicas_test

// The suite's spine: flags, TestMain, the three example servers, and the
// per-test fixture that starts HTTP replicas of them on one Redis and
// connects clients as alice or bob.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/examples/replicas"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

var (
	require    = flag.Bool("replicas.require", false, "fail, rather than skip, when a language's server cannot run (make test-replicas)")
	casOps     = flag.Int("replicas.cas-ops", 5, "concurrency test: successful appends per client (3 replicas × 8 clients)")
	wantServer = flag.String("replicas.server", "", "fail unless the redis-server on PATH is this server_name (redis or valkey)")
	updateTbl  = flag.Bool("update-replica-table", false, "rewrite the Redis fault table in docs/RELIABILITY.md from this run")
)

// bin holds the binaries TestMain builds (the Go example server; the
// broker too, which these tests do not use: HTTP mode has no resume).
var bin servertest.Binaries

func TestMain(m *testing.M) {
	flag.Parse()
	if *require {
		os.Setenv(servertest.EnvRequireServers, "1")
	}
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

// fx is one test's fixture: the principals' tokens, the replicas it
// starts, and the handles seen, which must never appear in their stderr.
type fx struct {
	t          testing.TB
	tokens     map[string]string
	principals string // MCP_EXAMPLE_PRINCIPALS=...
	broker     *mcphost.Broker
	mu         sync.Mutex
	servers    []*servertest.HTTPServer
	handles    []string
	secrets    []string // passwords of state URLs, never to be logged
}

// fullKeyHash matches a whole 32-hex key hash (a Redis record key's tail).
var fullKeyHash = regexp.MustCompile(`:h:[0-9a-f]{32}\b`)

// newFx returns t's fixture. When t ends, no handle seen, no whole key hash
// and no password may appear in the replicas' stderr; on failure it is
// logged.
func newFx(t testing.TB) *fx {
	f := &fx{t: t}
	f.tokens, f.principals = replicas.Principals()
	// session_info, the tool that shows a replica serving while its
	// store cannot, reports the replica's broker session.
	b, err := mcphost.StartBroker(context.Background(), bin.Broker, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.broker = b
	t.Cleanup(b.Stop)
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		var logs string
		for _, s := range f.servers {
			logs += s.Stderr.String()
		}
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
	})
	return f
}

// seen records handles that must stay secret (checked at cleanup).
func (f *fx) seen(h ...string) {
	f.mu.Lock()
	f.handles = append(f.handles, h...)
	f.mu.Unlock()
}

// start runs a replica of l's example server in HTTP mode
// (servertest.StartHTTP) with its handle store on stateURL
// (MCP_RESUME_STATE_URL), the principals alice and bob, app sharedApp, and
// env; it is stopped when the test ends, which also checks that its stdout
// stayed empty and that it exited with status 0.
func (f *fx) start(l lang, stateURL string, env ...string) *servertest.HTTPServer {
	f.t.Helper()
	all := append([]string{"MCP_RESUME_STATE_URL=" + stateURL, f.principals, "EXAMPLE_APP=" + sharedApp,
		"MCP_EXAMPLE_BROKER_URL=" + f.broker.URL,
		// A state root of the test's own: HTTP mode opens no resume store
		// and a Redis store no directory, but nothing may land in $HOME.
		"MCP_RESUME_STATE_DIR=" + filepath.Join(f.t.TempDir(), "state")}, env...)
	s := servertest.StartHTTP(f.t, l.name, all)
	f.mu.Lock()
	f.servers = append(f.servers, s)
	f.mu.Unlock()
	return s
}

// client connects to s as who ("alice" or "bob"); closed when the test
// ends. A failed handshake fails the test.
func (f *fx) client(s *servertest.HTTPServer, who string) *replicas.Client {
	f.t.Helper()
	return &replicas.Client{Notebooks: mcphost.Notebooks{Session: servertest.ConnectHTTP(f.t, s.URL, f.tokens[who])}}
}

// TestServer names the server the suite runs against (INFO server's
// server_name and version: Debian's redis-server, or Valkey when
// `make test-replicas-valkey` names its binary in MCP_RESUME_REDIS_SERVER),
// and fails when -replicas.server names another.
func TestServer(t *testing.T) {
	rs := redistest.Start(t)
	v, err := rs.Do("INFO", "server")
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]string{"server_name": "redis"} // Redis 7.0 has no server_name
	for _, line := range strings.Split(fmt.Sprint(v), "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			info[k] = val
		}
	}
	t.Logf("server: %s, redis_version %s, valkey_version %s", info["server_name"], info["redis_version"], info["valkey_version"])
	if *wantServer != "" && info["server_name"] != *wantServer {
		t.Fatalf("the suite runs against %s (redis_version %s), not %s", info["server_name"], info["redis_version"], *wantServer)
	}
}
