//go:build linux && faults

package faults_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// 29. A server started with its stderr closed, as by a host that runs
// `SERVER 2>&-`. A file the binding opens (the Python runtime's sealed memfd
// memory image was one) would land on the lowest free fd, 2; the MCP Python
// SDK then points fd 1 at a copy of fd 2 while it serves, and every write to
// stdout fails. No binding's file may ever land on fds 0-2.
func faultStderrClosed(t *testing.T, s *server) {
	f := newFx(t, s)
	// sh execs the server, so the server is this test's child, with fd 2
	// closed and its MCP pipes on fds 0 and 1.
	argv := append([]string{"sh", "-c", `exec "$@" 2>&-`, "sh"}, s.cmd()...)
	launch := func(note string) (launchResult, [3]string) {
		var low [3]string
		// The store has opened and loaded by the hook (session_info waits
		// for the session, which needs the token): whatever the binding
		// opened is open.
		res := launchWith(context.Background(), argv, f.Vars(), f.Stderr, note, false, func(srv *running) {
			for fd := range low {
				low[fd] = "closed"
				if srv == nil {
					continue
				}
				if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", srv.cmd.Process.Pid, fd)); err == nil {
					low[fd] = target
				}
			}
		})
		f.record(res)
		return res, low
	}
	first, low1 := launch("written with stderr closed")
	second, low2 := launch("")
	for i, low := range [][3]string{low1, low2} {
		if low[2] != "/dev/null" || strings.HasPrefix(low[0], "/memfd:") || strings.HasPrefix(low[1], "/memfd:") {
			t.Errorf("launch %d: fds 0-2 are %q, want the MCP pipes on 0 and 1 and /dev/null on 2", i+1, low)
		}
	}
	if first.Resumed || !second.Resumed || second.SessionID != first.SessionID {
		t.Errorf("with stderr closed: %+v then %+v; want a fresh session, then that session resumed", first, second)
	}
	f.row("29", "stderr closed (`2>&-`)",
		"the host launches the server through `sh -c 'exec SERVER 2>&-'`, twice; while it serves, the test reads /proc/<server>/fd/0-2",
		"fd 2 is /dev/null (the binding, or the runtime before main, opened it onto the closed fd, so no file of the binding lands there) and fds 0 and 1 are the MCP pipes; tool calls answered; the relaunch resumed the session",
		[]string{"— (stderr is closed: nothing to read)"}, wrongIf(second.Resumed && second.SessionID != first.SessionID, "resumed another session"))
}
