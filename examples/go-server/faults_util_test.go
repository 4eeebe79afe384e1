//go:build linux && faults

package main_test

// Infrastructure for the fault-injection suite (faults_test.go): finding
// the three example servers (Go, Python, TypeScript), launching one with
// its stdout recorded, helper processes (this test package rebuilt with the
// faults tag and without -race, run in a helper mode), mount namespaces held
// open by a sleeping process, inotify watches, and the token format the
// stress helpers write (the Python and TypeScript stress helpers are
// testdata/faults_stress.py and testdata/faults_stress.mjs).
//
// Helper modes: the test binary looks at FAULTS_HELPER in init, before
// TestMain, so a helper process never builds anything or runs a test.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/host"
)

func init() {
	mode := os.Getenv("FAULTS_HELPER")
	if mode == "" {
		return
	}
	var code int
	switch mode {
	case "host":
		code = helperMCPHost()
	case "subreaper":
		code = helperSubreaper()
	case "storeloop":
		code = helperStoreLoop()
	case "loader":
		code = helperLoader()
	case "hammer":
		code = helperHammer()
	default:
		fmt.Fprintf(os.Stderr, "unknown FAULTS_HELPER %q\n", mode)
		code = 2
	}
	os.Exit(code)
}

// ---------------------------------------------------------------------------
// Launching the real server with the official MCP client, stdout recorded.

// stdoutLog records every byte a server writes to its stdout.
type stdoutLog struct{ syncBuffer }

// nonJSONRPC returns the stdout lines that are not JSON-RPC 2.0 messages,
// an unterminated last line included.
func (l *stdoutLog) nonJSONRPC() []string {
	var bad []string
	for _, line := range strings.SplitAfter(l.String(), "\n") {
		if line == "" {
			continue
		}
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if !strings.HasSuffix(line, "\n") || json.Unmarshal([]byte(line), &msg) != nil || msg.JSONRPC != "2.0" {
			if len(line) > 200 {
				line = line[:200] + "…"
			}
			bad = append(bad, line)
		}
	}
	return bad
}

type readCloser struct {
	io.Reader
	io.Closer
}

// running is one launched server and the MCP client session talking to it.
type running struct {
	cmd     *exec.Cmd
	session *mcp.ClientSession
	stdout  *stdoutLog
}

// startServer runs argv in its own process group, with env added to this
// process's environment and stderr to stderr, and completes the MCP
// handshake over its stdin/stdout, recording stdout. Its stdin and stdout
// are two pipes, as Go and Python hosts give, or with socketPair one socket
// pair, as Node (libuv) hosts give.
func startServer(ctx context.Context, argv, env []string, stderr io.Writer, socketPair bool) (*running, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	var in io.WriteCloser
	var out io.ReadCloser
	var serverEnd *os.File
	if socketPair {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		hostEnd := os.NewFile(uintptr(fds[0]), "host end")
		serverEnd = os.NewFile(uintptr(fds[1]), "server end")
		cmd.Stdin, cmd.Stdout = serverEnd, serverEnd
		in, out = hostEnd, hostEnd
	} else {
		var err error
		if in, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
		if out, err = cmd.StdoutPipe(); err != nil {
			return nil, err
		}
	}
	err := cmd.Start()
	if serverEnd != nil {
		serverEnd.Close()
	}
	if err != nil {
		return nil, err
	}
	r := &running{cmd: cmd, stdout: &stdoutLog{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-resume-faults-host", Version: "0.1.0"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	session, err := client.Connect(cctx, &mcp.IOTransport{Reader: readCloser{io.TeeReader(out, r.stdout), out}, Writer: in}, nil)
	if err != nil {
		r.kill()
		return nil, fmt.Errorf("connecting to %v: %w", argv, err)
	}
	r.session = session
	return r, nil
}

func (r *running) call(ctx context.Context, tool string, args map[string]any, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := r.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return fmt.Errorf("calling %s: %w", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	if res.IsError {
		return fmt.Errorf("tool %s failed: %s", tool, text.String())
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal([]byte(text.String()), v)
}

// kill ends the server and everything in its process group (launchers,
// orphans, namespace members) with SIGKILL, closes the session and reaps it.
func (r *running) kill() {
	if r.cmd.Process != nil {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		_ = r.cmd.Process.Kill()
	}
	if r.session != nil {
		r.session.Close()
	}
	_ = r.cmd.Wait()
}

// launchResult is what one launch observed; helper hosts send it as JSON.
type launchResult struct {
	SessionID string   `json:"session_id"`
	Resumed   bool     `json:"resumed"`
	Notes     []string `json:"notes"`
	// Alive: the server answered session_info, recall and session_info again
	// (same answer) after its startup had met the fault.
	Alive bool `json:"alive"`
	// NonJSON holds the stdout lines that were not JSON-RPC messages.
	NonJSON []string `json:"non_json"`
	Err     string   `json:"err,omitempty"`
}

// launchOnce launches argv as an MCP host would (see startServer for
// socketPair), asks session_info, keeps note (if any), recalls, asks
// session_info again, then kills the server.
func launchOnce(ctx context.Context, argv, env []string, stderr io.Writer, note string, socketPair bool) launchResult {
	return launchWith(ctx, argv, env, stderr, note, socketPair, nil)
}

// launchWith is launchOnce with hook, when not nil, called once the server
// answered its first session_info (and kept note), while it still runs, or
// with nil when it could not be started.
func launchWith(ctx context.Context, argv, env []string, stderr io.Writer, note string, socketPair bool, hook func(*running)) launchResult {
	var res launchResult
	srv, err := startServer(ctx, argv, env, stderr, socketPair)
	if err != nil {
		res.Err = err.Error()
		if hook != nil {
			hook(nil)
		}
		return res
	}
	var info, again mcphost.SessionInfo
	var notes struct {
		Notes []string `json:"notes"`
	}
	err = srv.call(ctx, "session_info", map[string]any{}, &info)
	if err == nil && note != "" {
		err = srv.call(ctx, "remember", map[string]any{"note": note}, nil)
	}
	if hook != nil {
		hook(srv)
	}
	if err == nil {
		err = srv.call(ctx, "recall", map[string]any{}, &notes)
	}
	if err == nil {
		err = srv.call(ctx, "session_info", map[string]any{}, &again)
	}
	srv.kill()
	res.SessionID, res.Resumed, res.Notes = info.SessionID, info.Resumed, notes.Notes
	res.Alive = err == nil && info.SessionID != "" && again == info
	if err != nil {
		res.Err = err.Error()
	}
	res.NonJSON = srv.stdout.nonJSONRPC()
	return res
}

// ---------------------------------------------------------------------------
// Privileges, namespaces, helper binary.

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		skipFault(t, "needs root (mounts, namespaces, setpriv); CI runs this suite as root")
	}
}

var unshareOK sync.Map // flags -> error

// requireUnshare skips unless `unshare <flags> true` works here.
func requireUnshare(t *testing.T, flags ...string) {
	t.Helper()
	requireRoot(t)
	key := strings.Join(flags, " ")
	v, ok := unshareOK.Load(key)
	if !ok {
		out, err := exec.Command("unshare", append(flags, "true")...).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%v: %s", err, out)
		}
		v, _ = unshareOK.LoadOrStore(key, err)
	}
	if err, _ := v.(error); err != nil {
		skipFault(t, fmt.Sprintf("unshare %s does not work here: %v", key, err))
	}
}

func requireTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		skipFault(t, name+" is not installed")
	}
	return p
}

var helper struct {
	once sync.Once
	path string
	err  error
}

// helperBin returns this test package built without -race, so that helper
// processes open stores at production speed (host.Open takes ~7x longer
// under the race detector). It is built once per test binary run.
func helperBin(t *testing.T) string {
	t.Helper()
	helper.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-resume-faults-bin-")
		if err != nil {
			helper.err = err
			return
		}
		os.Chmod(dir, 0o755)
		helper.path = filepath.Join(dir, "faults.test")
		cmd := exec.Command("go", "test", "-tags", "faults", "-c", "-o", helper.path, ".")
		cmd.Env = withoutEnv(os.Environ(), "FAULTS_HELPER")
		if out, err := cmd.CombinedOutput(); err != nil {
			helper.err = fmt.Errorf("go test -c: %v\n%s", err, out)
		}
	})
	if helper.err != nil {
		t.Fatal(helper.err)
	}
	return helper.path
}

// removeHelperBin deletes the helper build, if any.
func removeHelperBin() {
	if helper.path != "" {
		os.RemoveAll(filepath.Dir(helper.path))
	}
}

func withoutEnv(env []string, key string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// mountNS is a private mount namespace kept alive by a sleeping process.
// A server enters it with nsenter, which execs the server in place: the
// server's parent, and so its MCP host, stays this test process.
type mountNS struct {
	t   *testing.T
	pid int
}

func newMountNS(t *testing.T) *mountNS {
	t.Helper()
	requireUnshare(t, "-m", "--propagation", "private")
	requireTool(t, "nsenter")
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	self, _ := os.Readlink("/proc/self/ns/mnt")
	deadline := time.Now().Add(10 * time.Second)
	for {
		theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid))
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
		if theirs != "" && theirs != self && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mount namespace holder did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return &mountNS{t: t, pid: cmd.Process.Pid}
}

// run runs a command inside the namespace.
func (ns *mountNS) run(args ...string) {
	ns.t.Helper()
	full := append([]string{"-t", strconv.Itoa(ns.pid), "-m", "--"}, args...)
	if out, err := exec.Command("nsenter", full...).CombinedOutput(); err != nil {
		ns.t.Fatalf("nsenter %v: %v\n%s", args, err, out)
	}
}

// argv runs argv inside the namespace (nsenter execs it).
func (ns *mountNS) argv(argv ...string) []string {
	return append([]string{"nsenter", "-t", strconv.Itoa(ns.pid), "-m", "--"}, argv...)
}

// path is p as seen inside the namespace, reachable from outside.
func (ns *mountNS) path(p string) string {
	return fmt.Sprintf("/proc/%d/root%s", ns.pid, p)
}

// inotifyWatch records every event on one directory or file.
type inotifyWatch struct{ fd int }

func watch(t *testing.T, path string) *inotifyWatch {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_ALL_EVENTS); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	return &inotifyWatch{fd: fd}
}

var inotifyNames = []struct {
	mask uint32
	name string
}{
	{syscall.IN_ACCESS, "ACCESS"}, {syscall.IN_MODIFY, "MODIFY"}, {syscall.IN_ATTRIB, "ATTRIB"},
	{syscall.IN_CLOSE_WRITE, "CLOSE_WRITE"}, {syscall.IN_CLOSE_NOWRITE, "CLOSE_NOWRITE"},
	{syscall.IN_OPEN, "OPEN"}, {syscall.IN_MOVED_FROM, "MOVED_FROM"}, {syscall.IN_MOVED_TO, "MOVED_TO"},
	{syscall.IN_CREATE, "CREATE"}, {syscall.IN_DELETE, "DELETE"}, {syscall.IN_DELETE_SELF, "DELETE_SELF"},
	{syscall.IN_MOVE_SELF, "MOVE_SELF"},
}

// events drains and describes the events so far, e.g. "OPEN token-1-2".
func (w *inotifyWatch) events() []string {
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(w.fd, buf)
		if n <= 0 || err != nil {
			return out
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			var kinds []string
			for _, k := range inotifyNames {
				if ev.Mask&k.mask != 0 {
					kinds = append(kinds, k.name)
				}
			}
			out = append(out, strings.Join(kinds, "|")+" "+name)
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// ---------------------------------------------------------------------------
// Helper: an MCP host in another process (in a namespace, under a
// subreaper). It prints {"self": ...} with its own pid and start time as its
// /proc shows them, then launches FAULTS_ARGV once per "launch" line on stdin
// (through a socket pair with FAULTS_STDIO=socketpair, else pipes)
// and prints {"result": ...}; it exits at EOF.

type selfID struct {
	PID   int    `json:"pid"`
	Start string `json:"start"`
	Err   string `json:"err,omitempty"`
}

type hostMsg struct {
	Self   *selfID       `json:"self,omitempty"`
	Result *launchResult `json:"result,omitempty"`
}

func helperMCPHost() int {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv("FAULTS_ARGV")), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "FAULTS_ARGV: want a JSON array of strings")
		return 2
	}
	out := json.NewEncoder(os.Stdout)
	self := selfID{PID: os.Getpid()}
	if start, err := linuxStartTime(os.Getpid()); err != nil {
		self.Err = err.Error()
	} else {
		self.Start = start
	}
	out.Encode(hostMsg{Self: &self})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if path, ok := strings.CutPrefix(sc.Text(), "exec "); ok {
			// Become another program in place: same pid, same start time,
			// same stdio (fault 16). On success this never returns.
			err := syscall.Exec(path, []string{path}, os.Environ())
			fmt.Fprintln(os.Stderr, "exec:", err)
			return 1
		}
		if sc.Text() == "launch" {
			r := launchOnce(context.Background(), argv, []string{"FAULTS_HOST_PID=" + strconv.Itoa(os.Getpid())}, os.Stderr, os.Getenv("FAULTS_NOTE"), os.Getenv("FAULTS_STDIO") == "socketpair")
			out.Encode(hostMsg{Result: &r})
		}
	}
	return 0
}

// remoteHost drives a helperMCPHost process.
type remoteHost struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	Self  selfID
}

// startRemoteHost runs wrapper (which must end with a shell script that
// runs "$0") followed by the helper binary, as an MCP host that launches
// server, and waits for its self line. env is added to this process's
// environment; stderr goes to e.stderr.
func startRemoteHost(t *testing.T, e *env, wrapper, server, env []string) *remoteHost {
	t.Helper()
	h := startRemoteHostAsync(t, e, wrapper, server, env)
	h.readSelf()
	return h
}

// startRemoteHostAsync starts a helper host without waiting for its self
// line (so two can start in the same clock tick); call readSelf next.
func startRemoteHostAsync(t *testing.T, e *env, wrapper, server, env []string) *remoteHost {
	t.Helper()
	return startRemoteHostBin(t, e, wrapper, helperBin(t), server, env)
}

// startRemoteHostBin is startRemoteHostAsync with the helper binary at bin
// (a copy another user can run).
func startRemoteHostBin(t *testing.T, e *env, wrapper []string, bin string, server, env []string) *remoteHost {
	t.Helper()
	args := append(append([]string{}, wrapper...), bin)
	cmd := exec.Command(args[0], args[1:]...)
	argv, _ := json.Marshal(server)
	cmd.Env = append(append(append(os.Environ(), e.vars()...), env...), "FAULTS_HELPER=host", "FAULTS_ARGV="+string(argv))
	cmd.Stderr = e.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &remoteHost{t: t, cmd: cmd, in: in, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(h.close)
	return h
}

func (h *remoteHost) readSelf() {
	h.t.Helper()
	var msg hostMsg
	h.read(&msg)
	if msg.Self == nil {
		h.t.Fatal("helper host sent no self line")
	}
	h.Self = *msg.Self
}

func (h *remoteHost) read(msg *hostMsg) {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("helper host exited early")
		}
		if err := json.Unmarshal([]byte(line), msg); err != nil {
			h.t.Fatalf("helper host printed %q: %v", line, err)
		}
	case <-time.After(90 * time.Second):
		h.t.Fatal("helper host did not answer within 90s")
	}
}

// exec makes the helper host execve path (another program file, which must
// be a copy of the helper) and waits for the new program's self line.
func (h *remoteHost) exec(path string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, "exec "+path+"\n"); err != nil {
		h.t.Fatal(err)
	}
	h.readSelf()
}

func (h *remoteHost) launch() launchResult {
	h.t.Helper()
	if _, err := io.WriteString(h.in, "launch\n"); err != nil {
		h.t.Fatal(err)
	}
	var msg hostMsg
	h.read(&msg)
	if msg.Result == nil {
		h.t.Fatal("helper host sent no result")
	}
	return *msg.Result
}

// close ends the helper host: EOF first, then SIGKILL to its process group.
func (h *remoteHost) close() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.in.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// ---------------------------------------------------------------------------
// Helper: a subreaper (PR_SET_CHILD_SUBREAPER) that runs two MCP hosts one
// after the other. Each host launches the server through a shell that exits
// at once, so the server is orphaned and re-parented to the subreaper.

type subreaperReport struct {
	Self  selfID         `json:"self"`
	Hosts []int          `json:"hosts"`
	Runs  []launchResult `json:"runs"`
}

func helperSubreaper() int {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "prctl(PR_SET_CHILD_SUBREAPER):", errno)
		return 1
	}
	// FAULTS_NODUMP=1 (fault 22): not dumpable, as sshd, ssh-agent and
	// setuid programs are, so its children cannot list its fds.
	const prSetDumpable = 4
	if os.Getenv("FAULTS_NODUMP") == "1" {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); errno != 0 {
			fmt.Fprintln(os.Stderr, "prctl(PR_SET_DUMPABLE, 0):", errno)
			return 1
		}
	}
	self, _ := os.Executable()
	rep := subreaperReport{Self: selfID{PID: os.Getpid()}}
	if start, err := linuxStartTime(os.Getpid()); err == nil {
		rep.Self.Start = start
	}
	for i := 0; i < 2; i++ {
		cmd := exec.Command(self)
		cmd.Env = append(withoutEnv(os.Environ(), "FAULTS_HELPER"), "FAULTS_HELPER=host")
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rep.Hosts = append(rep.Hosts, cmd.Process.Pid)
		io.WriteString(in, "launch\n")
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var msg hostMsg
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Result != nil {
				rep.Runs = append(rep.Runs, *msg.Result)
				break
			}
		}
		in.Close()
		cmd.Wait()
		// Reap the adopted orphans (the server), so the next host starts
		// only once the first server, and its lock, are gone.
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				break
			}
			if pid == 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// ---------------------------------------------------------------------------
// Stress tokens: self-checking, so a partial or garbled one is detected.
// s<seed>.i<iter>.<filler>.<crc32 of the rest>, 40 to ~4070 bytes.

func stressToken(seed, iter int) string {
	head := fmt.Sprintf("s%d.i%d.", seed, iter)
	n := 24 + (seed*131+iter*977)%4000
	body := make([]byte, n)
	for j := range body {
		body[j] = byte('A' + (seed+iter+j)%26)
	}
	s := head + string(body)
	return s + fmt.Sprintf(".%08x", crc32.ChecksumIEEE([]byte(s)))
}

// parseStressToken returns the seed and iteration of a complete stress
// token; ok is false for anything else (a prefix, garbage).
func parseStressToken(tok string) (seed, iter int, ok bool) {
	var a, b int
	if _, err := fmt.Sscanf(tok, "s%d.i%d.", &a, &b); err != nil || a < 0 || b < 0 {
		return 0, 0, false
	}
	return a, b, stressToken(a, b) == tok
}

func stressEnv(dir string) []string {
	// "-": no instance suffix, whatever the helper's arguments, so every
	// helper and the loader name the same file.
	// dir is the app's state directory: the helpers get its root.
	return []string{"MCP_RESUME_STATE_DIR=" + filepath.Dir(dir), "MCP_RESUME_INSTANCE=-"}
}

// helperStoreLoop opens a store with the real identity (its parent, the
// test process, is the host), stores stress token s<FAULTS_SEED>.i0, says
// "ready", and stores .i1, .i2, ... until it is killed. The Python and
// TypeScript twins are testdata/faults_stress.py and .mjs.
func helperStoreLoop() int {
	ctx := context.Background()
	seed, _ := strconv.Atoi(os.Getenv("FAULTS_SEED"))
	store, err := host.Open(ctx, "example-go", &host.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	store.Store(ctx, stressToken(seed, 0))
	fmt.Println("ready")
	for i := 1; ; i++ {
		store.Store(ctx, stressToken(seed, i))
	}
}

// loaderAnswer is what helperLoader found in one state directory.
type loaderAnswer struct {
	Found   bool           `json:"found"`
	Valid   bool           `json:"valid"`
	Seed    int            `json:"seed"`
	Iter    int            `json:"iter"`
	Len     int            `json:"len"`
	Events  map[string]int `json:"events"`
	OpenErr string         `json:"open_err,omitempty"`
}

// helperLoader answers one line per state directory read on stdin: a fresh
// store (host.Open, with the real identity: its parent, the test process,
// is the host) loads once and is closed.
func helperLoader() int {
	ctx := context.Background()
	out := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var ans loaderAnswer
		events := &eventCounter{counts: map[string]int{}}
		store, err := host.Open(ctx, "example-go", &host.Options{
			StateRoot: sc.Text(),
			Logger:    slog.New(events),
		})
		if err != nil {
			ans.OpenErr = err.Error()
		} else {
			tok, ok := store.Load(ctx)
			store.Close(ctx)
			ans.Found, ans.Len = ok, len(tok)
			ans.Seed, ans.Iter, ans.Valid = parseStressToken(tok)
		}
		ans.Events = events.snapshot()
		out.Encode(ans)
	}
	return 0
}

// hammerReport is what one helperHammer instance did.
type hammerReport struct {
	Instance int            `json:"instance"`
	Stored   int            `json:"stored"`    // tokens s<instance>.i0 .. i<Stored-1> were passed to Store
	Loads    [][2]int       `json:"loads"`     // (seed, iter) of every token Load returned
	Invalid  int            `json:"invalid"`   // loads that were not a complete stress token
	Rejects  int            `json:"rejects"`   // Reject calls
	Events   map[string]int `json:"events"`    // log lines by event
	OpenErrs int            `json:"open_errs"` // host.Open failures
}

// helperHammer waits for "go" on stdin, then runs FAULTS_ROUNDS rounds of:
// open a store (real identity: the test process), FAULTS_OPS times
// load / maybe reject / store, close. It prints a hammerReport.
func helperHammer() int {
	ctx := context.Background()
	inst, _ := strconv.Atoi(os.Getenv("FAULTS_INSTANCE"))
	rounds, _ := strconv.Atoi(os.Getenv("FAULTS_ROUNDS"))
	ops, _ := strconv.Atoi(os.Getenv("FAULTS_OPS"))
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	rep := hammerReport{Instance: inst, Loads: [][2]int{}}
	events := &eventCounter{counts: map[string]int{}, tee: slog.NewTextHandler(os.Stderr, nil)}
	rng := rand.New(rand.NewPCG(uint64(inst), 42))
	for r := 0; r < rounds; r++ {
		store, err := host.Open(ctx, "example-go", &host.Options{Logger: slog.New(events)})
		if err != nil {
			rep.OpenErrs++
			continue
		}
		for j := 0; j < ops; j++ {
			if tok, ok := store.Load(ctx); ok {
				seed, iter, valid := parseStressToken(tok)
				if !valid {
					rep.Invalid++
				} else {
					rep.Loads = append(rep.Loads, [2]int{seed, iter})
				}
				if rng.IntN(4) == 0 {
					store.Reject(ctx)
					rep.Rejects++
				}
			}
			store.Store(ctx, stressToken(inst, rep.Stored))
			rep.Stored++
		}
		store.Close(ctx)
	}
	rep.Events = events.snapshot()
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// eventCounter is a slog.Handler that counts records by their "event"
// attribute (or message), optionally passing them on.
type eventCounter struct {
	mu     sync.Mutex
	counts map[string]int
	tee    slog.Handler
}

func (c *eventCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *eventCounter) Handle(ctx context.Context, r slog.Record) error {
	ev := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "event" {
			ev = a.Value.String()
			return false
		}
		return true
	})
	c.mu.Lock()
	c.counts[ev]++
	c.mu.Unlock()
	if c.tee != nil && r.Level >= slog.LevelWarn {
		return c.tee.Handle(ctx, r)
	}
	return nil
}
func (c *eventCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *eventCounter) WithGroup(string) slog.Handler      { return c }
func (c *eventCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		m[k] = v
	}
	return m
}

// ---------------------------------------------------------------------------
// The three example servers.

// lang is one language whose example server the suite runs.
type lang struct{ name, title string }

// allLangs are the languages in table-column order.
var allLangs = []lang{{"go", "Go"}, {"python", "Python"}, {"typescript", "TypeScript"}}

// server is one language's example server and its stress helpers.
type server struct {
	lang
	// argv is the server's command line, absolute paths, no arguments
	// (so no instance key: token files are token-<pid>-<start>).
	argv []string
	// stressArgv runs the stress helpers of faults 8 and 9 (FAULTS_HELPER
	// storeloop, loader, hammer) through this language's binding; nil for
	// Go, whose helpers are this test binary (helperBin).
	stressArgv []string
	// kills is fault 8's number of SIGKILLed store loops.
	kills int
}

// cmd returns a copy of the server's command line.
func (s *server) cmd() []string { return append([]string{}, s.argv...) }

// app is the app name the server opens its store with (examples/*-server),
// which names its state directory under the state root.
func (s *server) app() string { return "example-" + s.name }

// shell returns the command line for an unquoted $FAULTS_SERVER in sh.
func (s *server) shell() string { return strings.Join(s.argv, " ") }

// stress returns the command that runs a stress helper.
func (s *server) stress(t *testing.T) []string {
	if s.stressArgv == nil {
		return []string{helperBin(t)}
	}
	return append([]string{}, s.stressArgv...)
}

// repoRoot is the repository root (the test runs in examples/go-server).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// findServer returns l's server, or skips l (fails with -faults.require)
// when it is not built.
func findServer(t *testing.T, l lang) *server {
	t.Helper()
	root := repoRoot(t)
	s := &server{lang: l, kills: *faultKillsSlow}
	missing := func(what, target string) *server {
		msg := fmt.Sprintf("the %s example server is not built (%s): run `make %s`", l.title, what, target)
		if *faultRequire {
			t.Fatal(msg)
		}
		skipFault(t, msg)
		return nil
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	switch l.name {
	case "go":
		s.argv, s.kills = []string{bin.server}, *faultKills
	case "python":
		py := filepath.Join(root, ".venv", "bin", "python")
		script := filepath.Join(root, "examples", "python-server", "server.py")
		if !exists(py) {
			return missing(py+" is missing", "python-setup")
		}
		if out, err := exec.Command(py, "-c", "import mcp_resume, mcp").CombinedOutput(); err != nil {
			return missing(fmt.Sprintf("%s cannot import mcp_resume and mcp: %v %s", py, err, bytes.TrimSpace(out)), "python-setup")
		}
		s.argv = []string{py, script}
		s.stressArgv = []string{py, filepath.Join(root, "examples", "go-server", "testdata", "faults_stress.py")}
	case "typescript":
		node, err := exec.LookPath("node")
		if err != nil {
			return missing("node is not on PATH", "typescript-setup")
		}
		script := filepath.Join(root, "examples", "typescript-server", "dist", "server.js")
		binding := filepath.Join(root, "sdk-bindings", "typescript", "dist", "index.js")
		for _, p := range []string{script, binding} {
			if !exists(p) {
				return missing(p+" is missing", "typescript-setup")
			}
		}
		s.argv = []string{node, script}
		s.stressArgv = []string{node, filepath.Join(root, "examples", "go-server", "testdata", "faults_stress.mjs")}
	default:
		t.Fatalf("unknown language %q", l.name)
	}
	for _, a := range s.argv {
		if strings.ContainsAny(a, " \t\n'\"$*?[]\\") {
			t.Fatalf("server path %q has characters the suite's shell scripts cannot pass unquoted", a)
		}
	}
	return s
}

// unreachableFor65534 returns the first path among argv's files (and their
// directories) that uid 65534 cannot reach, or "".
func unreachableFor65534(argv []string) string {
	for _, p := range argv {
		if !filepath.IsAbs(p) {
			continue
		}
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
				return d
			}
			if d == "/" {
				break
			}
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o004 == 0 {
			return p
		}
	}
	return ""
}

// linuxStartTime is the Linux start time of pid as every host's plugin
// names it (hostfuncs/README.md, "File names"): field 22 of
// /proc/<pid>/stat, the boot id without dashes, the inode of this
// process's PID namespace, and the device and inode of its program image
// (stat of /proc/<pid>/exe), "<ticks>.<boot_id>.<pid_ns>.<dev>x<ino>". The
// suite computes it on its own, so token file names are checked against an
// independent reading of /proc.
func linuxStartTime(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	fields := strings.Fields(string(stat[i+1:])) // fields 3 ...
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", err
	}
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	id := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", ""))
	var exe syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/exe", pid), &exe); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s.%s.%s.%dx%d", fields[19], id, ns, uint64(exe.Dev), uint64(exe.Ino)), nil
}
