// Package host embeds the mcp-resume plugin in a Go MCP server: open a Store
// for your server app, Load the token to offer the broker, Store the token
// the broker returns, Reject a token the broker refused.
//
//	store, err := host.Open(ctx, "my-server", nil)
//	if err != nil { ... } // only for a bad app name or a broken plugin
//	defer store.Close(ctx)
//	if token, ok := store.Load(ctx); ok {
//		sess, err := broker.Resume(ctx, token)
//		if err != nil { store.Reject(ctx) } // then start a fresh session
//	}
//	store.Store(ctx, sess.Token)
//
// The resume logic is the plugin (package plugin), the same Wasm module the
// Python and TypeScript packages run; this package supplies the host
// functions (package hostfuncs) and runs it on Extism's Go SDK over wazero.
// It implements spec 000 ("MCP Server Session Resume Specification v1"):
// failures are logged through log/slog, never returned as a reason to stop
// the server, and nothing is ever written to stdout.
package host

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/adrg/xdg"
	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/mcp-resume/mcp-resume/internal/hostfuncs"
	"github.com/mcp-resume/mcp-resume/internal/wire"
	"github.com/mcp-resume/mcp-resume/plugin"
	"github.com/mcp-resume/mcp-resume/internal/procid"
)

// EnvStateDir names the environment variable that overrides the state
// directory. MCP hosts pass servers few variables, so the default below
// depends on HOME only.
const EnvStateDir = "MCP_RESUME_STATE_DIR"

// EnvInstance names the environment variable that sets the instance key
// when Options.Instance is empty; an MCP host's server configuration can set
// it per server entry.
const EnvInstance = "MCP_RESUME_INSTANCE"

// NoInstance, as Options.Instance, treats every instance under one host as
// the same one: the file is the spec's plain token-<pid>-<start_time>, and
// only one instance at a time resumes.
const NoInstance = "-"

// Errors returned by Open.
var (
	// ErrInvalidApp is returned when the app name is not 1–64 of [A-Za-z0-9._-]
	// starting with a letter or digit.
	ErrInvalidApp = errors.New("invalid app name")
	// ErrPlugin is returned when the plugin cannot be compiled or instantiated,
	// or speaks another ABI version than this host.
	ErrPlugin = errors.New("mcp-resume plugin unusable")
)

// ErrInvalidToken is returned by Store.Store for a token that is not 1–4096
// bytes of visible ASCII (0x21–0x7E). Nothing is written.
var ErrInvalidToken = errors.New("invalid token")

var appRule = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Options configures Open. A nil *Options uses every default.
type Options struct {
	// StateDir is where token files live. Defaults to $MCP_RESUME_STATE_DIR,
	// else StateDir(app): per user and per app, so two MCP servers under one
	// host never share a token.
	StateDir string
	// Logger receives the plugin's log lines (spec 000, Logging Strategy).
	// Defaults to slog.Default(), whose output is stderr unless you change it.
	Logger *slog.Logger
	// Launchers are extra process names to skip when looking for the MCP
	// host, added to procid.DefaultLaunchers and $MCP_RESUME_LAUNCHERS.
	Launchers []string
	// CacheDir holds wazero's compilation cache, so a relaunched server does
	// not compile the plugin again. Defaults to <user cache dir>/mcp-resume/wazero;
	// "-" disables the cache.
	CacheDir string
	// Instance tells this server instance apart from others the same MCP
	// host runs at the same time: instances with different keys keep
	// separate token files and resume independently; instances with the same
	// key share one, which only the first holds (the others run without
	// resume). Declare it from your configuration (for example a hash of the
	// config file, or a profile name) when copies differ by more than their
	// arguments. Defaults to $MCP_RESUME_INSTANCE, else the process's
	// arguments (os.Args[1:]); NoInstance names no instance. Only a SHA-256
	// digest reaches the file name.
	Instance string
	// Alive overrides how Prune decides whether a token file's host is still
	// running. Defaults to procid.Alive; an error means "cannot tell".
	Alive func(pid int, startTime string) (bool, error)
	// Identity overrides how the MCP host is identified. Defaults to
	// procid.Host with Launchers. Set it only when your process knows its
	// host better than the process tree does (tests use it to pin one).
	Identity hostfuncs.IdentityFunc
}

// Store is one MCP server instance's resume-token store. Its methods are
// safe for concurrent use; calls are serialised into one plugin instance.
type Store struct {
	mu       sync.Mutex
	closed   bool
	plugin   *extism.Plugin
	compiled *extism.CompiledPlugin
	logger   *slog.Logger
	funcs    *hostfuncs.Funcs
}

// StateDir returns the default state directory for app:
// $XDG_STATE_HOME/mcp-resume/<app> (an absolute XDG_STATE_HOME; else
// ~/.local/state/mcp-resume/<app>) on Linux, and always
// ~/Library/Application Support/mcp-resume/<app> on macOS, where an MCP host
// started from the Dock passes no XDG variables (hostfuncs/README.md, "The
// state directory"). It does not create the directory.
func StateDir(app string) string {
	base := xdg.StateHome
	if runtime.GOOS == "darwin" {
		if home, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(home, "Library", "Application Support")
		}
	}
	return filepath.Join(base, "mcp-resume", app)
}

// Open compiles (or fetches from the cache) the plugin and returns the Store
// for app, an MCP server application name such as "github-server".
//
// It returns ErrInvalidApp for a bad name and ErrPlugin when the plugin cannot
// run; in both cases the server should carry on without resume. Problems with
// the host identity or the state directory are not errors: they switch
// resume off and are logged on the first Load or Store (spec 000, Parent
// Process Information Unavailable).
func Open(ctx context.Context, app string, opts *Options) (*Store, error) {
	if !appRule.MatchString(app) {
		return nil, fmt.Errorf("%w %q: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalidApp, app)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StateDir == "" {
		o.StateDir = os.Getenv(EnvStateDir)
		if o.StateDir == "" {
			o.StateDir = StateDir(app)
		}
	}
	if abs, err := filepath.Abs(o.StateDir); err == nil {
		o.StateDir = abs
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Identity == nil {
		launchers := o.Launchers
		logger := o.Logger
		o.Identity = func() (int, string, error) {
			id, err := procid.Host(&procid.Options{Launchers: launchers})
			if err == nil {
				logger.Debug("mcp-resume: MCP host identified", "pid", id.PID, "start_time", id.StartTime, "stdio", id.Stdio)
			}
			return id.PID, id.StartTime, err
		}
	}
	if o.Instance == "" {
		o.Instance = os.Getenv(EnvInstance)
		if o.Instance == "" {
			o.Instance = strings.Join(os.Args[1:], "\x00")
		}
	}
	if o.Instance == NoInstance {
		o.Instance = ""
	}
	funcs := hostfuncs.New(hostfuncs.Config{Dir: o.StateDir, Identity: o.Identity, Logger: o.Logger, Instance: o.Instance, Alive: o.Alive})

	rc := wazero.NewRuntimeConfig()
	if cache := compilationCache(o.CacheDir); cache != nil {
		rc = rc.WithCompilationCache(cache)
	}
	compiled, err := extism.NewCompiledPlugin(ctx,
		extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: plugin.Wasm}}},
		extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true},
		funcs.Extism())
	if err != nil {
		return nil, fmt.Errorf("%w: compiling: %v", ErrPlugin, err)
	}
	// wazero's defaults are a fake clock and a fixed random source; Go's
	// runtime seeds its maps and rand from them, so give it real ones. The
	// guest's stdout is discarded: stdout belongs to the MCP protocol.
	mc := wazero.NewModuleConfig().
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader).
		WithStdout(io.Discard).WithStderr(os.Stderr)
	p, err := compiled.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: mc})
	if err != nil {
		compiled.Close(ctx)
		return nil, fmt.Errorf("%w: instantiating: %v", ErrPlugin, err)
	}
	s := &Store{plugin: p, compiled: compiled, logger: o.Logger, funcs: funcs}
	_, out, err := p.CallWithContext(context.WithoutCancel(ctx), wire.ExportABIVersion, nil)
	if err != nil || string(out) != wire.ABIVersion {
		s.Close(ctx)
		return nil, fmt.Errorf("%w: plugin ABI version %q (err %v), this host implements %q; rebuild with `make wasm` or upgrade the host", ErrPlugin, out, err, wire.ABIVersion)
	}
	return s, nil
}

// compilationCache returns wazero's on-disk compilation cache in dir, or nil
// when it is disabled ("-") or cannot be created (then every start compiles).
func compilationCache(dir string) wazero.CompilationCache {
	if dir == "-" {
		return nil
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(base, "mcp-resume", "wazero")
	}
	cache, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil
	}
	return cache
}

// StateDirectory returns the absolute state directory this Store uses.
func (s *Store) StateDirectory() string { return s.funcs.Dir() }

// Load returns the token saved by the previous server instance under the same
// MCP host, and true; or "" and false when there is none to offer (first run,
// resume off, corrupt file deleted). Spec 000, MCP Server Startup.
func (s *Store) Load(ctx context.Context) (string, bool) {
	out, err := s.call(ctx, wire.ExportLoad, nil)
	if err != nil || len(out) == 0 {
		return "", false
	}
	return string(out), true
}

// Store persists token, which the broker just issued, for the next server
// instance (spec 000, Token Persistence). It returns ErrInvalidToken (wrapped)
// for a token that is not 1–4096 bytes of visible ASCII; a failed write is
// logged as "Failed to write token file: <error>" and returns nil.
func (s *Store) Store(ctx context.Context, token string) error {
	_, err := s.call(ctx, wire.ExportStore, []byte(token))
	var callErr *pluginError
	if errors.As(err, &callErr) && strings.HasPrefix(callErr.msg, "invalid token") {
		return fmt.Errorf("%w%s", ErrInvalidToken, strings.TrimPrefix(callErr.msg, "invalid token"))
	}
	return nil
}

// Reject tells the store the broker refused the token Load returned: the
// token file is deleted unless it already holds a newer token (spec 000,
// Broker Rejects Token; seed 004, reconnection race).
func (s *Store) Reject(ctx context.Context) {
	_, _ = s.call(ctx, wire.ExportReject, nil)
}

// List reports the token files in the state directory (never their tokens).
func (s *Store) List(ctx context.Context) ([]wire.ListedFile, error) {
	out, err := s.call(ctx, wire.ExportList, nil)
	if err != nil {
		return nil, err
	}
	var list wire.ListOutput
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("%w: list returned malformed JSON: %v", ErrPlugin, err)
	}
	return list.Files, nil
}

// Prune removes the token and lock files of MCP hosts that are gone (and
// files older than 30 days whose host cannot be checked), never those of a
// live host; it returns the names removed. Open already prunes once, at the
// first Load, Store or Reject while resume is on; `mcp-resume prune` calls
// this on any state directory.
func (s *Store) Prune(ctx context.Context) ([]string, error) {
	out, err := s.call(ctx, wire.ExportPrune, nil)
	if err != nil {
		return nil, err
	}
	var p wire.PruneOutput
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, fmt.Errorf("%w: prune returned malformed JSON: %v", ErrPlugin, err)
	}
	return p.Removed, nil
}

// Close releases the plugin and the lock on the token file, so another
// instance under the same host may take it over. It is safe to call more
// than once; later calls to other methods do nothing.
func (s *Store) Close(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.funcs.Close()
	err := s.plugin.Close(context.WithoutCancel(ctx))
	if cerr := s.compiled.Close(context.WithoutCancel(ctx)); err == nil {
		err = cerr
	}
	return err
}

// pluginError is an error the plugin reported through Extism's error channel.
type pluginError struct{ msg string }

func (e *pluginError) Error() string { return e.msg }

// call runs one export under the lock. A trap or runtime failure is logged
// and returned; it never panics and never runs on a closed plugin (go-sdk
// prints to stdout if it does).
func (s *Store) call(ctx context.Context, export string, input []byte) (out []byte, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("mcp-resume: store is closed")
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcp-resume plugin panicked in %s: %v", export, r)
			s.logger.Error("mcp-resume plugin failed; session resume skipped for this call", "export", export, "error", err)
		}
	}()
	rc, out, err := s.plugin.CallWithContext(context.WithoutCancel(ctx), export, input)
	if err != nil && rc == 1 && export == wire.ExportStore {
		return nil, &pluginError{msg: err.Error()}
	}
	if err != nil {
		s.logger.Error("mcp-resume plugin failed; session resume skipped for this call", "export", export, "error", err)
		return nil, err
	}
	return out, nil
}
