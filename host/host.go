// Package host embeds the mcp-resume plugin in a Go MCP server: open a Store
// for your server app, Load the token to offer the broker, Store the token
// the broker returns, Reject a token the broker refused.
//
//	store, err := host.Open(ctx, "my-server", nil)
//	if err != nil { ... } // a bad app name or a broken plugin: serve without resume
//	defer store.Close(ctx) // a nil *Store is "resume off": every method is safe
//	if token, ok := store.Load(ctx); ok {
//		sess, err := broker.Resume(ctx, token)
//		if err != nil { store.Reject(ctx) } // then start a fresh session
//	}
//	store.Store(ctx, sess.Token)
//
// All of the resume policy is the plugin (plugin.wasm, built from
// procid and plugin/internal/resume), the same Wasm module the Python and
// TypeScript packages run: which process is the MCP host, the state
// directory, the instance key, the app-name and token rules. This package
// supplies the host functions of hostfuncs/README.md (OS primitives, no
// policy) and runs the plugin on Extism's Go SDK over wazero. It implements
// spec 000 ("MCP Server Session Resume Specification v1"): failures are
// logged through log/slog, never returned as a reason to stop the server, and
// nothing is ever written to stdout.
//
// # Switching resume off
//
// MCP_RESUME=off in the server's environment turns resume off: Open still
// succeeds, logs one line ("Session resume turned off by MCP_RESUME=off",
// event resume_off), and from then on Load finds nothing and Store and
// Reject do nothing; no process is inspected and no file or directory is
// read or written. The plugin reads the switch (it is policy, like every
// other MCP_RESUME_* variable), so every host language honours it the same
// way. The plugin is therefore still loaded: with MCP_RESUME=off a start
// saves the plugin's identity and file work (a few ms), not the loading of
// the module (docs/BENCHMARKS.md, `make bench-go`, mode "MCP_RESUME=off").
//
// # Startup
//
// The plugin is compiled once per process and cached on disk across
// processes (Options.CacheDir). The first start on a machine does not wait
// for wazero's compiler: it runs on wazero's interpreter while a background
// goroutine compiles the module into the cache, which the next start loads.
// Nothing waits for that goroutine (not Close, not process exit), and a
// process killed during it leaves nothing a later start would read.
package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	extism "github.com/extism/go-sdk"

	"github.com/mcp-resume/mcp-resume/host/internal/loader"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin"
)

// EnvStateDir names the environment variable the plugin reads for the state
// root (the directory holding one state directory per app) when
// Options.StateDir is empty.
const EnvStateDir = "MCP_RESUME_STATE_DIR"

// EnvInstance names the environment variable the plugin reads for the
// instance key when Options.Instance is empty; an MCP host's server
// configuration can set it per server entry.
const EnvInstance = "MCP_RESUME_INSTANCE"

// NoInstance, as Options.Instance, treats every instance under one host as
// the same one: the file is the spec's plain token-<pid>-<start_time>, and
// only one instance at a time resumes.
const NoInstance = "-"

// Errors returned by Open. In every case the server should carry on without
// resume (a nil *Store does exactly that).
var (
	// ErrInvalidApp: the plugin refused the app name (code invalid_app):
	// it must be 1–64 of [A-Za-z0-9._-] starting with a letter or digit.
	ErrInvalidApp = errors.New("invalid app name")
	// ErrInvalidOption: the plugin refused an option (code invalid_option).
	ErrInvalidOption = errors.New("invalid option")
	// ErrPlugin: the plugin cannot be compiled or instantiated, speaks
	// another ABI version than this host, or failed without an answer.
	ErrPlugin = errors.New("mcp-resume plugin unusable")
)

// refusal is an export's answered failure: its message as the plugin wrote
// it, which already says what was wrong and what to do (so it is not
// prefixed again with the sentinel's text), matching its sentinel (or the
// plugin's *hostfuncs.Error) with errors.Is and errors.As.
type refusal struct {
	err error
	msg string
}

// Error returns the plugin's message.
func (r *refusal) Error() string { return r.msg }

// Unwrap returns the sentinel (ErrInvalidApp, ErrInvalidOption,
// ErrInvalidToken) or the plugin's *hostfuncs.Error.
func (r *refusal) Unwrap() error { return r.err }

// ErrInvalidToken is returned by Store.Store for a token that is not 1–4096
// bytes of visible ASCII (0x21–0x7E): the plugin's invalid_token code.
// Nothing is written.
var ErrInvalidToken = errors.New("invalid token")

// Options configures Open. A nil *Options uses every default.
type Options struct {
	// StateDir is the state root, made absolute against the working
	// directory: token files live in <StateDir>/<app> (uppercase letters of
	// the app written as '+' and the lowercase letter), so two apps given one
	// StateDir never share a file. Empty: $MCP_RESUME_STATE_DIR, else the
	// per-user default root (hostfuncs/README.md, "Plugin exports").
	StateDir string
	// Logger receives the plugin's log lines (spec 000, Logging Strategy).
	// Defaults to slog.Default(), whose output is stderr unless you change it.
	Logger *slog.Logger
	// Launchers are extra process names to skip when looking for the MCP
	// host, added to the plugin's defaults and to $MCP_RESUME_LAUNCHERS.
	Launchers []string
	// CacheDir holds wazero's compilation cache, so a relaunched server does
	// not compile the plugin again. Defaults to <user cache dir>/mcp-resume/wazero;
	// "-" disables the cache (each process then starts on the interpreter
	// and compiles in the background for its later Opens). Until the cache
	// holds the plugin, a Store runs on wazero's interpreter (slower calls,
	// a few hundred ms to a first answer instead of 1.5–2 s compiling).
	// The cache holds code this process runs, so it gets the state
	// directory's rules: created 0700 (never inside another user's
	// directory), it must be a real directory owned by the effective user
	// with no group or other permission bits, and nothing in it may be a
	// symbolic link or another user's. Otherwise the plugin is compiled in
	// memory and one warning (event cache_unusable) says why and how to fix it.
	CacheDir string
	// Instance tells this server instance apart from others the same MCP
	// host runs at the same time: instances with different keys keep
	// separate token files and resume independently; instances with the same
	// key share one, which only the first holds (the others run without
	// resume). Declare it from your configuration (for example a hash of the
	// config file, or a profile name) when copies differ by more than their
	// arguments. Empty: the plugin's default, $MCP_RESUME_INSTANCE, else the
	// process's arguments (os.Args[1:]); NoInstance names no instance. Only a
	// SHA-256 digest reaches the file name.
	Instance string
}

// Store is one MCP server instance's resume-token store. Its methods are
// safe for concurrent use; calls are serialised into one plugin instance. A
// nil *Store (from a failed Open) is a store with resume off: Load finds
// nothing, and Store, Reject and Close do nothing.
//
// # Cancellation
//
// Every method but Close honours its ctx up to the moment it enters the
// plugin: a ctx that is already done, or that is done while the method waits
// for another call on the same Store to finish, makes it return at once
// without calling the plugin (Load: "", false; Store: an error wrapping
// ctx.Err(), nothing written; Reject: nothing deleted; List, Prune, Whoami:
// ctx.Err()). A call already inside the plugin runs to its end: stopping
// the module mid-export would leave its state (the token it offered, the
// lock it holds) half-updated and the instance unusable, and no host
// function it runs ever blocks (the lock is non-blocking, reads are bounded),
// so an export takes milliseconds. Resume therefore stays consistent: a
// cancelled Load offered nothing, so a later Store does not log "Session
// resumed successfully" for it and Reject has nothing to delete.
type Store struct {
	// sem, capacity 1, is held by the one call (or Close) running in the
	// plugin instance; a channel rather than a mutex so that waiting for it
	// can end with the caller's ctx.
	sem       chan struct{}
	closed    bool
	plugin    *extism.Plugin
	logger    *slog.Logger
	funcs     *primitives.Funcs
	calls     primitives.Handler // serves the plugin's host function calls: funcs, or a test's wrapper of it
	stateDir  string
	stateRoot string
	engine    loader.Engine
}

// wasmModule is the plugin this package runs; tests swap in others.
var wasmModule = plugin.Wasm

// Open loads the plugin (compiled once per process, cached on disk across
// processes; see "Startup" in the package documentation) and returns the
// Store for app, an MCP server application name such as "github-server",
// calling the plugin's open export with app and the options.
//
// It returns an error matching ErrInvalidApp or ErrInvalidOption (errors.Is)
// when the plugin refuses them, whose message is the plugin's: it names the
// option, the value or kind given and what to give instead, once (for
// example `invalid app name "a/b": use 1-64 letters, ...`); and ErrPlugin
// when the plugin cannot run; in every case the server should
// carry on without resume, which the nil *Store returned does. Problems with
// the host identity or the state directory are not errors: they switch
// resume off and are logged on the first Load or Store (spec 000, Parent
// Process Information Unavailable).
func Open(ctx context.Context, app string, opts *Options) (*Store, error) {
	return openWith(ctx, app, opts, nil)
}

// openWith is Open over funcs (nil: the real host functions with opts' logger).
func openWith(ctx context.Context, app string, opts *Options, funcs *primitives.Funcs) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	// StateDir goes to the plugin exactly as given: the plugin makes a
	// relative one absolute against facts.cwd (hostfuncs/README.md, "open").
	in := hostfuncs.OpenInput{App: app, StateDir: o.StateDir, Launchers: o.Launchers}
	if o.Instance != "" {
		in.Instance = &o.Instance
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlugin, err)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if funcs == nil {
		funcs = primitives.New(primitives.Config{Logger: o.Logger})
	}
	s, err := load(ctx, o.CacheDir, funcs, o.Logger)
	if err != nil {
		return nil, err
	}
	if err := s.open(ctx, input); err != nil {
		s.Close(ctx)
		return nil, err
	}
	return s, nil
}

// load instantiates the plugin over funcs and checks its ABI version.
func load(ctx context.Context, cacheDir string, funcs *primitives.Funcs, logger *slog.Logger) (*Store, error) {
	if logger == nil {
		logger = slog.Default()
	}
	p, engine, err := loader.Instance(ctx, wasmModule, cacheDir, logger)
	if err != nil {
		return nil, fmt.Errorf("%w: loading: %v", ErrPlugin, err)
	}
	s := &Store{sem: make(chan struct{}, 1), plugin: p, logger: logger, funcs: funcs, calls: funcs, engine: engine}
	out, callErr, err := s.call(ctx, hostfuncs.ExportABIVersion, nil)
	if err != nil || callErr != nil || string(out) != hostfuncs.ABIVersion {
		s.Close(ctx)
		return nil, fmt.Errorf("%w: plugin ABI version %q, this host implements %q; rebuild the plugin with `make wasm` or upgrade the host", ErrPlugin, out, hostfuncs.ABIVersion)
	}
	return s, nil
}

// open calls the plugin's open export with input (hostfuncs.OpenInput JSON) and
// keeps its answer.
func (s *Store) open(ctx context.Context, input []byte) error {
	out, callErr, err := s.call(ctx, hostfuncs.ExportOpen, input)
	switch {
	case err != nil:
		return fmt.Errorf("%w: open: %v", ErrPlugin, err)
	case callErr != nil && callErr.Code == hostfuncs.CodeInvalidApp:
		return &refusal{ErrInvalidApp, callErr.Message}
	case callErr != nil && callErr.Code == hostfuncs.CodeInvalidOption:
		return &refusal{ErrInvalidOption, callErr.Message}
	case callErr != nil:
		return fmt.Errorf("%w: open: %s", ErrPlugin, callErr.Error())
	}
	var o hostfuncs.OpenOutput
	if err := json.Unmarshal(out, &o); err != nil {
		return fmt.Errorf("%w: open returned malformed JSON: %v", ErrPlugin, err)
	}
	s.stateDir, s.stateRoot = o.StateDir, o.StateRoot
	// The confinement rule: the file functions act in open's state_dir, for
	// good ("" leaves them answering invalid_request; resume is then off).
	s.funcs.SetStateDir(o.StateDir)
	return nil
}

// StateDirectory returns the absolute state directory this Store uses, as
// the plugin decided it; "" for a nil Store.
func (s *Store) StateDirectory() string {
	if s == nil {
		return ""
	}
	return s.stateDir
}

// StateRoot returns the directory that holds one state directory per app:
// Options.StateDir, else $MCP_RESUME_STATE_DIR, else the per-user default
// (for example ~/.local/state/mcp-resume), as the plugin computes it; "" for
// a nil Store.
func (s *Store) StateRoot() string {
	if s == nil {
		return ""
	}
	return s.stateRoot
}

// Load returns the token saved by the previous server instance under the same
// MCP host, and true; or "" and false when there is none to offer (first run,
// resume off, corrupt file deleted, nil Store, or ctx done before the plugin
// was called: see "Cancellation" on Store). Spec 000, MCP Server Startup.
func (s *Store) Load(ctx context.Context) (string, bool) {
	if s == nil {
		return "", false
	}
	out, callErr, err := s.call(ctx, hostfuncs.ExportLoad, nil)
	if err != nil || callErr != nil || len(out) == 0 {
		return "", false
	}
	return string(out), true
}

// Store persists token, which the broker just issued, for the next server
// instance (spec 000, Token Persistence). It returns ErrInvalidToken (wrapped,
// with the plugin's reason, never the token) for a token that is not 1–4096
// bytes of visible ASCII; a failed write is logged as "Failed to write token
// file: <error>" and returns nil. When ctx is done before the plugin is
// called it writes nothing and returns an error wrapping ctx.Err() (see
// "Cancellation" on Store); the previous token file is left as it was. A nil
// Store does nothing and returns nil.
func (s *Store) Store(ctx context.Context, token string) error {
	if s == nil {
		return nil
	}
	_, callErr, err := s.call(ctx, hostfuncs.ExportStore, []byte(token))
	if callErr != nil && callErr.Code == hostfuncs.CodeInvalidToken {
		return &refusal{ErrInvalidToken, callErr.Message}
	}
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("mcp-resume: token not stored: %w", err)
	}
	return nil
}

// Reject tells the store the broker refused the token Load returned: the
// token file is deleted unless it already holds a newer token (spec 000,
// Broker Rejects Token; seed 004, reconnection race). A nil Store, or a ctx
// done before the plugin is called, does nothing.
func (s *Store) Reject(ctx context.Context) {
	if s == nil {
		return
	}
	_, _, _ = s.call(ctx, hostfuncs.ExportReject, nil)
}

// HostState says whether the MCP host a token file names is still running.
type HostState string

// Host states, as the plugin's liveness policy decides them.
const (
	HostAlive   HostState = hostfuncs.HostAlive   // that process runs with that start time
	HostGone    HostState = hostfuncs.HostGone    // no such process, or the pid names another process or boot
	HostUnknown HostState = hostfuncs.HostUnknown // cannot tell (permissions, another PID namespace, platform)
)

// TokenFile is one token file of the state directory (never its token).
type TokenFile struct {
	// Name is the file name, token-<pid>-<start_time>[-<instance>].
	Name string `json:"name"`
	// PID and StartTime identify the MCP host the file belongs to.
	PID       int    `json:"pid"`
	StartTime string `json:"start_time"`
	// Instance is the 16-hex-digit instance suffix, "" for none.
	Instance string `json:"instance,omitempty"`
	// Host says whether that host is still running.
	Host HostState `json:"host"`
	// AgeSeconds is the time since the file was last written, in whole seconds.
	AgeSeconds int64 `json:"age_seconds"`
}

// List reports the token files in the state directory and whether their
// hosts are alive, through the plugin's list export (the same answer in
// every language). It fails when the plugin does (for example a missing
// state directory) and for a nil Store.
func (s *Store) List(ctx context.Context) ([]TokenFile, error) {
	var out struct {
		Files []TokenFile `json:"files"`
	}
	if err := s.callJSON(ctx, hostfuncs.ExportList, nil, &out); err != nil {
		return nil, err
	}
	return out.Files, nil
}

// PruneReason says why Prune removed a file.
type PruneReason string

// Prune reasons.
const (
	// ReasonHostGone: the file's host process is gone.
	ReasonHostGone PruneReason = hostfuncs.ReasonHostGone
	// ReasonAged: the file's host cannot be checked and the token file is
	// older than 30 days.
	ReasonAged PruneReason = hostfuncs.ReasonAged
)

// PrunedFile is one file Prune removed, and why.
type PrunedFile struct {
	Name   string      `json:"name"`
	Reason PruneReason `json:"reason"`
	Host   HostState   `json:"host"`
}

// Prune removes the token and lock files of MCP hosts that are gone, and
// token files older than 30 days whose host cannot be checked, never those
// of a live host nor this instance's own (the plugin's prune export). The
// first Load, Store or Reject already prunes once while resume is on;
// `mcp-resume prune` calls this on any state directory.
func (s *Store) Prune(ctx context.Context) ([]PrunedFile, error) {
	var out struct {
		Removed []PrunedFile `json:"removed"`
	}
	if err := s.callJSON(ctx, hostfuncs.ExportPrune, nil, &out); err != nil {
		return nil, err
	}
	return out.Removed, nil
}

// Process is one process of the ancestor chain Whoami reports.
type Process struct {
	PID       int      `json:"pid"`
	PPID      int      `json:"ppid"`
	Name      string   `json:"name"`
	Args      []string `json:"args"`
	StartTime string   `json:"start_time"`
	// Role is "launcher" (skipped) or "host" (the MCP host).
	Role string `json:"role"`
}

// Identity is the MCP host this process resolves and the names it would use
// (the plugin's whoami export).
type Identity struct {
	PID       int    `json:"pid,omitempty"`
	StartTime string `json:"start_time,omitempty"`
	// Stdio says how the host's hold on this process's stdin/stdout was checked.
	Stdio string `json:"stdio,omitempty"`
	// InstanceSuffix is the 16-hex-digit instance part of the names, "" for none.
	InstanceSuffix string    `json:"instance_suffix,omitempty"`
	TokenFile      string    `json:"token_file,omitempty"`
	LockFile       string    `json:"lock_file,omitempty"`
	StateDir       string    `json:"state_dir"`
	Chain          []Process `json:"chain"`
	// Error says why the identity is unavailable (resume is then off), "" when it is.
	Error string `json:"error,omitempty"`
}

// Whoami reports the MCP host this process resolves, the ancestor chain the
// plugin walked, and the file names it would use. An unavailable identity is
// not an error: it is in Identity.Error. It fails when the plugin does and
// for a nil Store.
func (s *Store) Whoami(ctx context.Context) (Identity, error) {
	var id Identity
	err := s.callJSON(ctx, hostfuncs.ExportWhoami, nil, &id)
	return id, err
}

// WhoamiFor is Whoami for the running MCP server process pid (the plugin's
// whoami export with input {"pid": pid}; `mcp-resume whoami --pid`): the
// host it would resolve, the chain, and the file names with this Store's
// instance key and state directory. Every rule is the server's own, except
// that on Linux a socket on the server's stdio cannot be checked from
// outside (only the socket's holder can ask for its peer), so Stdio may
// read "not checked" where the server verifies or refuses. It fails with
// the plugin's invalid_option for pid 1 or below 0, and as Whoami; pid 0
// is this process (Whoami).
func (s *Store) WhoamiFor(ctx context.Context, pid int) (Identity, error) {
	var id Identity
	input, _ := json.Marshal(hostfuncs.WhoamiInput{PID: pid})
	err := s.callJSON(ctx, hostfuncs.ExportWhoami, input, &id)
	return id, err
}

// Close releases the plugin instance and the lock on the token file, so
// another instance under the same host may take it over. It is safe to call
// more than once, and on a nil Store; later calls to other methods do nothing.
func (s *Store) Close(ctx context.Context) error {
	if s == nil {
		return nil
	}
	s.sem <- struct{}{} // Close waits for a running call, whatever ctx says
	defer func() { <-s.sem }()
	if s.closed {
		return nil
	}
	s.closed = true
	s.funcs.Close()
	return s.plugin.Close(context.WithoutCancel(ctx))
}

// callJSON runs export with input and decodes its JSON output into v.
func (s *Store) callJSON(ctx context.Context, export string, input []byte, v any) error {
	if s == nil {
		return fmt.Errorf("%w: no store (Open failed)", ErrPlugin)
	}
	out, callErr, err := s.call(ctx, export, input)
	if err != nil {
		return err
	}
	if callErr != nil {
		return &refusal{callErr, "mcp-resume " + export + ": " + callErr.Message}
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("%w: %s returned malformed JSON: %v", ErrPlugin, export, err)
	}
	return nil
}

// call runs one export under the lock. An export that fails with an answer
// (hostfuncs/README.md, "Plugin exports": the error string is the JSON
// {"code", "message"}) returns it as callErr; a trap or runtime failure is
// logged and returned as err. When ctx is done before the export starts
// (already, or while waiting for the lock) it returns ctx.Err() as err
// without calling the plugin or logging; once started, the export runs to
// its end (see "Cancellation" on Store). It never panics and never runs on a
// closed plugin (go-sdk prints to stdout if it does).
func (s *Store) call(ctx context.Context, export string, input []byte) (out []byte, callErr *hostfuncs.Error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	if err := ctx.Err(); err != nil { // select picks at random when both are ready
		return nil, nil, err
	}
	if s.closed {
		return nil, nil, errors.New("mcp-resume: store is closed")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcp-resume plugin panicked in %s: %v", export, r)
			s.logger.Error("mcp-resume plugin failed; session resume skipped for this call", "export", export, "error", err)
		}
	}()
	cctx := primitives.NewContext(context.WithoutCancel(ctx), s.calls)
	rc, out, err := s.plugin.CallWithContext(cctx, export, input)
	if err != nil && rc == 1 {
		var e hostfuncs.Error
		if json.Unmarshal([]byte(err.Error()), &e) == nil && e.Code != "" {
			return nil, &e, nil
		}
	}
	if err != nil {
		s.logger.Error("mcp-resume plugin failed; session resume skipped for this call", "export", export, "error", err)
		return nil, nil, err
	}
	return out, nil, nil
}
