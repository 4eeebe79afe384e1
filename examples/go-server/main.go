// Command go-server is an example stdio MCP server, on the official Go SDK,
// whose broker session survives relaunches by the same MCP host through
// mcp-resume (package host).
//
// Environment:
//
//	MCP_RESUME_BROKER_URL  the token broker (examples/broker), required
//	MCP_RESUME_STATE_DIR   overrides the state directory (optional)
//	MCP_RESUME_BENCH       "load": open the store, load once, exit 0 (startup benchmark);
//	                       "baseline": the same startup without the store
//
// Tools: remember(note) -> "remembered"; recall() -> {"notes": [...]};
// session_info() -> {"session_id": string, "resumed": bool}.
//
// Startup follows spec 000, MCP Server Startup: load the stored token, offer
// it to the broker, reject it if the broker refuses, store whatever token the
// broker issues. Logs go to stderr; stdout carries only JSON-RPC.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/broker/brokerclient"
	"github.com/mcp-resume/mcp-resume/host"
)

// App is this server's app name: its token files live in their own state
// directory, apart from every other MCP server's.
const App = "example-go"

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, logger); err != nil {
		logger.Error("go-server stopped", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, logger *slog.Logger) error {
	bench := os.Getenv("MCP_RESUME_BENCH")
	server := newServer()
	if bench == "baseline" {
		return nil
	}
	store, err := host.Open(ctx, App, &host.Options{Logger: logger})
	if err != nil {
		// Resume is an optimisation: serve without it. The nil store Open
		// returned is a store with resume off, so the code below runs as is.
		logger.Warn("session resume unavailable", "error", err)
	}
	defer store.Close(ctx)
	if bench == "load" {
		// The measured point is the load answer: exit there, skipping teardown.
		store.Load(ctx)
		os.Exit(0)
	}

	brokerURL := os.Getenv("MCP_RESUME_BROKER_URL")
	if brokerURL == "" {
		return errors.New("MCP_RESUME_BROKER_URL is not set: point it at the token broker (go run ./examples/broker prints its URL)")
	}
	s := &state{broker: brokerclient.New(brokerURL, &http.Client{Timeout: 5 * time.Second})}
	s.session, s.err = establish(ctx, store, s.broker, logger)
	if s.err != nil {
		logger.Error("no broker session; tools will fail until restart", "error", s.err)
	}
	s.register(server)
	return server.Run(ctx, &mcp.StdioTransport{})
}

func newServer() *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "mcp-resume-example-go", Version: "0.1.0"}, nil)
}

// establish gets a broker session: the stored one if the broker still honours
// its token, else a fresh one; and stores the token the broker returns. A nil
// store (resume unavailable) finds no token and stores nothing.
func establish(ctx context.Context, store *host.Store, broker *brokerclient.Client, logger *slog.Logger) (brokerclient.Session, error) {
	var sess brokerclient.Session
	var err error
	resumed := false
	if token, ok := store.Load(ctx); ok {
		sess, err = broker.Resume(ctx, token)
		switch {
		case err == nil:
			resumed = true
		case errors.Is(err, brokerclient.ErrRejected):
			store.Reject(ctx)
		default:
			// The broker is unreachable, not refusing: keep the file.
			logger.Warn("could not offer the stored token to the broker", "error", err)
		}
	}
	if !resumed {
		if sess, err = broker.Start(ctx); err != nil {
			return sess, err
		}
	}
	if err := store.Store(ctx, sess.Token); err != nil {
		logger.Warn("broker issued a token the resume store cannot hold", "error", err)
	}
	return sess, nil
}

// state is the server's broker session, shared by the tool handlers.
type state struct {
	broker  *brokerclient.Client
	mu      sync.Mutex
	session brokerclient.Session
	err     error
}

type rememberIn struct {
	Note string `json:"note" jsonschema:"the note to keep in this session"`
}

type empty struct{}

func (s *state) register(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: "remember", Description: "Keep a note in this session's context at the broker."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in rememberIn) (*mcp.CallToolResult, any, error) {
			sess, err := s.current()
			if err == nil {
				err = s.broker.AddNote(ctx, sess.Token, in.Note)
			}
			if err != nil {
				return nil, nil, err
			}
			return text("remembered"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "recall", Description: "List the notes of this session."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			sess, err := s.current()
			var notes []string
			if err == nil {
				notes, err = s.broker.Notes(ctx, sess.Token)
			}
			if err != nil {
				return nil, nil, err
			}
			if notes == nil {
				notes = []string{}
			}
			return jsonText(map[string]any{"notes": notes}), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "session_info", Description: "The broker session ID and whether it was resumed."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
			sess, err := s.current()
			if err != nil {
				return nil, nil, err
			}
			return jsonText(map[string]any{"session_id": sess.ID, "resumed": sess.Resumed}), nil, nil
		})
}

func (s *state) current() (brokerclient.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.session, fmt.Errorf("no broker session: %w", s.err)
	}
	return s.session, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func jsonText(v any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return text(string(b))
}
