package servertest

// The example servers' Streamable HTTP mode, one test per language, through
// this package's own helpers: real server processes (two replicas on one
// state directory, the file backend), the official Go SDK client.

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// bin holds the binaries Main builds (the Go server is StartHTTP's "go").
var bin Binaries

func TestMain(m *testing.M) { Main(m, "mcp-resume-servertest-", &bin) }

const (
	aliceToken = "alice-token-8c1f"
	bobToken   = "bob-token-51e2"
)

// httpEnv is the environment of replicas sharing stateDir: the file
// backend (any MCP_RESUME_STATE_URL of the caller's cleared), alice and
// bob, no broker, one app for every language.
func httpEnv(stateDir string, principals bool) []string {
	env := []string{"MCP_RESUME_STATE_DIR=" + stateDir, "MCP_RESUME_STATE_URL=", "MCP_EXAMPLE_BROKER_URL=", "EXAMPLE_APP=example-http"}
	if principals {
		return append(env, "MCP_EXAMPLE_PRINCIPALS=alice:"+aliceToken+",bob:"+bobToken)
	}
	return append(env, "MCP_EXAMPLE_PRINCIPALS=")
}

func TestHTTP_Go(t *testing.T)         { testHTTP(t, "go") }
func TestHTTP_Python(t *testing.T)     { testHTTP(t, "python") }
func TestHTTP_TypeScript(t *testing.T) { testHTTP(t, "typescript") }

// testHTTP: two replicas of lang on one state directory; alice creates and
// adds on the first and reads back on the second; bob gets
// handle_not_found on both; a missing or wrong token gets 401 with
// WWW-Authenticate: Bearer; responses carry no Mcp-Session-Id; SIGTERM
// ends each replica with status 0 and nothing on stdout.
func testHTTP(t *testing.T, lang string) {
	state := t.TempDir()
	env := httpEnv(state, true)
	r1 := StartHTTP(t, lang, env)
	r2 := StartHTTP(t, lang, env)
	if r1.URL == r2.URL || !strings.HasPrefix(r1.URL, "http://127.0.0.1:") {
		t.Fatalf("replica URLs %q and %q: want two ports on 127.0.0.1", r1.URL, r2.URL)
	}

	alice1 := ConnectHTTP(t, r1.URL, aliceToken)
	tools, err := alice1.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"remember", "recall", "session_info", "notebook_create", "notebook_add", "notebook_read", "notebook_delete"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}

	c, isErr := CallTool(t, alice1, "notebook_create", nil)
	h, _ := c["handle"].(string)
	if isErr || h == "" {
		t.Fatalf("notebook_create as alice: %v", c)
	}
	if a, isErr := CallTool(t, alice1, "notebook_add", map[string]any{"handle": h, "note": "from replica 1"}); isErr || a["generation"] != float64(2) {
		t.Fatalf("notebook_add as alice on replica 1: %v, want generation 2", a)
	}

	alice2 := ConnectHTTP(t, r2.URL, aliceToken)
	got, isErr := CallTool(t, alice2, "notebook_read", map[string]any{"handle": h})
	if notes, _ := got["notes"].([]any); isErr || got["generation"] != float64(2) || len(notes) != 1 || notes[0] != "from replica 1" {
		t.Fatalf("notebook_read as alice on replica 2: %v, want [from replica 1] at generation 2", got)
	}

	for i, url := range []string{r1.URL, r2.URL} {
		bob := ConnectHTTP(t, url, bobToken)
		got, isErr := CallTool(t, bob, "notebook_read", map[string]any{"handle": h})
		if !isErr || got["error"] != "handle_not_found" {
			t.Errorf("notebook_read of alice's notebook as bob on replica %d: %v, want handle_not_found", i+1, got)
		}
		if got, isErr := CallTool(t, bob, "notebook_add", map[string]any{"handle": h, "note": "bob was here"}); !isErr || got["error"] != "handle_not_found" {
			t.Errorf("notebook_add to alice's notebook as bob on replica %d: %v, want handle_not_found", i+1, got)
		}
	}
	if got, _ := CallTool(t, alice2, "notebook_read", map[string]any{"handle": h}); got["generation"] != float64(2) {
		t.Errorf("alice's notebook after bob's attempts: %v, want generation 2", got)
	}

	for _, tok := range []string{"", "not-a-known-token", aliceToken + "x"} {
		status, hdr := PostStatus(t, r2.URL, tok)
		if status != 401 || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("POST with token %q: HTTP %d, WWW-Authenticate %q; want 401 and Bearer", tok, status, hdr.Get("WWW-Authenticate"))
		}
	}
	status, hdr := PostStatus(t, r2.URL, bobToken)
	if status != 200 || hdr.Get("Mcp-Session-Id") != "" {
		t.Errorf("initialize as bob: HTTP %d, Mcp-Session-Id %q; want 200 and none (stateless)", status, hdr.Get("Mcp-Session-Id"))
	}

	// The broker is optional in HTTP mode: without it the broker tools
	// answer a tool error, and the replica keeps serving.
	if got, isErr := CallTool(t, alice1, "session_info", nil); !isErr {
		t.Errorf("session_info without a broker: %v, want a tool error", got)
	}
	if got, isErr := CallTool(t, alice1, "notebook_read", map[string]any{"handle": h}); isErr {
		t.Errorf("notebook_read after a broker tool failed: %v", got)
	}

	for _, r := range []*HTTPServer{r1, r2} {
		if err := r.Stop(); err != nil {
			t.Errorf("%s replica: %v", lang, err)
		}
	}
}

// TestHTTP_Anonymous: without MCP_EXAMPLE_PRINCIPALS every language serves
// without a token, as the anonymous principal, and warns exactly once.
func TestHTTP_Anonymous(t *testing.T) {
	for _, lang := range Languages {
		t.Run(lang, func(t *testing.T) {
			r := StartHTTP(t, lang, httpEnv(t.TempDir(), false))
			sess := ConnectHTTP(t, r.URL, "")
			c, isErr := CallTool(t, sess, "notebook_create", nil)
			if isErr {
				t.Fatalf("notebook_create, anonymous: %v", c)
			}
			if got, isErr := CallTool(t, sess, "notebook_read", map[string]any{"handle": c["handle"]}); isErr || got["generation"] != float64(1) {
				t.Errorf("notebook_read, anonymous: %v", got)
			}
			if err := r.Stop(); err != nil {
				t.Error(err)
			}
			if n := strings.Count(r.Stderr.String(), "MCP_EXAMPLE_PRINCIPALS"); n != 1 {
				t.Errorf("stderr names MCP_EXAMPLE_PRINCIPALS %d times, want one warning:\n%s", n, r.Stderr)
			}
		})
	}
}

// TestHTTP_BadPrincipals: a malformed MCP_EXAMPLE_PRINCIPALS stops every
// language at start with status 2 and a message naming the variable but
// not the token, and nothing on stdout.
func TestHTTP_BadPrincipals(t *testing.T) {
	for _, lang := range Languages {
		t.Run(lang, func(t *testing.T) {
			for _, bad := range []string{"alice", "alice:secret-1,bob:", ":secret-2", "alice:secret-3,bob:secret-3"} {
				argv := append(ServerArgv(t, lang), "--http", "127.0.0.1:0")
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
				cmd.Dir = repoRoot(t)
				cmd.Env = append(os.Environ(), append(httpEnv(t.TempDir(), false), "MCP_EXAMPLE_PRINCIPALS="+bad)...)
				var stdout, stderr SyncBuffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				cancel()
				if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 {
					t.Errorf("MCP_EXAMPLE_PRINCIPALS=%q: %v, want exit status 2; stderr:\n%s", bad, err, &stderr)
				}
				if !strings.Contains(stderr.String(), "MCP_EXAMPLE_PRINCIPALS") || strings.Contains(stderr.String(), "secret-") {
					t.Errorf("MCP_EXAMPLE_PRINCIPALS=%q: stderr must name the variable and no token:\n%s", bad, &stderr)
				}
				if stdout.String() != "" {
					t.Errorf("MCP_EXAMPLE_PRINCIPALS=%q: stdout %q, want nothing", bad, stdout.String())
				}
			}
		})
	}
}
