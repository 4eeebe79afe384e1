// Command go-server is an example stdio MCP server, on the official Go SDK,
// whose broker session survives relaunches by the same MCP host through
// mcp-resume (package host).
//
// Environment:
//
//	MCP_EXAMPLE_BROKER_URL  the token broker (examples/broker), required;
//	                        this server's own setting, hence not MCP_RESUME_*
//	MCP_RESUME_STATE_DIR    overrides the state directory (optional)
//	MCP_RESUME              "off": session resume off (the plugin logs
//	                        "Session resume turned off by MCP_RESUME=off"
//	                        and reads or writes nothing)
//
// The MCP_RESUME_* variables are the library's (package host, read by the
// plugin); a server copied from this one keeps them and names its own
// settings with its own prefix.
//
// Tools: remember(note) -> "remembered"; recall() -> {"notes": [...]};
// session_info() -> {"session_id": string, "resumed": bool}; and the
// notebook tools over the handle store (notebook.go): notebook_create,
// notebook_add, notebook_read, notebook_delete, which need no broker.
//
// MCP_RESUME_STATE_IDLE_TTL and MCP_RESUME_STATE_MAX_AGE (Go duration
// syntax, e.g. 90s) set the notebooks' lifetimes (read by the plugin).
//
// With --http ADDR (e.g. --http 127.0.0.1:0) it serves the same tools over
// stateless Streamable HTTP at http://ADDR/mcp instead (http.go), for
// several replicas behind one URL: MCP_EXAMPLE_PRINCIPALS
// ("alice:<token>,bob:<token>") maps bearer tokens to principals, the
// broker is optional, and no resume store is opened.
//
// Both stores come from the SDK adapter, package host/mcpadapter: one
// Attach after mcp.NewServer opens them in the background once the client
// is initialized and closes them at the end. Startup follows spec 000, MCP
// Server Startup: load the stored token, offer it to the broker, reject it
// if the broker refuses, store whatever token the broker issues. That runs
// in the background, concurrently with the server's own startup: the MCP
// handshake (initialize) never waits for the plugin or the broker; a tool
// call waits for the broker session (at most sessionWait). Logs go to
// stderr; stdout carries only JSON-RPC.
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
	"github.com/mcp-resume/mcp-resume/host/mcpadapter"
)

// EnvBrokerURL names the environment variable holding the token broker's
// URL (examples/broker). It is this server's setting, not the library's, so
// it does not use the MCP_RESUME_ prefix.
const EnvBrokerURL = "MCP_EXAMPLE_BROKER_URL"

// App is this server's app name: its token files live in their own state
// directory, apart from every other MCP server's.
const App = "example-go"

// appName is App, or $EXAMPLE_APP when set: the fault suite runs the Go,
// Python and TypeScript example servers as one app, to show that servers on
// different hosts exclude one another through one lock.
func appName() string {
	if a := os.Getenv("EXAMPLE_APP"); a != "" {
		return a
	}
	return App
}

func main() {
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := applyTestKnobs(); err != nil {
		logger.Error("EXAMPLE_CHDIR", "error", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	addr, httpMode, err := httpAddr(os.Args[1:])
	if err != nil {
		logger.Error("bad arguments", "error", err)
		os.Exit(2)
	}
	if httpMode {
		who, err := parsePrincipals(os.Getenv(EnvPrincipals))
		if err != nil {
			logger.Error("bad principals", "error", err)
			os.Exit(2)
		}
		if err := serveHTTP(ctx, logger, addr, who); err != nil {
			logger.Error("go-server stopped", "error", err)
			os.Exit(1)
		}
		return
	}
	if err := serve(ctx, logger); err != nil {
		logger.Error("go-server stopped", "error", err)
		os.Exit(1)
	}
}

// applyTestKnobs applies the fault suite's two test-only settings
// (examples/faults, fault 31): EXAMPLE_UNSET names a variable the server
// removes from its environment and EXAMPLE_CHDIR a directory it changes to,
// both at startup, before its resume store opens, as a server that consumes
// a secret from its environment or changes to its install directory does.
// Neither is set in normal use. Error: the chdir's (the server then exits 2).
func applyTestKnobs() error {
	if name := os.Getenv("EXAMPLE_UNSET"); name != "" {
		os.Unsetenv(name)
	}
	if dir := os.Getenv("EXAMPLE_CHDIR"); dir != "" {
		return os.Chdir(dir)
	}
	return nil
}

// sessionWait bounds how long a tool call waits for the broker session that
// startup establishes in the background (plugin open, at most two broker
// requests of brokerTimeout each, and a first-ever compile of the plugin).
const sessionWait = 20 * time.Second

// brokerTimeout bounds each broker request.
const brokerTimeout = 5 * time.Second

// shutdownWait bounds how long the server, once its client has gone, waits
// for a background startup still under way, so that a token the broker has
// just rotated is stored before the process exits.
const shutdownWait = 3 * brokerTimeout

// serve runs the MCP server on stdio. The broker session is established in
// a goroutine that starts once the client has finished the initialize
// handshake (or at the first tool call, whichever comes first), so
// initialize is answered without waiting for, or competing with, the plugin
// or the broker. It returns when the client disconnects or ctx ends, once
// that goroutine is done (at most shutdownWait later) and the store closed.
func serve(ctx context.Context, logger *slog.Logger) error {
	brokerURL := os.Getenv(EnvBrokerURL)
	if brokerURL == "" {
		return errors.New(EnvBrokerURL + " is not set: point it at the token broker (go run ./examples/broker prints its URL)")
	}
	s := &state{
		broker: brokerclient.New(brokerURL, &http.Client{Timeout: brokerTimeout}),
		ready:  make(chan struct{}),
	}
	// Not ctx: a startup under way when the client leaves (or SIGTERM)
	// finishes, since the broker may have rotated the token already.
	bg := context.WithoutCancel(ctx)
	s.begin = func() { s.once.Do(func() { go s.startup(bg, logger) }) }

	server := mcp.NewServer(serverInfo, &mcp.ServerOptions{
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { s.begin() },
	})
	notes := &notebooks{server: server}
	// The adapter opens the resume store and the handle store (independent
	// of resume and of the broker) in the background once the client is
	// initialized.
	s.stores = mcpadapter.Attach(server, appName(), &mcpadapter.Options{Logger: logger, OnHandlesOpen: notes.opened})
	notes.a = s.stores
	defer func() {
		// Wait for the background startup (at most shutdownWait), so that a
		// token the broker has just issued is stored, then close both
		// stores, which releases the resume lock; exiting would too.
		if s.started() {
			select {
			case <-s.ready:
			case <-time.After(shutdownWait):
				logger.Warn("exiting with the broker session still being established", "waited", shutdownWait)
			}
		}
		s.stores.Close(context.Background())
	}()
	s.register(server)
	notes.register()
	return server.Run(ctx, &mcp.StdioTransport{})
}

// startup waits for the resume store the adapter opens and establishes the
// broker session, then publishes it and closes s.ready. A store that
// cannot open is resume off (the adapter logs why and answers a nil
// store); a broker that cannot be reached leaves s.err set, and the tools
// fail with it until the server restarts.
func (s *state) startup(ctx context.Context, logger *slog.Logger) {
	defer close(s.ready)
	store, _ := s.stores.Resume(ctx) // nil on failure: a store with resume off
	s.session, s.err = establish(ctx, store, s.broker, logger)
	if s.err != nil {
		logger.Error("no broker session; tools will fail until restart", "error", s.err)
	}
}

var serverInfo = &mcp.Implementation{Name: "mcp-resume-example-go", Version: "0.1.0"}

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
// begin starts startup once; startup writes session and err, then closes
// ready; they are read only after ready is closed. stores is the SDK
// adapter holding the resume store.
type state struct {
	broker  *brokerclient.Client
	begin   func()
	once    sync.Once
	ready   chan struct{}
	stores  *mcpadapter.Adapter
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
			sess, err := s.current(ctx)
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
			sess, err := s.current(ctx)
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
			sess, err := s.current(ctx)
			if err != nil {
				return nil, nil, err
			}
			return jsonText(map[string]any{"session_id": sess.ID, "resumed": sess.Resumed}), nil, nil
		})
}

// current waits (at most sessionWait, or until ctx ends) for the background
// startup and returns its broker session, or an error naming why there is
// none; the tool call then fails with it and the server keeps running.
func (s *state) current(ctx context.Context) (brokerclient.Session, error) {
	s.begin() // a client that skipped notifications/initialized
	t := time.NewTimer(sessionWait)
	defer t.Stop()
	select {
	case <-s.ready:
	case <-ctx.Done():
		return brokerclient.Session{}, fmt.Errorf("no broker session yet: %w", ctx.Err())
	case <-t.C:
		return brokerclient.Session{}, fmt.Errorf("no broker session: startup still running after %v (is the broker at %s reachable?)", sessionWait, EnvBrokerURL)
	}
	if s.err != nil {
		return s.session, fmt.Errorf("no broker session: %w", s.err)
	}
	return s.session, nil
}

// started reports whether begin has started the background startup.
func (s *state) started() bool {
	started := true
	s.once.Do(func() { started = false })
	return started
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func jsonText(v any) *mcp.CallToolResult {
	b, _ := json.Marshal(v)
	return text(string(b))
}
