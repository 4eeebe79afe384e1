// Package mcpadapter adds session resume and state handles (package host)
// to an MCP server built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk/mcp), so that a server needs one
// line, Attach, plus its tools:
//
//	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
//	a := mcpadapter.Attach(server, "notes", nil)
//	defer a.Close(context.Background())
//	mcpadapter.AddTool(server, &mcp.Tool{Name: "note_create", Description: "Creates a notebook."},
//		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (any, error) {
//			c, err := a.CreateJSON(ctx, req, map[string]any{"notes": []string{}})
//			if err != nil {
//				return nil, err // a store error becomes a tool error
//			}
//			return map[string]any{"handle": c.Handle}, nil
//		})
//	err := server.Run(ctx, &mcp.StdioTransport{})
//
// # When the stores open
//
// Attach opens nothing. It adds a receiving middleware that starts both
// opens in the background when the client sends notifications/initialized,
// so the initialize handshake never waits for the plugin (a first load
// compiles it, up to seconds; later loads take milliseconds). Resume and
// Handles wait for that open (starting it if the client skipped the
// notification) and return the store; Start starts the opens at once (a
// stateless HTTP server, which sees no per-client handshake, calls it at
// startup). Close closes both stores, after any open under way.
//
// # Principal
//
// Handles are bound to a principal. Principal(req) is the one of a tool
// call: the UserID of the bearer token the SDK's auth middleware
// (auth.RequireBearerToken) verified, which the SDK puts in
// req.Extra.TokenInfo; "" when there is none, i.e. stdio, where the
// process belongs to its one client. An authenticated request whose token
// names no user is refused (invalid_principal), never run as "". The JSON helpers (CreateJSON,
// GetJSON, PutJSON, Update) take the request and use its principal, so a
// tool cannot forget it: alice's handle answers handle_not_found to bob.
//
// # Errors as tool errors
//
// A store error in a tool is a tool error, not a protocol error: a
// CallToolResult with isError true, structured content {"error": code,
// "message": ..., "reason"?: ..., "generation"?: ...} and the same JSON as
// its text (ToolError). The package offers it two ways. AddTool, a wrapper
// of mcp.AddTool whose handler returns (out, err), is the one that reads
// best: the handler returns the store's error as it came, exactly as it
// would in any Go function, and the wrapper converts it; it also keeps the
// SDK from overwriting the error's structured content with a typed
// output's zero value (which mcp.AddTool does for an Out other than any).
// ToolError is the conversion itself, for a handler registered with
// mcp.AddTool (Out any) or Server.AddTool: return mcpadapter.ToolError(err),
// nil, nil.
package mcpadapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/host"
)

// DefaultUpdateRetries is how many times Update reads again and retries
// after a conflict when Options.UpdateRetries is zero.
const DefaultUpdateRetries = 5

// Options configures Attach. A nil *Options takes every default.
type Options struct {
	// Resume configures the resume store (host.Open); nil: every default
	// (Logger is then this Options' Logger).
	Resume *host.Options
	// NoResume opens no resume store: Resume answers (nil, nil), a store
	// with resume off. For a server with no MCP host parent to identify,
	// such as one served over HTTP.
	NoResume bool
	// Handles configures the handle store (host.OpenHandles); nil: every
	// default (Logger is then this Options' Logger).
	Handles *host.HandleOptions
	// NoHandles opens no handle store: Handles answers store_unavailable.
	NoHandles bool
	// OnHandlesOpen, when set, is called once with the handle store when
	// it has opened, before any Handles call returns it: a server states
	// the store's policy (host.Handles.Policy) in a tool's description
	// here, and the SDK tells connected clients the tool list changed.
	OnHandlesOpen func(*host.Handles)
	// UpdateRetries is how many times Update reads again and retries after
	// a conflict; zero: DefaultUpdateRetries; negative: none.
	UpdateRetries int
	// Logger receives the adapter's warnings (a store that cannot open)
	// and, unless Resume or Handles set their own, the stores' log lines.
	// Nil: slog.Default().
	Logger *slog.Logger
}

// Adapter is the resume store and the handle store of one MCP server, opened
// in the background (see "When the stores open"). Its methods are safe for
// concurrent use.
type Adapter struct {
	app    string
	opts   Options
	logger *slog.Logger

	startOnce sync.Once
	resumeCh  chan struct{} // closed when the resume open has ended
	handlesCh chan struct{} // closed when the handle open has ended
	resume    *host.Store
	resumeErr error
	handles   *host.Handles
	handleErr error

	mu     sync.Mutex
	closed bool
}

// Attach binds the stores of app (an MCP server application name, 1–64 of
// [A-Za-z0-9._-] starting with a letter or digit, as host.Open) to server:
// it adds a receiving middleware that starts the background opens when the
// client is initialized, and returns the Adapter the tools use. Call it
// after mcp.NewServer and before the server runs. It opens nothing and
// never fails: a store that cannot open is reported by Resume or Handles
// (and logged once).
func Attach(server *mcp.Server, app string, opts *Options) *Adapter {
	a := &Adapter{app: app, resumeCh: make(chan struct{}), handlesCh: make(chan struct{})}
	if opts != nil {
		a.opts = *opts
	}
	a.logger = a.opts.Logger
	if a.logger == nil {
		a.logger = slog.Default()
	}
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/initialized" {
				a.Start()
			}
			return next(ctx, method, req)
		}
	})
	return a
}

// Start starts opening both stores in the background, once; later calls do
// nothing. The middleware Attach adds calls it when the client is
// initialized, and Resume and Handles call it; a server that wants the
// stores sooner (a stateless HTTP server) calls it itself.
func (a *Adapter) Start() {
	a.startOnce.Do(func() {
		go a.openResume()
		go a.openHandles()
	})
}

func (a *Adapter) openResume() {
	defer close(a.resumeCh)
	if a.opts.NoResume {
		return
	}
	o := a.opts.Resume
	if o == nil {
		o = &host.Options{Logger: a.opts.Logger}
	}
	a.resume, a.resumeErr = host.Open(context.Background(), a.app, o)
	if a.resumeErr != nil {
		// Resume is an optimisation: the server serves without it. The nil
		// store is one with resume off.
		a.logger.Warn("session resume unavailable", "error", a.resumeErr)
	}
}

func (a *Adapter) openHandles() {
	defer close(a.handlesCh)
	if a.opts.NoHandles {
		a.handleErr = &host.Error{Code: "store_unavailable", Message: "this server has no handle store"}
		return
	}
	o := a.opts.Handles
	if o == nil {
		o = &host.HandleOptions{Logger: a.opts.Logger}
	}
	hs, err := host.OpenHandles(context.Background(), a.app, o)
	if err != nil {
		a.logger.Warn("handle store unavailable; the tools that need it answer store_unavailable", "error", err)
		// Whatever the cause (a bad option in the environment, no state
		// root, the plugin), a tool sees a store it cannot use.
		a.handleErr = &host.Error{Code: "store_unavailable", Message: err.Error()}
		return
	}
	a.handles = hs
	if a.opts.OnHandlesOpen != nil {
		a.opts.OnHandlesOpen(hs)
	}
}

// Resume returns the resume store (spec 000: Load the broker token at
// startup, Store the one the broker issues, Reject one the broker
// refused), waiting for its background open and starting it if needed.
// The store is nil, with the error, when it could not open: a nil
// *host.Store is a store with resume off, so a caller may use it either
// way. With Options.NoResume it is (nil, nil). It fails with ctx's error
// when ctx ends first.
func (a *Adapter) Resume(ctx context.Context) (*host.Store, error) {
	a.Start()
	select {
	case <-a.resumeCh:
		return a.resume, a.resumeErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Handles returns the handle store, waiting for its background open and
// starting it if needed. When it could not open (or Options.NoHandles) the
// error is a *host.Error with code store_unavailable whose message says
// why, which ToolError answers as such. It fails with ctx's error when
// ctx ends first.
func (a *Adapter) Handles(ctx context.Context) (*host.Handles, error) {
	a.Start()
	select {
	case <-a.handlesCh:
		return a.handles, a.handleErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes both stores, once an open under way has ended (or ctx
// ends first: that store is then closed in the background when its open
// ends). The resume store's lock is released, so the next instance under
// the same MCP host resumes. Later calls to Resume and Handles answer
// closed stores. Safe to call more than once; it returns the first
// store's Close error.
func (a *Adapter) Close(ctx context.Context) error {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil
	}
	a.closed = true
	a.mu.Unlock()
	started := true
	a.startOnce.Do(func() { started = false })
	if !started { // nothing to close; Resume and Handles answer closed stores
		a.resumeErr = fmt.Errorf("mcpadapter: %w", fs.ErrClosed)
		a.handleErr = &host.Error{Code: "store_unavailable", Message: "the handle store is closed"}
		close(a.resumeCh)
		close(a.handlesCh)
		return nil
	}
	closeAll := func() error {
		<-a.resumeCh
		<-a.handlesCh
		err := a.resume.Close(context.WithoutCancel(ctx))
		if herr := a.handles.Close(ctx); err == nil {
			err = herr
		}
		return err
	}
	done := make(chan error, 1)
	go func() { done <- closeAll() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Principal is the principal a tool call runs as: the UserID of the bearer
// token the SDK's auth middleware verified (req.Extra.TokenInfo), or ""
// when the request carries no token (stdio, or HTTP without
// authentication: one anonymous client). A request that is authenticated
// but whose TokenInfo has an empty UserID is refused with an *host.Error of
// code invalid_principal: taking it as "" would put every such caller in
// one anonymous principal, sharing their handles. Have the token verifier
// set UserID to the user (not the OAuth client, which several users may
// share).
func Principal(req *mcp.CallToolRequest) (string, error) {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return "", nil
	}
	if id := req.Extra.TokenInfo.UserID; id != "" {
		return id, nil
	}
	return "", &host.Error{Code: "invalid_principal", Message: "the request is authenticated but its token names no user (TokenInfo.UserID is empty): the handle store cannot tell its callers apart; have the token verifier set UserID"}
}

// storeFor is the open handle store and the request's principal.
func (a *Adapter) storeFor(ctx context.Context, req *mcp.CallToolRequest) (*host.Handles, string, error) {
	principal, err := Principal(req)
	if err != nil {
		return nil, "", err
	}
	hs, err := a.Handles(ctx)
	return hs, principal, err
}

// CreateJSON stores value as JSON (encoding/json) under a new handle bound
// to the request's principal, with the lifetimes of opts (host.WithIdleTTL,
// host.WithMaxAge) or the store's. Errors: the store's (as
// host.Handles.Create; store_unavailable when it could not open), and an
// *host.Error with code invalid_value when value cannot be encoded.
func (a *Adapter) CreateJSON(ctx context.Context, req *mcp.CallToolRequest, value any, opts ...host.CreateOption) (host.Created, error) {
	hs, principal, err := a.storeFor(ctx, req)
	if err != nil {
		return host.Created{}, err
	}
	b, err := encode(value)
	if err != nil {
		return host.Created{}, err
	}
	return hs.Create(ctx, principal, b, opts...)
}

// GetJSON reads the value of handle for the request's principal into v (a
// pointer, as for json.Unmarshal) and returns its generation. Errors: the
// store's (as host.Handles.Get: handle_not_found, handle_expired, ...), and
// an *host.Error with code invalid_value when the value is not JSON that
// decodes into v (v is then left as json.Unmarshal leaves it).
func (a *Adapter) GetJSON(ctx context.Context, req *mcp.CallToolRequest, handle string, v any) (int64, error) {
	hs, principal, err := a.storeFor(ctx, req)
	if err != nil {
		return 0, err
	}
	val, err := hs.Get(ctx, handle, principal)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(val.Data, v); err != nil {
		return 0, &host.Error{Code: "invalid_value", Message: fmt.Sprintf("the handle's value is not the JSON this tool reads: %v", err)}
	}
	return val.Generation, nil
}

// PutJSON replaces the value of handle for the request's principal with
// value as JSON and returns the new generation; with
// host.IfGeneration(g) only while the handle is at generation g (else
// conflict, with the current generation). Errors: as host.Handles.Put, and
// invalid_value when value cannot be encoded.
func (a *Adapter) PutJSON(ctx context.Context, req *mcp.CallToolRequest, handle string, value any, opts ...host.WriteOption) (int64, error) {
	hs, principal, err := a.storeFor(ctx, req)
	if err != nil {
		return 0, err
	}
	b, err := encode(value)
	if err != nil {
		return 0, err
	}
	return hs.Put(ctx, handle, principal, b, opts...)
}

// Update reads handle's JSON value into a T for the request's principal,
// applies fn to it and writes it back expecting the generation it read
// (compare-and-set). On a conflict (another writer in between) it waits a
// random time up to 2^try ms (32 at most), reads again and retries, up to
// Options.UpdateRetries times (default 5); then
// the conflict is its error. It returns the value written and its new
// generation. An error from fn is returned as it is, with nothing
// written; other errors as GetJSON and PutJSON.
func Update[T any](ctx context.Context, a *Adapter, req *mcp.CallToolRequest, handle string, fn func(*T) error) (T, int64, error) {
	retries := a.opts.UpdateRetries
	switch {
	case retries == 0:
		retries = DefaultUpdateRetries
	case retries < 0:
		retries = 0
	}
	for try := 0; ; try++ {
		var v T
		gen, err := a.GetJSON(ctx, req, handle, &v)
		if err != nil {
			return v, 0, err
		}
		if err := fn(&v); err != nil {
			return v, 0, err
		}
		newGen, err := a.PutJSON(ctx, req, handle, v, host.IfGeneration(gen))
		if errors.Is(err, host.ErrConflict) && try < retries {
			if err := backoff(ctx, try); err != nil {
				return v, 0, err
			}
			continue
		}
		return v, newGen, err
	}
}

// backoff waits a random time up to 2^try ms (32 ms at most; "full
// jitter") after a lost race, so that writers that lost at the same
// moment do not race again in lockstep. It returns ctx's error if ctx
// ends first.
func backoff(ctx context.Context, try int) error {
	t := time.NewTimer(rand.N(time.Duration(min(1<<try, 32))*time.Millisecond + 1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// encode is value as JSON, or an invalid_value *host.Error.
func encode(value any) ([]byte, error) {
	b, err := json.Marshal(value)
	if err != nil {
		return nil, &host.Error{Code: "invalid_value", Message: fmt.Sprintf("the value cannot be encoded as JSON: %v", err)}
	}
	return b, nil
}

// ToolError is err as a tool's answer: a CallToolResult with IsError set,
// StructuredContent {"error": code, "message": message, "reason"?: ...,
// "generation"?: ...} and the same JSON as its one text content. The code
// is a *host.Error's (errors.As); an error of a store that is not one (the
// plugin failed, host.ErrPlugin; the store is closed, fs.ErrClosed; the
// call's ctx ended) is "store_unavailable" with the error's text as
// message. Any other error is the SDK's plain tool error: IsError with the
// error's text, no structured content. A nil err gives nil.
func ToolError(err error) *mcp.CallToolResult {
	if err == nil {
		return nil
	}
	var he *host.Error
	if !errors.As(err, &he) {
		if !errors.Is(err, host.ErrPlugin) && !errors.Is(err, fs.ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			var res mcp.CallToolResult
			res.SetError(err)
			return &res
		}
		he = &host.Error{Code: "store_unavailable", Message: err.Error()}
	}
	e := map[string]any{"error": he.Code, "message": he.Message}
	if he.Reason != "" {
		e["reason"] = he.Reason
	}
	if he.Generation != 0 {
		e["generation"] = he.Generation
	}
	b, _ := json.Marshal(e) // strings and an int64: cannot fail
	return &mcp.CallToolResult{IsError: true, StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// ToolHandler is a tool's handler for AddTool: it returns its output
// (the tool's structured content and, as JSON, its text) or an error.
type ToolHandler[In, Out any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (Out, error)

// AddTool adds tool t to the adapter's server with handler h, as
// mcp.AddTool does (the input schema inferred from In, the arguments
// validated and decoded), but h returns (out, err): out becomes the
// result's structured content and its JSON the text content; an error
// becomes ToolError(err). No output schema is inferred (an error's
// structured content is not an Out); set t.OutputSchema to declare one.
func AddTool[In, Out any](server *mcp.Server, t *mcp.Tool, h ToolHandler[In, Out]) {
	mcp.AddTool(server, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		out, err := h(ctx, req, in)
		if err != nil {
			return ToolError(err), nil, nil
		}
		return nil, out, nil
	})
}
