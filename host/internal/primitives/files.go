package primitives

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
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
//   - "mkdir": mkdir(path, 0700), one directory, never its parents; only the
//     state directory open fixed, or one of its ancestors.
func (f *Funcs) prepareDir(r struct {
	Op, Path *string
	Follow   bool
}) (any, *hostfuncs.Error) {
	if r.Op == nil || r.Path == nil {
		return nil, invalid(`mcp_resume_prepare_dir: request lacks "op" or "path"`)
	}
	p := *r.Path
	if !filepath.IsAbs(p) || filepath.Clean(p) != p || strings.IndexByte(p, 0) >= 0 {
		return nil, invalid(fmt.Sprintf("path %q is not an absolute, clean path", p))
	}
	switch *r.Op {
	case hostfuncs.DirOpStat:
		stat := os.Lstat
		if r.Follow {
			stat = os.Stat
		}
		info, err := stat(p)
		if err != nil {
			return nil, osError("stat "+p, err)
		}
		st := hostfuncs.DirStat{Type: fileType(info.Mode())}
		if sys, ok := info.Sys().(*syscall.Stat_t); ok {
			st.UID, st.Mode = int(sys.Uid), int(sys.Mode&0o7777)
		}
		return st, nil
	case hostfuncs.DirOpMkdir:
		if dir := f.stateDir(); dir == "" || dir != p && p != "/" && !strings.HasPrefix(dir, p+"/") {
			return nil, invalid(fmt.Sprintf("mkdir %s: only the state directory open answered (%q) or one of its ancestors", p, dir))
		}
		if err := os.Mkdir(p, 0o700); err != nil {
			return nil, osError("mkdir "+p, err)
		}
		return nil, nil
	}
	return nil, invalid(fmt.Sprintf("unknown mcp_resume_prepare_dir op %q: want stat or mkdir", *r.Op))
}

// fileType is the contract's name for the type of mode (from lstat).
func fileType(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeSymlink != 0:
		return hostfuncs.StatSymlink
	case mode.IsDir():
		return hostfuncs.StatDir
	case mode.IsRegular():
		return hostfuncs.StatFile
	}
	return hostfuncs.StatOther
}

func (f *Funcs) stateDir() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dir
}

// path returns the full path of name in the state directory, or
// invalid_request, before any system call, when no state directory is fixed
// yet or name is not one path element (hostfuncs.ValidName).
func (f *Funcs) path(field string, name *string) (string, *hostfuncs.Error) {
	if name == nil {
		return "", invalid(fmt.Sprintf("request lacks %q", field))
	}
	if !hostfuncs.ValidName(*name) {
		return "", invalid(fmt.Sprintf("%s %q is not one path element (1-255 bytes, not . or .., no / or NUL)", field, *name))
	}
	dir := f.stateDir()
	if dir == "" {
		return "", invalid("no state directory: the plugin's open has not succeeded")
	}
	return dir + "/" + *name, nil
}

// openFile opens p with flags|O_NOFOLLOW|O_CLOEXEC (os.OpenFile adds
// O_CLOEXEC) and refuses anything but a regular file with unsafe: a FIFO,
// device or directory planted at a name (O_NONBLOCK in flags keeps a FIFO
// from blocking the open).
func openFile(p, name string, flags int) (*os.File, *hostfuncs.Error) {
	file, err := os.OpenFile(p, flags|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, osError("open "+name, err)
	}
	info, err := file.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (mode %s)", info.Mode())
		file.Close()
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeUnsafe, Message: name + ": " + err.Error()}
	}
	if err != nil {
		file.Close()
		return nil, osError("fstat "+name, err)
	}
	return file, nil
}

// read serves mcp_resume_read: the first min(size, limit) bytes of a
// regular file, limit 1..MaxReadLimit.
func (f *Funcs) read(r struct {
	Name  *string
	Limit *int
}) (any, *hostfuncs.Error) {
	p, werr := f.path("name", r.Name)
	if werr != nil {
		return nil, werr
	}
	if r.Limit == nil || *r.Limit < 1 || *r.Limit > MaxReadLimit {
		return nil, invalid(fmt.Sprintf(`"limit" must be an integer 1..%d`, MaxReadLimit))
	}
	file, werr := openFile(p, *r.Name, os.O_RDONLY|syscall.O_NONBLOCK)
	if werr != nil {
		return nil, werr
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, int64(*r.Limit)))
	if err != nil {
		return nil, osError("read "+*r.Name, err)
	}
	return hostfuncs.ReadResponse{Data: data}, nil
}

// write serves mcp_resume_write: create temp exclusively (mode 0600, never
// through a symlink), write data, close, rename it over name, so a reader
// sees the old file or the new one, never a torn write. On any failure
// after the create, temp is unlinked. No fsync: rename already makes the
// replace atomic for readers and process crashes; after a power loss the
// file may be empty, which the plugin treats as corrupt (spec 000, Token
// File Corrupted).
func (f *Funcs) write(r struct {
	Name, Temp *string
	Data       []byte // absent or null: nil; "" decodes to an empty, non-nil slice
}) (any, *hostfuncs.Error) {
	p, werr := f.path("name", r.Name)
	if werr != nil {
		return nil, werr
	}
	tp, werr := f.path("temp", r.Temp)
	if werr != nil {
		return nil, werr
	}
	if r.Data == nil {
		return nil, invalid(`mcp_resume_write: request lacks "data"`)
	}
	file, err := os.OpenFile(tp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, osError("create "+*r.Temp, err)
	}
	_, err = file.Write(r.Data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syscall.Rename(tp, p) // not os.Rename, which answers EEXIST for a directory at p by its own lstat
	}
	if err != nil {
		_ = syscall.Unlink(tp)
		return nil, osError("write "+*r.Name, err)
	}
	return nil, nil
}

// remove serves mcp_resume_remove with unlink(2), which never follows a
// symlink and never removes a directory (os.Remove would fall back to
// rmdir): a directory answers unsafe (EISDIR on Linux).
func (f *Funcs) remove(r struct{ Name *string }) (any, *hostfuncs.Error) {
	p, werr := f.path("name", r.Name)
	if werr != nil {
		return nil, werr
	}
	if err := syscall.Unlink(p); err != nil {
		return nil, osError("unlink "+*r.Name, err)
	}
	return nil, nil
}

// list serves mcp_resume_list: every entry directly in the state directory
// with its type and age (floor of now minus its lstat modification time, in
// seconds; negative when the clock moved back), in directory order. An entry
// whose lstat fails (removed meanwhile) is skipped. It never reads
// contents; the plugin filters and sorts.
func (f *Funcs) list(struct{}) (any, *hostfuncs.Error) {
	dir := f.stateDir()
	if dir == "" {
		return nil, invalid("no state directory: the plugin's open has not succeeded")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, osError("list state directory", err)
	}
	now := time.Now()
	files := make([]hostfuncs.ListEntry, 0, len(entries))
	for _, e := range entries {
		info, err := e.Info() // lstat
		if err != nil {
			continue
		}
		age := int64(math.Floor(now.Sub(info.ModTime()).Seconds()))
		files = append(files, hostfuncs.ListEntry{Name: e.Name(), Type: fileType(info.Mode()), AgeSeconds: age})
	}
	return hostfuncs.ListResponse{Files: files}, nil
}

// lock serves mcp_resume_lock: an exclusive lock named name, held until
// Close or process exit (the kernel releases it however the process dies).
// The file is opened O_RDONLY|O_CREAT|O_NONBLOCK (created 0600 if missing,
// never deleted) and must be a regular file (a FIFO planted there answers
// unsafe without hanging). On Linux, when socket is set, the abstract Unix
// socket is bound (bindAbstract): that is the lock between hosts; then
// flock(LOCK_EX|LOCK_NB) on the file covers servers in other network
// namespaces. Busy when either is held elsewhere. Taking a lock this Funcs
// already holds succeeds.
func (f *Funcs) lock(r struct {
	Name   *string
	Socket string
}) (any, *hostfuncs.Error) {
	name := r.Name
	p, werr := f.path("name", name)
	if werr != nil {
		return nil, werr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.locks[*name]; held {
		return nil, nil
	}
	var h heldLock
	if h.file, werr = openFile(p, *name, os.O_RDONLY|os.O_CREATE|syscall.O_NONBLOCK); werr != nil {
		return nil, werr
	}
	var err error
	if r.Socket != "" && bindAbstract != nil {
		h.socks, err = bindAbstract(r.Socket)
	}
	if err == nil {
		err = syscall.Flock(int(h.file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		h.release()
		if errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &hostfuncs.Error{Code: hostfuncs.CodeBusy, Message: *name + " is held by another server instance"}
		}
		return nil, osError("lock "+*name, err)
	}
	f.locks[*name] = h
	return nil, nil
}

// bindAbstract binds the lock's abstract Unix socket (linux.go); nil where
// there are none (the lock is then the flock alone).
var bindAbstract func(name string) ([]int, error)

// heldLock is one lock taken by mcp_resume_lock: the open, flocked file
// and the bound abstract sockets (none off Linux).
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
