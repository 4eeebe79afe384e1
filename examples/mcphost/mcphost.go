// Package mcphost plays the MCP host for the demo and the end-to-end tests:
// it runs the example token broker, launches an example stdio MCP server with
// the official Go SDK client (exactly as Claude Desktop or VS Code would:
// a child process speaking JSON-RPC on stdin/stdout), calls the example
// tools, and kills the server the way a host does when it disconnects.
package mcphost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Broker is a running examples/broker process on loopback.
type Broker struct {
	// URL is the base URL the broker printed, e.g. http://127.0.0.1:40123.
	URL string
	cmd *exec.Cmd
}

// StartBroker runs the broker binary at path on 127.0.0.1 with a free port
// and waits (at most 10 s) for the line announcing its URL. Its logs go to
// stderr (nil discards them).
func StartBroker(ctx context.Context, path string, stderr io.Writer) (*Broker, error) {
	cmd := exec.CommandContext(ctx, path, "-addr", "127.0.0.1:0")
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting broker %s: %w (build it with `make build`)", path, err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case l, ok := <-line:
		url, found := strings.CutPrefix(l, "broker listening on ")
		if !ok || !found {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, fmt.Errorf("broker printed %q, want \"broker listening on <url>\"", l)
		}
		return &Broker{URL: url, cmd: cmd}, nil
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		return nil, errors.New("broker did not announce its URL within 10s")
	}
}

// Stop terminates the broker and waits for it. All sessions it held are
// forgotten, so a token it issued is rejected by the next broker.
func (b *Broker) Stop() {
	b.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		b.cmd.Process.Kill()
		<-done
	}
}

// Server is one launched MCP server and the client session talking to it.
type Server struct {
	Notebooks // its tools, over session
	session   *mcp.ClientSession
	cmd       *exec.Cmd
}

// SessionInfo is the example servers' session_info result.
type SessionInfo struct {
	SessionID string `json:"session_id"`
	Resumed   bool   `json:"resumed"`
}

// Launch starts argv as a stdio MCP server with env added to this process's
// environment, and completes the MCP initialize handshake. The server's
// stderr goes to stderr (nil discards it).
func Launch(ctx context.Context, argv []string, env []string, stderr io.Writer) (*Server, error) {
	if len(argv) == 0 {
		return nil, errors.New("no server command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-resume-demo-host", Version: "0.1.0"}, nil)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		return nil, fmt.Errorf("connecting to %v: %w", argv, err)
	}
	return &Server{Notebooks: Notebooks{Session: session}, session: session, cmd: cmd}, nil
}

// PID returns the server process's pid (the direct child; a launcher when
// the server was started through one).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// CallText calls tool with args over session (any MCP client session: a
// Server's, or one a test connected itself) and returns its text content,
// the text parts joined. A tool that answers isError is an error "tool
// <tool> failed: <text>"; a failed call (transport, protocol, 15 s timeout)
// is an error "calling <tool>: ...".
func CallText(ctx context.Context, session *mcp.ClientSession, tool string, args map[string]any) (string, error) {
	res, text, err := callTool(ctx, session, tool, args)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", fmt.Errorf("tool %s failed: %s", tool, text)
	}
	return text, nil
}

// callTool calls tool with a 15 s timeout and returns its result and its
// text content (the text parts joined), or the call's error.
func callTool(ctx context.Context, session *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, "", fmt.Errorf("calling %s: %w", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	return res, text.String(), nil
}

// SessionInfo calls the session_info tool.
func (s *Server) SessionInfo(ctx context.Context) (SessionInfo, error) {
	var info SessionInfo
	out, err := CallText(ctx, s.session, "session_info", map[string]any{})
	if err == nil {
		err = json.Unmarshal([]byte(out), &info)
	}
	return info, err
}

// Remember calls the remember tool with note.
func (s *Server) Remember(ctx context.Context, note string) error {
	_, err := CallText(ctx, s.session, "remember", map[string]any{"note": note})
	return err
}

// Recall calls the recall tool and returns the session's notes.
func (s *Server) Recall(ctx context.Context) ([]string, error) {
	var out struct {
		Notes []string `json:"notes"`
	}
	text, err := CallText(ctx, s.session, "recall", map[string]any{})
	if err == nil {
		err = json.Unmarshal([]byte(text), &out)
	}
	return out.Notes, err
}

// Kill ends the server the way a host does when its user disconnects: the
// process (the launcher, if any) gets SIGKILL, and the client session closes.
func (s *Server) Kill() {
	s.cmd.Process.Kill()
	s.session.Close()
}
