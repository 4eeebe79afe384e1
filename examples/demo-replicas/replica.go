package main

// The launcher of one example server as an HTTP replica: the tests use
// examples/internal/servertest.StartHTTP, which needs a testing.T.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"time"
)

// urlLine is the line an example server logs on stderr once it listens.
var urlLine = regexp.MustCompile(`listening.*url=(http://\S+/mcp)|url=(http://\S+/mcp).*listening`)

// replica is one example server process in Streamable HTTP mode.
type replica struct {
	// URL is the MCP endpoint the server logged (http://127.0.0.1:PORT/mcp).
	URL string
	cmd *exec.Cmd
	// exited is closed when the process has exited.
	exited chan struct{}
}

// startReplica runs argv with "--http 127.0.0.1:0" appended and env added
// to this process's environment, copies its stderr to stderr (nil: discard)
// and waits at most 60 s for the line announcing its URL. Its stdout must
// stay empty: anything written there is copied to stderr prefixed with
// "STDOUT:" so that a caller can see it.
func startReplica(ctx context.Context, argv, env []string, stderr io.Writer) (*replica, error) {
	if stderr == nil {
		stderr = io.Discard
	}
	cmd := exec.Command(argv[0], append(argv[1:len(argv):len(argv)], "--http", "127.0.0.1:0")...)
	cmd.Env = append(os.Environ(), env...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %v: %w", argv, err)
	}
	r := &replica{cmd: cmd, exited: make(chan struct{})}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			fmt.Fprintln(stderr, sc.Text())
			if m := urlLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1] + m[2]:
				default:
				}
			}
		}
	}()
	go func() {
		sc := bufio.NewScanner(outPipe)
		for sc.Scan() {
			fmt.Fprintln(stderr, "STDOUT: "+sc.Text())
		}
		cmd.Wait()
		close(r.exited)
	}()
	select {
	case r.URL = <-found:
		return r, nil
	case <-r.exited:
		return nil, fmt.Errorf("%v exited before announcing its URL", argv)
	case <-time.After(60 * time.Second):
	case <-ctx.Done():
	}
	r.Stop()
	return nil, fmt.Errorf("%v did not log `listening ... url=http://.../mcp` within 60 s", argv)
}

// PID is the server's process id.
func (r *replica) PID() int { return r.cmd.Process.Pid }

// Stop sends SIGTERM and waits at most 5 s for the process to exit, then
// kills it. It returns an error when SIGTERM did not stop it in time.
func (r *replica) Stop() error {
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		return nil
	case <-time.After(5 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
		return errors.New("the server did not stop within 5 s of SIGTERM")
	}
}
