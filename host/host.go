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
// Options.StateRoot is empty. It is named after the variable, whose name
// predates the distinction.
const EnvStateDir = "MCP_RESUME_STATE_DIR"

// EnvInstance names the environment variable the plugin reads for the
// instance key when Options.Instance is empty; an MCP host's server
// configuration can set it per server entry.
const EnvInstance = "MCP_RESUME_INSTANCE"

// EnvStateURL names the environment variable the plugin reads for the
// handle store's Redis URL when HandleOptions.StateURL is empty: set, the
// handle store is on that Redis server (hostfuncs/README.md, "The Redis
// backend"). EnvStateTimeout is its deadline per operation (Go duration
// syntax) when HandleOptions.Timeout is zero. Hosts pass them through
// facts; the plugin interprets them.
const (
	EnvStateURL     = "MCP_RESUME_STATE_URL"
	EnvStateTimeout = "MCP_RESUME_STATE_TIMEOUT"
)

// NoInstance, as Options.Instance, treats every instance under one MCP host as
// the same one: the file is the spec's plain token-<pid>-<start_time>, and
// only one instance at a time resumes.
const NoInstance = "-"

// Options configures Open. A nil *Options uses every default.
type Options struct {
	// StateRoot is the state root, the directory that holds one state
	// directory per app; a relative one is taken against the working
	// directory the process started in (by the plugin, from facts.cwd, as in
	// every language; a later os.Chdir does not move it): token
	// files live in <StateRoot>/<app> (uppercase letters of the app written
	// as '+' and the lowercase letter; Store.StateDir), so two apps given one
	// StateRoot never share a file. Empty: $MCP_RESUME_STATE_DIR, else the
	// per-user default root (hostfuncs/README.md, "Plugin exports"). The
	// open export's JSON calls it state_root, as do the Python option
	// (state_root) and the TypeScript one (stateRoot).
	StateRoot string
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
	kernel    *primitives.Kernel // the instance's kernel functions, resolved once for its host calls (nil: go-sdk looks them up per call)
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
// the MCP host's identity or the state directory are not errors: they switch
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
	// StateRoot goes to the plugin exactly as given: the plugin makes a
	// relative one absolute against facts.cwd (hostfuncs/README.md, "open").
	in := hostfuncs.OpenInput{Caller: hostfuncs.CallerGo, App: app, StateRoot: o.StateRoot, Launchers: o.Launchers}
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
	s := &Store{sem: make(chan struct{}, 1), plugin: p, logger: logger, funcs: funcs, calls: funcs, engine: engine, kernel: &primitives.Kernel{}}
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
	case callErr != nil && (callErr.Code == hostfuncs.CodeInvalidApp || callErr.Code == hostfuncs.CodeInvalidOption):
		return errorFrom(callErr)
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

// StateDir returns the absolute state directory this Store uses, the app's
// own directory under the state root (StateRoot) where its token and lock
// files live (hostfuncs/README.md calls it the state directory), as the
// plugin decided it; "" for a nil Store.
func (s *Store) StateDir() string {
	if s == nil {
		return ""
	}
	return s.stateDir
}

// StateRoot returns the directory that holds one state directory per app:
// Options.StateRoot, else $MCP_RESUME_STATE_DIR, else the per-user default
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
		return errorFrom(callErr)
	}
	if ctxErr := ctx.Err(); err != nil && ctxErr != nil && errors.Is(err, ctxErr) {
		return fmt.Errorf("mcp-resume: token not stored: %w", err)
	}
	return nil
}

// Reject tells the store the broker refused the token Load returned: the
// token file is deleted unless it already holds a newer token (spec 000,
// Broker Rejects Token), so that in the reconnection race (a delayed
// rejection arriving after a newer session was stored) the newer token
// survives. A nil Store, or a ctx done before the plugin is called, does
// nothing.
func (s *Store) Reject(ctx context.Context) {
	if s == nil {
		return
	}
	_, _, _ = s.call(ctx, hostfuncs.ExportReject, nil)
}

// List reports the token files in the state directory and whether their
// MCP hosts are alive, through the plugin's list export (the same answer in
// every language). It fails when the plugin does (for example a missing
// state directory) and for a nil Store.
func (s *Store) List(ctx context.Context) ([]TokenFile, error) {
	var out hostfuncs.ListOutput
	if err := s.callJSON(ctx, hostfuncs.ExportList, nil, &out); err != nil {
		return nil, err
	}
	files := make([]TokenFile, len(out.Files))
	for i, f := range out.Files {
		files[i] = tokenFileFrom(f)
	}
	return files, nil
}

// Prune removes the token and lock files of MCP hosts that are gone, and
// token files older than 30 days whose MCP host cannot be checked, never
// those of a live MCP host nor this instance's own (the plugin's prune
// export). The first Load, Store or Reject already prunes once while resume
// is on; `mcp-resume prune` calls this on any state directory.
func (s *Store) Prune(ctx context.Context) ([]PrunedFile, error) {
	var out hostfuncs.PruneOutput
	if err := s.callJSON(ctx, hostfuncs.ExportPrune, nil, &out); err != nil {
		return nil, err
	}
	removed := make([]PrunedFile, len(out.Removed))
	for i, p := range out.Removed {
		removed[i] = PrunedFile{Name: p.Name, Reason: p.Reason, Host: p.Host}
	}
	return removed, nil
}

// Whoami reports the MCP host this process resolves, the ancestor chain the
// plugin walked, and the file names it would use. An unavailable identity is
// not an error: it is in Identity.Error. It fails when the plugin does and
// for a nil Store.
func (s *Store) Whoami(ctx context.Context) (Identity, error) {
	var id hostfuncs.WhoamiOutput
	err := s.callJSON(ctx, hostfuncs.ExportWhoami, nil, &id)
	return identityFrom(id), err
}

// WhoamiFor is Whoami for the running MCP server process pid (the plugin's
// whoami export with input {"pid": pid}; `mcp-resume whoami --pid`): the
// MCP host it would resolve, the chain, and the file names with this Store's
// instance key and state directory. Every rule is the server's own, except
// that on Linux a socket on the server's stdio cannot be checked from
// outside (only the socket's holder can ask for its peer), so Stdio may
// read "not checked" where the server verifies or refuses. It fails with
// the plugin's invalid_option for pid 1 or below 0 and for a pid no
// process has ("no process has pid N: ..."), and as Whoami; pid 0
// is this process (Whoami).
func (s *Store) WhoamiFor(ctx context.Context, pid int) (Identity, error) {
	var id hostfuncs.WhoamiOutput
	input, _ := json.Marshal(hostfuncs.WhoamiInput{PID: pid})
	err := s.callJSON(ctx, hostfuncs.ExportWhoami, input, &id)
	return identityFrom(id), err
}

// Close releases the plugin instance and the lock on the token file, so
// another instance under the same MCP host may take it over. It is safe to call
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
		e := errorFrom(callErr)
		e.Message = "mcp-resume " + export + ": " + e.Message
		return e
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
	out, _, callErr, err = s.callRaw(ctx, export, input)
	return out, callErr, err
}

// callRaw is call that also returns an answered failure's error string as
// the plugin set it (errJSON: the JSON object, whose members beyond code
// and message, such as a handle store's reason and generation, callErr
// drops).
func (s *Store) callRaw(ctx context.Context, export string, input []byte) (out, errJSON []byte, callErr *hostfuncs.Error, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, nil, err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	if err := ctx.Err(); err != nil { // select picks at random when both are ready
		return nil, nil, nil, err
	}
	if s.closed {
		return nil, nil, nil, errors.New("mcp-resume: store is closed")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcp-resume plugin panicked in %s: %v", export, r)
			s.logger.Error("mcp-resume plugin failed; session resume skipped for this call", "export", export, "error", err)
		}
	}()
	cctx := primitives.WithKernel(primitives.NewContext(context.WithoutCancel(ctx), s.calls), s.kernel)
	rc, out, err := s.plugin.CallWithContext(cctx, export, input)
	if err != nil && rc == 1 {
		var e hostfuncs.Error
		if msg := err.Error(); json.Unmarshal([]byte(msg), &e) == nil && e.Code != "" {
			return nil, []byte(msg), &e, nil
		}
	}
	if err != nil {
		s.logger.Error("mcp-resume plugin failed; session resume skipped for this call", "export", export, "error", err)
		return nil, nil, nil, err
	}
	return out, nil, nil, nil
}
