package servertest

// The example servers in Streamable HTTP mode (--http 127.0.0.1:0), for the
// tests that run them as replicas: StartHTTP launches one (Go, Python or
// TypeScript), ConnectHTTP connects the official Go SDK client to it with a
// bearer token, CallTool calls a tool and decodes its JSON, PostStatus sends
// a raw request (for the 401 checks).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnvRequireServers, set to "1", makes StartHTTP fail a test (instead of
// skipping it) when the Python or TypeScript example server is not built
// (`make python-setup`, `make typescript-setup`).
const EnvRequireServers = "MCP_EXAMPLE_REQUIRE_SERVERS"

// Languages are the example servers StartHTTP knows, by name.
var Languages = []string{"go", "python", "typescript"}

// startWait bounds how long StartHTTP waits for a server's "listening"
// line (a Python server's first start on a cold cache compiles the plugin).
const startWait = 90 * time.Second

// stopWait bounds how long Stop waits for a server to exit after SIGTERM
// before it kills it.
const stopWait = 15 * time.Second

// listeningURL is the URL in a server's "listening ... url=http://.../mcp"
// stderr line.
var listeningURL = regexp.MustCompile(`listening.*url=(http://\S+/mcp)`)

// HTTPServer is one example server running in HTTP mode, started by
// StartHTTP; the test's cleanup stops it (Stop) unless the test did.
type HTTPServer struct {
	// URL is the server's MCP endpoint, http://127.0.0.1:<port>/mcp, as it
	// logged it.
	URL string
	// Lang is the language StartHTTP was given ("go", "python", "typescript").
	Lang string
	// Argv is the command line it runs (absolute paths).
	Argv []string
	// Stdout and Stderr collect the process's output; stdout must stay
	// empty (Stop checks it).
	Stdout, Stderr *SyncBuffer
	// Pid is the server's process ID.
	Pid int

	t        testing.TB
	cmd      *exec.Cmd
	done     chan struct{} // closed once the process has exited
	waitErr  error         // cmd.Wait's, valid once done is closed
	stopOnce sync.Once
	stopErr  error
}

// repoRoot is the module root: the nearest directory above the working
// directory (a test's package directory) that holds go.mod.
func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("servertest: no go.mod above the working directory")
		}
		dir = up
	}
}

// goServer is the Go example server's binary: Main's, else one built once
// per test binary into a temporary directory (left in the system's temp
// dir: a package that starts Go servers should use Main, which removes its
// own).
var goServer = struct {
	sync.Mutex
	path string
	dir  string
}{}

func goServerBin(t testing.TB) string {
	goServer.Lock()
	defer goServer.Unlock()
	if goServer.path != "" {
		return goServer.path
	}
	dir, err := os.MkdirTemp("", "mcp-resume-servertest-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "go-server")
	if b, err := exec.Command("go", "build", "-o", out, serverPkg).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("go build %s: %v\n%s", serverPkg, err, b)
	}
	goServer.path, goServer.dir = out, dir
	return out
}

// ServerArgv is the command line (absolute paths) of lang's example server:
// "go" the binary Main built (or one built now), "python"
// <root>/.venv/bin/python examples/python-server/server.py, "typescript"
// node examples/typescript-server/dist/server.js. A Python or TypeScript
// server that is not set up skips t, naming the make target (fails t when
// MCP_EXAMPLE_REQUIRE_SERVERS=1); an unknown lang fails t.
func ServerArgv(t testing.TB, lang string) []string {
	t.Helper()
	root := repoRoot(t)
	missing := func(what, target string) []string {
		msg := fmt.Sprintf("the %s example server is not set up (%s): run `make %s`", lang, what, target)
		if os.Getenv(EnvRequireServers) == "1" {
			t.Fatal(msg)
		}
		t.Skip("SKIPPED: " + msg)
		return nil
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	switch lang {
	case "go":
		return []string{goServerBin(t)}
	case "python":
		py := filepath.Join(root, ".venv", "bin", "python")
		if !exists(py) {
			return missing(py+" is missing", "python-setup")
		}
		if out, err := exec.Command(py, "-c", "import mcp_resume, mcp, uvicorn").CombinedOutput(); err != nil {
			return missing(fmt.Sprintf("%s cannot import mcp_resume, mcp and uvicorn: %v %s", py, err, strings.TrimSpace(string(out))), "python-setup")
		}
		return []string{py, filepath.Join(root, "examples", "python-server", "server.py")}
	case "typescript":
		node, err := exec.LookPath("node")
		if err != nil {
			return missing("node is not on PATH", "typescript-setup")
		}
		script := filepath.Join(root, "examples", "typescript-server", "dist", "server.js")
		for _, p := range []string{script, filepath.Join(root, "sdk-bindings", "typescript", "dist", "index.js")} {
			if !exists(p) {
				return missing(p+" is missing", "typescript-setup")
			}
		}
		return []string{node, script}
	}
	t.Fatalf("servertest: unknown language %q (want one of %v)", lang, Languages)
	return nil
}

// StartHTTP starts lang's example server ("go", "python", "typescript")
// with `--http 127.0.0.1:0` and this process's environment plus env
// (KEY=value; a later value wins), and waits (at most 90 s) for the
// "listening ... url=http://.../mcp" line on its stderr. A server that
// exits first or never says it listens fails t (Fatal, with its stderr).
// The test's cleanup stops it (Stop, which also checks that its stdout
// stayed empty and that it exited with status 0), and logs its stderr if t
// failed. A server that is not set up skips t (ServerArgv).
func StartHTTP(t testing.TB, lang string, env []string) *HTTPServer {
	t.Helper()
	argv := append(ServerArgv(t, lang), "--http", "127.0.0.1:0")
	s := &HTTPServer{Lang: lang, Argv: argv, Stdout: &SyncBuffer{}, Stderr: &SyncBuffer{}, t: t, done: make(chan struct{})}
	s.cmd = exec.Command(argv[0], argv[1:]...)
	s.cmd.Dir = repoRoot(t)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stdout, s.cmd.Stderr = s.Stdout, s.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s server: %v", lang, err)
	}
	s.Pid = s.cmd.Process.Pid
	go func() { s.waitErr = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("%s server (pid %d): %v", lang, s.Pid, err)
		}
		if t.Failed() {
			t.Logf("%s server (pid %d) stderr:\n%s", lang, s.Pid, s.Stderr)
		}
	})
	deadline := time.Now().Add(startWait)
	for {
		if m := listeningURL.FindStringSubmatch(s.Stderr.String()); m != nil {
			s.URL = m[1]
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("%s server exited before listening (%v); stderr:\n%s", lang, s.waitErr, s.Stderr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s server did not log a listening url within %v; stderr:\n%s", lang, startWait, s.Stderr)
		}
	}
}

// Stop sends SIGTERM and waits (at most 15 s, then SIGKILL) for the server
// to exit. It returns an error when the server did not exit by itself with
// status 0, or wrote anything on stdout. Later calls return the first
// call's answer; after Kill it checks stdout only.
func (s *HTTPServer) Stop() error {
	s.stopOnce.Do(func() {
		var errs []string
		select {
		case <-s.done:
			if s.waitErr != nil {
				errs = append(errs, fmt.Sprintf("exited before it was stopped: %v", s.waitErr))
			}
		default:
			_ = s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
				if s.waitErr != nil {
					errs = append(errs, fmt.Sprintf("SIGTERM: exit %v, want status 0", s.waitErr))
				}
			case <-time.After(stopWait):
				_ = s.cmd.Process.Kill()
				<-s.done
				errs = append(errs, fmt.Sprintf("still running %v after SIGTERM: killed", stopWait))
			}
		}
		if out := s.Stdout.String(); out != "" {
			errs = append(errs, fmt.Sprintf("wrote on stdout (must stay empty): %q", out))
		}
		if errs != nil {
			s.stopErr = fmt.Errorf("%s", strings.Join(errs, "; "))
		}
	})
	return s.stopErr
}

// Kill sends SIGKILL and waits for the process to end (a crash, for the
// tests that want one); Stop then checks only stdout.
func (s *HTTPServer) Kill() {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		if out := s.Stdout.String(); out != "" {
			s.stopErr = fmt.Errorf("wrote on stdout (must stay empty): %q", out)
		}
	})
}

// bearer is an http.RoundTripper that adds `Authorization: Bearer <token>`
// to every request (nothing for an empty token).
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// ConnectHTTP connects the official Go SDK client over Streamable HTTP to
// url (HTTPServer.URL), each request carrying `Authorization: Bearer
// <token>` (none when token is ""), with no standalone SSE stream (a
// stateless server has none). A failed connect (initialize) fails t
// (Fatal); the session is closed when t ends.
func ConnectHTTP(t testing.TB, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "servertest", Version: "0.1.0"}, nil)
	tr := &mcp.StreamableClientTransport{
		Endpoint:             url,
		HTTPClient:           &http.Client{Transport: bearer{token, http.DefaultTransport}, Timeout: 60 * time.Second},
		DisableStandaloneSSE: true,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sess, err := client.Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return sess
}

// CallTool calls tool with args (nil: none) and returns its answer decoded
// from JSON (the structured content, else the first text content; a text
// that is not a JSON object is returned as {"text": <text>}) and whether
// it is a tool error (isError). A failed call (transport, protocol) fails
// t (Fatal).
func CallTool(t testing.TB, sess *mcp.ClientSession, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	out := map[string]any{}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err == nil {
			return out, res.IsError
		}
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			if json.Unmarshal([]byte(tc.Text), &out) != nil {
				out = map[string]any{"text": tc.Text}
			}
			break
		}
	}
	return out, res.IsError
}

// PostStatus POSTs a JSON-RPC initialize request to url with
// `Authorization: Bearer <token>` (none when token is "") and returns the
// HTTP status and response header, for the checks that an unknown or
// missing token gets 401. A request that gets no response fails t (Fatal).
func PostStatus(t testing.TB, url, token string) (int, http.Header) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"servertest","version":"0.1.0"}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}
