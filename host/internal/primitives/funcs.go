// Package hostfuncs is the Go implementation of the nine host functions the
// mcp-resume plugin imports (ABI version 3, hostfuncs/README.md): facts about
// this process, read-only process inspection (/proc, kill(pid, 0), fstat,
// SO_PEERCRED, sysctl), a filesystem confined to one state directory, an
// advisory lock, and logging. They are OS primitives and hold no policy: which
// process is the MCP host, whether a host is alive, where the state directory
// is and what a valid token is are decided by the plugin (procid).
//
// Funcs.Call serves one request natively (used by tests); Funcs.Extism wraps
// the same code as Extism host functions for the plugin.
package primitives

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Config configures Funcs. The zero value is the production configuration
// with logs discarded.
type Config struct {
	// Logger receives the plugin's log lines (mcp_resume_log); nil discards them.
	Logger *slog.Logger
	// Fixture pins the system the functions report. FOR THE CONFORMANCE
	// TESTS ONLY (hostfuncs/conformance/README.md); production code leaves it
	// nil, and then every answer comes from the real operating system.
	Fixture *Fixture
	// Trace, when set, is called after every host function call with the
	// function's name, its request and how long it took. For benchmarks and
	// debugging (host's BenchmarkOpenLoad counts the primitives a start
	// costs); it must not change anything.
	Trace func(fn string, req []byte, took time.Duration)
}

// Fixture is the test-only seam of the shared conformance cases
// (hostfuncs/conformance/README.md, "Running a case", step 2). With it,
// mcp_resume_facts answers Facts as is, the /proc operations of
// mcp_resume_inspect run their real code under ProcRoot instead of /proc,
// and the operations that have no file to read answer from Answers, never
// from the real system. Nothing else changes: the file functions, the lock
// and the log act on real files.
type Fixture struct {
	// Facts is the JSON object mcp_resume_facts answers, as is. Its "os"
	// field decides whether the /proc operations are supported ("linux").
	Facts json.RawMessage
	// ProcRoot is the directory that stands in for /proc.
	ProcRoot string
	// Answers holds results of kill0, fstat, peer, sysctl, procargs and ps,
	// keyed "<op> <pid or fd>" (for example "kill0 4242", "fstat 0"). An
	// operation without an entry gets the conformance default: kill0
	// not_found, fstat {"type":"char"}, the others unsupported.
	Answers map[string]json.RawMessage
	// NoAnswer names host functions whose response is replaced by the 8
	// bytes "not json", as when an SDK swallows a host function's exception.
	NoAnswer []string
}

// Funcs implements the host functions for one store. The state directory
// is fixed by the first successful mcp_resume_prepare_dir (the confinement
// rule); the file functions answer invalid_request before that. It is safe
// for concurrent use.
type Funcs struct {
	logger  *slog.Logger
	fixture *Fixture
	trace   func(string, []byte, time.Duration)
	procOK  bool   // the /proc operations are supported here
	proc    string // the directory read for /proc

	mu    sync.Mutex
	dir   string              // the confined state directory; "" until prepare_dir succeeds
	locks map[string]heldLock // held until Close
}

// New returns Funcs for cfg. It touches nothing: the plugin's calls do.
func New(cfg Config) *Funcs {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f := &Funcs{logger: logger, fixture: cfg.Fixture, trace: cfg.Trace, procOK: runtime.GOOS == "linux", proc: "/proc", locks: map[string]heldLock{}}
	if fx := cfg.Fixture; fx != nil {
		var facts struct {
			OS string `json:"os"`
		}
		_ = json.Unmarshal(fx.Facts, &facts)
		f.procOK, f.proc = facts.OS == "linux", fx.ProcRoot
	}
	return f
}

// Close releases every lock taken through mcp_resume_lock (the process
// exiting releases them too). It does not delete the lock files. Safe to
// call more than once.
func (f *Funcs) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, h := range f.locks {
		h.release()
		delete(f.locks, name)
	}
	return nil
}

// Dir returns the state directory fixed by the first successful
// mcp_resume_prepare_dir, or "" before one.
func (f *Funcs) Dir() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir
}

// Call serves one host function call: fn is a hostfuncs.Fn* name and req its JSON
// request; it returns the JSON response, padded to a multiple of 8 bytes
// (hostfuncs.Pad8). It never panics and never fails without an answer: an unknown
// function or a malformed request gets an invalid_request error, every OS
// failure one of the contract's codes (hostfuncs/README.md, "Error codes").
func (f *Funcs) Call(fn string, req []byte) []byte {
	if f.trace != nil {
		start := time.Now()
		defer func() { f.trace(fn, req, time.Since(start)) }()
	}
	if f.fixture != nil && slices.Contains(f.fixture.NoAnswer, fn) {
		return []byte("not json")
	}
	var resp any
	switch fn {
	case hostfuncs.FnFacts:
		var r struct{}
		if err := decode(req, &r); err != nil {
			return err
		}
		if f.fixture != nil {
			return hostfuncs.Pad8(append([]byte(nil), f.fixture.Facts...))
		}
		resp = facts()
	case hostfuncs.FnInspect:
		resp = f.inspect(req)
	case hostfuncs.FnPrepareDir:
		var r struct {
			Op           *string `json:"op"`
			Path         *string `json:"path"`
			Follow       bool    `json:"follow"`
			SweepSeconds int64   `json:"sweep_seconds"`
		}
		if err := decode(req, &r); err != nil {
			return err
		}
		if r.Op == nil || r.Path == nil {
			return missing(fn, `"op" and "path"`)
		}
		st, werr := f.prepareDir(*r.Op, *r.Path, r.Follow, r.SweepSeconds)
		if werr != nil {
			resp = empty(werr)
		} else {
			resp = st
		}
	case hostfuncs.FnRead:
		var r struct {
			Name  string `json:"name"`
			Limit *int   `json:"limit"`
		}
		if err := decode(req, &r); err != nil {
			return err
		}
		if r.Limit == nil {
			return missing(fn, `"limit"`)
		}
		data, werr := f.read(r.Name, *r.Limit)
		if werr != nil {
			resp = empty(werr)
		} else {
			resp = hostfuncs.ReadResponse{Data: data}
		}
	case hostfuncs.FnWrite:
		var r hostfuncs.WriteRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		if r.Data == nil { // absent or null; "" decodes to an empty, non-nil slice
			return missing(fn, `"data"`)
		}
		resp = empty(f.write(r.Name, r.Data))
	case hostfuncs.FnRemove:
		var r hostfuncs.NameRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		resp = empty(f.remove(r.Name))
	case hostfuncs.FnList:
		var r struct {
			Prefix *string `json:"prefix"`
		}
		if err := decode(req, &r); err != nil {
			return err
		}
		if r.Prefix == nil {
			return missing(fn, `"prefix"`)
		}
		files, werr := f.list(*r.Prefix)
		if werr != nil {
			resp = empty(werr)
		} else {
			resp = hostfuncs.ListResponse{Files: files}
		}
	case hostfuncs.FnLock:
		var r hostfuncs.LockRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		resp = empty(f.lock(r.Name, r.Socket))
	case hostfuncs.FnLog:
		var r hostfuncs.LogRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		resp = empty(f.log(r))
	default:
		return errorResponse(hostfuncs.CodeInvalidRequest, "unknown host function "+fn)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return errorResponse(hostfuncs.CodeIO, err.Error())
	}
	return hostfuncs.Pad8(b)
}

// errorResponse is the JSON {"error": {"code", "message"}}.
func errorResponse(code, message string) []byte {
	b, _ := json.Marshal(hostfuncs.Empty{Error: &hostfuncs.Error{Code: code, Message: message}})
	return hostfuncs.Pad8(b)
}

func empty(werr *hostfuncs.Error) hostfuncs.Empty { return hostfuncs.Empty{Error: werr} }

func missing(fn, field string) []byte {
	return errorResponse(hostfuncs.CodeInvalidRequest, fn+": request lacks "+field)
}

func decode(req []byte, v any) []byte {
	if err := json.Unmarshal(req, v); err != nil {
		return errorResponse(hostfuncs.CodeInvalidRequest, "request is not the JSON document the contract defines: "+err.Error())
	}
	return nil
}

func invalid(format string) *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeInvalidRequest, Message: format}
}

// facts answers mcp_resume_facts from this process (hostfuncs/README.md,
// "mcp_resume_facts"): the plugin derives the state directory, the instance
// key, the launchers and the MCP_RESUME switch from them. Strings that are
// not UTF-8 (arguments, working directory, environment) reach the plugin
// with U+FFFD in place of each invalid byte, as encoding/json writes them.
func facts() hostfuncs.Facts {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	args := []string{}
	if len(os.Args) > 1 {
		args = append(args, os.Args[1:]...)
	}
	return hostfuncs.Facts{
		OS: runtime.GOOS, PID: os.Getpid(), EUID: os.Geteuid(), Home: home(),
		XDGStateHome: os.Getenv("XDG_STATE_HOME"), Cwd: cwd(), Args: args, Env: env, Runtime: "go",
	}
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

// cwd is facts.cwd: getcwd(2), never $PWD (os.Getwd prefers $PWD when it
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

// log emits one plugin log line through the slog.Logger at its level, with
// event and detail as attributes (hostfuncs/README.md, "mcp_resume_log").
func (f *Funcs) log(r hostfuncs.LogRequest) *hostfuncs.Error {
	if r.Level == "" || r.Event == "" || r.Message == "" {
		return invalid(`mcp_resume_log: request lacks "level", "event" or "message"`)
	}
	var level slog.Level
	switch r.Level {
	case hostfuncs.LevelDebug:
		level = slog.LevelDebug
	case hostfuncs.LevelInfo:
		level = slog.LevelInfo
	case hostfuncs.LevelWarn:
		level = slog.LevelWarn
	case hostfuncs.LevelError:
		level = slog.LevelError
	default:
		return invalid("mcp_resume_log: unknown level " + r.Level + ": use debug, info, warn or error")
	}
	attrs := []slog.Attr{slog.String("event", r.Event)}
	if r.Detail != "" {
		attrs = append(attrs, slog.String("detail", r.Detail))
	}
	f.logger.LogAttrs(context.Background(), level, r.Message, attrs...)
	return nil
}

// osError maps an operating-system error to the contract's codes
// (hostfuncs/README.md, "Error codes"): not_found for ENOENT and ESRCH,
// permission for EACCES and EPERM, not_dir for ENOTDIR, exists for EEXIST,
// no_space for ENOSPC and EDQUOT, read_only for EROFS, io for the rest. Where a state-directory
// file is opened (fileOpen), a symbolic link refused by O_NOFOLLOW (ELOOP)
// and a directory (EISDIR) are unsafe.
func osError(op string, err error, fileOpen bool) *hostfuncs.Error {
	code := hostfuncs.CodeIO
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ESRCH):
		code = hostfuncs.CodeNotFound
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		code = hostfuncs.CodePermission
	case errors.Is(err, syscall.ENOTDIR):
		code = hostfuncs.CodeNotDir
	case errors.Is(err, syscall.EEXIST):
		code = hostfuncs.CodeExists
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		code = hostfuncs.CodeNoSpace
	case errors.Is(err, syscall.EROFS):
		code = hostfuncs.CodeReadOnly
	case fileOpen && errors.Is(err, syscall.ELOOP):
		code = hostfuncs.CodeUnsafe
		err = errors.New("it is a symbolic link, which is never followed")
	case fileOpen && errors.Is(err, syscall.EISDIR):
		code = hostfuncs.CodeUnsafe
		err = errors.New("it is a directory, not a regular file")
	}
	return &hostfuncs.Error{Code: code, Message: op + ": " + err.Error()}
}
