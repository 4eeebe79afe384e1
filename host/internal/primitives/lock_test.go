package primitives_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// TestMain lets this test binary act as another process: one that holds a
// lock (HOSTFUNCS_HOLD_LOCK_DIR), or one that answers an inspect request
// about its own stdio on stderr (HOSTFUNCS_INSPECT, see inspect_test.go).
// codesProbe is the Go side of TestPrepareDir_CodesAcrossHosts, set where
// that test builds (Linux).
var codesProbe func(paths []string) string

func TestMain(m *testing.M) {
	if dir := os.Getenv("HOSTFUNCS_HOLD_LOCK_DIR"); dir != "" {
		f := prepare(nil, dir)
		fmt.Println(string(f.Call(hostfuncs.FnLock, []byte(`{"name":"lock-5-1.a"}`))))
		time.Sleep(time.Minute) // until killed
		os.Exit(0)
	}
	if os.Getenv("HOSTFUNCS_CODES") != "" && codesProbe != nil { // TestPrepareDir_CodesAcrossHosts
		var paths []string
		for _, a := range os.Args[1:] {
			if !strings.HasPrefix(a, "-test.") {
				paths = append(paths, a)
			}
		}
		fmt.Println(codesProbe(paths))
		os.Exit(0)
	}
	if req := os.Getenv("HOSTFUNCS_INSPECT"); req != "" {
		if os.Getenv("HOSTFUNCS_CLOSE_STDIN") != "" {
			os.Stdin.Close()
		}
		fmt.Fprintln(os.Stderr, string(primitives.New(primitives.Config{}).Call(hostfuncs.FnInspect, []byte(req))))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// prepare returns Funcs whose state directory is dir (as a successful open
// fixes it), creating dir if needed.
func prepare(t testing.TB, dir string) *primitives.Funcs {
	f := primitives.New(primitives.Config{})
	_ = os.MkdirAll(dir, 0o700)
	if !f.SetStateDir(dir) {
		if t == nil {
			panic("SetStateDir(" + dir + ") refused")
		}
		t.Fatalf("SetStateDir(%s) refused", dir)
	}
	return f
}

func call[T any](t *testing.T, f *primitives.Funcs, fn string, req any) T {
	t.Helper()
	b, ok := req.([]byte)
	if !ok {
		b, _ = json.Marshal(req)
	}
	var out T
	if err := json.Unmarshal(f.Call(fn, b), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func stateDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLock_ExclusiveUntilClose(t *testing.T) {
	dir := stateDir(t)
	a, b := prepare(t, dir), prepare(t, dir)
	req := hostfuncs.NameRequest{Name: "lock-5-1.a"}
	if r := call[hostfuncs.Empty](t, a, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatalf("first lock: %v", r.Error)
	}
	if r := call[hostfuncs.Empty](t, a, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatalf("relocking a held lock: %v", r.Error)
	}
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, req); r.Error == nil || r.Error.Code != hostfuncs.CodeBusy {
		t.Fatalf("second holder got %+v, want busy", r.Error)
	}
	a.Close()
	// "socket" "" or null means none: the file's flock alone.
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, []byte(`{"name":"lock-5-1.a","socket":""}`)); r.Error != nil {
		t.Fatalf("after Close: %v", r.Error)
	}
	if r := call[hostfuncs.Empty](t, a, hostfuncs.FnLock, []byte(`{"name":"lock-5-1.a","socket":null}`)); r.Error == nil || r.Error.Code != hostfuncs.CodeBusy {
		t.Fatalf("flock held by another store: %+v, want busy", r.Error)
	}
	b.Close()
	if info, err := os.Stat(filepath.Join(dir, "lock-5-1.a")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the lock file must stay, mode 0600: %v %v", info, err)
	}
}

// Only a regular file is a lock: a symlink (never followed, its target not
// created), a directory and a FIFO answer unsafe, the FIFO without hanging
// (opened O_NONBLOCK, then fstat).
func TestLock_RefusesSymlinkDirFIFO(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	defer f.Close()
	os.Symlink("elsewhere", filepath.Join(dir, "lock-link"))
	os.Mkdir(filepath.Join(dir, "lock-dir"), 0o700)
	if err := syscall.Mkfifo(filepath.Join(dir, "lock-fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lock-link", "lock-dir", "lock-fifo"} {
		done := make(chan hostfuncs.Empty, 1)
		go func() {
			done <- call[hostfuncs.Empty](t, f, hostfuncs.FnLock, hostfuncs.LockRequest{Name: name, Socket: "mcp-resume-test-" + name})
		}()
		select {
		case r := <-done:
			if r.Error == nil || r.Error.Code != hostfuncs.CodeUnsafe {
				t.Errorf("lock(%s) = %+v, want unsafe", name, r.Error)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("lock(%s) hangs", name)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "elsewhere")); !os.IsNotExist(err) {
		t.Errorf("lock followed the symlink: %v", err)
	}
	// The refused locks hold nothing: another instance takes them.
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLock, hostfuncs.LockRequest{Name: "lock-ok", Socket: "mcp-resume-test-lock-fifo"}); r.Error != nil {
		t.Errorf("the socket of a refused lock stayed bound: %v", r.Error)
	}
}

// The lock dies with its process, however it dies.
func TestLock_ReleasedByKill9(t *testing.T) {
	dir := stateDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "HOSTFUNCS_HOLD_LOCK_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	var held hostfuncs.Empty
	if err := json.Unmarshal([]byte(line), &held); err != nil || held.Error != nil {
		t.Fatalf("child could not take the lock: %q", line)
	}
	f := prepare(t, dir)
	defer f.Close()
	req := hostfuncs.NameRequest{Name: "lock-5-1.a"}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLock, req); r.Error == nil || r.Error.Code != hostfuncs.CodeBusy {
		t.Fatalf("while the child holds it: %+v, want busy", r.Error)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatalf("after kill -9: %v", r.Error)
	}
}

// On Linux the abstract socket is the lock between hosts: two stores with
// different files (another directory, another name) but one socket exclude
// each other until Close. Both forms are bound (/proc/net/unix lists the
// padded one as @<name>@@@… and the unpadded one as @<name>); a 107-byte
// name fills sun_path, so its two forms are one address, bound once.
func TestLock_SocketIsTheLock(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("abstract sockets exist on Linux only")
	}
	short := fmt.Sprintf("mcp-resume-test-%d", os.Getpid())
	long := short + "-" + strings.Repeat("s", 106-len(short))
	for _, socket := range []string{short, long} {
		a, b := prepare(t, stateDir(t)), prepare(t, stateDir(t))
		if r := call[hostfuncs.Empty](t, a, hostfuncs.FnLock, hostfuncs.LockRequest{Name: "lock-a", Socket: socket}); r.Error != nil {
			t.Fatalf("lock with a %d-byte socket: %v", len(socket), r.Error)
		}
		unix, _ := os.ReadFile("/proc/net/unix")
		forms := []string{" @" + socket + "\n", " @" + socket + "@"}
		if len(socket) == 107 {
			forms = forms[:1]
		}
		for _, form := range forms {
			if !strings.Contains(string(unix), form) {
				t.Errorf("/proc/net/unix lacks %q", form)
			}
		}
		if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, hostfuncs.LockRequest{Name: "lock-b", Socket: socket}); r.Error == nil || r.Error.Code != hostfuncs.CodeBusy {
			t.Errorf("another file, the same %d-byte socket = %+v, want busy", len(socket), r.Error)
		}
		a.Close()
		if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, hostfuncs.LockRequest{Name: "lock-b", Socket: socket}); r.Error != nil {
			t.Errorf("after Close: %v", r.Error)
		}
		b.Close()
	}
}

// mcp_resume_unlock releases a held lock at once (another store takes it),
// keeps the file, and answers {} for a lock not held; a released lock can
// be taken again by the store that released it.
func TestUnlock_ReleasesAndIsIdempotent(t *testing.T) {
	dir := stateDir(t)
	a, b := prepare(t, dir), prepare(t, dir)
	defer a.Close()
	defer b.Close()
	socket := fmt.Sprintf("mcp-resume-test-unlock-%d", os.Getpid())
	req := hostfuncs.LockRequest{Name: "lock-7", Socket: socket}
	un := hostfuncs.UnlockRequest{Name: "lock-7", Socket: socket}
	if r := call[hostfuncs.Empty](t, a, hostfuncs.FnUnlock, un); r.Error != nil {
		t.Fatalf("unlock of a lock never taken: %v, want {}", r.Error)
	}
	if r := call[hostfuncs.Empty](t, a, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatalf("lock: %v", r.Error)
	}
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnUnlock, un); r.Error != nil {
		t.Fatalf("unlock by a store that does not hold it: %v, want {}", r.Error)
	}
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, req); r.Error == nil || r.Error.Code != hostfuncs.CodeBusy {
		t.Fatalf("another store's unlock released a's lock: %+v", r.Error)
	}
	for range 2 {
		if r := call[hostfuncs.Empty](t, a, hostfuncs.FnUnlock, un); r.Error != nil {
			t.Fatalf("unlock: %v", r.Error)
		}
	}
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatalf("after unlock another store must take it (socket and flock released): %v", r.Error)
	}
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnUnlock, un); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := call[hostfuncs.Empty](t, a, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatalf("lock again after unlock: %v", r.Error)
	}
	if info, err := os.Stat(filepath.Join(dir, "lock-7")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("unlock must keep the lock file, mode 0600: %v %v", info, err)
	}
	// Checked like lock: the name rule, the socket's room, a state directory.
	for _, bad := range []string{`{}`, `{"name":"../x"}`, `{"name":"x","socket":"` + strings.Repeat("s", 108) + `"}`, `{"name":"x","socket":7}`} {
		if r := call[hostfuncs.Empty](t, a, hostfuncs.FnUnlock, []byte(bad)); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("unlock %s = %+v, want invalid_request", bad, r.Error)
		}
	}
	if r := call[hostfuncs.Empty](t, primitives.New(primitives.Config{}), hostfuncs.FnUnlock, un); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
		t.Errorf("unlock before a state directory = %+v, want invalid_request", r.Error)
	}
}

// With wait_ms a busy lock is tried until the wait is over: busy after
// about wait_ms while the holder keeps it; the lock as soon as the holder
// releases it within the wait. wait_ms is an integer 0..10000.
func TestLock_WaitMS(t *testing.T) {
	dir := stateDir(t)
	a, b := prepare(t, dir), prepare(t, dir)
	defer a.Close()
	defer b.Close()
	socket := fmt.Sprintf("mcp-resume-test-wait-%d", os.Getpid())
	req := hostfuncs.LockRequest{Name: "lock-w", Socket: socket}
	if r := call[hostfuncs.Empty](t, a, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatal(r.Error)
	}
	start := time.Now()
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, req); r.Error == nil || r.Error.Code != hostfuncs.CodeBusy {
		t.Fatalf("no wait: %+v, want busy", r.Error)
	}
	if took := time.Since(start); took > 100*time.Millisecond {
		t.Errorf("wait_ms 0 took %v: it must try once", took)
	}
	waitReq := hostfuncs.LockRequest{Name: "lock-w", Socket: socket, WaitMS: 300}
	start = time.Now()
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, waitReq); r.Error == nil || r.Error.Code != hostfuncs.CodeBusy {
		t.Fatalf("wait 300 ms on a held lock: %+v, want busy", r.Error)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("busy after %v, want about 300ms", took)
	}
	// Released 100 ms into a 5 s wait: taken soon after (retries at most 5 ms apart).
	time.AfterFunc(100*time.Millisecond, func() { a.Call(hostfuncs.FnUnlock, []byte(`{"name":"lock-w"}`)) })
	waitReq.WaitMS = 5000
	start = time.Now()
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, waitReq); r.Error != nil {
		t.Fatalf("lock released during the wait: %v", r.Error)
	}
	if took := time.Since(start); took < 100*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("taken after %v, want shortly after the 100ms release", took)
	}
	// Other errors answer at once, whatever the wait.
	os.Mkdir(filepath.Join(dir, "lock-d"), 0o700)
	start = time.Now()
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, hostfuncs.LockRequest{Name: "lock-d", WaitMS: 5000}); r.Error == nil || r.Error.Code != hostfuncs.CodeUnsafe {
		t.Errorf("a directory with a wait: %+v, want unsafe", r.Error)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("unsafe after %v: only busy waits", took)
	}
	for _, bad := range []string{`-1`, `10001`, `1.5`, `"5"`, `true`} {
		if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, []byte(`{"name":"lock-x","wait_ms":`+bad+`}`)); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("wait_ms %s = %+v, want invalid_request", bad, r.Error)
		}
	}
	for _, good := range []string{`0`, `10000`, `null`} {
		if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, []byte(`{"name":"lock-y","wait_ms":`+good+`}`)); r.Error != nil {
			t.Errorf("wait_ms %s = %+v, want the lock", good, r.Error)
		}
	}
}

// openFDsOf counts this process's descriptors open on path (/proc/self/fd).
func openFDsOf(t *testing.T, path string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd:", err)
	}
	n := 0
	for _, e := range entries {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == path {
			n++
		}
	}
	return n
}

// A lock file stays open between its locks (unlock only unlocks it) and
// Close closes it; a name that meanwhile points at another file is opened
// and checked again: a FIFO answers unsafe, a new regular file is the one
// locked, never the old one.
func TestLock_FileKeptOpenAndCheckedAgain(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors through /proc/self/fd")
	}
	dir := stateDir(t)
	f := prepare(t, dir)
	p := filepath.Join(dir, "lock-kept")
	lock := hostfuncs.LockRequest{Name: "lock-kept"} // no socket: the flock alone
	un := hostfuncs.UnlockRequest{Name: "lock-kept"}
	for range 3 {
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLock, lock); r.Error != nil {
			t.Fatalf("lock: %v", r.Error)
		}
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnUnlock, un); r.Error != nil {
			t.Fatalf("unlock: %v", r.Error)
		}
		if n := openFDsOf(t, p); n != 1 {
			t.Fatalf("%d descriptors open on the lock file after unlock, want the one kept", n)
		}
	}
	// Unlocked for real: another open file description takes the flock.
	other, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("flock after unlock: %v", err)
	}
	other.Close()

	// Replaced by a FIFO: unsafe, at once, and the old descriptor closed.
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLock, lock); r.Error == nil || r.Error.Code != hostfuncs.CodeUnsafe {
		t.Fatalf("lock of a name replaced by a FIFO = %+v, want unsafe", r.Error)
	}
	// Replaced by a new regular file: that file is the one locked.
	os.Remove(p)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLock, lock); r.Error != nil {
		t.Fatalf("lock of the new file: %v", r.Error)
	}
	if other, err = os.Open(p); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != syscall.EWOULDBLOCK {
		t.Fatalf("flock of the new file while locked = %v, want EWOULDBLOCK", err)
	}
	f.Close()
	if n := openFDsOf(t, p); n != 1 { // ours, other
		t.Errorf("%d descriptors open on the lock file after Close besides the test's", n-1)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Errorf("flock after Close: %v", err)
	}
}
