package primitives_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	if r := call[hostfuncs.Empty](t, b, hostfuncs.FnLock, req); r.Error != nil {
		t.Fatalf("after Close: %v", r.Error)
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
