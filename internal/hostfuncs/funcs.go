// Package hostfuncs is the Go implementation of the host functions the
// mcp-resume plugin imports: the host's identity, a filesystem confined to
// one state directory, and logging. hostfuncs/README.md is the contract every
// host (Go, Python, TypeScript, or yours) implements; hostfuncs/wire holds its
// payload types and hostfuncs/conformance the cases every host must pass.
//
// Funcs.Call serves one request natively (used by tests and by the Extism
// adapter); Funcs.Extism wraps the same code as Extism host functions.
package hostfuncs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-resume/mcp-resume/internal/wire"
	"github.com/mcp-resume/mcp-resume/internal/procid"
)

// IdentityFunc returns the MCP host's pid and start time, or an error when
// they cannot be verified (then resume is off, spec 000, Parent Process
// Information Unavailable). procid.Host wrapped by host.Open is the real one.
type IdentityFunc func() (pid int, startTime string, err error)

// Config configures Funcs. Dir is required; a nil Logger discards.
type Config struct {
	// Dir is the state directory: an absolute path, created 0700 on first use.
	Dir string
	// Identity resolves the MCP host; it is called once per plugin instance.
	Identity IdentityFunc
	// Logger receives the plugin's log lines; nil discards them.
	Logger *slog.Logger
	// Instance tells apart server instances the MCP host launches
	// differently (hostfuncs/README.md, mcp_resume_identity); "" for none.
	Instance string
	// Alive reports whether pid runs with startTime; nil uses procid.Alive.
	// mcp_resume_probe answers "unknown" when it returns an error.
	Alive func(pid int, startTime string) (bool, error)
}

// Funcs implements the host functions over one state directory. It is safe
// for concurrent use by several plugin instances.
type Funcs struct {
	dir      string
	identity IdentityFunc
	instance string
	alive    func(int, string) (bool, error)
	logger   *slog.Logger

	mu    sync.Mutex
	locks map[string]*os.File // held until Close
}

// New returns Funcs for cfg. It does not touch the filesystem; the plugin's
// call to mcp_resume_prepare_dir does, and only once identity is verified.
func New(cfg Config) *Funcs {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	alive := cfg.Alive
	if alive == nil {
		alive = procid.Alive
	}
	return &Funcs{dir: cfg.Dir, identity: cfg.Identity, instance: cfg.Instance, alive: alive, logger: logger, locks: map[string]*os.File{}}
}

// Close releases every lock taken through mcp_resume_lock. The process
// exiting releases them too. Safe to call more than once.
func (f *Funcs) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for name, file := range f.locks {
		file.Close()
		delete(f.locks, name)
	}
	return nil
}

// Dir returns the state directory.
func (f *Funcs) Dir() string { return f.dir }

// Call serves one host function call: fn is a wire.Fn* name and req its JSON
// request; it returns the JSON response. It never panics on bad input: an
// unknown function or malformed request gets an invalid_request error.
func (f *Funcs) Call(fn string, req []byte) []byte {
	var resp any
	switch fn {
	case wire.FnIdentity:
		resp = f.identityFn()
	case wire.FnPrepareDir:
		resp = wire.Empty{Error: f.PrepareDir()}
	case wire.FnRead:
		var r wire.ReadRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		resp = f.read(r)
	case wire.FnWrite:
		var r wire.WriteRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		if r.Data == nil { // absent or null; "" decodes to an empty, non-nil slice
			return missing(fn, "data")
		}
		resp = wire.Empty{Error: f.write(r)}
	case wire.FnRemove:
		var r wire.NameRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		resp = wire.Empty{Error: f.remove(r)}
	case wire.FnList:
		var r struct{ Prefix *string }
		if err := decode(req, &r); err != nil {
			return err
		}
		if r.Prefix == nil {
			return missing(fn, "prefix")
		}
		resp = f.list(wire.ListRequest{Prefix: *r.Prefix})
	case wire.FnLock:
		var r wire.NameRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		resp = wire.Empty{Error: f.lock(r.Name)}
	case wire.FnProbe:
		var r wire.ProbeRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		resp = f.probe(r)
	case wire.FnLog:
		var r wire.LogRequest
		if err := decode(req, &r); err != nil {
			return err
		}
		if r.Level == "" || r.Message == "" {
			return missing(fn, "level and message")
		}
		f.log(r)
		resp = wire.Empty{}
	default:
		return wire.ErrorResponse(wire.CodeInvalidRequest, "unknown host function "+fn)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return wire.ErrorResponse(wire.CodeIO, err.Error())
	}
	return wire.Pad8(b)
}

func missing(fn, field string) []byte {
	return wire.ErrorResponse(wire.CodeInvalidRequest, fn+": request lacks "+field)
}

func decode(req []byte, v any) []byte {
	if err := json.Unmarshal(req, v); err != nil {
		return wire.ErrorResponse(wire.CodeInvalidRequest, "request is not the JSON document the contract defines: "+err.Error())
	}
	return nil
}

func (f *Funcs) identityFn() wire.IdentityResponse {
	if f.identity == nil {
		return wire.IdentityResponse{Error: &wire.Error{Code: wire.CodeUnavailable, Message: "no identity source configured"}}
	}
	pid, start, err := f.identity()
	if err != nil {
		return wire.IdentityResponse{Error: &wire.Error{Code: wire.CodeUnavailable, Message: err.Error()}}
	}
	return wire.IdentityResponse{PID: pid, StartTime: start, Instance: f.instance}
}

// PrepareDir creates the state directory (and missing parents) with mode 0700
// and checks it is safe to keep tokens in: a real directory (not a symlink)
// owned by this user, with no group or other permissions. It returns nil, or
// a *wire.Error whose message says what is wrong and how to fix it.
func (f *Funcs) PrepareDir() *wire.Error {
	if !filepath.IsAbs(f.dir) {
		return &wire.Error{Code: wire.CodeUnsafe, Message: fmt.Sprintf("state directory %q is not an absolute path", f.dir)}
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		return ioError("create state directory", err)
	}
	if werr := checkDir(f.dir); werr != nil {
		return werr
	}
	f.sweepTemporaries()
	return nil
}

// TempMaxAge is how old a leftover temporary file (".<name>.<random>.tmp",
// from a writer killed between create and rename) must be before
// PrepareDir deletes it. A live writer holds one for microseconds.
const TempMaxAge = time.Minute

// sweepTemporaries deletes this host's leftover temporary files; best effort.
func (f *Funcs) sweepTemporaries() {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".tmp") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > TempMaxAge {
			_ = syscall.Unlink(filepath.Join(f.dir, n))
		}
	}
}

// path returns the full path of name, or an error if name breaks wire.ValidName.
func (f *Funcs) path(name string) (string, *wire.Error) {
	if !wire.ValidName(name) {
		return "", &wire.Error{Code: wire.CodeInvalidRequest, Message: fmt.Sprintf("file name %q is not allowed: names are 1-255 of [A-Za-z0-9._-], not starting with a dot", name)}
	}
	return filepath.Join(f.dir, name), nil
}

func (f *Funcs) read(r wire.ReadRequest) wire.ReadResponse {
	p, werr := f.path(r.Name)
	if werr != nil {
		return wire.ReadResponse{Error: werr}
	}
	if r.Limit <= 0 || r.Limit > 1<<20 {
		return wire.ReadResponse{Error: &wire.Error{Code: wire.CodeInvalidRequest, Message: fmt.Sprintf("limit %d is outside 1..1048576", r.Limit)}}
	}
	// O_NONBLOCK: a FIFO planted at the path must not block the server.
	file, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return wire.ReadResponse{Error: ioError("open "+r.Name, err)}
	}
	defer file.Close()
	if werr := checkRegular(file, r.Name); werr != nil {
		return wire.ReadResponse{Error: werr}
	}
	data, err := io.ReadAll(io.LimitReader(file, int64(r.Limit)))
	if err != nil {
		return wire.ReadResponse{Error: ioError("read "+r.Name, err)}
	}
	return wire.ReadResponse{Data: data}
}

// write replaces the file atomically: a 0600 temporary file created with
// O_EXCL next to it, written, then renamed over the name. A reader
// sees the old token or the new one, never a torn write, and a symlink
// planted at the name is replaced, not followed.
func (f *Funcs) write(r wire.WriteRequest) *wire.Error {
	p, werr := f.path(r.Name)
	if werr != nil {
		return werr
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(f.dir, "."+r.Name+"."+hex.EncodeToString(rnd[:])+".tmp")
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return ioError("create temporary file for "+r.Name, err)
	}
	// No fsync: rename already makes the replace atomic for readers and
	// process crashes; after a power loss the file may be empty, which load
	// treats as corrupt (spec 000, Token File Corrupted). fsync would cost
	// milliseconds on every store.
	_, err = file.Write(r.Data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return ioError("write "+r.Name, err)
	}
	return nil
}

func (f *Funcs) remove(r wire.NameRequest) *wire.Error {
	p, werr := f.path(r.Name)
	if werr != nil {
		return werr
	}
	// unlink, not os.Remove: os.Remove falls back to rmdir, and the contract
	// (like Python's os.remove and Node's unlink) removes files only.
	if err := syscall.Unlink(p); err != nil {
		return ioError("remove "+r.Name, &os.PathError{Op: "unlink", Path: r.Name, Err: err})
	}
	return nil
}

// lock takes an exclusive advisory lock (flock) on the file name, created
// 0600 if missing, and holds it until Close or process exit: the lock dies
// with its process. Another holder answers busy. Taking a lock this Funcs
// already holds succeeds.
func (f *Funcs) lock(name string) *wire.Error {
	p, werr := f.path(name)
	if werr != nil {
		return werr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.locks[name]; held {
		return nil
	}
	file, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return ioError("open lock "+name, err)
	}
	if werr := checkRegular(file, name); werr != nil {
		file.Close()
		return werr
	}
	if err := flock(file); err != nil {
		file.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return &wire.Error{Code: wire.CodeBusy, Message: name + " is held by another server instance"}
		}
		return ioError("lock "+name, err)
	}
	f.locks[name] = file
	return nil
}

// probe reports whether the host named by a file is alive and the file's age.
func (f *Funcs) probe(r wire.ProbeRequest) wire.ProbeResponse {
	p, werr := f.path(r.Name)
	if werr != nil {
		return wire.ProbeResponse{Error: werr}
	}
	info, err := os.Lstat(p)
	if err != nil {
		return wire.ProbeResponse{Error: ioError("inspect "+r.Name, err)}
	}
	resp := wire.ProbeResponse{Host: wire.HostUnknown, AgeSeconds: int64(time.Since(info.ModTime()).Seconds())}
	if alive, err := f.alive(r.PID, r.StartTime); err == nil {
		resp.Host = wire.HostGone
		if alive {
			resp.Host = wire.HostAlive
		}
	}
	return resp
}

func (f *Funcs) list(r wire.ListRequest) wire.ListResponse {
	entries, err := os.ReadDir(f.dir)
	if err != nil {
		return wire.ListResponse{Names: []string{}, Error: ioError("list state directory", err)}
	}
	names := []string{}
	for _, e := range entries {
		if e.Type().IsRegular() && wire.ValidName(e.Name()) && strings.HasPrefix(e.Name(), r.Prefix) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return wire.ListResponse{Names: names}
}

func (f *Funcs) log(r wire.LogRequest) {
	level := slog.LevelInfo
	switch r.Level {
	case wire.LevelDebug:
		level = slog.LevelDebug
	case wire.LevelWarn:
		level = slog.LevelWarn
	case wire.LevelError:
		level = slog.LevelError
	}
	attrs := []slog.Attr{slog.String("event", r.Event)}
	if r.Detail != "" {
		attrs = append(attrs, slog.String("detail", r.Detail))
	}
	f.logger.LogAttrs(context.Background(), level, r.Message, attrs...)
}

// ioError maps an operating-system error to the contract's codes.
func ioError(op string, err error) *wire.Error {
	code := wire.CodeIO
	switch {
	case errors.Is(err, fs.ErrNotExist):
		code = wire.CodeNotFound
	case errors.Is(err, syscall.ELOOP):
		code = wire.CodeUnsafe
		err = errors.New("it is a symbolic link, which is never followed")
	}
	return &wire.Error{Code: code, Message: op + ": " + err.Error()}
}
