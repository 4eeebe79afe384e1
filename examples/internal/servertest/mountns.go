package servertest

// A private mount namespace held open by a sleeping process, for the
// faults that need a file system of their own (a small tmpfs to fill, a
// read-only bind mount) under a real server: the fault suite's faults 1, 2
// and 17 and the handle suite's H9.

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MountNS is a private mount namespace (Linux) kept alive by a sleeping
// process until the test ends. A server enters it with nsenter (Argv),
// which execs the server in place: the server's parent, and so its MCP
// host, stays the test process.
type MountNS struct {
	t testing.TB
	// Pid is the sleeping process holding the namespace.
	Pid int
}

// StartMountNS starts `unshare -m --propagation private sleep 600` and
// waits (at most 10 s) until it runs in a mount namespace other than this
// process's; the test's cleanup kills it. The caller checks first that
// this can work here (root, unshare and nsenter on PATH) and skips its
// test otherwise; a holder that does not start fails t (Fatal).
func StartMountNS(t testing.TB) *MountNS {
	t.Helper()
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	self, _ := os.Readlink("/proc/self/ns/mnt")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		theirs, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid))
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", cmd.Process.Pid))
		if theirs != "" && theirs != self && strings.TrimSpace(string(comm)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the mount namespace holder did not start")
		}
	}
	return &MountNS{t: t, Pid: cmd.Process.Pid}
}

// Run runs the command args inside the namespace (nsenter) and waits for
// it; a failure fails the test (Fatal) with the command's output.
func (ns *MountNS) Run(args ...string) {
	ns.t.Helper()
	full := append([]string{"-t", strconv.Itoa(ns.Pid), "-m", "--"}, args...)
	if out, err := exec.Command("nsenter", full...).CombinedOutput(); err != nil {
		ns.t.Fatalf("nsenter %v: %v\n%s", args, err, out)
	}
}

// Argv returns the command line that runs argv inside the namespace
// (nsenter, which execs argv).
func (ns *MountNS) Argv(argv ...string) []string {
	return append([]string{"nsenter", "-t", strconv.Itoa(ns.Pid), "-m", "--"}, argv...)
}

// Path returns p, a path inside the namespace, as this process reaches it
// from outside (through the holder's /proc/<pid>/root).
func (ns *MountNS) Path(p string) string {
	return fmt.Sprintf("/proc/%d/root%s", ns.Pid, p)
}
