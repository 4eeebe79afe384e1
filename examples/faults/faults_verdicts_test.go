//go:build linux && faults

package faults_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
)

// Faults 22 to 24: what the stdio check proves (a host whose fds cannot be
// listed, a terminal or FIFO on stdio) and sandboxes whose boot clock starts
// near zero. Fault 25 (a late first load under the Python MCP SDK) is the
// Python binding's end-to-end test sdk-bindings/python/tests/test_late_load.py.

// 22. Servers orphaned under a subreaper whose fds they cannot list.
func faultUnlistableSubreaper(t *testing.T, s *server) {
	requireRoot(t)
	requireTool(t, "setpriv")
	for _, tc := range []struct {
		id, name, fault, injection string
		nodump                     bool
	}{
		{"22a", "nondumpable", "Servers orphaned under a non-dumpable subreaper",
			"a subreaper made non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`, as sshd, ssh-agent and setuid programs are) runs two MCP hosts one after the other; each launches the server through a shell that exits at once; all run as root without capabilities (`setpriv --bounding-set -all`), so only the subreaper's non-dumpability keeps the server from reading its fds",
			true},
		{"22b", "other_user", "Servers orphaned under another user's subreaper",
			"a root subreaper runs two root MCP hosts one after the other; each launches the server as uid 65534 through a shell that exits at once, so the server cannot list the subreaper's fds",
			false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, s)
			argv := []string{helperBin(t)}
			var server string
			extra := []string{}
			if tc.nodump {
				// The subreaper, its hosts and their servers: the same
				// uid and no capabilities (the empty bounding set is
				// inherited).
				argv = []string{"setpriv", "--bounding-set", "-all", helperBin(t)}
				server = s.shell()
				extra = append(extra, "FAULTS_NODUMP=1")
			} else {
				n := newNobody(t, s)
				f.StateDir = n.appDir(t, "state-"+tc.id, f.App, 0o700)
				server = strings.Join(n.argv(), " ")
				extra = append(extra, n.env...)
			}
			cmd := exec.Command(argv[0], argv[1:]...)
			orphan, _ := json.Marshal([]string{"sh", "-c", orphanScript})
			cmd.Env = append(append(append(os.Environ(), f.Vars()...), extra...),
				"FAULTS_HELPER=subreaper", "FAULTS_ARGV="+string(orphan), "FAULTS_SERVER="+server)
			cmd.Stderr = f.Stderr
			var out bytes.Buffer
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("subreaper helper: %v\n%s", err, f.Stderr)
				}
			case <-time.After(120 * time.Second):
				cmd.Process.Kill()
				t.Fatal("subreaper helper timed out")
			}
			var rep subreaperReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Runs) != 2 {
				t.Fatalf("subreaper helper printed %q: %v\n%s", out.String(), err, f.Stderr)
			}
			f.record(rep.Runs[0])
			f.record(rep.Runs[1])
			wrong := rep.Runs[1].SessionID == rep.Runs[0].SessionID || rep.Runs[1].Resumed
			if wrong || rep.Runs[0].Resumed {
				t.Errorf("WRONG RESUME under subreaper %d: %+v", rep.Self.PID, rep.Runs)
			}
			logs := []string{f.mustLog(lineIdentity, "cannot list the host's fds (permission)")}
			if entries, _ := os.ReadDir(f.StateDir); len(entries) > 0 {
				t.Errorf("the adopted servers wrote to the state directory: %v", entries)
			}
			f.row(tc.id, tc.fault, tc.injection,
				"both orphaned servers were re-parented to the subreaper (not on the reaper list), whose fds they cannot list (permission): nothing shows it launched them, and cannot tell no longer lets the identity stand: resume off for both, fresh sessions, nothing written",
				logs, wrongIf(wrong, "the second host resumed the first host's session"))
		})
	}
}

// tmuxServer is a private tmux server (its own socket) with one session.
type tmuxServer struct {
	t    *testing.T
	bin  string
	sock string
}

func newTmux(t *testing.T) *tmuxServer {
	t.Helper()
	bin := requireTool(t, "tmux")
	tm := &tmuxServer{t: t, bin: bin, sock: "mcp-resume-faults-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	// A wide window, so that log lines are not wrapped in capture-pane.
	tm.run("-f", "/dev/null", "new-session", "-d", "-s", "faults", "-x", "1000", "-y", "60", "sleep 600")
	t.Cleanup(func() { exec.Command(tm.bin, "-L", tm.sock, "kill-server").Run() })
	return tm
}

func (tm *tmuxServer) run(args ...string) string {
	tm.t.Helper()
	out, err := exec.Command(tm.bin, append([]string{"-L", tm.sock}, args...)...).CombinedOutput()
	if err != nil {
		tm.t.Fatalf("tmux %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// window runs argv (tmux execs it without a shell when it has more than one
// word) in a new window with env, and returns the window's target and its
// first process's pid.
func (tm *tmuxServer) window(env, argv []string) (string, int) {
	tm.t.Helper()
	args := []string{"new-window", "-d", "-P", "-F", "#{window_id} #{pane_pid}"}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	out := strings.Fields(tm.run(append(append(args, "--"), argv...)...))
	if len(out) != 2 {
		tm.t.Fatalf("tmux new-window printed %q", out)
	}
	pid, _ := strconv.Atoi(out[1])
	return out[0], pid
}

// capture returns everything the window's pane showed, wrapped lines joined.
func (tm *tmuxServer) capture(win string) string {
	out, _ := exec.Command(tm.bin, "-L", tm.sock, "capture-pane", "-p", "-J", "-S", "-", "-t", win).Output()
	return string(out)
}

// typeLine types line and Enter into the window (the server's terminal).
func (tm *tmuxServer) typeLine(win, line string) {
	tm.run("send-keys", "-t", win, "-l", line)
	tm.run("send-keys", "-t", win, "Enter")
}

// mcpHello is the client's side of the MCP handshake, one JSON-RPC message per line.
var mcpHello = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"faults-tmux","version":"1"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
}

// waitStartup waits until text (what a server printed) shows how its store
// started: resumed, refused, or a token written.
func waitStartup(t *testing.T, text func() string, stateDir string) string {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		got := text()
		tokens, _ := filepath.Glob(filepath.Join(stateDir, "token-*"))
		if strings.Contains(got, lineIdentity) || strings.Contains(got, lineResumed) || len(tokens) > 0 && strings.Contains(got, lineNotFound) {
			time.Sleep(500 * time.Millisecond) // let a store after the broker call land
			return text()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the server showed no startup outcome within 90s:\n%s", text())
	return ""
}

// waitGone waits until pid has exited.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 300; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pid %d did not exit", pid)
}

// 23. Two servers started as terminal-multiplexer window commands.
func faultMultiplexer(t *testing.T, s *server) {
	requireRoot(t)
	for _, tc := range []struct{ id, name, fault, injection string }{
		{"23a", "direct", "tmux window commands, terminal stdio",
			"a tmux server runs the server as the command of one window, then (the first gone) of another (`tmux new-window -- SERVER`: no shell between, stdio is the window's terminal); the test types the MCP handshake into each window, which answers it on the terminal"},
		{"23b", "shell", "tmux window commands through a shell, terminal stdio",
			"as 23a, but each window runs `sh -c 'SERVER; exit'`, a shell between the tmux server and the MCP server"},
		{"23c", "fifos", "tmux window commands, named-FIFO stdio",
			"as 23a, but each window runs `sh -c 'exec SERVER <in.fifo >out.fifo'`: stdio is two named FIFOs, which the test writes the MCP handshake into and reads (only JSON-RPC came out)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, s)
			tm := newTmux(t)
			env := f.Vars()
			var outcomes [2]string
			for i := range outcomes {
				var argv []string
				var text func() string
				var win string
				var pid int
				var fifoOut servertest.SyncBuffer // what the server wrote to out.fifo
				fifoDone := make(chan struct{})
				switch tc.name {
				case "direct":
					argv = s.cmd()
				case "shell":
					argv = []string{"sh", "-c", s.shell() + "; exit"}
				case "fifos":
					dir := t.TempDir()
					in, out := filepath.Join(dir, "in.fifo"), filepath.Join(dir, "out.fifo")
					for _, p := range []string{in, out} {
						if err := syscall.Mkfifo(p, 0o600); err != nil {
							t.Fatal(err)
						}
					}
					argv = []string{"sh", "-c", "exec " + s.shell() + " <" + in + " >" + out}
					win, pid = tm.window(env, argv)
					// Opening blocks until the server's shell opens the other end.
					w, err := os.OpenFile(in, os.O_WRONLY, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer w.Close()
					r, err := os.Open(out)
					if err != nil {
						t.Fatal(err)
					}
					defer r.Close()
					go func() { io.Copy(&fifoOut, r); close(fifoDone) }()
					for _, l := range mcpHello {
						fmt.Fprintln(w, l)
					}
				}
				if win == "" {
					win, pid = tm.window(env, argv)
					time.Sleep(300 * time.Millisecond)
					for _, l := range mcpHello {
						tm.typeLine(win, l)
					}
				}
				text = func() string { return tm.capture(win) }
				outcomes[i] = waitStartup(t, text, f.StateDir)
				f.Stderr.Write([]byte(outcomes[i]))
				// Alive: still running, and it answered initialize (on the
				// terminal, or on out.fifo). Clean: what out.fifo carried is
				// JSON-RPC only; on a terminal stdout shares the screen with
				// stderr and the echo, so only the answer is looked for.
				stdout := func() string {
					if tc.name == "fifos" {
						return fifoOut.String()
					}
					return tm.capture(win)
				}
				for wait := 0; wait < 200 && !strings.Contains(stdout(), `"protocolVersion"`); wait++ {
					time.Sleep(50 * time.Millisecond)
				}
				answered := strings.Contains(stdout(), `"protocolVersion"`)
				r := launchResult{SessionID: "tmux window", Alive: syscall.Kill(pid, 0) == nil}
				tm.run("kill-window", "-t", win)
				waitGone(t, pid)
				if tc.name == "fifos" {
					<-fifoDone
					for _, line := range strings.Split(strings.TrimSpace(fifoOut.String()), "\n") {
						var msg struct {
							JSONRPC string `json:"jsonrpc"`
						}
						if json.Unmarshal([]byte(line), &msg) != nil || msg.JSONRPC != "2.0" {
							r.NonJSON = append(r.NonJSON, line)
						}
					}
				}
				r.Alive = r.Alive && answered
				if !r.Alive || len(r.NonJSON) > 0 {
					t.Errorf("window %d: alive and answered initialize %v, non-JSON-RPC output %q", i+1, r.Alive, r.NonJSON)
				}
				f.results = append(f.results, r)
			}
			wrong := strings.Contains(outcomes[1], lineResumed)
			if wrong {
				t.Errorf("WRONG RESUME: window 2's server resumed window 1's session:\n%s", outcomes[1])
			}
			// The walk stops at the tmux server, which the plugin refuses by
			// name as a process every window shares; were it not on that list,
			// the stdio check would refuse it too (it holds only the master
			// side of each terminal, and neither FIFO: conformance cases
			// stdio_tty_multiplexer and stdio_named_fifo_not_held).
			logs := []string{f.mustLog(lineIdentity, "a terminal multiplexer that every window and pane shares")}
			if tokens, _ := filepath.Glob(filepath.Join(f.StateDir, "token-*")); len(tokens) > 0 {
				t.Errorf("a window's server wrote a token file: %v", tokens)
			}
			f.row(tc.id, tc.fault, tc.injection,
				"the walk stops at `tmux: server`, which every window shares: the plugin refuses it by name as a terminal multiplexer (and it holds only /dev/ptmx, the master side of every window's terminal, not the server's terminal or FIFOs, which the stdio check would refuse too): resume off in both windows, fresh sessions, nothing written",
				logs, wrongIf(wrong, "window 2 resumed window 1's session"))
		})
	}
}

// bootClockScript busy-waits, with shell builtins only (no fork), until the
// namespace's uptime reads 2.5x s, then runs "$0" (the helper host) as pid
// 2 of the namespace: both sandboxes' hosts then start at tick 250.
const bootClockScript = `while :; do read u _ </proc/uptime; case $u in 2.5*) break;; esac; done; "$0"; exit $?`

// 24. Sandboxes in new PID and time namespaces whose boot clock starts near zero.
func faultBootClockZero(t *testing.T, s *server) {
	requireUnshare(t, "--pid", "--fork", "--mount-proc", "--kill-child", "--time", "--boottime", "0")
	f := newFx(t, s)
	if err := os.MkdirAll(f.StateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	w := f.watchState()
	sandbox := func() *remoteHost {
		b, err := os.ReadFile("/proc/uptime")
		if err != nil {
			t.Fatal(err)
		}
		up, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
		off := int(up) - 1 // the namespace's uptime starts between 1 and 2 s
		wrapper := []string{"unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--time", "--boottime", strconv.Itoa(-off), "sh", "-c", bootClockScript}
		return startRemoteHost(t, f.Env, wrapper, s.cmd(), nil)
	}
	h1 := sandbox()
	first := h1.launch()
	f.record(first)
	name1 := fmt.Sprintf("%d-%s", h1.Self.PID, h1.Self.Start)
	h1.close()
	// The second sandbox names its host exactly as the first did when its
	// PID namespace gets the first one's (recycled) inode: try a few times.
	var second launchResult
	same := false
	var name2 string
	for try := 0; try < 6 && !same; try++ {
		h2 := sandbox()
		second = h2.launch()
		f.record(second)
		name2 = fmt.Sprintf("%d-%s", h2.Self.PID, h2.Self.Start)
		same = name2 == name1
		h2.close()
		if second.Resumed || second.SessionID == first.SessionID {
			break
		}
	}
	if !same {
		t.Logf("the sandboxes' hosts were named %s and %s (the PID-namespace inode was not recycled this time)", name1, name2)
	}
	wrong := second.Resumed || second.SessionID == first.SessionID
	if wrong || first.Resumed {
		t.Errorf("WRONG RESUME: %+v %+v", first, second)
	}
	logs := []string{f.mustLog(lineIdentity, "time namespace whose boot clock is shifted")}
	if ev := w.events(); len(ev) > 0 {
		t.Errorf("a sandboxed server touched the state directory: %v", ev)
	}
	f.row("24", "Sandboxes whose boot clock starts near zero",
		"two sandboxes one after the other, each `unshare --pid --fork --mount-proc --time --boottime -<uptime-1>`, sharing one state directory; the MCP host is pid 2 of each and starts at tick 250 of the namespace's clock, so both are named `token-2-250.<boot_id>.<pidns>` once the PID-namespace inode is recycled",
		"the server reads /proc/self/timens_offsets, sees a non-zero boottime offset, and turns resume off: fresh sessions, state dir untouched",
		logs, wrongIf(wrong, "the second sandbox resumed the first one's session"))
}
