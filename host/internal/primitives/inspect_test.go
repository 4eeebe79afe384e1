//go:build linux

package primitives_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
		if op.PID != "" {
			m["pid"] = op.PID
		}
		if op.Op == hostfuncs.OpFstat || op.Op == hostfuncs.OpPeer || op.Op == hostfuncs.OpFDLink {
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

// Every typed operation is checked before any system call: a pid that is
// not "self" or digits without a leading zero within 1..2147483647 (self
// only where allowed), an fd outside 0..2147483647, a field of the wrong
// JSON type, an operation that is not an object or is unknown. No path
// crosses the boundary: a "path" field is ignored.
func TestInspect_RefusesBadFields(t *testing.T) {
	f := primitives.New(primitives.Config{})
	var bad []string
	for _, op := range []string{"stat", "cmdline", "pid_ns", "fds", "kill0", "exe", "sysctl", "procargs", "ps"} {
		for _, pid := range []string{`"0"`, `"-1"`, `"01"`, `"2147483648"`, `"99999999999"`, `""`, `"../1"`, `"1/stat"`, `" 1"`, `"SELF"`, `1`, `null`} {
			bad = append(bad, fmt.Sprintf(`{"op":%q,"pid":%s}`, op, pid))
		}
		bad = append(bad, fmt.Sprintf(`{"op":%q}`, op))
	}
	for _, op := range []string{"kill0", "exe", "sysctl", "procargs", "ps"} {
		bad = append(bad, fmt.Sprintf(`{"op":%q,"pid":"self"}`, op))
	}
	for _, fd := range []string{`-1`, `2147483648`, `"0"`, `1.5`, `null`} {
		bad = append(bad, `{"op":"fstat","fd":`+fd+`}`, `{"op":"peer","fd":`+fd+`}`, `{"op":"fd_link","pid":"self","fd":`+fd+`}`)
	}
	bad = append(bad, `{"op":"fd_link","pid":"self"}`, `{"op":"fd_link","fd":0}`, `{"op":"fds","pid":"self","targets":"pipe:[1]"}`,
		`{"op":"fds","pid":"self","targets":[1]}`, `{"op":"read","path":"/proc/self/stat"}`, `{"op":"readlink","path":"/proc/self"}`,
		`{"op":"nope"}`, `{}`, `{"op":7}`, `null`, `7`, `"boot_id"`, `["boot_id"]`)
	var results []hostfuncs.InspectResult
	for chunk := range slices.Chunk(bad, hostfuncs.MaxInspectOps) {
		r := call[hostfuncs.InspectResponse](t, f, hostfuncs.FnInspect, []byte(`{"ops":[`+strings.Join(chunk, ",")+`]}`))
		if r.Error != nil || len(r.Results) != len(chunk) {
			t.Fatalf("%d operations: %+v", len(chunk), r)
		}
		results = append(results, r.Results...)
	}
	for i, op := range bad {
		if code(results[i]) != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s = %+v, want invalid_request", op, results[i])
		}
	}
}

// The data operations read at most 65536 bytes: the cmdline of a child
// whose arguments are longer.
func TestInspect_ReadCap(t *testing.T) {
	child := exec.Command("sh", "-c", "sleep 30", "sh", strings.Repeat("a", 70000))
	if err := child.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	r := inspect(t, primitives.New(primitives.Config{}), hostfuncs.InspectOp{Op: "cmdline", PID: strconv.Itoa(child.Process.Pid)})[0]
	if r.Error != nil || len(r.Data) != primitives.MaxProcRead {
		t.Errorf("cmdline of a 70000-byte argument: %d bytes, %+v", len(r.Data), r.Error)
	}
}

// The typed /proc operations on the real /proc of this process, each
// against what the test reads itself.
func TestInspect_RealProc(t *testing.T) {
	f := primitives.New(primitives.Config{})
	me, parent := strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid())
	rs := inspect(t, f,
		hostfuncs.InspectOp{Op: "self"},
		hostfuncs.InspectOp{Op: "boot_id"},
		hostfuncs.InspectOp{Op: "timens"},
		hostfuncs.InspectOp{Op: "stat", PID: "self"},
		hostfuncs.InspectOp{Op: "stat", PID: me},
		hostfuncs.InspectOp{Op: "cmdline", PID: parent},
		hostfuncs.InspectOp{Op: "pid_ns", PID: "self"},
		hostfuncs.InspectOp{Op: "pid_ns", PID: me},
		hostfuncs.InspectOp{Op: "fd_link", PID: "self", FD: 0},
		hostfuncs.InspectOp{Op: "stat", PID: "2147483646"},
		hostfuncs.InspectOp{Op: "fd_link", PID: "self", FD: 2147483646},
		hostfuncs.InspectOp{Op: "sysctl", PID: "1"},
		hostfuncs.InspectOp{Op: "procargs", PID: "1"},
		hostfuncs.InspectOp{Op: "ps", PID: "1"},
	)
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	link := func(p string) string { s, _ := os.Readlink(p); return s }
	if rs[0].Target != me || string(rs[1].Data) != read("/proc/sys/kernel/random/boot_id") || len(bytes.TrimSpace(rs[1].Data)) != 36 {
		t.Errorf("self, boot_id = %+v, %+v", rs[0], rs[1])
	}
	if timens := read("/proc/self/timens_offsets"); timens != "" && string(rs[2].Data) != timens || timens == "" && code(rs[2]) != hostfuncs.CodeNotFound {
		t.Errorf("timens = %+v, want %q", rs[2], timens)
	}
	if !strings.HasPrefix(string(rs[3].Data), me+" (") || !strings.HasPrefix(string(rs[4].Data), me+" (") || string(rs[5].Data) != read("/proc/"+parent+"/cmdline") {
		t.Errorf("stat, cmdline = %+v %+v %+v", rs[3], rs[4], rs[5])
	}
	if ns := link("/proc/self/ns/pid"); !strings.HasPrefix(ns, "pid:[") || rs[6].Target != ns || rs[7].Target != ns {
		t.Errorf("pid_ns = %+v %+v, want %q", rs[6], rs[7], ns)
	}
	if rs[8].Target != link("/proc/self/fd/0") || code(rs[9]) != hostfuncs.CodeNotFound || code(rs[10]) != hostfuncs.CodeNotFound {
		t.Errorf("fd_link 0, stat of a missing pid, fd_link of a closed fd = %+v %+v %+v", rs[8], rs[9], rs[10])
	}
	if code(rs[11]) != hostfuncs.CodeUnsupported || code(rs[12]) != hostfuncs.CodeUnsupported || code(rs[13]) != hostfuncs.CodeUnsupported {
		t.Errorf("sysctl, procargs, ps on Linux = %+v", rs[11:])
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
	self := inspect(t, f, hostfuncs.InspectOp{Op: "fd_link", PID: "self", FD: int(r.Fd())})[0]
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
		many[i] = hostfuncs.InspectOp{Op: "self"}
	}
	for _, req := range [][]byte{rawOps(many...), []byte(`{"ops":[]}`), []byte(`{}`), []byte(`[]`), []byte(`{"ops":null}`), []byte(`{"ops":{"op":"self"}}`)} {
		if r := call[hostfuncs.InspectResponse](t, f, hostfuncs.FnInspect, req); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("inspect(%.40s) = %+v, want invalid_request", req, r)
		}
	}
	r := call[hostfuncs.InspectResponse](t, f, hostfuncs.FnInspect, []byte(`{"ops":[{"op":"self"},7,{"op":"nope"},{"op":"fstat"},{"op":"fstat","fd":-1}]}`))
	if len(r.Results) != 5 || r.Results[0].Target == "" {
		t.Fatalf("mixed batch = %+v", r)
	}
	for _, x := range r.Results[1:] {
		if code(x) != hostfuncs.CodeInvalidRequest {
			t.Errorf("bad op answered %+v, want invalid_request", x)
		}
	}
}

// BenchmarkInspectStart replays, natively, the inspect batches the plugin
// sends at a start whose host is its parent (three calls, 15 operations):
// the cost of the primitives alone, without Wasm.
func BenchmarkInspectStart(b *testing.B) {
	f := primitives.New(primitives.Config{})
	me, parent := strconv.Itoa(os.Getpid()), strconv.Itoa(os.Getppid())
	first := rawOps(
		hostfuncs.InspectOp{Op: "self"},
		hostfuncs.InspectOp{Op: "boot_id"},
		hostfuncs.InspectOp{Op: "pid_ns", PID: "self"},
		hostfuncs.InspectOp{Op: "stat", PID: me},
		hostfuncs.InspectOp{Op: "cmdline", PID: me},
		hostfuncs.InspectOp{Op: "fstat", FD: 0},
		hostfuncs.InspectOp{Op: "fstat", FD: 1},
		hostfuncs.InspectOp{Op: "fd_link", PID: "self", FD: 1},
		hostfuncs.InspectOp{Op: "fd_link", PID: "self", FD: 0},
	)
	walk := rawOps(
		hostfuncs.InspectOp{Op: "stat", PID: parent},
		hostfuncs.InspectOp{Op: "cmdline", PID: parent},
		hostfuncs.InspectOp{Op: "stat", PID: me},
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
