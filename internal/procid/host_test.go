//go:build linux || darwin

package procid

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// These tests run real processes: the test binary re-runs itself as a child
// (TestHelperProcess), possibly through launchers, and the child reports
// what Host resolved on fd 3, leaving its stdin and stdout to the test (the
// stdio check looks at them).

const (
	// helperEnv makes TestHelperProcess act as the child.
	helperEnv = "PROCID_TEST_HELPER"
	// childEnv holds the shell command that starts the child, for shell
	// command strings that nest it.
	childEnv = "PROCID_TEST_CHILD"
	// resultFD is the child's fd the test reads its helperResult from.
	resultFD = 3
)

// helperResult is what the child reports.
type helperResult struct {
	PID       int
	StartTime string
	Chain     []string // names
	Stdio     string
	Err       string
}

// TestHelperProcess is not a test: run by the tests below as a child process
// with helperEnv=1, it writes Host(nil) as JSON to fd resultFD and exits.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	id, err := Host(nil)
	res := helperResult{PID: id.PID, StartTime: id.StartTime, Stdio: id.Stdio}
	for _, p := range id.Chain {
		res.Chain = append(res.Chain, p.Name)
	}
	if err != nil {
		res.Err = err.Error()
	}
	out := os.NewFile(resultFD, "result")
	if err := json.NewEncoder(out).Encode(res); err != nil {
		fmt.Fprintln(os.Stderr, "write result:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// childEnviron is the environment that makes a process TestHelperProcess,
// started directly or through childEnv, with extra variables.
func childEnviron(t *testing.T, extraEnv ...string) []string {
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
	return append(env, extraEnv...)
}

// runChild runs the child through cmd (whose Path and Args are set, and
// whose Stdin and Stdout the test may have set; a nil Stdout becomes a pipe
// read by the test), with extra environment, and returns what it reported
// and the pid of the process the test started.
func runChild(t *testing.T, cmd *exec.Cmd, extraEnv ...string) (helperResult, int) {
	t.Helper()
	cmd.Env = childEnviron(t, extraEnv...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd.ExtraFiles = append([]*os.File{w}, cmd.ExtraFiles...)
	var stdout, stderr bytes.Buffer
	if cmd.Stdout == nil {
		cmd.Stdout = &stdout
	}
	cmd.Stderr = &stderr
	err = cmd.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %v\nstdout:\n%s\nstderr:\n%s", cmd.Args, err, stdout.String(), stderr.String())
	}
	var res helperResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("%v reported %q: %v\nstderr:\n%s", cmd.Args, data, err, stderr.String())
	}
	return res, cmd.Process.Pid
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

// verifiedPipe is the Stdio of a child whose stdout is a pipe the test
// process, its host, reads (Linux).
var verifiedPipe = regexp.MustCompile(`^verified: stdout pipe:\[[0-9]+\] is held by the host as fd [0-9]+$`)

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
		// wantLinuxErr, when set, is the error Host returns on Linux, where
		// the stdio check runs.
		wantLinuxErr error
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
			// The walk stops at a shell reading its script from stdin: it is
			// the host. But it passes its own stdio through to the child, so
			// it holds neither pipe's other end, and the stdio check refuses.
			name: "sh reading stdin passes its stdio through",
			cmd: func() *exec.Cmd {
				c := exec.Command("sh", "-s")
				c.Stdin = strings.NewReader(`eval "$` + childEnv + `"; exit $?` + "\n")
				return c
			},
			wantChain:    []string{"sh"},
			wantStarted:  true,
			wantLinuxErr: ErrAdopted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.skip {
				t.Skip("needs timeout(1)")
			}
			got, started := runChild(t, tt.cmd(), tt.env...)
			if runtime.GOOS == "linux" && tt.wantLinuxErr != nil {
				if !strings.HasSuffix(got.Err, tt.wantLinuxErr.Error()) || got.PID != 0 {
					t.Errorf("Host() in child = %+v, want error %q", got, tt.wantLinuxErr)
				}
				return
			}
			want := helperResult{PID: me.PID, StartTime: me.StartTime, Chain: tt.wantChain, Stdio: got.Stdio}
			if tt.wantStarted {
				if got.StartTime == "" {
					t.Errorf("Host() in child has an empty StartTime")
				}
				want.PID, want.StartTime, got.StartTime = started, "", ""
			}
			if d := diff(want, got); d != "" {
				t.Errorf("Host() in child mismatch %s", d)
			}
			if runtime.GOOS == "linux" && !verifiedPipe.MatchString(got.Stdio) {
				t.Errorf("Host() in child: Stdio = %q, want to match %v", got.Stdio, verifiedPipe)
			}
		})
	}
}

// TestHost_LaunchersEnv checks that LaunchersEnv naming the test process
// makes the child resolve past it, to the test process's own host. The
// child gets the test process's own stdin and stdout, as a launcher passes
// them through, so its stdio check has the same outcome as the test
// process's.
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
	var wantErr string
	if checked, err := Host(nil); err != nil {
		wantErr = err.Error()
		t.Logf("Host() in the test process: %v", err)
	} else {
		wantID = checked
		t.Logf("Host() in the test process: pid %d, stdio %s", checked.PID, checked.Stdio)
	}
	var wantChain []string
	wantChain = append(wantChain, me.Name)
	for _, p := range wantID.Chain {
		wantChain = append(wantChain, p.Name)
	}
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	cmd.Stdin, cmd.Stdout = os.Stdin, os.Stdout
	got, _ := runChild(t, cmd, LaunchersEnv+"=unrelated, "+me.Name)
	if wantErr != "" {
		// Same failure, seen from the child's pid.
		ofPID := regexp.MustCompile(`^procid: resolve MCP host of pid [0-9]+: `)
		if ofPID.ReplaceAllString(got.Err, "") != ofPID.ReplaceAllString(wantErr, "") {
			t.Errorf("Host() in child with %s=%s = %+v, want the test process's error %q", LaunchersEnv, me.Name, got, wantErr)
		}
		return
	}
	want := helperResult{PID: wantID.PID, StartTime: wantID.StartTime, Chain: wantChain, Stdio: wantID.Stdio}
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
