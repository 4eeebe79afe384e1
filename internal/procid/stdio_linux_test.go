//go:build linux

package procid

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// relayEnv makes TestRelayProcess act as an intermediate process between the
// test and the child: "relay" starts the child itself, "subreaper" marks
// itself PR_SET_CHILD_SUBREAPER and starts the child through `sh -c 'child
// &'`, which exits at once, so the child is orphaned and adopted by it. In
// both cases the child's stdout is fd 4, a pipe whose other end the test
// holds and the relay closes, and the child reports on fd 3.
const relayEnv = "PROCID_TEST_RELAY"

// TestRelayProcess is not a test; see relayEnv.
func TestRelayProcess(t *testing.T) {
	mode := os.Getenv(relayEnv)
	if mode == "" {
		return
	}
	result, stdout := os.NewFile(3, "result"), os.NewFile(4, "stdout")
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^TestHelperProcess$")
	if mode == "subreaper" {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "prctl(PR_SET_CHILD_SUBREAPER):", err)
			os.Exit(1)
		}
		cmd = exec.Command("sh", "-c", `eval "$`+childEnv+`" &`)
	}
	cmd.Env = append(os.Environ(), relayEnv+"=")
	cmd.Stdout, cmd.Stderr = stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{result}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	result.Close()
	stdout.Close()
	cmd.Wait()
	// Reap the adopted child, if any.
	for {
		if _, err := syscall.Wait4(-1, nil, 0, nil); errors.Is(err, syscall.ECHILD) {
			break
		}
	}
	os.Exit(0)
}

// TestHost_Stdio runs the child with each kind of stdio an MCP host may give
// it and checks what the stdio check makes of it.
func TestHost_Stdio(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	me := self(t)
	child := func() *exec.Cmd { return exec.Command(exe, "-test.run=^TestHelperProcess$") }

	t.Run("socket pair made by the host", func(t *testing.T) {
		// As Node and libuv hosts give their children.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		mine, theirs := os.NewFile(uintptr(fds[0]), "host end"), os.NewFile(uintptr(fds[1]), "server end")
		defer mine.Close()
		cmd := child()
		cmd.Stdin, cmd.Stdout = theirs, theirs
		got, _ := runChild(t, cmd)
		theirs.Close()
		want := regexp.MustCompile(`^verified: stdin socket:\[[0-9]+\] peer is the host$`)
		if got.Err != "" || got.PID != me.PID || !want.MatchString(got.Stdio) {
			t.Errorf("Host() in child = %+v, want pid %d and Stdio matching %v", got, me.PID, want)
		}
	})

	t.Run("dev null", func(t *testing.T) {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		cmd := child()
		cmd.Stdin, cmd.Stdout = null, null
		got, _ := runChild(t, cmd)
		want := "not checked: stdin is not a pipe or socket; stdout is not a pipe or socket"
		if got.Err != "" || got.PID != me.PID || got.Stdio != want {
			t.Errorf("Host() in child = %+v, want pid %d and Stdio %q", got, me.PID, want)
		}
	})

	for _, mode := range []string{"relay", "subreaper"} {
		t.Run(mode, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close() // the other end of the child's stdout, held by the test
			cmd := exec.Command(exe, "-test.run=^TestRelayProcess$")
			cmd.ExtraFiles = []*os.File{w} // fd 4, after runChild's fd 3
			got, relay := runChild(t, cmd, relayEnv+"="+mode)
			w.Close()
			if got.PID != 0 || !strings.HasSuffix(got.Err, ErrAdopted.Error()) {
				t.Fatalf("Host() in child = %+v, want error %v", got, ErrAdopted)
			}
			for _, s := range []string{
				`the host pid ` + strconv.Itoa(relay) + ` ("procid.test") does not hold the other end of the server's stdio (stdout pipe:[`,
				`] is not held by the host)`,
			} {
				if !strings.Contains(got.Err, s) {
					t.Errorf("error %q does not contain %q", got.Err, s)
				}
			}
		})
	}
}

// BenchmarkCheckPipe measures the pipe half of the stdio check: finding
// the other end of a pipe among a host's open fds, here this process's,
// with some hundred extra fds open, as a large host (an editor) has. The
// pipe is opened last, so the scan visits every fd.
func BenchmarkCheckPipe(b *testing.B) {
	for _, extra := range []int{0, 100, 500} {
		b.Run(fmt.Sprintf("host_fds=+%d", extra), func(b *testing.B) {
			for range extra {
				f, err := os.Open(os.DevNull)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
			}
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			reader := &linuxReader{root: "/proc"}
			fd := int(r.Fd())
			link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
			if err != nil {
				b.Fatal(err)
			}
			self := Process{PID: os.Getpid(), Name: "bench"}
			for b.Loop() {
				if v, why, err := reader.checkPipe(fd, "stdin", link, self); v != verified || err != nil {
					b.Fatalf("checkPipe = %v %q %v", v, why, err)
				}
			}
		})
	}
}
