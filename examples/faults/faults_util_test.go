//go:build linux && faults

package faults_test

// Infrastructure for the fault-injection suite (faults_test.go): launching
// a server with its stdout recorded, root and namespace requirements, the
// helper binary (this test package rebuilt with the faults tag and without
// -race, run in a helper mode: faults_helpers_test.go), mount namespaces
// held open by a sleeping process, and inotify watches. The example
// servers themselves are found in faults_servers_test.go.
//
// Helper modes: the test binary looks at FAULTS_HELPER in init, before
// TestMain, so a helper process never builds anything or runs a test.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
	"github.com/mcp-resume/mcp-resume/examples/mcphost"
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
type stdoutLog struct{ servertest.SyncBuffer }

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

// call calls tool (mcphost.CallText) and decodes its text content into v
// (nil: ignore it).
func (r *running) call(ctx context.Context, tool string, args map[string]any, v any) error {
	text, err := mcphost.CallText(ctx, r.session, tool, args)
	if err != nil || v == nil {
		return err
	}
	return json.Unmarshal([]byte(text), v)
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

// newMountNS starts a private mount namespace (servertest.MountNS), or
// skips the fault when this machine cannot.
func newMountNS(t *testing.T) *servertest.MountNS {
	t.Helper()
	requireUnshare(t, "-m", "--propagation", "private")
	requireTool(t, "nsenter")
	return servertest.StartMountNS(t)
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
