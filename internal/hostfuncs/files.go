package hostfuncs

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// MaxReadLimit is the largest "limit" mcp_resume_read accepts (1 MiB).
const MaxReadLimit = 1 << 20

// prepareDir serves mcp_resume_prepare_dir (hostfuncs/README.md): the
// confinement rule, then create path (and missing parents) with mode 0700
// unless create is false (then a missing directory is not_found and fixes
// nothing: list and prune never create it), check it is safe to keep tokens in (checkDir: a real directory owned by
// this user, no group or other permission bits; else unsafe, with a message
// that says how to fix it), and delete this host's temporary files older
// than sweepSeconds seconds.
func (f *Funcs) prepareDir(path string, sweepSeconds int64, create bool) *wire.Error {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsRune(path, 0) {
		return invalid(fmt.Sprintf("state directory %q is not an absolute, clean path", path))
	}
	if sweepSeconds < 0 {
		return invalid("sweep_seconds must not be negative")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dir != "" && f.dir != path {
		return invalid(fmt.Sprintf("this store's state directory is %s; it cannot move to %s", f.dir, path))
	}
	if create {
		if err := os.MkdirAll(path, 0o700); err != nil {
			return osError("create state directory", err, false)
		}
	}
	if werr := checkDir(path); werr != nil {
		return werr
	}
	f.dir = path
	sweepTemporaries(path, time.Duration(sweepSeconds)*time.Second)
	return nil
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
// wire.ValidName.
func (f *Funcs) path(name string) (dir, p string, werr *wire.Error) {
	dir = f.Dir()
	if dir == "" {
		return "", "", invalid("no state directory yet: mcp_resume_prepare_dir must succeed first")
	}
	if !wire.ValidName(name) {
		return "", "", invalid(fmt.Sprintf("file name %q is not allowed: names are 1-255 of [A-Za-z0-9._-], not starting with a dot", name))
	}
	return dir, filepath.Join(dir, name), nil
}

// read serves mcp_resume_read: the first min(size, limit) bytes of a
// regular file, opened O_NOFOLLOW|O_NONBLOCK (a FIFO planted at the name
// must not hang the server).
func (f *Funcs) read(name string, limit int) ([]byte, *wire.Error) {
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
func (f *Funcs) write(name string, data []byte) *wire.Error {
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
func (f *Funcs) remove(name string) *wire.Error {
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
// directory whose names obey wire.ValidName and start with prefix, sorted by
// byte value, each with its age (now minus its lstat modification time) in
// whole seconds, rounded down. It never reads file contents.
func (f *Funcs) list(prefix string) ([]wire.ListEntry, *wire.Error) {
	dir := f.Dir()
	if dir == "" {
		return nil, invalid("no state directory yet: mcp_resume_prepare_dir must succeed first")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, osError("list state directory", err, false)
	}
	now := time.Now()
	files := []wire.ListEntry{}
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !wire.ValidName(n) || !strings.HasPrefix(n, prefix) {
			continue
		}
		info, err := e.Info() // lstat
		if err != nil {
			continue // removed meanwhile
		}
		age := int64(math.Floor(now.Sub(info.ModTime()).Seconds()))
		files = append(files, wire.ListEntry{Name: n, AgeSeconds: age})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	return files, nil
}

// lock serves mcp_resume_lock: an exclusive advisory lock (flock) on the
// file name, created 0600 if missing and never deleted, held until Close or
// process exit (the kernel releases it however the process dies). Another
// holder answers busy; taking a lock this Funcs already holds succeeds.
func (f *Funcs) lock(name string) *wire.Error {
	_, p, werr := f.path(name)
	if werr != nil {
		return werr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.locks[name]; held {
		return nil
	}
	// os.OpenFile sets O_CLOEXEC: a child process must not inherit the lock.
	file, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return osError("open lock "+name, err, true)
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
		return osError("lock "+name, err, false)
	}
	f.locks[name] = file
	return nil
}
