//go:build linux && faults

package faults_test

// Infrastructure of faults 31 (faults_key_test.go): servers kept alive
// while others launch, network namespaces in which the test's broker
// answers at the same URL as outside, and MCP clients of a server whose
// stdio is a TCP connection (socat).

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// held is a server launched as an MCP host would and kept running, so that
// other launches happen while it lives.
type held struct {
	srv  *running
	info mcphost.SessionInfo
	err  error
}

// start launches argv (env: f.Vars and extra) with pipes, asks
// session_info and keeps note (if any); the server keeps running until
// stop or crash (or the test's end). By the time start returns, the
// server's store has loaded and stored: the example servers answer
// session_info once their broker session is established. A server that
// cannot be started fails the test (Fatal).
func (f *fx) start(argv, extra []string, note string) *held {
	f.t.Helper()
	ctx := context.Background()
	srv, err := startServer(ctx, argv, append(f.Vars(), extra...), f.Stderr, false)
	if err != nil {
		f.t.Fatalf("starting %v: %v\nstderr:\n%s", argv, err, f.Stderr)
	}
	f.t.Cleanup(func() {
		if srv.cmd.ProcessState == nil {
			srv.kill()
		}
	})
	h := &held{srv: srv}
	h.err = srv.call(ctx, "session_info", map[string]any{}, &h.info)
	if h.err == nil && note != "" {
		h.err = srv.call(ctx, "remember", map[string]any{"note": note}, nil)
	}
	if h.err != nil || h.info.SessionID == "" {
		f.t.Fatalf("%v did not answer session_info: %v\nstderr:\n%s", argv, h.err, f.Stderr)
	}
	return h
}

// stop ends a held server as its host would: recall, session_info again
// (the same answer: alive), then the server is killed; the launch is
// recorded (f.record) and returned.
func (f *fx) stop(h *held) launchResult {
	f.t.Helper()
	ctx := context.Background()
	var notes struct {
		Notes []string `json:"notes"`
	}
	var again mcphost.SessionInfo
	err := h.err
	if err == nil {
		err = h.srv.call(ctx, "recall", map[string]any{}, &notes)
	}
	if err == nil {
		err = h.srv.call(ctx, "session_info", map[string]any{}, &again)
	}
	h.srv.kill()
	return f.end(h, notes.Notes, err == nil && again == h.info, err)
}

// crash SIGKILLs a held server's process group after it answered
// session_info once more (alive up to the crash), and records the launch.
func (f *fx) crash(h *held) launchResult {
	f.t.Helper()
	var again mcphost.SessionInfo
	err := h.err
	if err == nil {
		err = h.srv.call(context.Background(), "session_info", map[string]any{}, &again)
	}
	syscall.Kill(-h.srv.cmd.Process.Pid, syscall.SIGKILL)
	h.srv.kill()
	return f.end(h, nil, err == nil && again == h.info, err)
}

// end records the launch of a held server that has stopped.
func (f *fx) end(h *held, notes []string, alive bool, err error) launchResult {
	f.t.Helper()
	r := launchResult{SessionID: h.info.SessionID, Resumed: h.info.Resumed, Notes: notes, Alive: alive, NonJSON: h.srv.stdout.nonJSONRPC()}
	if err != nil {
		r.Err = err.Error()
	}
	f.record(r)
	return r
}

// netNSSeq numbers the network namespaces this test process creates.
var netNSSeq atomic.Int64

// netNS is a named network namespace (`ip netns add`) in which the test's
// broker answers at the URL it has outside (MCP_EXAMPLE_BROKER_URL, a
// loopback address), so that servers launched in it keep the environment of
// servers launched outside: its loopback is up, and a socat inside listens
// on the broker's port and forwards each connection through a Unix socket
// with a path (a path is reachable from every network namespace) to a socat
// outside that connects to the broker.
type netNS struct {
	name string
}

// newNetNS creates a network namespace for f's broker (tag names it in
// messages) and deletes it, and its socat processes, when the test ends.
func newNetNS(t *testing.T, f *fx, tag string) netNS {
	t.Helper()
	u, err := brokerAddr(f.Broker.URL)
	if err != nil {
		t.Fatal(err)
	}
	ns := netNS{name: fmt.Sprintf("mcprf%d-%d-%s", os.Getpid(), netNSSeq.Add(1), tag)}
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", args, err, out)
		}
	}
	run("ip", "netns", "add", ns.name)
	t.Cleanup(func() { exec.Command("ip", "netns", "delete", ns.name).Run() })
	run("ip", "-n", ns.name, "link", "set", "lo", "up")
	sock := filepath.Join(t.TempDir(), "broker.sock")
	daemon(t, "socat", "UNIX-LISTEN:"+sock+",fork", "TCP:"+u)
	waitFor(t, "socat's Unix socket "+sock, func() bool { _, err := os.Stat(sock); return err == nil })
	_, port, _ := net.SplitHostPort(u)
	inside := daemon(t, "ip", "netns", "exec", ns.name, "socat", "TCP-LISTEN:"+port+",bind=127.0.0.1,reuseaddr,fork", "UNIX-CONNECT:"+sock)
	waitFor(t, "socat listening on "+u+" in "+ns.name, func() bool { return listens(inside, port) })
	return ns
}

// exec is argv launched in the namespace by `ip netns exec`, which also
// gives it a new mount namespace (with the namespace's /etc/netns files
// and its own /sys).
func (ns netNS) exec(argv []string) []string {
	return append([]string{"ip", "netns", "exec", ns.name}, argv...)
}

// enter is argv launched in the namespace by `nsenter --net`, which enters
// the network namespace alone.
func (ns netNS) enter(argv []string) []string {
	return append([]string{"nsenter", "--net=/run/netns/" + ns.name}, argv...)
}

// brokerAddr returns host:port of an http:// base URL.
func brokerAddr(base string) (string, error) {
	hp, ok := strings.CutPrefix(base, "http://")
	if !ok {
		return "", fmt.Errorf("broker URL %q: want http://host:port", base)
	}
	return strings.TrimSuffix(hp, "/"), nil
}

// daemon starts argv in its own process group, stderr discarded, and kills
// the group when the test ends. It returns the process's pid.
func daemon(t *testing.T, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd.Process.Pid
}

// waitFor polls ok for up to 10 s; it fails the test (Fatal) naming what
// it waited for.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("waited 10s for %s", what)
}

// listens reports whether pid's network namespace has a TCP socket
// listening on 127.0.0.1:port (/proc/<pid>/net/tcp, state 0A).
func listens(pid int, port string) bool {
	p, err := strconv.Atoi(port)
	if err != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false
	}
	want := fmt.Sprintf("0100007F:%04X", p)
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 3 && fields[1] == want && fields[3] == "0A" {
			return true
		}
	}
	return false
}

// startSocat runs `socat TCP-LISTEN:<port>,bind=127.0.0.1,reuseaddr,fork
// EXEC:<argv>,nofork` with f.Vars and extra in its environment and its
// stderr (and so the servers') in f.Stderr, waits until it listens and
// returns host:port. Each connection's socat child execs the server in
// place (nofork), so the accepted TCP socket is the server's stdin and
// stdout and the listener is its parent. The listener is killed when the
// test ends.
func startSocat(t *testing.T, f *fx, argv, extra []string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("socat", "TCP-LISTEN:"+port+",bind=127.0.0.1,reuseaddr,fork", "EXEC:"+strings.Join(argv, " ")+",nofork")
	cmd.Env = append(append(os.Environ(), f.Vars()...), extra...)
	cmd.Stderr = f.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	waitFor(t, "socat listening on "+addr, func() bool { return listens(cmd.Process.Pid, port) })
	return addr
}

// launchTCP is launchOnce for a server behind socat (startSocat): an MCP
// client connects to addr, asks session_info, keeps note (if any),
// recalls, asks session_info again and closes the connection, which ends
// the server. The result is recorded.
func (f *fx) launchTCP(addr, note string) launchResult {
	f.t.Helper()
	ctx := context.Background()
	var res launchResult
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		f.t.Fatal(err)
	}
	out := &stdoutLog{}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-resume-faults-host", Version: "0.1.0"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	session, err := client.Connect(cctx, &mcp.IOTransport{Reader: readCloser{io.TeeReader(conn, out), conn}, Writer: conn}, nil)
	cancel()
	if err != nil {
		conn.Close()
		f.t.Fatalf("MCP over %s: %v\nstderr:\n%s", addr, err, f.Stderr)
	}
	srv := &running{session: session, stdout: out}
	var info, again mcphost.SessionInfo
	var notes struct {
		Notes []string `json:"notes"`
	}
	err = srv.call(ctx, "session_info", map[string]any{}, &info)
	if err == nil && note != "" {
		err = srv.call(ctx, "remember", map[string]any{"note": note}, nil)
	}
	if err == nil {
		err = srv.call(ctx, "recall", map[string]any{}, &notes)
	}
	if err == nil {
		err = srv.call(ctx, "session_info", map[string]any{}, &again)
	}
	session.Close()
	conn.Close()
	res.SessionID, res.Resumed, res.Notes = info.SessionID, info.Resumed, notes.Notes
	res.Alive = err == nil && info.SessionID != "" && again == info
	if err != nil {
		res.Err = err.Error()
	}
	res.NonJSON = out.nonJSONRPC()
	f.record(res)
	return res
}

// entry is one launch of a server by this test as its MCP host: its
// command line, the variables added to its environment, and its name in
// messages.
type entry struct {
	argv, env []string
	name      string
}

// apartThenOwn launches a (which stores a session), then b, then a again,
// and fails t when b resumed a's session or a's relaunch did not resume its
// own: the check of every row whose two launches must not share a session
// though one host starts both (15, 31c, 31d, 31e, 31g). It returns whether
// b got a's session or resumed at all, for the row's wrong-resume cell.
func apartThenOwn(t *testing.T, f *fx, a, b entry) bool {
	t.Helper()
	first := f.launch(a.argv, a.env, a.name)
	second := f.launch(b.argv, b.env, "")
	again := f.launch(a.argv, a.env, "")
	wrong := second.SessionID == first.SessionID || second.Resumed
	if wrong {
		t.Errorf("%s resumed %s's session: %+v", b.name, a.name, second)
	}
	if !again.Resumed || again.SessionID != first.SessionID {
		t.Errorf("%s relaunched: %+v, want %s resumed", a.name, again, first.SessionID)
	}
	return wrong
}
