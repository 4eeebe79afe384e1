// Package primitives is the Go implementation of the eleven host functions the
// mcp-resume plugin imports (ABI version 7, hostfuncs/README.md): facts about
// this process, typed read-only process inspection (/proc, kill(pid, 0),
// fstat, SO_PEERCRED, sysctl), a filesystem confined to the state directory
// the plugin's open (or handles_open) answered, an advisory lock with a
// bounded wait and its release, logging, and one Lua script run on Redis
// (mcp_resume_eval, through hostfuncs/redishost). They are OS and network
// primitives and hold no policy: which process is the MCP host, whether a
// host is alive, which files are tokens and which temporary files are stale
// are decided by the plugin (procid, plugin/internal/resume).
//
// Funcs.Call serves one request natively; Shared wraps it as Extism host
// functions for the plugin.
package primitives

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	extism "github.com/extism/go-sdk"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/cryptohost"
	"github.com/mcp-resume/mcp-resume/hostfuncs/redishost"
)

// Config configures Funcs. The zero value is the production configuration
// with logs discarded.
type Config struct {
	// Logger receives the plugin's log lines (mcp_resume_log); nil discards them.
	Logger *slog.Logger
	// Trace, when set, is called after every host function call with the
	// function's name, its request and how long it took. For benchmarks and
	// debugging (host's BenchmarkOpenLoad counts the primitives a start
	// costs); it must not change anything.
	Trace func(fn string, req []byte, took time.Duration)
	// Redis serves mcp_resume_eval: the store's clients, shared by the
	// Funcs of all its plugin instances and closed by the store. Nil: the
	// Funcs has its own, closed by Close.
	Redis *redishost.Clients
}

// Funcs implements the host functions for one store. The file functions
// act inside the state directory set by SetStateDir (the confinement rule)
// and answer invalid_request before it. It is safe for concurrent use.
type Funcs struct {
	logger *slog.Logger
	trace  func(string, []byte, time.Duration)

	redis    *redishost.Clients
	ownRedis bool // redis is this Funcs's own: Close closes it

	mu    sync.Mutex
	dir   string              // the confined state directory; "" until SetStateDir
	locks map[string]heldLock // held until unlock or Close
	// lockFiles keeps each lock file open from its first lock until Close
	// (or until its name points at another file): see lockFile.
	lockFiles map[string]openLockFile
}

// New returns Funcs for cfg. It touches nothing: the plugin's calls do.
func New(cfg Config) *Funcs {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &Funcs{logger: logger, trace: cfg.Trace, locks: map[string]heldLock{}, lockFiles: map[string]openLockFile{}, redis: cfg.Redis}
	if f.redis == nil {
		f.redis, f.ownRedis = &redishost.Clients{}, true
	}
	return f
}

// SetStateDir fixes dir, the state_dir field of a successful open's output
// (hostfuncs.OpenOutput) or handles_open's (a handle store's handles/
// directory), as this store's state directory for good (hostfuncs/README.md,
// "Names and the state directory"). It reports whether dir
// is now the state directory: false, changing nothing, when dir is not an
// absolute clean path or another directory is already fixed.
func (f *Funcs) SetStateDir(dir string) bool {
	if !filepath.IsAbs(dir) || filepath.Clean(dir) != dir || strings.IndexByte(dir, 0) >= 0 {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir == "" {
		f.dir = dir
	}
	return f.dir == dir
}

// Close releases every lock taken through mcp_resume_lock (the process
// exiting releases them too), closes the lock files kept open between
// locks, and closes the Redis clients when they are this Funcs's own
// (Config.Redis nil). It does not delete the lock files. Safe to call more
// than once.
func (f *Funcs) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, h := range f.locks {
		h.closeSockets()
		delete(f.locks, name)
	}
	for name := range f.lockFiles {
		f.dropLockFile(name) // closing the file releases its flock
	}
	if f.ownRedis {
		return f.redis.Close()
	}
	return nil
}

// Handler serves host function calls: fn is a hostfuncs.Fn* name, req its
// JSON request, the result its JSON response. *Funcs is the real one; a
// test may wrap it.
type Handler interface {
	Call(fn string, req []byte) []byte
}

type ctxKey struct{}

// NewContext returns ctx carrying h, for plugin calls through the host
// functions of Shared.
func NewContext(ctx context.Context, h Handler) context.Context {
	return context.WithValue(ctx, ctxKey{}, h)
}

// Shared returns the eleven host functions for a module compiled once and
// instantiated by many stores (hostfuncs/README.md, "Loading the plugin").
// Each reads its JSON request from plugin memory, serves it with the
// Handler that NewContext put in the context of the plugin call (Extism
// passes that context to host functions) and writes the JSON response back.
// A call without a Handler, or a failure to touch plugin memory, returns
// offset 0, which the plugin reads as "cannot tell" (hostfuncs/README.md,
// "Calling convention"). With a Kernel in the context (WithKernel) they
// reach plugin memory through its cached kernel functions, else through
// go-sdk's CurrentPlugin (a kernel function lookup per access).
func Shared() []extism.HostFunction {
	names := hostfuncs.Functions()
	fns := make([]extism.HostFunction, 0, len(names))
	for _, name := range names {
		hf := extism.NewHostFunctionWithStack(name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
			k, _ := ctx.Value(kernelKey{}).(*Kernel)
			var req []byte
			var err error
			if k != nil {
				req, err = k.read(ctx, stack[0])
			} else {
				req, err = p.ReadBytes(stack[0])
			}
			stack[0] = 0
			h, _ := ctx.Value(ctxKey{}).(Handler)
			if err != nil || h == nil {
				return
			}
			resp := h.Call(name, req)
			var out uint64
			if k != nil {
				out, err = k.write(ctx, resp)
			} else {
				out, err = p.WriteBytes(resp)
			}
			if err == nil {
				stack[0] = out
			}
		}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
		hf.SetNamespace(hostfuncs.Namespace)
		fns = append(fns, hf)
	}
	return fns
}

// Call serves one host function call: fn is a hostfuncs.Fn* name and req its
// JSON request; it returns the JSON response, padded to a multiple of 8 bytes
// (hostfuncs.Pad8). It never panics and never fails without an answer: an
// unknown function or a malformed request (not JSON, a required field
// missing or of the wrong type) gets invalid_request, every OS failure one
// of the contract's codes (osError).
func (f *Funcs) Call(fn string, req []byte) []byte {
	if f.trace != nil {
		start := time.Now()
		defer func() { f.trace(fn, req, time.Since(start)) }()
	}
	if fn == hostfuncs.FnCrypto {
		// Binary in and out, never padded (hostfuncs/README.md).
		return cryptohost.Serve(req, f)
	}
	if fn == hostfuncs.FnEval && len(req) > 0 && req[0] == hostfuncs.EvalBinaryForm {
		return f.evalBinary(req)
	}
	var resp any
	var werr *hostfuncs.Error
	switch fn {
	case hostfuncs.FnFacts:
		resp, werr = serve(req, func(struct{}) (any, *hostfuncs.Error) { return facts(), nil })
	case hostfuncs.FnInspect:
		resp, werr = serve(req, inspect)
	case hostfuncs.FnPrepareDir:
		resp, werr = serve(req, f.prepareDir)
	case hostfuncs.FnRead:
		resp, werr = serve(req, f.read)
	case hostfuncs.FnWrite:
		resp, werr = serve(req, f.write)
	case hostfuncs.FnRemove:
		resp, werr = serve(req, f.remove)
	case hostfuncs.FnList:
		resp, werr = serve(req, f.list)
	case hostfuncs.FnLock:
		resp, werr = serve(req, f.lock)
	case hostfuncs.FnLog:
		resp, werr = serve(req, f.log)
	case hostfuncs.FnUnlock:
		resp, werr = serve(req, f.unlock)
	case hostfuncs.FnEval:
		resp, werr = serve(req, f.eval)
	default:
		werr = invalid("unknown host function " + fn)
	}
	if werr != nil || resp == nil {
		resp = hostfuncs.Empty{Error: werr}
	}
	b, err := json.Marshal(resp)
	if err != nil {
		b, _ = json.Marshal(hostfuncs.Empty{Error: &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: err.Error()}})
	}
	return hostfuncs.Pad8(b)
}

// serve decodes req, which must be one JSON object, into a T and runs fn
// on it (hostfuncs/README.md, "Calling convention"). Member names match
// exactly (go-json-experiment, unlike encoding/json, which matches them in
// any case); a repeated member keeps its last value, as in Python and
// JavaScript. Not JSON, not an object, invalid UTF-8 or a member of the
// wrong type is invalid_request. A nil answer means {}.
func serve[T any](req []byte, fn func(T) (any, *hostfuncs.Error)) (any, *hostfuncs.Error) {
	var r T
	if trimmed := bytes.TrimLeft(req, " \t\r\n"); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, invalid("request is not a JSON object")
	}
	if err := jsonv2.Unmarshal(req, &r, jsontext.AllowDuplicateNames(true)); err != nil {
		return nil, invalid("request is not the JSON document the contract defines: " + err.Error())
	}
	return fn(r)
}

func invalid(msg string) *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeInvalidRequest, Message: msg}
}

// facts answers mcp_resume_facts from this process (hostfuncs/README.md,
// "mcp_resume_facts"): the plugin derives the state directory, the instance
// key, the launchers and the MCP_RESUME switch from them. Strings that are
// not UTF-8 (arguments, working directory, environment) reach the plugin
// with U+FFFD in place of each invalid byte, as encoding/json writes them.
func facts() hostfuncs.Facts {
	envMu.Lock()
	environ := os.Environ()
	envMu.Unlock()
	env := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	args := []string{}
	if len(os.Args) > 1 {
		args = append(args, os.Args[1:]...)
	}
	return hostfuncs.Facts{
		OS: runtime.GOOS, PID: os.Getpid(), EUID: os.Geteuid(), Home: home(),
		XDGStateHome: os.Getenv("XDG_STATE_HOME"), Cwd: startCwd, Args: args, Env: env, Runtime: "go",
	}
}

// envMu keeps facts from reading the environment while WithoutEnv hides a
// variable: the instance key the plugin derives from it must not change.
var envMu sync.Mutex

// WithoutEnv runs fn with the environment variable name unset, and sets it
// back after. The loader hides EXTISM_ENABLE_WASI_OUTPUT this way while it
// instantiates the plugin: go-sdk would then connect the guest's WASI
// stdout to this process's, which is the MCP protocol's (hostfuncs/README.md,
// "Loading the plugin"). fn must not run a host function (none serves
// without a Handler in its context), or it would wait for itself.
func WithoutEnv(name string, fn func()) {
	envMu.Lock()
	defer envMu.Unlock()
	if v, ok := os.LookupEnv(name); ok {
		os.Unsetenv(name)
		defer os.Setenv(name, v)
	}
	fn()
}

// home is facts.home: $HOME when it is set and absolute, else the home
// directory of the effective uid's password-database entry (os/user, which
// reads /etc/passwd or calls getpwuid_r), else "". os.UserHomeDir reads
// only $HOME on Linux, which would leave a server started without HOME
// with no state directory while Python and Node found one.
func home() string {
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return h
	}
	if u, err := user.LookupId(strconv.Itoa(os.Geteuid())); err == nil && filepath.IsAbs(u.HomeDir) {
		return u.HomeDir
	}
	return ""
}

// startCwd is facts.cwd: the working directory when this package was
// initialised, before any code of the server's main ran, so a server that
// changes directory (to its install directory, say) before it opens a store
// still reports the directory it was launched in, which is part of the
// default instance key. A Go program's package initialisers all run before
// main; one that changes directory in an init of its own that runs before
// this package's is not caught (README, "Several instances under one host").
var startCwd = cwd()

// cwd is getcwd(2), never $PWD (os.Getwd prefers $PWD when it
// names the same directory, so a symlinked path would differ from what
// Python's os.getcwd and Node's process.cwd report); "" when it fails
// (a deleted working directory).
func cwd() string {
	d, err := syscall.Getwd()
	if err != nil {
		return ""
	}
	return d
}

// logRequest is mcp_resume_log's request; pointers tell a missing field.
type logRequest struct {
	Level   *string `json:"level"`
	Event   *string `json:"event"`
	Message *string `json:"message"`
	Detail  string  `json:"detail"`
}

// log writes Message through the slog.Logger at Level (debug, info, warn,
// error), with Event and Detail (when not empty) as attributes
// (hostfuncs/README.md, "mcp_resume_log"). Which events exist is plugin
// policy: the host has no per-event logic.
func (f *Funcs) log(r logRequest) (any, *hostfuncs.Error) {
	if r.Level == nil || r.Event == nil || r.Message == nil {
		return nil, invalid(`mcp_resume_log: request lacks "level", "event" or "message"`)
	}
	l, ok := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[*r.Level]
	if !ok {
		return nil, invalid("mcp_resume_log: unknown level " + strconv.Quote(*r.Level) + ": use debug, info, warn or error")
	}
	attrs := []slog.Attr{slog.String("event", *r.Event)}
	if r.Detail != "" {
		attrs = append(attrs, slog.String("detail", r.Detail))
	}
	f.logger.LogAttrs(context.Background(), l, *r.Message, attrs...)
	return nil, nil
}

// errnoCodes maps errno values to the contract's codes, the same for every
// host function (hostfuncs/README.md, "Error codes"; ELOOP is a symbolic
// link refused by O_NOFOLLOW); any other error is io.
var errnoCodes = map[syscall.Errno]string{
	syscall.ENOENT: hostfuncs.CodeNotFound, syscall.ESRCH: hostfuncs.CodeNotFound, syscall.EBADF: hostfuncs.CodeNotFound,
	syscall.EACCES: hostfuncs.CodePermission, syscall.EPERM: hostfuncs.CodePermission,
	syscall.ELOOP: hostfuncs.CodeUnsafe, syscall.EISDIR: hostfuncs.CodeUnsafe, syscall.ENOTDIR: hostfuncs.CodeNotDir,
	syscall.EEXIST: hostfuncs.CodeExists, syscall.ENOSPC: hostfuncs.CodeNoSpace, syscall.EDQUOT: hostfuncs.CodeNoSpace,
	syscall.EROFS: hostfuncs.CodeReadOnly,
}

// osError is the contract error of err (errnoCodes), its message "op: err".
func osError(op string, err error) *hostfuncs.Error {
	code := hostfuncs.CodeIO
	if errno := syscall.Errno(0); errors.As(err, &errno) && errnoCodes[errno] != "" {
		code = errnoCodes[errno]
	}
	return &hostfuncs.Error{Code: code, Message: op + ": " + err.Error()}
}
