//go:build linux

package primitives_test

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

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// pythonHolder takes a lock with the Python binding's real host functions
// and holds it until killed (prints "held" or the error).
const pythonHolder = `
import json, sys, time
from mcp_resume._hostfuncs import HostFunctions
import logging
d, name, sock = sys.argv[1:4]
f = HostFunctions(logging.getLogger("holder"))
f.set_state_dir(d)  # as a successful open fixes it
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
	repo, _ := filepath.Abs("../../..")
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
	goLock := func() *hostfuncs.Error {
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
			// Deferred: a holder that skips below (no Node or no .venv yet)
			// must not leave the lock held for the next subtest.
			defer release()
			for _, other := range []string{"go", "python", "node"} {
				if other == first {
					continue
				}
				if other == "go" {
					if werr := goLock(); werr == nil || werr.Code != hostfuncs.CodeBusy {
						t.Errorf("go took the lock %s holds: %v", first, werr)
					}
					continue
				}
				if h := startHolder(t, other, dir, name, socket); !strings.Contains(h.line, `"busy"`) {
					t.Errorf("%s while %s holds the lock: %s, want busy", other, first, h.line)
				}
			}
		})
	}
}

// callLock calls mcp_resume_lock for name with socket.
func callLock(f *primitives.Funcs, name, socket string) *hostfuncs.Error {
	var r hostfuncs.Empty
	out := f.Call(hostfuncs.FnLock, []byte(fmt.Sprintf(`{"name":%q,"socket":%q}`, name, socket)))
	if err := json.Unmarshal(out, &r); err != nil {
		return &hostfuncs.Error{Code: "malformed", Message: err.Error()}
	}
	return r.Error
}

// codesProbe prints, as JSON, the code each mcp_resume_prepare_dir "mkdir"
// answers for the paths given after "--" in its arguments, each path made
// the state directory of a fresh instance first (mkdir acts only there): it
// runs in the Go test binary (HOSTFUNCS_CODES), and as the same few lines in
// Python and Node below.
const pythonCodes = `
import json, sys, logging
from mcp_resume._hostfuncs import HostFunctions
out = {}
for p in sys.argv[1:]:
    f = HostFunctions(logging.getLogger("codes"))
    f.set_state_dir(p)
    r = json.loads(f.call("mcp_resume_prepare_dir", json.dumps({"op": "mkdir", "path": p}).encode()))
    out[p] = (r.get("error") or {}).get("code", "")
print(json.dumps(out, sort_keys=True, separators=(",", ":")))
`

const nodeCodes = `
const { HostFunctions } = await import(process.env.HOSTFUNCS_DIST);
const out = {};
for (const p of process.argv.slice(1)) {
  const f = new HostFunctions({ logger: { debug() {}, info() {}, warn() {}, error() {} } });
  f.confine(p);
  const r = JSON.parse(Buffer.from(f.call("mcp_resume_prepare_dir", Buffer.from(JSON.stringify({ op: "mkdir", path: p })))).toString());
  out[p] = r.error?.code ?? "";
}
console.log(JSON.stringify(Object.fromEntries(Object.entries(out).sort())));
`

func init() { codesProbe = goCodes }

// goCodes is the Go side of the probe, run by TestMain in a child.
func goCodes(paths []string) string {
	out := map[string]string{}
	for _, p := range paths {
		f := primitives.New(primitives.Config{})
		f.SetStateDir(p)
		var r hostfuncs.Empty
		req, _ := json.Marshal(hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: p})
		json.Unmarshal(f.Call(hostfuncs.FnPrepareDir, req), &r)
		out[p] = ""
		if r.Error != nil {
			out[p] = r.Error.Code
		}
	}
	b, _ := json.Marshal(out) // encoding/json sorts map keys
	return string(b)
}

// One errno, one code, in every host: the Go, Python and Node hosts' mkdir
// on a file system out of inodes (ENOSPC), a read-only one (EROFS), below
// a regular file (ENOTDIR), over an existing file (EEXIST) and below a
// missing directory (ENOENT), on real mounts in a private mount namespace.
// The plugin words its messages from these codes alone, so a host that
// mapped one errno differently would give another message.
func TestPrepareDir_CodesAcrossHosts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount file systems in a private mount namespace")
	}
	if out, err := exec.Command("unshare", "-m", "--propagation", "private", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare -m does not work here: %v %s", err, out)
	}
	repo, _ := filepath.Abs("../../..")
	py := filepath.Join(repo, ".venv", "bin", "python")
	dist := filepath.Join(repo, "sdk-bindings", "typescript", "dist", "hostfuncs.js")
	node, err := exec.LookPath("node")
	if _, perr := os.Stat(py); perr != nil {
		t.Skipf("no %s: run make python-setup", py)
	}
	if _, derr := os.Stat(dist); err != nil || derr != nil {
		t.Skipf("no node or %s: run make typescript-setup", dist)
	}
	d := t.TempDir()
	for _, n := range []string{"full", "ro"} {
		os.Mkdir(filepath.Join(d, n), 0o700)
	}
	os.WriteFile(filepath.Join(d, "file"), nil, 0o600)
	want := map[string]string{
		d + "/full/x": hostfuncs.CodeNoSpace, d + "/ro/x": hostfuncs.CodeReadOnly, d + "/file/x": hostfuncs.CodeNotDir,
		d + "/file": hostfuncs.CodeExists, d + "/none/x": hostfuncs.CodeNotFound, d + "/made": "",
	}
	var paths []string
	for p := range want {
		paths = append(paths, p)
	}
	wantJSON, _ := json.Marshal(want)
	self, _ := os.Executable()
	quote := func(args ...string) string {
		var q []string
		for _, a := range args {
			q = append(q, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
		}
		return strings.Join(q, " ")
	}
	for _, probe := range []struct {
		lang string
		argv []string
	}{
		{"go", append([]string{self, "-test.run=^$"}, paths...)},
		{"python", append([]string{py, "-c", pythonCodes}, paths...)},
		{"node", append([]string{node, "--input-type=module", "-e", nodeCodes}, paths...)},
	} {
		os.Remove(d + "/made")
		script := fmt.Sprintf("mount -t tmpfs -o nr_inodes=1 tmpfs %s && mount -t tmpfs -o ro tmpfs %s && exec %s",
			quote(d+"/full"), quote(d+"/ro"), quote(probe.argv...))
		cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", script)
		cmd.Env = append(os.Environ(), "HOSTFUNCS_CODES=1", "HOSTFUNCS_DIST="+dist)
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s probe: %v", probe.lang, err)
		}
		if got := strings.TrimSpace(string(out)); got != string(wantJSON) {
			t.Errorf("%s host codes:\n got %s\nwant %s", probe.lang, got, wantJSON)
		}
	}
}
