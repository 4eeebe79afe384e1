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

// MaxReadLimit is the largest "limit" mcp_resume_read accepts (8 MiB,
// hostfuncs.MaxReadLimit: a sealed handle record of the largest value).
const MaxReadLimit = hostfuncs.MaxReadLimit

// prepareDir serves mcp_resume_prepare_dir (hostfuncs/README.md) on an
// absolute, clean path, with no rule about owners or modes: "stat" (lstat,
// or stat with follow: true or false, absent or null meaning false) or
// "mkdir" (0700, one directory, only the state directory open fixed or one
// of its ancestors; it does not read follow, whatever its value).
func (f *Funcs) prepareDir(r struct {
	Op     *string `json:"op"`
	Path   *string `json:"path"`
	Follow any     `json:"follow"` // checked by stat only
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
		switch v := r.Follow.(type) {
		case nil:
		case bool:
			if v {
				stat = os.Stat
			}
		default:
			return nil, invalid(`"follow" must be true or false`)
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

// path returns the path of name in the state directory, or invalid_request
// before any system call: no state directory yet, or name (the request's
// field) is not one path element (hostfuncs.ValidName).
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
// O_CLOEXEC) and answers unsafe for anything but a regular file (O_NONBLOCK
// in flags keeps a FIFO planted at a name from blocking the open).
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
	Name  *string `json:"name"`
	Limit *int    `json:"limit"`
}) (any, *hostfuncs.Error) {
	if r.Name == nil {
		return nil, invalid(`request lacks "name"`)
	}
	if r.Limit == nil {
		return nil, invalid(fmt.Sprintf(`"limit" must be an integer 1..%d`, MaxReadLimit))
	}
	data, werr := f.ReadFile(*r.Name, *r.Limit)
	if werr != nil {
		return nil, werr
	}
	return hostfuncs.ReadResponse{Data: data}, nil
}

// ReadFile is mcp_resume_read for name and limit (1..MaxReadLimit): the
// first min(size, limit) bytes of the state directory's regular file
// name, opened O_NOFOLLOW|O_NONBLOCK. Errors: invalid_request (the name
// rule, the limit, no state directory), not_found, unsafe (not a regular
// file), and the other OS codes of osError. It serves mcp_resume_crypto's
// read_open too (cryptohost.Files).
func (f *Funcs) ReadFile(name string, limit int) ([]byte, *hostfuncs.Error) {
	p, werr := f.path("name", &name)
	if werr != nil {
		return nil, werr
	}
	if limit < 1 || limit > MaxReadLimit {
		return nil, invalid(fmt.Sprintf(`"limit" must be an integer 1..%d`, MaxReadLimit))
	}
	file, werr := openFile(p, name, os.O_RDONLY|syscall.O_NONBLOCK)
	if werr != nil {
		return nil, werr
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, int64(limit)))
	if err != nil {
		return nil, osError("read "+name, err)
	}
	return data, nil
}

// write serves mcp_resume_write: create temp exclusively (0600, never
// through a symlink), write, close, rename over name; on a failure after the
// create, unlink temp. No fsync: rename already makes the replace atomic for
// readers and crashes; after a power loss the file may be empty, which the
// plugin treats as corrupt (spec 000, Token File Corrupted).
func (f *Funcs) write(r struct {
	Name *string `json:"name"`
	Temp *string `json:"temp"`
	Data []byte  `json:"data"` // absent or null: nil; "" decodes to an empty, non-nil slice
}) (any, *hostfuncs.Error) {
	if r.Name == nil || r.Temp == nil {
		return nil, invalid(`mcp_resume_write: request lacks "name" or "temp"`)
	}
	if r.Data == nil {
		return nil, invalid(`mcp_resume_write: request lacks "data"`)
	}
	return nil, f.WriteFile(*r.Name, *r.Temp, r.Data)
}

// WriteFile is mcp_resume_write: data to the state directory's file temp
// (O_CREAT|O_EXCL|O_NOFOLLOW, 0600), closed, then renamed over name;
// temp is unlinked on any failure after its creation. Errors:
// invalid_request (the name rule, no state directory), exists (temp is
// there), unsafe (a directory at name), and the other OS codes of
// osError. It serves mcp_resume_crypto's seal_write too
// (cryptohost.Files).
func (f *Funcs) WriteFile(name, temp string, data []byte) *hostfuncs.Error {
	p, werr := f.path("name", &name)
	if werr != nil {
		return werr
	}
	tp, werr := f.path("temp", &temp)
	if werr != nil {
		return werr
	}
	file, err := os.OpenFile(tp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return osError("create "+temp, err)
	}
	_, err = file.Write(data)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syscall.Rename(tp, p) // not os.Rename, which answers EEXIST for a directory at p by its own lstat
	}
	if err != nil {
		_ = syscall.Unlink(tp)
		return osError("write "+name, err)
	}
	return nil
}

// remove serves mcp_resume_remove with unlink(2), which never follows a
// symlink and never removes a directory (os.Remove would fall back to
// rmdir): a directory answers unsafe (EISDIR on Linux).
func (f *Funcs) remove(r struct {
	Name *string `json:"name"`
}) (any, *hostfuncs.Error) {
	p, werr := f.path("name", r.Name)
	if werr != nil {
		return nil, werr
	}
	if err := syscall.Unlink(p); err != nil {
		return nil, osError("unlink "+*r.Name, err)
	}
	return nil, nil
}

// list serves mcp_resume_list: every entry of the state directory with its
// lstat type and age (floor of now minus mtime, in seconds; negative when
// the clock moved back), skipping those whose lstat fails. The plugin
// filters and sorts.
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

// lock serves mcp_resume_lock: an exclusive lock held until unlock, Close
// or process exit (the kernel releases it however the process dies). The
// file (created 0600, never deleted) must be a regular file. On Linux a
// socket (1-107 bytes, no NUL; "" or absent: none) is bound first
// (bindAbstract): the lock between hosts; then flock covers servers in
// other network namespaces. Busy when either is held elsewhere; either
// failing releases the other. Taking a lock this Funcs already holds
// succeeds. With wait_ms (0..hostfuncs.MaxLockWaitMS milliseconds) a busy
// lock is tried again, sleeping 0.2 ms doubling to at most 5 ms between
// tries, until wait_ms has passed since the first try; then busy. Any other
// error answers at once (hostfuncs/README.md, mcp_resume_lock). The lock
// file stays open between locks of its name, checked again at every try
// (lockFile).
func (f *Funcs) lock(r struct {
	Name   *string `json:"name"`
	Socket *string `json:"socket"`  // null: none
	WaitMS *int    `json:"wait_ms"` // null: 0
}) (any, *hostfuncs.Error) {
	p, socket, werr := f.lockTarget(r.Name, r.Socket)
	if werr != nil {
		return nil, werr
	}
	wait := 0
	if r.WaitMS != nil {
		wait = *r.WaitMS
	}
	if wait < 0 || wait > hostfuncs.MaxLockWaitMS {
		return nil, invalid(fmt.Sprintf(`"wait_ms" must be an integer 0..%d (milliseconds)`, hostfuncs.MaxLockWaitMS))
	}
	deadline := time.Now().Add(time.Duration(wait) * time.Millisecond)
	pause := 200 * time.Microsecond
	for {
		werr = f.tryLock(p, *r.Name, socket)
		if werr == nil || werr.Code != hostfuncs.CodeBusy {
			return nil, werr
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, werr
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, 5*time.Millisecond)
	}
}

// lockTarget checks the name and socket of a lock or unlock request (the
// same rule for both) and returns the lock file's path and the socket ("":
// none).
func (f *Funcs) lockTarget(name, sock *string) (string, string, *hostfuncs.Error) {
	p, werr := f.path("name", name)
	if werr != nil {
		return "", "", werr
	}
	socket := ""
	if sock != nil {
		socket = *sock
	}
	if len(socket) > 107 || strings.IndexByte(socket, 0) >= 0 {
		return "", "", invalid(`"socket" must be at most 107 bytes without NUL ("" or absent: none)`)
	}
	return p, socket, nil
}

// tryLock makes one attempt at the lock of name (file p, socket socket):
// nil when this Funcs holds it now, busy when another holder has it.
func (f *Funcs) tryLock(p, name, socket string) *hostfuncs.Error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.locks[name]; held {
		return nil
	}
	var h heldLock
	var werr *hostfuncs.Error
	if h.file, werr = f.lockFile(p, name); werr != nil {
		return werr
	}
	var err error
	if socket != "" && bindAbstract != nil {
		h.socks, err = bindAbstract(socket)
	}
	if err == nil {
		err = syscall.Flock(int(h.file.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		h.closeSockets()
		busy := errors.Is(err, syscall.EADDRINUSE) || errors.Is(err, syscall.EWOULDBLOCK)
		if !busy { // a descriptor that failed otherwise is not kept
			f.dropLockFile(name)
		}
		if busy {
			return &hostfuncs.Error{Code: hostfuncs.CodeBusy, Message: name + " is held by another server instance"}
		}
		return osError("lock "+name, err)
	}
	f.locks[name] = h
	return nil
}

// maxLockFiles bounds the lock files a Funcs keeps open between locks:
// enough for a handle store of 256 shards (each with one lock file) and
// the resume store's one. A store of more shards (up to 4096) reopens a
// lock file that fell out of the set, one open more per lock.
const maxLockFiles = 260

// openLockFile is a lock file kept open between the locks of its name:
// the descriptor and what fstat said of it when it was opened.
type openLockFile struct {
	file *os.File
	info os.FileInfo
}

// lockFile returns the open lock file of name (path p) for a try of
// mcp_resume_lock, with f.mu held. The descriptor of an earlier lock of
// name is kept open between locks (unlock only unlocks it) and reused
// when lstat(p) still finds the very file it opened (same device and
// inode): the file checked again at every try, as hostfuncs/README.md
// asks, with one lstat in place of open, fstat and close. When the name
// now points elsewhere (replaced by another file, a FIFO, a symbolic link,
// or removed), the old descriptor is closed and p opened again like the
// first time (openFile: O_NOFOLLOW, O_NONBLOCK, created 0600, a regular
// file or unsafe). A flock belongs to the open file description, so
// keeping the descriptor changes nothing for who excludes whom: another
// store of this process opens its own. Close closes them all.
func (f *Funcs) lockFile(p, name string) (*os.File, *hostfuncs.Error) {
	if lf, ok := f.lockFiles[name]; ok {
		if info, err := os.Lstat(p); err == nil && os.SameFile(info, lf.info) {
			return lf.file, nil
		}
		f.dropLockFile(name)
	}
	file, werr := openFile(p, name, os.O_RDONLY|os.O_CREATE|syscall.O_NONBLOCK)
	if werr != nil {
		return nil, werr
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, osError("fstat "+name, err)
	}
	if len(f.lockFiles) >= maxLockFiles {
		for other := range f.lockFiles {
			if _, held := f.locks[other]; !held {
				f.dropLockFile(other)
				break
			}
		}
	}
	f.lockFiles[name] = openLockFile{file: file, info: info}
	return file, nil
}

// dropLockFile closes the kept descriptor of name's lock file, if any,
// with f.mu held; a lock held through it is released with it.
func (f *Funcs) dropLockFile(name string) {
	if lf, ok := f.lockFiles[name]; ok {
		lf.file.Close()
		delete(f.lockFiles, name)
	}
}

// unlock serves mcp_resume_unlock: it releases the lock of name that this
// Funcs took with mcp_resume_lock (closes the flocked file and the bound
// sockets), never deleting the lock file. A lock not held is a success
// (idempotent). The request is checked like lock's (hostfuncs/README.md,
// mcp_resume_unlock).
func (f *Funcs) unlock(r struct {
	Name   *string `json:"name"`
	Socket *string `json:"socket"`
}) (any, *hostfuncs.Error) {
	if _, _, werr := f.lockTarget(r.Name, r.Socket); werr != nil {
		return nil, werr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if h, held := f.locks[*r.Name]; held {
		f.release(*r.Name, h)
	}
	return nil, nil
}

// release releases the lock h of name, with f.mu held: it closes the
// sockets and unlocks the file (flock LOCK_UN), keeping the file open for
// the next lock of name (lockFile); if unlocking fails, it closes the file,
// which releases the lock too.
func (f *Funcs) release(name string, h heldLock) {
	h.closeSockets()
	if err := syscall.Flock(int(h.file.Fd()), syscall.LOCK_UN); err != nil {
		f.dropLockFile(name)
	}
	delete(f.locks, name)
}

// bindAbstract binds the lock's abstract Unix socket (linux.go); nil where
// there are none (the lock is then the flock alone).
var bindAbstract func(name string) ([]int, error)

// heldLock is one lock taken by mcp_resume_lock: the flocked file (kept
// in Funcs.lockFiles, which owns it) and the bound abstract sockets (none
// off Linux).
type heldLock struct {
	file  *os.File
	socks []int
}

// closeSockets closes the sockets, which frees their names.
func (h heldLock) closeSockets() {
	for _, fd := range h.socks {
		syscall.Close(fd)
	}
}
