// Command demo shows session resume end to end: it starts the token broker,
// acts as an MCP host with the official Go SDK client, launches an example
// server, has it remember a note, kills it, relaunches it and checks the
// session came back; then a second host (this program re-run as a separate
// process) must get a fresh session. Last, the handle store: a notebook
// created under the first host is read by the second host through its
// handle (resume gives that host a fresh session, the handle still holds
// the notes), and a notebook with a 2 s idle TTL answers handle_expired.
//
//	go run ./examples/demo -broker bin/broker -server "bin/go-server"
//
// It prints a short transcript on stdout and exits 1 if resume did not
// happen, the second host resumed the first one's session, the notebook was
// not readable by the second host, or the short-lived one did not expire. The state
// directory is a temporary one, so your real state is never touched.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

func main() {
	brokerPath := flag.String("broker", "bin/broker", "path of the examples/broker binary")
	serverCmd := flag.String("server", "bin/go-server", "command that starts the example MCP server (split on spaces)")
	verbose := flag.Bool("v", false, "show the servers' and broker's stderr logs")
	secondHost := flag.Bool("second-host", false, "internal: act as the second MCP host and print its session_info as JSON (and, with $MCP_DEMO_HANDLE, the notebook's notes)")
	flag.Parse()
	argv := strings.Fields(*serverCmd)
	ctx := context.Background()

	if *secondHost {
		os.Exit(runSecondHost(ctx, argv))
	}
	var logs io.Writer = io.Discard
	if *verbose {
		logs = os.Stderr
	}
	if err := run(ctx, *brokerPath, argv, logs); err != nil {
		fmt.Printf("\nFAIL: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("\nPASS: the session survived the relaunch, the second host got its own, the notebook outlived its host, and the idle one expired.")
}

func run(ctx context.Context, brokerPath string, argv []string, logs io.Writer) error {
	stateDir, err := os.MkdirTemp("", "mcp-resume-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	broker, err := mcphost.StartBroker(ctx, brokerPath, logs)
	if err != nil {
		return err
	}
	defer broker.Stop()
	env := []string{"MCP_EXAMPLE_BROKER_URL=" + broker.URL, "MCP_RESUME_STATE_DIR=" + stateDir}
	os.Setenv("MCP_EXAMPLE_BROKER_URL", broker.URL)
	os.Setenv("MCP_RESUME_STATE_DIR", stateDir)

	fmt.Printf("broker: %s\nstate directory: %s\nserver: %s\nhost (this process): pid %d\n\n", broker.URL, stateDir, strings.Join(argv, " "), os.Getpid())

	step := func(format string, a ...any) { fmt.Printf("  "+format+"\n", a...) }
	fmt.Println("1. host launches the server")
	srv, err := mcphost.Launch(ctx, argv, env, logs)
	if err != nil {
		return err
	}
	first, err := srv.SessionInfo(ctx)
	if err != nil {
		return err
	}
	step("session_info -> session %s, resumed=%v", first.SessionID, first.Resumed)
	note := "the user prefers tabs over spaces"
	if err := srv.Remember(ctx, note); err != nil {
		return err
	}
	step("remember(%q)", note)
	srv.Kill()
	step("host kills the server (SIGKILL)")

	fmt.Println("\n2. the same host relaunches the server")
	srv, err = mcphost.Launch(ctx, argv, env, logs)
	if err != nil {
		return err
	}
	second, err := srv.SessionInfo(ctx)
	if err != nil {
		return err
	}
	step("session_info -> session %s, resumed=%v", second.SessionID, second.Resumed)
	notes, err := srv.Recall(ctx)
	if err != nil {
		return err
	}
	step("recall -> %q", notes)
	srv.Kill()
	if !second.Resumed || second.SessionID != first.SessionID || !slices.Contains(notes, note) {
		return errors.New("the relaunched server did not resume the session")
	}

	fmt.Println("\n3. a second host (another process) launches the same server")
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var other mcphost.SessionInfo
	pid, err := runSecondHostProcess(self, argv, nil, logs, &other)
	if err != nil {
		return err
	}
	step("second host (pid %d) session_info -> session %s, resumed=%v", pid, other.SessionID, other.Resumed)
	if other.Resumed || other.SessionID == first.SessionID {
		return errors.New("the second host resumed the first host's session")
	}
	return runHandles(ctx, self, argv, env, logs)
}

// runSecondHostProcess runs self (this program) with -second-host as a
// separate process for the server argv, with env added to this process's
// environment and its stderr to logs, and decodes the JSON it prints
// (runSecondHost) into v. It returns the process's pid, or an error when the
// process failed or printed something else.
func runSecondHostProcess(self string, argv, env []string, logs io.Writer, v any) (int, error) {
	cmd := exec.Command(self, "-second-host", "-server", strings.Join(argv, " "))
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = logs
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("second host: %w", err)
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return 0, fmt.Errorf("second host printed %q: %w", out.String(), err)
	}
	return cmd.Process.Pid, nil
}

// runSecondHost launches the server as a different MCP host would and prints
// its session_info as JSON; with $MCP_DEMO_HANDLE set (an environment
// variable, not an argument: a handle is a secret, and arguments are visible
// to every user in ps), it prints {"session": session_info, "notes",
// "generation"} of that notebook instead.
func runSecondHost(ctx context.Context, argv []string) int {
	srv, err := mcphost.Launch(ctx, argv, nil, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Kill()
	info, err := srv.SessionInfo(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	handle := os.Getenv("MCP_DEMO_HANDLE")
	if handle == "" {
		json.NewEncoder(os.Stdout).Encode(info)
		return 0
	}
	notes, gen, err := srv.NotebookRead(ctx, handle)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(notebookSeen{Session: info, Notes: notes, Generation: gen})
	return 0
}
