//go:build linux

package hostfuncs_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/internal/hostfuncs"
	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// pythonHolder takes a lock with the Python binding's real host functions
// and holds it until killed (prints "held" or the error).
const pythonHolder = `
import json, sys, time
from mcp_resume._hostfuncs import HostFunctions
import logging
d, name, sock = sys.argv[1:4]
f = HostFunctions(logging.getLogger("holder"))
f.call("mcp_resume_prepare_dir", json.dumps({"op": "fix", "path": d, "sweep_seconds": 60}).encode())
r = json.loads(f.call("mcp_resume_lock", json.dumps({"name": name, "socket": sock}).encode()))
print("error " + json.dumps(r) if r.get("error") else "held", flush=True)
time.sleep(600)
`

// holder is a real process of another host language holding (or failing
// to take) one lock.
type holder struct {
	cmd  *exec.Cmd
	line string
}

// startHolder runs lang's holder ("python" or "node") on the lock name with
// socket in dir, and returns once it printed its first line.
func startHolder(t *testing.T, lang, dir, name, socket string) *holder {
	t.Helper()
	repo, _ := filepath.Abs("../..")
	var cmd *exec.Cmd
	switch lang {
	case "python":
		py := filepath.Join(repo, ".venv", "bin", "python")
		if _, err := os.Stat(py); err != nil {
			t.Skipf("no %s: run make python-setup to test the lock across hosts", py)
		}
		cmd = exec.Command(py, "-c", pythonHolder, dir, name, socket)
	case "node":
		dist := filepath.Join(repo, "sdk-bindings", "typescript", "dist", "hostfuncs.js")
		node, err := exec.LookPath("node")
		if _, serr := os.Stat(dist); err != nil || serr != nil {
			t.Skipf("no node or %s: run make typescript-setup to test the lock across hosts", dist)
		}
		cmd = exec.Command(node, filepath.Join(repo, "sdk-bindings", "typescript", "test", "fixtures", "holder.mjs"), "lock", dir, name, socket)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd}
	t.Cleanup(h.stop)
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		got <- strings.TrimSpace(line)
		io.Copy(io.Discard, out)
	}()
	select {
	case h.line = <-got:
	case <-time.After(60 * time.Second): // a loaded machine starts Python slowly
		t.Fatalf("%s holder printed nothing in 60 s", lang)
	}
	return h
}

func (h *holder) held() bool { return h.line == "held" }

func (h *holder) stop() {
	h.cmd.Process.Kill()
	h.cmd.Wait()
}

// The same lock taken by real Go, Python and Node processes through each
// host's own mcp_resume_lock: whichever holds it, the other two are busy,
// and each takes it once the holder is gone. Before every host bound the
// plugin's socket, Go and Python (flock) and Node (an abstract socket of its
// own naming) never excluded each other.
func TestLock_ExcludesOtherHosts(t *testing.T) {
	dir := stateDir(t)
	const name = "lock-4242-1.crosshost"
	socket := fmt.Sprintf("mcp-resume-lock-crosshost-%d-%d", os.Getpid(), time.Now().UnixNano())
	goLock := func() *wire.Error {
		f := prepare(t, dir)
		werr := callLock(f, name, socket)
		if werr == nil {
			t.Cleanup(func() { f.Close() })
		} else {
			f.Close()
		}
		return werr
	}
	for _, first := range []string{"go", "python", "node"} {
		t.Run(first+" holds", func(t *testing.T) {
			var release func()
			if first == "go" {
				f := prepare(t, dir)
				if werr := callLock(f, name, socket); werr != nil {
					t.Fatalf("go: %v", werr)
				}
				release = func() { f.Close() }
			} else {
				h := startHolder(t, first, dir, name, socket)
				if !h.held() {
					t.Fatalf("%s could not take the free lock: %s", first, h.line)
				}
				release = h.stop
			}
			for _, other := range []string{"go", "python", "node"} {
				if other == first {
					continue
				}
				if other == "go" {
					if werr := goLock(); werr == nil || werr.Code != wire.CodeBusy {
						t.Errorf("go took the lock %s holds: %v", first, werr)
					}
					continue
				}
				if h := startHolder(t, other, dir, name, socket); !strings.Contains(h.line, `"busy"`) {
					t.Errorf("%s while %s holds the lock: %s, want busy", other, first, h.line)
				}
			}
			release()
		})
	}
}

// callLock calls mcp_resume_lock for name with socket.
func callLock(f *hostfuncs.Funcs, name, socket string) *wire.Error {
	var r wire.Empty
	out := f.Call(wire.FnLock, []byte(fmt.Sprintf(`{"name":%q,"socket":%q}`, name, socket)))
	if err := json.Unmarshal(out, &r); err != nil {
		return &wire.Error{Code: "malformed", Message: err.Error()}
	}
	return r.Error
}
