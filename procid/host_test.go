//go:build linux || darwin

package procid

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// These tests run real processes: the test binary re-runs itself as a child
// (TestHelperProcess), possibly through launchers, and the child reports
// what Host resolved.

const (
	// helperEnv makes TestHelperProcess act as the child.
	helperEnv = "PROCID_TEST_HELPER"
	// childEnv holds the shell command that starts the child, for shell
	// command strings that nest it.
	childEnv = "PROCID_TEST_CHILD"
	// resultPrefix marks the child's result line on stdout.
	resultPrefix = "procid-result: "
)

// helperResult is what the child reports.
type helperResult struct {
	PID       int
	StartTime string
	Chain     []string // names
	Err       string
}

// TestHelperProcess is not a test: run by the tests below as a child process
// with helperEnv=1, it prints Host(nil) as a resultPrefix line and exits.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	id, err := Host(nil)
	res := helperResult{PID: id.PID, StartTime: id.StartTime}
	for _, p := range id.Chain {
		res.Chain = append(res.Chain, p.Name)
	}
	if err != nil {
		res.Err = err.Error()
	}
	b, _ := json.Marshal(res)
	os.Stdout.Write(append([]byte(resultPrefix), append(b, '\n')...))
	os.Exit(0)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runChild runs the child through cmd (whose Path and Args are set), with
// extra environment, and returns what it reported and the pid of the process
// the test started.
func runChild(t *testing.T, cmd *exec.Cmd, extraEnv ...string) (helperResult, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{helperEnv + "=1", childEnv + "=" + shellQuote(exe) + " -test.run=^TestHelperProcess$"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, LaunchersEnv+"=") && !strings.HasPrefix(kv, helperEnv+"=") && !strings.HasPrefix(kv, childEnv+"=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", cmd.Args, err, stdout.String(), stderr.String())
	}
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), resultPrefix); ok {
			var res helperResult
			if err := json.Unmarshal([]byte(line), &res); err != nil {
				t.Fatal(err)
			}
			return res, cmd.Process.Pid
		}
	}
	t.Fatalf("%v printed no result\nstdout:\n%s\nstderr:\n%s", cmd.Args, stdout.String(), stderr.String())
	return helperResult{}, 0
}

// self returns the test process as Lookup sees it.
func self(t *testing.T) Process {
	t.Helper()
	p, err := Lookup(os.Getpid())
	if err != nil {
		t.Fatalf("Lookup(os.Getpid()) error: %v", err)
	}
	return p
}

func TestHost(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	me := self(t)
	hasTimeout := false
	if _, err := exec.LookPath("timeout"); err == nil {
		hasTimeout = true
	}
	tests := []struct {
		name string
		cmd  func() *exec.Cmd
		env  []string
		skip bool
		// wantChain are the expected chain names; the host is the test
		// process unless wantStarted.
		wantChain []string
		// wantStarted means the host is the process the test started.
		wantStarted bool
	}{
		{
			name:      "direct child",
			cmd:       func() *exec.Cmd { return exec.Command(exe, "-test.run=^TestHelperProcess$") },
			wantChain: []string{me.Name},
		},
		{
			name:      "sh -c",
			cmd:       func() *exec.Cmd { return exec.Command("sh", "-c", `eval "$`+childEnv+`"; exit $?`) },
			wantChain: []string{"sh", me.Name},
		},
		{
			name: "sh -c, env sh -c",
			cmd: func() *exec.Cmd {
				return exec.Command("sh", "-c", `env sh -c "$`+childEnv+`; exit \$?"; exit $?`)
			},
			// env execs sh, so it never shows.
			wantChain: []string{"sh", "sh", me.Name},
		},
		{
			name: "sh -c, timeout, sh -c",
			cmd: func() *exec.Cmd {
				return exec.Command("sh", "-c", `timeout 60 sh -c "$`+childEnv+`; exit \$?"; exit $?`)
			},
			skip:      !hasTimeout,
			wantChain: []string{"sh", "timeout", "sh", me.Name},
		},
		{
			name: "sh reading stdin is the host",
			cmd: func() *exec.Cmd {
				c := exec.Command("sh", "-s")
				c.Stdin = strings.NewReader(`eval "$` + childEnv + `"; exit $?` + "\n")
				return c
			},
			wantChain:   []string{"sh"},
			wantStarted: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip {
				t.Skip("needs timeout(1)")
			}
			got, started := runChild(t, tt.cmd(), tt.env...)
			want := helperResult{PID: me.PID, StartTime: me.StartTime, Chain: tt.wantChain}
			if tt.wantStarted {
				if got.StartTime == "" {
					t.Errorf("Host() in child has an empty StartTime")
				}
				want.PID, want.StartTime, got.StartTime = started, "", ""
			}
			if d := diff(want, got); d != "" {
				t.Errorf("Host() in child mismatch %s", d)
			}
		})
	}
}

// TestHost_LaunchersEnv checks that LaunchersEnv naming the test process
// makes the child resolve past it, to the test process's own host.
func TestHost_LaunchersEnv(t *testing.T) {
	t.Setenv(LaunchersEnv, "")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	me := self(t)
	if me.Name == "" {
		t.Skip("test process has no name")
	}
	wantID, err := HostOf(os.Getpid(), nil)
	if err != nil {
		t.Skipf("the test process itself has no resolvable host: %v", err)
	}
	var wantChain []string
	wantChain = append(wantChain, me.Name)
	for _, p := range wantID.Chain {
		wantChain = append(wantChain, p.Name)
	}
	got, _ := runChild(t, exec.Command(exe, "-test.run=^TestHelperProcess$"), LaunchersEnv+"=unrelated, "+me.Name)
	want := helperResult{PID: wantID.PID, StartTime: wantID.StartTime, Chain: wantChain}
	if d := diff(want, got); d != "" {
		t.Errorf("Host() in child with %s=%s mismatch %s", LaunchersEnv, me.Name, d)
	}
}

func TestLookup(t *testing.T) {
	me := self(t)
	if me.PID != os.Getpid() || me.PPID != os.Getppid() {
		t.Errorf("Lookup(os.Getpid()) = pid %d ppid %d, want %d %d", me.PID, me.PPID, os.Getpid(), os.Getppid())
	}
	if me.Name == "" {
		t.Errorf("Lookup(os.Getpid()).Name is empty")
	}
	if len(me.Args) == 0 || me.Args[0] != os.Args[0] {
		t.Errorf("Lookup(os.Getpid()).Args = %q, want to start with %q", me.Args, os.Args[0])
	}
	format := regexp.MustCompile(`^[0-9]+\.[0-9a-f]{32}\.[0-9]+$`)
	if runtime.GOOS == "darwin" {
		format = regexp.MustCompile(`^[0-9]+\.[0-9]{6}$`)
	}
	if !format.MatchString(me.StartTime) {
		t.Errorf("Lookup(os.Getpid()).StartTime = %q, want to match %v", me.StartTime, format)
	}
	again := self(t)
	if again.StartTime != me.StartTime {
		t.Errorf("StartTime changed between two lookups: %q then %q", me.StartTime, again.StartTime)
	}

	for _, pid := range []int{0, -1, exitedPID(t)} {
		if p, err := Lookup(pid); !errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup(%d) = %+v, %v; want error %v", pid, p, err, ErrNotFound)
		}
	}
}

// exitedPID returns the pid of a child that has exited and been reaped.
func exitedPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestAlive(t *testing.T) {
	me := self(t)
	tests := []struct {
		name      string
		pid       int
		startTime string
		want      bool
	}{
		{name: "self", pid: me.PID, startTime: me.StartTime, want: true},
		{name: "other start time", pid: me.PID, startTime: "1" + me.StartTime},
		{name: "empty start time", pid: me.PID},
		{name: "exited", pid: exitedPID(t), startTime: me.StartTime},
		{name: "pid 0", pid: 0, startTime: me.StartTime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Alive(tt.pid, tt.startTime)
			if err != nil {
				t.Fatalf("Alive(%d, %q) error: %v", tt.pid, tt.startTime, err)
			}
			if got != tt.want {
				t.Errorf("Alive(%d, %q) = %v, want %v", tt.pid, tt.startTime, got, tt.want)
			}
		})
	}
}
