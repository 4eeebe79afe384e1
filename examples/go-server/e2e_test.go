package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// End-to-end: the real broker, the real go-server binary (the real plugin in
// the Go host), launched by the official Go SDK client with this test
// process as the MCP host.

// bin holds the binaries TestMain builds: examples/broker and this server.
var bin servertest.Binaries

// TestMain builds the broker and this server (servertest.Main). A helper
// host process (E2E_HELPER_HOST=1) runs helperHost instead.
func TestMain(m *testing.M) {
	if os.Getenv("E2E_HELPER_HOST") == "1" {
		os.Exit(helperHost())
	}
	servertest.Main(m, "mcp-resume-e2e-", &bin)
}

// env is one test's servertest.Env (broker, state directory, servers'
// stderr) with this file's launching and checks.
type env struct{ *servertest.Env }

// newEnv starts t's broker and state directory for the Go server's app.
func newEnv(t *testing.T) *env { return &env{servertest.NewEnv(t, bin.Broker, "example-go")} }

// launch starts the server via argv, returns its session_info, remembers note
// (if any) and recalls, then kills it as a host does.
func (e *env) launch(argv []string, note string) (mcphost.SessionInfo, []string) {
	e.T.Helper()
	ctx := context.Background()
	srv, err := mcphost.Launch(ctx, argv, e.Vars(), e.Stderr)
	if err != nil {
		e.T.Fatalf("%v\nserver stderr:\n%s", err, e.Stderr)
	}
	defer srv.Kill()
	info, err := srv.SessionInfo(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	if note != "" {
		if err := srv.Remember(ctx, note); err != nil {
			e.T.Fatal(err)
		}
	}
	notes, err := srv.Recall(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	return info, notes
}

func (e *env) tokenFiles() []string {
	matches, _ := filepath.Glob(filepath.Join(e.StateDir, "token-*"))
	return matches
}

// checkNoTokenInLogs fails if any token file's content appears in the logs.
func (e *env) checkNoTokenInLogs() {
	for _, f := range e.tokenFiles() {
		if tok, _ := os.ReadFile(f); len(tok) > 0 && strings.Contains(e.Stderr.String(), string(tok)) {
			e.T.Errorf("a token appears in the server's stderr")
		}
	}
}

func TestResume_Launchers(t *testing.T) {
	sh := func(inner string) []string { return []string{"sh", "-c", inner + "; exit $?"} }
	for name, argv := range map[string][]string{
		"direct": {bin.Server},
		// "; exit $?" keeps sh from exec'ing the server, so sh stays in the chain.
		"sh -c": sh(bin.Server),
		// host -> sh -> env -> sh -> server: two launcher levels (env execs sh).
		"two-level chain": sh(`env sh -c "` + bin.Server + `; exit \$?"`),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			first, _ := e.launch(argv, "remember me")
			if first.Resumed {
				t.Fatalf("first launch resumed a session: %+v", first)
			}
			second, notes := e.launch(argv, "")
			if !second.Resumed || second.SessionID != first.SessionID {
				t.Fatalf("relaunch: got %+v, want session %s resumed\nstderr:\n%s", second, first.SessionID, e.Stderr)
			}
			if len(notes) != 1 || notes[0] != "remember me" {
				t.Errorf("recall after resume = %q, want [remember me]", notes)
			}
			// The host is this test process, whatever launchers stood between.
			want := fmt.Sprintf("token-%d-", os.Getpid())
			if files := e.tokenFiles(); len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), want) {
				t.Errorf("token files = %v, want one named %s<start time>", files, want)
			}
			for _, line := range []string{"Token file not found (first run or clean slate)", "Session resumed successfully"} {
				if !strings.Contains(e.Stderr.String(), line) {
					t.Errorf("stderr lacks %q", line)
				}
			}
			e.checkNoTokenInLogs()
		})
	}
}

func TestResume_CorruptFile(t *testing.T) {
	e := newEnv(t)
	first, _ := e.launch([]string{bin.Server}, "")
	files := e.tokenFiles()
	if len(files) != 1 {
		t.Fatalf("token files = %v", files)
	}
	if err := os.WriteFile(files[0], []byte("\x00\xffgarbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	second, _ := e.launch([]string{bin.Server}, "")
	if second.Resumed || second.SessionID == first.SessionID {
		t.Fatalf("resumed from a corrupt file: %+v", second)
	}
	if !strings.Contains(e.Stderr.String(), "Token file corrupted, treating as stale") {
		t.Errorf("stderr lacks the corruption line:\n%s", e.Stderr)
	}
	third, _ := e.launch([]string{bin.Server}, "")
	if !third.Resumed || third.SessionID != second.SessionID {
		t.Errorf("after recovery: %+v, want %s resumed", third, second.SessionID)
	}
}

func TestResume_BrokerRejects(t *testing.T) {
	e := newEnv(t)
	// The new broker listens on another URL, which would change the default
	// instance key (MCP_EXAMPLE_BROKER_URL is part of the environment) and
	// so the token file: declare the instance to keep one file.
	e.Extra = []string{"MCP_RESUME_INSTANCE=broker-test"}
	first, _ := e.launch([]string{bin.Server}, "")
	// A new broker knows none of the old one's tokens.
	e.Broker.Stop()
	e.StartBroker()
	second, _ := e.launch([]string{bin.Server}, "")
	if second.Resumed || second.SessionID == first.SessionID {
		t.Fatalf("resumed a session the broker does not know: %+v", second)
	}
	if !strings.Contains(e.Stderr.String(), "Broker rejected resume token, starting fresh session") {
		t.Errorf("stderr lacks the rejection line:\n%s", e.Stderr)
	}
	third, _ := e.launch([]string{bin.Server}, "")
	if !third.Resumed || third.SessionID != second.SessionID {
		t.Errorf("after rejection: %+v, want %s resumed", third, second.SessionID)
	}
}

func TestResume_IdentityUnavailable(t *testing.T) {
	// A host that looks like a reaper (init, tini, dumb-init…) cannot be told
	// apart from other processes sharing it: the plugin refuses it. A copy of sh
	// named dumb-init is such a host, and it is not a launcher to skip.
	reaper := filepath.Join(t.TempDir(), "dumb-init")
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(reaper, b, 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	argv := []string{reaper, "-c", bin.Server + "; exit $?"}
	first, _ := e.launch(argv, "")
	second, _ := e.launch(argv, "")
	if first.Resumed || second.Resumed || first.SessionID == second.SessionID {
		t.Fatalf("resume happened without a verified host: %+v %+v", first, second)
	}
	if !strings.Contains(e.Stderr.String(), "Could not verify parent process start time, session resume disabled for this instance") {
		t.Errorf("stderr lacks the identity line:\n%s", e.Stderr)
	}
	if _, err := os.Stat(e.StateDir); !os.IsNotExist(err) {
		t.Errorf("state directory was created although resume is off (stat: %v)", err)
	}
}

// TestResume_TwoHosts runs two MCP hosts at once, this process and a child
// process, each launching and relaunching the server: each resumes its own
// session and never the other's.
func TestResume_TwoHosts(t *testing.T) {
	e := newEnv(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command(self, "-test.run=^$")
	child.Env = append(os.Environ(), append(e.Vars(), "E2E_HELPER_HOST=1", "E2E_SERVER="+bin.Server)...)
	var out bytes.Buffer
	child.Stdout, child.Stderr = &out, e.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	mineFirst, _ := e.launch([]string{bin.Server}, "host A")
	mineSecond, notes := e.launch([]string{bin.Server}, "")
	if err := child.Wait(); err != nil {
		t.Fatalf("helper host: %v\n%s", err, e.Stderr)
	}
	var theirs [2]mcphost.SessionInfo
	if err := json.Unmarshal(out.Bytes(), &theirs); err != nil {
		t.Fatalf("helper host printed %q: %v", out.String(), err)
	}
	if !mineSecond.Resumed || mineSecond.SessionID != mineFirst.SessionID || len(notes) != 1 || notes[0] != "host A" {
		t.Errorf("host A: %+v then %+v, notes %q", mineFirst, mineSecond, notes)
	}
	if !theirs[1].Resumed || theirs[1].SessionID != theirs[0].SessionID {
		t.Errorf("host B: %+v then %+v", theirs[0], theirs[1])
	}
	if theirs[0].SessionID == mineFirst.SessionID {
		t.Errorf("the two hosts share session %s", mineFirst.SessionID)
	}
	// Host B has exited: the next server start under host A prunes B's file
	// (its host is gone) and keeps A's.
	e.launch([]string{bin.Server}, "")
	files := e.tokenFiles()
	if len(files) != 1 || !strings.HasPrefix(filepath.Base(files[0]), fmt.Sprintf("token-%d-", os.Getpid())) {
		t.Errorf("token files = %v, want only host A's (pid %d); host B (pid %d) is gone", files, os.Getpid(), child.Process.Pid)
	}
}

// helperHost is the second MCP host of TestResume_TwoHosts: launch, relaunch,
// print both session_infos as JSON.
func helperHost() int {
	ctx := context.Background()
	var infos []mcphost.SessionInfo
	for i := 0; i < 2; i++ {
		srv, err := mcphost.Launch(ctx, []string{os.Getenv("E2E_SERVER")}, nil, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		info, err := srv.SessionInfo(ctx)
		srv.Kill()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		infos = append(infos, info)
	}
	json.NewEncoder(os.Stdout).Encode(infos)
	return 0
}

// TestResume_SeveralInstances: one MCP host runs two copies of the server at
// once. Copies launched differently (here, different arguments) keep their
// own sessions; identical copies never share one: the second finds the
// first's lock busy and marks the key ambiguous, and from then on neither
// resumes it (spec 000's Known Limitation, one session per host, lifted by
// the instance key, the token file's lock and the ambiguity marker).
func TestResume_SeveralInstances(t *testing.T) {
	ctx := context.Background()
	launchBoth := func(e *env, a, b []string) (mcphost.SessionInfo, mcphost.SessionInfo) {
		t.Helper()
		first, err := mcphost.Launch(ctx, a, e.Vars(), e.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		defer first.Kill()
		infoA, err := first.SessionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		second, err := mcphost.Launch(ctx, b, e.Vars(), e.Stderr)
		if err != nil {
			t.Fatal(err)
		}
		defer second.Kill()
		infoB, err := second.SessionInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return infoA, infoB
	}

	t.Run("launched differently", func(t *testing.T) {
		e := newEnv(t)
		work, home := []string{bin.Server, "--profile", "work"}, []string{bin.Server, "--profile", "home"}
		a1, b1 := launchBoth(e, work, home)
		if a1.SessionID == b1.SessionID {
			t.Fatalf("two instances share session %s", a1.SessionID)
		}
		a2, b2 := launchBoth(e, work, home)
		if !a2.Resumed || a2.SessionID != a1.SessionID || !b2.Resumed || b2.SessionID != b1.SessionID {
			t.Fatalf("relaunch: work %+v (was %s), home %+v (was %s)\n%s", a2, a1.SessionID, b2, b1.SessionID, e.Stderr)
		}
		if n := len(e.tokenFiles()); n != 2 {
			t.Errorf("%d token files, want one per instance", n)
		}
	})

	t.Run("identical", func(t *testing.T) {
		e := newEnv(t)
		argv := []string{bin.Server}
		a1, b1 := launchBoth(e, argv, argv)
		if b1.Resumed || b1.SessionID == a1.SessionID {
			t.Fatalf("the second identical instance got %+v, first had %s", b1, a1.SessionID)
		}
		if !strings.Contains(e.Stderr.String(), "Two server instances under this host were launched identically") {
			t.Errorf("stderr lacks the instance_ambiguous line:\n%s", e.Stderr)
		}
		// Two live instances of one key cannot be told apart, so the key
		// stays ambiguous: after both exited, the next launch resumes
		// neither's session (the one that held the lock would otherwise
		// hand its session to whichever entry the host starts first).
		again, _ := e.launch(argv, "")
		if again.Resumed || again.SessionID == a1.SessionID || again.SessionID == b1.SessionID {
			t.Errorf("after both exited: %+v, want a fresh session (first %s, second %s)", again, a1.SessionID, b1.SessionID)
		}
	})
}

// TestResume_Off: with MCP_RESUME=off the real server answers its tools (a
// fresh broker session every launch), logs the plugin's resume_off line on
// stderr and creates no state directory.
func TestResume_Off(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var ids []string
	for i := 0; i < 2; i++ {
		srv, err := mcphost.Launch(ctx, []string{bin.Server}, append(e.Vars(), "MCP_RESUME=off"), e.Stderr)
		if err != nil {
			t.Fatalf("%v\nserver stderr:\n%s", err, e.Stderr)
		}
		info, err := srv.SessionInfo(ctx)
		if err == nil {
			err = srv.Remember(ctx, "kept at the broker only")
		}
		srv.Kill()
		if err != nil {
			t.Fatalf("%v\nserver stderr:\n%s", err, e.Stderr)
		}
		if info.Resumed {
			t.Errorf("launch %d resumed with MCP_RESUME=off: %+v", i, info)
		}
		ids = append(ids, info.SessionID)
	}
	if ids[0] == ids[1] {
		t.Errorf("both launches got session %s with MCP_RESUME=off", ids[0])
	}
	if got := strings.Count(e.Stderr.String(), "Session resume turned off by MCP_RESUME=off"); got != 2 {
		t.Errorf("the resume_off line appears %d times on stderr, want once per launch:\n%s", got, e.Stderr)
	}
	if _, err := os.Stat(e.StateDir); !os.IsNotExist(err) {
		t.Errorf("state directory exists with MCP_RESUME=off (stat: %v)", err)
	}
}

// TestHandshake_BrokerUnreachable: the broker is down when the server
// starts. The MCP handshake still completes (it never waits for the broker),
// a tool call fails with a clear tool error, and the server keeps serving.
func TestHandshake_BrokerUnreachable(t *testing.T) {
	e := newEnv(t)
	url := e.Broker.URL
	e.Broker.Stop()
	e.StartBroker() // for newEnv's cleanup; the server is pointed at the dead URL
	ctx := context.Background()
	srv, err := mcphost.Launch(ctx, []string{bin.Server}, []string{"MCP_EXAMPLE_BROKER_URL=" + url, e.StateVar(e.StateDir)}, e.Stderr)
	if err != nil {
		t.Fatalf("initialize with the broker down: %v\nserver stderr:\n%s", err, e.Stderr)
	}
	defer srv.Kill()
	for i := 0; i < 2; i++ {
		_, err := srv.SessionInfo(ctx)
		if err == nil || !strings.Contains(err.Error(), "no broker session") {
			t.Fatalf("session_info #%d with the broker down: err = %v, want a tool error saying no broker session", i, err)
		}
	}
}
