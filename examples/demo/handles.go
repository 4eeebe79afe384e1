package main

// The demo's last part: the handle store (durable state handles for
// sessionless MCP servers) through the example server's notebook tools.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// notebookSeen is what the second host prints when it reads a notebook.
type notebookSeen struct {
	Session    mcphost.SessionInfo `json:"session"`
	Notes      []string            `json:"notes"`
	Generation int64               `json:"generation"`
}

// shortHandle shows a handle's first characters only: it is a bearer secret.
func shortHandle(h string) string { return h[:min(len(h), 9)] + "…" }

// seconds is s seconds as a Go duration ("24h0m0s").
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// runHandles is parts 4 and 5: a notebook created under this host, the
// server killed, then read by a second host process through the same handle
// (where resume gives a fresh session); and a notebook with a 2 s idle TTL
// answering handle_expired once idle longer. self is this program (run as
// the second host), argv the server, env the servers' environment.
func runHandles(ctx context.Context, self string, argv, env []string, logs io.Writer) error {
	step := func(format string, a ...any) { fmt.Printf("  "+format+"\n", a...) }
	fmt.Println("\n4. a notebook outlives its host (the handle store)")
	srv, err := mcphost.Launch(ctx, argv, env, logs)
	if err != nil {
		return err
	}
	nb, err := srv.NotebookCreate(ctx)
	if err != nil {
		srv.Kill()
		return err
	}
	step("notebook_create -> handle %s (generation %d; expires after %v idle, %v after creation at the latest)", shortHandle(nb.Handle), nb.Generation, seconds(nb.IdleTTLSeconds), seconds(nb.MaxAgeSeconds))
	want := []string{"buy milk", "call the plumber"}
	for _, note := range want {
		gen, err := srv.NotebookAdd(ctx, nb.Handle, note, 0)
		if err != nil {
			srv.Kill()
			return err
		}
		step("notebook_add(%q) -> generation %d", note, gen)
	}
	srv.Kill()
	step("host kills the server (SIGKILL)")

	var seen notebookSeen
	pid, err := runSecondHostProcess(self, argv, []string{"MCP_DEMO_HANDLE=" + nb.Handle}, logs, &seen)
	if err != nil {
		return fmt.Errorf("reading the notebook: %w", err)
	}
	step("second host (pid %d) launches the server: session_info -> session %s, resumed=%v", pid, seen.Session.SessionID, seen.Session.Resumed)
	step("notebook_read(%s) -> %q, generation %d", shortHandle(nb.Handle), seen.Notes, seen.Generation)
	if seen.Session.Resumed {
		return errors.New("the second host resumed a session")
	}
	if !slices.Equal(seen.Notes, want) || seen.Generation != 3 {
		return errors.New("the notebook did not outlive its host")
	}

	fmt.Println("\n5. a handle with a 2 s idle TTL expires (MCP_RESUME_STATE_IDLE_TTL=2s)")
	srv, err = mcphost.Launch(ctx, argv, append(slices.Clone(env), "MCP_RESUME_STATE_IDLE_TTL=2s"), logs)
	if err != nil {
		return err
	}
	defer srv.Kill()
	short, err := srv.NotebookCreate(ctx)
	if err != nil {
		return err
	}
	step("notebook_create -> handle %s (expires after %v idle)", shortHandle(short.Handle), seconds(short.IdleTTLSeconds))
	step("... 2.5 s without a call ...")
	time.Sleep(2500 * time.Millisecond)
	_, _, err = srv.NotebookRead(ctx, short.Handle)
	var te *mcphost.ToolError
	if !errors.As(err, &te) || te.Code != "handle_expired" || te.Reason != "idle" {
		return fmt.Errorf("notebook_read of the idle notebook: %v, want handle_expired (reason idle)", err)
	}
	step("notebook_read(%s) -> error %s (reason %s)", shortHandle(short.Handle), te.Code, te.Reason)
	return nil
}
