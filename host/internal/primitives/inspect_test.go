//go:build linux

package primitives_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// inspect sends ops to mcp_resume_inspect and returns the results, failing
// unless there is exactly one per operation.
func inspect(t *testing.T, f *primitives.Funcs, ops ...hostfuncs.InspectOp) []hostfuncs.InspectResult {
	t.Helper()
	r := call[hostfuncs.InspectResponse](t, f, hostfuncs.FnInspect, rawOps(ops...))
	if r.Error != nil || len(r.Results) != len(ops) {
		t.Fatalf("inspect(%+v) = %+v", ops, r)
	}
	return r.Results
}

// rawOps encodes ops keeping fd 0 (hostfuncs.InspectOp omits a zero FD).
func rawOps(ops ...hostfuncs.InspectOp) []byte {
	var parts []string
	for _, op := range ops {
		m := map[string]any{"op": op.Op}
		if op.Path != "" {
			m["path"] = op.Path
		}
		if op.PID != "" {
			m["pid"] = op.PID
		}
		if op.Op == hostfuncs.OpFstat || op.Op == hostfuncs.OpPeer {
			m["fd"] = op.FD
		}
		if op.Targets != nil {
			m["targets"] = op.Targets
		}
		b, _ := json.Marshal(m)
		parts = append(parts, string(b))
	}
	return []byte(`{"ops":[` + strings.Join(parts, ",") + `]}`)
}

func code(r hostfuncs.InspectResult) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// fixture writes files under a fresh proc root and returns Funcs reading it.
func fixture(t *testing.T, os_ string, files map[string]string, answers map[string]string) *primitives.Funcs {
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if target, ok := strings.CutPrefix(content, "->"); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := map[string]json.RawMessage{}
	for k, v := range answers {
		a[k] = json.RawMessage(v)
	}
	return primitives.New(primitives.Config{Fixture: &primitives.Fixture{
		Facts: json.RawMessage(`{"os":"` + os_ + `","pid":100}`), ProcRoot: root, Answers: a,
	}})
}

// The allowlist is checked before any system call: a path off it is refused
// even when the (fixture) /proc holds a file there.
func TestInspect_Allowlist(t *testing.T) {
	f := fixture(t, "linux", map[string]string{
		"100/environ": "SECRET=1", "100/stat": "100 (x) S 1", "1/root/etc/passwd": "root", "100/cwd": "->/",
		"100/fd/3": "->pipe:[7]", "sys/kernel/random/boot_id": "id\n", "100/ns/pid": "->pid:[1]", "self": "->100",
		"100/timens_offsets": "boottime -5 0\n",
	}, nil)
	for _, tc := range []struct{ op, path string }{
		{"read", "/proc/self/environ"}, {"read", "/proc/1/root/etc/passwd"}, {"read", "/proc/self/../self/stat"},
		{"read", "/proc/self/fd/3"}, {"read", "/etc/passwd"}, {"read", "proc/self/stat"}, {"read", "/proc/self"},
		{"readlink", "/proc/self/cwd"}, {"readlink", "/proc/self/stat"}, {"readlink", "/proc/x1/ns/pid"},
		{"readlink", "/proc/self/fd/3/"}, {"readlink", "/proc/self/fd/-3"}, {"read", "/proc/self/stat/"}, {"read", "/proc//stat"},
		// Only this process's own time-namespace offsets.
		{"read", "/proc/100/timens_offsets"}, {"read", "/proc/1/timens_offsets"}, {"readlink", "/proc/self/timens_offsets"},
	} {
		if r := inspect(t, f, hostfuncs.InspectOp{Op: tc.op, Path: tc.path})[0]; code(r) != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s %s = %+v, want invalid_request", tc.op, tc.path, r)
		}
	}
	rs := inspect(t, f,
		hostfuncs.InspectOp{Op: "read", Path: "/proc/self/stat"},
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self/fd/3"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/sys/kernel/random/boot_id"},
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/100/ns/pid"},
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/4242/stat"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/self/timens_offsets"},
	)
	if string(rs[0].Data) != "100 (x) S 1" || rs[1].Target != "pipe:[7]" || string(rs[2].Data) != "id\n" ||
		rs[3].Target != "pid:[1]" || rs[4].Target != "100" || code(rs[5]) != hostfuncs.CodeNotFound || string(rs[6].Data) != "boottime -5 0\n" {
		t.Errorf("allowed reads = %+v", rs)
	}
}

// read returns at most 65536 bytes and never follows a symlink at the last
// element; without /proc (another os) the /proc operations are unsupported.
func TestInspect_ReadCapNoFollow(t *testing.T) {
	f := fixture(t, "linux", map[string]string{"100/cmdline": strings.Repeat("a", 70000), "100/stat": "->../200/stat", "200/stat": "200 (y) S 1"}, nil)
	rs := inspect(t, f, hostfuncs.InspectOp{Op: "read", Path: "/proc/100/cmdline"}, hostfuncs.InspectOp{Op: "read", Path: "/proc/100/stat"})
	if len(rs[0].Data) != primitives.MaxProcRead || rs[1].Error == nil || rs[1].Data != nil {
		t.Errorf("cmdline %d bytes, stat through a symlink %+v", len(rs[0].Data), rs[1])
	}
	d := fixture(t, "darwin", map[string]string{"100/stat": "x"}, nil)
	for _, op := range []hostfuncs.InspectOp{{Op: "read", Path: "/proc/100/stat"}, {Op: "readlink", Path: "/proc/self"}, {Op: "fds", PID: "self"}} {
		if r := inspect(t, d, op)[0]; code(r) != hostfuncs.CodeUnsupported {
			t.Errorf("%+v without /proc = %+v, want unsupported", op, r)
		}
	}
}

// The real /proc of this process.
func TestInspect_RealProc(t *testing.T) {
	f := primitives.New(primitives.Config{})
	rs := inspect(t, f,
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/self/stat"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/sys/kernel/random/boot_id"},
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self/ns/pid"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/" + strconv.Itoa(os.Getppid()) + "/cmdline"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/2147483646/stat"},
		hostfuncs.InspectOp{Op: "sysctl", PID: "1"},
		hostfuncs.InspectOp{Op: "ps", PID: "1"},
	)
	me := strconv.Itoa(os.Getpid())
	if rs[0].Target != me || !strings.HasPrefix(string(rs[1].Data), me+" (") || len(bytes.TrimSpace(rs[2].Data)) != 36 ||
		!strings.HasPrefix(rs[3].Target, "pid:[") || len(rs[4].Data) == 0 || code(rs[5]) != hostfuncs.CodeNotFound ||
		code(rs[6]) != hostfuncs.CodeUnsupported || code(rs[7]) != hostfuncs.CodeUnsupported {
		t.Errorf("real /proc answers: %+v", rs)
	}
}

// kill(pid, 0) on a real child: alive, then reaped (not_found); another
// user's process answers permission.
func TestInspect_Kill0(t *testing.T) {
	f := primitives.New(primitives.Config{})
	child := exec.Command("sleep", "30")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(child.Process.Pid)
	if r := inspect(t, f, hostfuncs.InspectOp{Op: "kill0", PID: pid})[0]; r.Error != nil {
		t.Errorf("kill0 of a live child = %+v", r.Error)
	}
	child.Process.Kill()
	child.Wait()
	if r := inspect(t, f, hostfuncs.InspectOp{Op: "kill0", PID: pid})[0]; code(r) != hostfuncs.CodeNotFound {
		t.Errorf("kill0 of a reaped child = %+v, want not_found", r)
	}
	for _, bad := range []string{"0", "-1", "01", "2147483648", "self", ""} {
		if r := inspect(t, f, hostfuncs.InspectOp{Op: "kill0", PID: bad})[0]; code(r) != hostfuncs.CodeInvalidRequest {
			t.Errorf("kill0 %q = %+v, want invalid_request", bad, r)
		}
	}
	// permission: kill(1, 0) from an unprivileged process.
	out, err := inspectAs(t, 65534, rawOps(hostfuncs.InspectOp{Op: "kill0", PID: "1"}))
	if err != nil {
		t.Skip("cannot run a process as another user here:", err)
	}
	if len(out) != 1 || code(out[0]) != hostfuncs.CodePermission {
		t.Errorf("kill0 of another user's process = %+v, want permission", out)
	}
}

// exe of real processes: the device and inode of the program file (the
// link /proc/<pid>/exe followed), so a child that execs into another
// program changes its answer while its pid stays; a reaped child is
// not_found; another user's process is permission (the link is only
// readable with ptrace read access).
func TestInspect_Exe(t *testing.T) {
	f := primitives.New(primitives.Config{})
	ident := func(path string) (string, string) {
		var st syscall.Stat_t
		if err := syscall.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return strconv.FormatUint(uint64(st.Dev), 10), strconv.FormatUint(uint64(st.Ino), 10)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip(err)
	}
	// sh runs (a pipe keeps it waiting), then execs sleep: one pid, two images.
	child := exec.Command(sh, "-c", "read x; exec "+sleep+" 30")
	in, _ := child.StdinPipe()
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	pid := strconv.Itoa(child.Process.Pid)
	r := inspect(t, f, hostfuncs.InspectOp{Op: "exe", PID: pid})[0]
	if dev, ino := ident(sh); r.Error != nil || r.Dev != dev || r.Ino != ino {
		t.Errorf("exe of sh = %+v, want dev %s ino %s", r, dev, ino)
	}
	in.Write([]byte("\n"))
	dev, ino := ident(sleep)
	deadline := time.Now().Add(10 * time.Second)
	for r = inspect(t, f, hostfuncs.InspectOp{Op: "exe", PID: pid})[0]; r.Ino != ino && time.Now().Before(deadline); r = inspect(t, f, hostfuncs.InspectOp{Op: "exe", PID: pid})[0] {
		time.Sleep(10 * time.Millisecond)
	}
	if r.Error != nil || r.Dev != dev || r.Ino != ino {
		t.Errorf("exe after exec into sleep = %+v, want dev %s ino %s", r, dev, ino)
	}
	child.Process.Kill()
	child.Wait()
	if r := inspect(t, f, hostfuncs.InspectOp{Op: "exe", PID: pid})[0]; code(r) != hostfuncs.CodeNotFound {
		t.Errorf("exe of a reaped child = %+v, want not_found", r)
	}
	for _, bad := range []string{"0", "01", "self", ""} {
		if r := inspect(t, f, hostfuncs.InspectOp{Op: "exe", PID: bad})[0]; code(r) != hostfuncs.CodeInvalidRequest {
			t.Errorf("exe %q = %+v, want invalid_request", bad, r)
		}
	}
	out, err := inspectAs(t, 65534, rawOps(hostfuncs.InspectOp{Op: "exe", PID: "1"}))
	if err != nil {
		t.Skip("cannot run a process as another user here:", err)
	}
	if len(out) != 1 || code(out[0]) != hostfuncs.CodePermission {
		t.Errorf("exe of another user's process = %+v, want permission", out)
	}
}

// inspectAs runs req in a child of this test binary: as uid when we are
// root, else as ourselves.
func inspectAs(t *testing.T, uid int, req []byte) ([]hostfuncs.InspectResult, error) {
	bin := os.Args[0]
	if os.Geteuid() == 0 {
		// A copy the other user can execute: the build directory is private.
		dir, err := os.MkdirTemp("", "hostfuncs-as-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		os.Chmod(dir, 0o755)
		b, err := os.ReadFile(os.Args[0])
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(dir, "primitives.test")
		if err := os.WriteFile(bin, b, 0o755); err != nil {
			return nil, err
		}
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Dir = "/"
	cmd.Env = append(os.Environ(), "HOSTFUNCS_INSPECT="+string(req))
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	var r hostfuncs.InspectResponse
	if err := json.Unmarshal(stderr.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("%v: %s", err, stderr.String())
	}
	return r.Results, nil
}

// fds of a real child whose stdin and stdout are the ends of a real pipe:
// the targets filter finds them and fdinfo gives their access modes.
func TestInspect_FDsOfPipeChild(t *testing.T) {
	f := primitives.New(primitives.Config{})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	child := exec.Command("sleep", "30")
	child.Stdin, child.Stdout = r, w
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	self := inspect(t, f, hostfuncs.InspectOp{Op: "readlink", Path: fmt.Sprintf("/proc/self/fd/%d", r.Fd())})[0]
	if !strings.HasPrefix(self.Target, "pipe:[") {
		t.Fatalf("readlink of our pipe end = %+v", self)
	}
	pid := strconv.Itoa(child.Process.Pid)
	rs := inspect(t, f,
		hostfuncs.InspectOp{Op: "fds", PID: pid, Targets: []string{self.Target}},
		hostfuncs.InspectOp{Op: "fds", PID: pid},
		hostfuncs.InspectOp{Op: "fds", PID: "self", Targets: []string{self.Target}},
		hostfuncs.InspectOp{Op: "fds", PID: "2147483646"},
	)
	got := rs[0].FDs
	if len(got) != 2 || got[0].FD != 0 || got[1].FD != 1 || got[0].Target != self.Target ||
		got[0].Flags&syscall.O_ACCMODE != syscall.O_RDONLY || got[1].Flags&syscall.O_ACCMODE != syscall.O_WRONLY {
		t.Errorf("fds of the child, filtered = %+v", rs[0])
	}
	all := rs[1].FDs
	if len(all) < 3 || all[0].FD != 0 || all[2].FD != 2 {
		t.Errorf("fds of the child = %+v", rs[1])
	}
	for i := 1; i < len(all); i++ {
		if all[i].FD <= all[i-1].FD || all[i].Flags < 0 {
			t.Errorf("fds not sorted or flags missing: %+v", all)
		}
	}
	if len(rs[2].FDs) != 2 || code(rs[3]) != hostfuncs.CodeNotFound {
		t.Errorf("fds of self (our two ends) = %+v; of a missing pid = %+v", rs[2], rs[3])
	}
}

// fstat and peer of real fds: a child of this test binary reports its own
// stdin and stdout.
func TestInspect_StdioOfChild(t *testing.T) {
	ops := rawOps(hostfuncs.InspectOp{Op: "fstat", FD: 0}, hostfuncs.InspectOp{Op: "fstat", FD: 1},
		hostfuncs.InspectOp{Op: "peer", FD: 0}, hostfuncs.InspectOp{Op: "peer", FD: 1})
	run := func(stdin, stdout *os.File, env ...string) []hostfuncs.InspectResult {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), "HOSTFUNCS_INSPECT="+string(ops)), env...)
		cmd.Stdin, cmd.Stdout = stdin, stdout
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		var r hostfuncs.InspectResponse
		if err := json.Unmarshal(stderr.Bytes(), &r); err != nil || len(r.Results) != 4 {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		return r.Results
	}
	// stdin a pipe, stdout a socket pair whose other end this process made.
	pr, pw, _ := os.Pipe()
	defer pr.Close()
	defer pw.Close()
	sp, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	s0, s1 := os.NewFile(uintptr(sp[0]), "s0"), os.NewFile(uintptr(sp[1]), "s1")
	defer s0.Close()
	defer s1.Close()
	rs := run(pr, s1)
	if rs[0].Type != hostfuncs.FileTypeFIFO || rs[1].Type != hostfuncs.FileTypeSocket || code(rs[2]) != hostfuncs.CodeIO ||
		rs[3].PeerPID == nil || *rs[3].PeerPID != os.Getpid() {
		t.Errorf("pipe and socket: %+v", rs)
	}
	// stdin /dev/null, stdout a regular file.
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	file, _ := os.Create(filepath.Join(t.TempDir(), "out"))
	defer file.Close()
	rs = run(null, file)
	if rs[0].Type != hostfuncs.FileTypeChar || rs[1].Type != hostfuncs.FileTypeFile {
		t.Errorf("/dev/null and a file: %+v", rs)
	}
	// stdin closed.
	rs = run(null, file, "HOSTFUNCS_CLOSE_STDIN=1")
	if code(rs[0]) != hostfuncs.CodeNotFound || code(rs[2]) != hostfuncs.CodeNotFound {
		t.Errorf("closed stdin: %+v", rs)
	}
}

// A request unusable as a whole gets a top-level error; a bad operation
// among good ones gets its own.
func TestInspect_Batch(t *testing.T) {
	f := primitives.New(primitives.Config{})
	many := make([]hostfuncs.InspectOp, hostfuncs.MaxInspectOps+1)
	for i := range many {
		many[i] = hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self"}
	}
	for _, req := range [][]byte{rawOps(many...), []byte(`{"ops":[]}`), []byte(`{}`), []byte(`[]`)} {
		if r := call[hostfuncs.InspectResponse](t, f, hostfuncs.FnInspect, req); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("inspect(%.40s) = %+v, want invalid_request", req, r)
		}
	}
	r := call[hostfuncs.InspectResponse](t, f, hostfuncs.FnInspect, []byte(`{"ops":[{"op":"readlink","path":"/proc/self"},7,{"op":"nope"},{"op":"fstat"},{"op":"fstat","fd":-1}]}`))
	if len(r.Results) != 5 || r.Results[0].Target == "" {
		t.Fatalf("mixed batch = %+v", r)
	}
	for _, x := range r.Results[1:] {
		if code(x) != hostfuncs.CodeInvalidRequest {
			t.Errorf("bad op answered %+v, want invalid_request", x)
		}
	}
}

// The conformance seam: pinned answers, the defaults for the rest (never the
// real system), pinned facts, and functions that answer "not json".
func TestFixture(t *testing.T) {
	f := fixture(t, "linux", nil, map[string]string{"kill0 4242": `{}`, "fstat 0": `{"type":"fifo"}`, "peer 1": `{"peer_pid":4242}`})
	rs := inspect(t, f,
		hostfuncs.InspectOp{Op: "kill0", PID: "4242"}, hostfuncs.InspectOp{Op: "kill0", PID: "1"},
		hostfuncs.InspectOp{Op: "fstat", FD: 0}, hostfuncs.InspectOp{Op: "fstat", FD: 1},
		hostfuncs.InspectOp{Op: "peer", FD: 1}, hostfuncs.InspectOp{Op: "peer", FD: 0},
		hostfuncs.InspectOp{Op: "sysctl", PID: "1"}, hostfuncs.InspectOp{Op: "procargs", PID: "1"}, hostfuncs.InspectOp{Op: "ps", PID: "1"},
		hostfuncs.InspectOp{Op: "exe", PID: "1"},
	)
	if rs[0].Error != nil || code(rs[1]) != hostfuncs.CodeNotFound || rs[2].Type != "fifo" || rs[3].Type != "char" ||
		*rs[4].PeerPID != 4242 || code(rs[5]) != hostfuncs.CodeUnsupported || code(rs[6]) != hostfuncs.CodeUnsupported ||
		code(rs[7]) != hostfuncs.CodeUnsupported || code(rs[8]) != hostfuncs.CodeUnsupported || rs[9].Dev != "2049" || rs[9].Ino != "1234567" {
		t.Errorf("fixture answers = %+v", rs)
	}
	if out := string(f.Call(hostfuncs.FnFacts, []byte(`{}`))); strings.TrimSpace(out) != `{"os":"linux","pid":100}` {
		t.Errorf("facts = %s", out)
	}
	g := primitives.New(primitives.Config{Fixture: &primitives.Fixture{Facts: json.RawMessage(`{}`), NoAnswer: []string{hostfuncs.FnInspect}}})
	if out := g.Call(hostfuncs.FnInspect, rawOps(hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self"})); string(out) != "not json" {
		t.Errorf("no_answer = %q", out)
	}
}

// BenchmarkInspectStart replays, natively, the inspect batches the plugin
// sends at a start whose host is its parent (three calls, 15 operations):
// the cost of the ABI 3 primitives alone, without Wasm.
func BenchmarkInspectStart(b *testing.B) {
	f := primitives.New(primitives.Config{})
	me, parent := strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid())
	first := rawOps(
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/sys/kernel/random/boot_id"},
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self/ns/pid"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/" + me + "/stat"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/" + me + "/cmdline"},
		hostfuncs.InspectOp{Op: "fstat", FD: 0},
		hostfuncs.InspectOp{Op: "fstat", FD: 1},
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self/fd/1"},
		hostfuncs.InspectOp{Op: "readlink", Path: "/proc/self/fd/0"},
	)
	walk := rawOps(
		hostfuncs.InspectOp{Op: "read", Path: "/proc/" + parent + "/stat"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/" + parent + "/cmdline"},
		hostfuncs.InspectOp{Op: "read", Path: "/proc/" + me + "/stat"},
		hostfuncs.InspectOp{Op: "kill0", PID: parent},
	)
	target, _ := os.Readlink("/proc/self/fd/1")
	fds := rawOps(hostfuncs.InspectOp{Op: "fds", PID: "self", Targets: []string{target}}, hostfuncs.InspectOp{Op: "fds", PID: parent, Targets: []string{target}})
	for i := 0; i < b.N; i++ {
		for _, req := range [][]byte{first, walk, fds} {
			f.Call(hostfuncs.FnInspect, req)
		}
	}
}

// fstat and peer answer any fd of this process (facts.stdio_fds may name a
// copy of stdin or stdout above 2), and refuse a negative one before any
// system call.
func TestInspect_FstatAnyFD(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f := primitives.New(primitives.Config{})
	rs := inspect(t, f, hostfuncs.InspectOp{Op: "fstat", FD: int(r.Fd())}, hostfuncs.InspectOp{Op: "peer", FD: int(w.Fd())})
	if rs[0].Type != hostfuncs.FileTypeFIFO || rs[0].Error != nil {
		t.Errorf("fstat of pipe fd %d = %+v, want fifo", r.Fd(), rs[0])
	}
	if code(rs[1]) == hostfuncs.CodeInvalidRequest {
		t.Errorf("peer of fd %d = %+v: refused", w.Fd(), rs[1])
	}
}
