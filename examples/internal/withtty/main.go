// Command withtty runs a command as the leader of a new session whose
// controlling terminal is a fresh pseudo-terminal, leaving its stdin, stdout
// and stderr as they were.
//
//	go run ./examples/internal/withtty make test-suites
//
// The plugin trusts an MCP host that acts for one person: one with a
// controlling terminal or a desktop session (README, "Who is trusted"). The
// test suites play such hosts themselves (the Go test binaries, pytest,
// node's test runner), and a developer runs them from a terminal; CI runs
// them with neither. withtty gives the whole test run the terminal a
// developer would have, and nothing else: output still goes to the
// caller's stdout and stderr, stdin stays what it was (so nothing waits on
// a terminal for input), and whatever a program writes to /dev/tty itself
// is copied to stderr. Tests of hosts without a terminal start them in a
// session of their own (setsid), as before.
//
// Exit status: the command's, or 1 with a message on stderr when the
// terminal or the command cannot be started; 128+n when it died of signal n.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// stageEnv marks the second stage: the child that already leads its session
// with the terminal as fd 3 closes that fd and execs the command, so no
// process of the test run inherits the terminal as an open file.
const stageEnv = "MCP_RESUME_WITHTTY_STAGE"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: withtty COMMAND [ARG...]")
		os.Exit(2)
	}
	if os.Getenv(stageEnv) == "2" {
		os.Exit(stage2(os.Args[1:]))
	}
	os.Exit(run(os.Args[1:]))
}

// run opens a pseudo-terminal, starts this program again as the leader of a
// new session with the terminal's slave side as its controlling terminal
// (fd 3), copies what reaches the master side to stderr, forwards SIGINT and
// SIGTERM, and returns the command's exit status.
func run(args []string) int {
	master, slave, err := pty.Open()
	if err != nil {
		fmt.Fprintf(os.Stderr, "withtty: open a pseudo-terminal: %v\n", err)
		return 1
	}
	defer master.Close()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "withtty: %v\n", err)
		return 1
	}
	cmd := exec.Command(self, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{slave}
	cmd.Env = append(os.Environ(), stageEnv+"=2")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "withtty: start %s: %v\n", args[0], err)
		return 1
	}
	// Drain the terminal: a writer to /dev/tty must never block on a full
	// buffer. This process keeps the slave side open, so that reads do not
	// end (EIO) while no process of the command happens to hold it.
	defer slave.Close()
	drained := make(chan struct{})
	go func() { io.Copy(os.Stderr, master); close(drained) }()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			// The command leads its own process group: signal all of it.
			_ = syscall.Kill(-cmd.Process.Pid, s.(syscall.Signal))
		}
	}()
	err = cmd.Wait()
	select { // what the command wrote to its terminal last
	case <-drained:
	case <-time.After(100 * time.Millisecond):
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "withtty: %v\n", err)
	return 1
}

// stage2 runs in the new session: the terminal is already its controlling
// terminal, so fd 3 is closed and the command replaces this process.
func stage2(args []string) int {
	_ = unix.Close(3)
	os.Unsetenv(stageEnv)
	path, err := exec.LookPath(args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "withtty: %v\n", err)
		return 127
	}
	err = syscall.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "withtty: exec %s: %v\n", args[0], err)
	return 126
}
