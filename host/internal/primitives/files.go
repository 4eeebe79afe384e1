package primitives

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// MaxReadLimit is the largest "limit" mcp_resume_read accepts (1 MiB).
const MaxReadLimit = 1 << 20

// prepareDir serves mcp_resume_prepare_dir (hostfuncs/README.md): one
// primitive on an absolute, clean path, with no rule about owners or modes
// (the plugin judges the answers):
//
//   - "stat": lstat(path), or stat(path) with follow; the type ("dir",
//     "file", "symlink", "other"), owner uid and st_mode & 07777;
//   - "mkdir": mkdir(path, 0700), one directory, never its parents; once a
//     directory is fixed, only that directory or one of its ancestors;
//   - "fix": fix path as this store's state directory (the confinement
//     rule: a later fix of another path is invalid_request) and delete this
//     host's temporary files older than sweepSeconds.
//
// Errors carry the precise code of the OS error (osError): not_found,
// not_dir, exists, permission, no_space, read_only, else io.
func (f *Funcs) prepareDir(op, path string, follow bool, sweepSeconds int64) (hostfuncs.DirStat, *hostfuncs.Error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsRune(path, 0) {
		return hostfuncs.DirStat{}, invalid(fmt.Sprintf("path %q is not an absolute, clean path", path))
	}
	switch op {
	case hostfuncs.DirOpStat:
		stat := os.Lstat
		if follow {
			stat = os.Stat
		}
		info, err := stat(path)
		if err != nil {
			return hostfuncs.DirStat{}, osError("stat "+path, err, false)
		}
		return dirStat(info), nil
	case hostfuncs.DirOpMkdir:
		if dir := f.Dir(); dir != "" && dir != path && !strings.HasPrefix(dir, path+"/") && path != "/" {
			return hostfuncs.DirStat{}, invalid(fmt.Sprintf("this store's state directory is %s; mkdir %s is outside it", dir, path))
		}
		if err := os.Mkdir(path, 0o700); err != nil {
			return hostfuncs.DirStat{}, osError("mkdir "+path, err, false)
		}
		return hostfuncs.DirStat{}, nil
	case hostfuncs.DirOpFix:
		if sweepSeconds < 0 {
			return hostfuncs.DirStat{}, invalid("sweep_seconds must not be negative")
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.dir != "" && f.dir != path {
			return hostfuncs.DirStat{}, invalid(fmt.Sprintf("this store's state directory is %s; it cannot move to %s", f.dir, path))
		}
		f.dir = path
		sweepTemporaries(path, time.Duration(sweepSeconds)*time.Second)
		return hostfuncs.DirStat{}, nil
	}
	return hostfuncs.DirStat{}, invalid(fmt.Sprintf("unknown mcp_resume_prepare_dir op %q: want stat, mkdir or fix", op))
}

// sweepTemporaries deletes leftover temporary files (".<name>.<random>.tmp",
// from a writer killed between create and rename) older than maxAge. Best
// effort: failures are ignored.
func sweepTemporaries(dir string, maxAge time.Duration) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".tmp") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > maxAge {
			_ = syscall.Unlink(filepath.Join(dir, n))
		}
	}
}

// path returns the state directory and the full path of name, or
// invalid_request when no state directory is fixed yet or name breaks
// hostfuncs.ValidName.
func (f *Funcs) path(name string) (dir, p string, werr *hostfuncs.Error) {
	dir = f.Dir()
	if dir == "" {
		return "", "", invalid("no state directory yet: mcp_resume_prepare_dir must succeed first")
	}
	if !hostfuncs.ValidName(name) {
		return "", "", invalid(fmt.Sprintf("file name %q is not allowed: names are 1-255 of [A-Za-z0-9._-], not starting with a dot", name))
	}
	return dir, filepath.Join(dir, name), nil
}

// read serves mcp_resume_read: the first min(size, limit) bytes of a
// regular file, opened O_NOFOLLOW|O_NONBLOCK (a FIFO planted at the name
// must not hang the server).
func (f *Funcs) read(name string, limit int) ([]byte, *hostfuncs.Error) {
	_, p, werr := f.path(name)
	if werr != nil {
		return nil, werr
	}
	if limit <= 0 || limit > MaxReadLimit {
		return nil, invalid(fmt.Sprintf("limit %d is outside 1..%d", limit, MaxReadLimit))
	}
	file, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, osError("open "+name, err, true)
	}
	defer file.Close()
	if werr := checkRegular(file, name); werr != nil {
		return nil, werr
	}
	data, err := io.ReadAll(io.LimitReader(file, int64(limit)))
	if err != nil {
		return nil, osError("read "+name, err, true)
	}
	return data, nil
}

// write serves mcp_resume_write: replace the file atomically with a 0600
// temporary file created O_EXCL|O_NOFOLLOW next to it, written, then renamed
// over the name. A reader sees the old token or the new one, never a torn
// write, and a symlink planted at the name is replaced, not followed.
func (f *Funcs) write(name string, data []byte) *hostfuncs.Error {
	dir, p, werr := f.path(name)
	if werr != nil {
		return werr
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(dir, "."+name+"."+hex.EncodeToString(rnd[:])+".tmp")
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return osError("create temporary file for "+name, err, false)
	}
	// No fsync: rename already makes the replace atomic for readers and
	// process crashes; after a power loss the file may be empty, which load
	// treats as corrupt (spec 000, Token File Corrupted). fsync would cost
	// milliseconds on every store.
	_, err = file.Write(data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return osError("write "+name, err, false)
	}
	return nil
}

// remove serves mcp_resume_remove with unlink, which never follows a symlink
// and never removes a directory (os.Remove would fall back to rmdir).
func (f *Funcs) remove(name string) *hostfuncs.Error {
	_, p, werr := f.path(name)
	if werr != nil {
		return werr
	}
	if err := syscall.Unlink(p); err != nil {
		return osError("remove "+name, &os.PathError{Op: "unlink", Path: name, Err: err}, false)
	}
	return nil
}

// list serves mcp_resume_list: the regular files directly in the state
// directory whose names obey hostfuncs.ValidName and start with prefix, sorted by
// byte value, each with its age (now minus its lstat modification time) in
// whole seconds, rounded down. It never reads file contents.
func (f *Funcs) list(prefix string) ([]hostfuncs.ListEntry, *hostfuncs.Error) {
	dir := f.Dir()
	if dir == "" {
		return nil, invalid("no state directory yet: mcp_resume_prepare_dir must succeed first")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, osError("list state directory", err, false)
	}
	now := time.Now()
	files := []hostfuncs.ListEntry{}
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !hostfuncs.ValidName(n) || !strings.HasPrefix(n, prefix) {
			continue
		}
		info, err := e.Info() // lstat
		if err != nil {
			continue // removed meanwhile
		}
		age := int64(math.Floor(now.Sub(info.ModTime()).Seconds()))
		files = append(files, hostfuncs.ListEntry{Name: n, AgeSeconds: age})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// lock serves mcp_resume_lock: an exclusive advisory lock on the file name,
// created 0600 if missing and never deleted, held until Close or process
// exit (the kernel releases it however the process dies). On Linux (socket
// is ignored elsewhere), when socket is set, it first binds that abstract
// Unix socket name (bindAbstract: both the form Node binds for the same lock
// and the unpadded one), then takes flock on the file
// (which older hosts and servers in another network namespace take): busy
// when either is held elsewhere. Taking a lock this Funcs already holds
// succeeds.
func (f *Funcs) lock(name, socket string) *hostfuncs.Error {
	_, p, werr := f.path(name)
	if werr != nil {
		return werr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.locks[name]; held {
		return nil
	}
	var h heldLock
	if socket != "" && runtime.GOOS == "linux" {
		fds, err := bindAbstract(socket)
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			return &hostfuncs.Error{Code: hostfuncs.CodeBusy, Message: name + " is held by another server instance"}
		case err != nil:
			return osError("lock "+name+": bind abstract socket", err, false)
		}
		h.socks = fds
	}
	// os.OpenFile sets O_CLOEXEC: a child process must not inherit the lock.
	file, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		h.release()
		return osError("open lock "+name, err, true)
	}
	h.file = file
	if werr := checkRegular(file, name); werr != nil {
		h.release()
		return werr
	}
	if err := flock(file); err != nil {
		h.release()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return &hostfuncs.Error{Code: hostfuncs.CodeBusy, Message: name + " is held by another server instance"}
		}
		return osError("lock "+name, err, false)
	}
	f.locks[name] = h
	return nil
}

// heldLock is one lock taken by mcp_resume_lock: the open, flocked file
// and the bound abstract sockets (bindAbstract; none off Linux).
type heldLock struct {
	file  *os.File
	socks []int
}

// release closes the file and the sockets, which frees the locks.
func (h heldLock) release() {
	if h.file != nil {
		h.file.Close()
	}
	for _, fd := range h.socks {
		syscall.Close(fd)
	}
}
