package hostfuncs_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/internal/hostfuncs"
	"github.com/mcp-resume/mcp-resume/internal/wire"
	"github.com/mcp-resume/mcp-resume/internal/procid"
)

// TestMain lets this test binary act as another process that holds a lock.
func TestMain(m *testing.M) {
	if dir := os.Getenv("HOSTFUNCS_HOLD_LOCK_DIR"); dir != "" {
		f := hostfuncs.New(hostfuncs.Config{Dir: dir})
		fmt.Println(string(f.Call(wire.FnLock, []byte(`{"name":"lock-5-1.a"}`))))
		time.Sleep(time.Minute) // until killed
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func call[T any](t *testing.T, f *hostfuncs.Funcs, fn string, req any) T {
	t.Helper()
	b, _ := json.Marshal(req)
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
	a, b := hostfuncs.New(hostfuncs.Config{Dir: dir}), hostfuncs.New(hostfuncs.Config{Dir: dir})
	req := wire.NameRequest{Name: "lock-5-1.a"}
	if r := call[wire.Empty](t, a, wire.FnLock, req); r.Error != nil {
		t.Fatalf("first lock: %v", r.Error)
	}
	if r := call[wire.Empty](t, a, wire.FnLock, req); r.Error != nil {
		t.Fatalf("relocking a held lock: %v", r.Error)
	}
	if r := call[wire.Empty](t, b, wire.FnLock, req); r.Error == nil || r.Error.Code != wire.CodeBusy {
		t.Fatalf("second holder got %+v, want busy", r.Error)
	}
	a.Close()
	if r := call[wire.Empty](t, b, wire.FnLock, req); r.Error != nil {
		t.Fatalf("after Close: %v", r.Error)
	}
	b.Close()
	if _, err := os.Stat(filepath.Join(dir, "lock-5-1.a")); err != nil {
		t.Errorf("the lock file must stay: %v", err)
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
	var held wire.Empty
	if err := json.Unmarshal([]byte(line), &held); err != nil || held.Error != nil {
		t.Fatalf("child could not take the lock: %q", line)
	}
	f := hostfuncs.New(hostfuncs.Config{Dir: dir})
	defer f.Close()
	req := wire.NameRequest{Name: "lock-5-1.a"}
	if r := call[wire.Empty](t, f, wire.FnLock, req); r.Error == nil || r.Error.Code != wire.CodeBusy {
		t.Fatalf("while the child holds it: %+v, want busy", r.Error)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if r := call[wire.Empty](t, f, wire.FnLock, req); r.Error != nil {
		t.Fatalf("after kill -9: %v", r.Error)
	}
}

func TestProbe(t *testing.T) {
	dir := stateDir(t)
	f := hostfuncs.New(hostfuncs.Config{Dir: dir})
	me, err := procid.Lookup(os.Getpid())
	if err != nil {
		t.Skip("no process identity here:", err)
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := procid.Lookup(child.Process.Pid); err == nil {
		t.Skipf("pid %d was reused already", child.Process.Pid)
	}
	os.WriteFile(filepath.Join(dir, "token-x"), nil, 0o600)
	old := time.Now().Add(-50 * time.Hour)
	os.Chtimes(filepath.Join(dir, "token-x"), old, old)
	for _, tc := range []struct {
		pid   int
		start string
		want  string
	}{
		{me.PID, me.StartTime, wire.HostAlive},
		{me.PID, "1" + me.StartTime, wire.HostGone}, // same pid, another start tick: another process
		{child.Process.Pid, me.StartTime, wire.HostGone},
		{2147483646, "1.a", wire.HostGone},
	} {
		r := call[wire.ProbeResponse](t, f, wire.FnProbe, wire.ProbeRequest{Name: "token-x", PID: tc.pid, StartTime: tc.start})
		if r.Error != nil || r.Host != tc.want || r.AgeSeconds < 50*3600 || r.AgeSeconds > 50*3600+60 {
			t.Errorf("probe(%d, %q) = %+v, want %s aged 50h", tc.pid, tc.start, r, tc.want)
		}
	}
	if r := call[wire.ProbeResponse](t, f, wire.FnProbe, wire.ProbeRequest{Name: "absent", PID: 5, StartTime: "1.a"}); r.Error == nil || r.Error.Code != wire.CodeNotFound {
		t.Errorf("probe of a missing file = %+v, want not_found", r)
	}
}
