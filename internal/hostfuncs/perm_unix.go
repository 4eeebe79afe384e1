//go:build unix

package hostfuncs

import (
	"fmt"
	"os"
	"syscall"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// checkDir refuses a state directory that another user could read or plant
// files in: it must be a real directory owned by the current user with mode
// 0700 (or stricter). Spec 000, Security Considerations.
func checkDir(dir string) *wire.Error {
	info, err := os.Lstat(dir)
	if err != nil {
		return osError("inspect state directory", err, false)
	}
	if info.Mode()&os.ModeSymlink != 0 || !info.IsDir() {
		return &wire.Error{Code: wire.CodeUnsafe, Message: fmt.Sprintf("state directory %s is not a directory (or is a symbolic link); point MCP_RESUME_STATE_DIR at a real directory", dir)}
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if ok && int(st.Uid) != os.Geteuid() {
		return &wire.Error{Code: wire.CodeUnsafe, Message: fmt.Sprintf("state directory %s is owned by uid %d, not by this user (uid %d); remove it or choose another with MCP_RESUME_STATE_DIR", dir, st.Uid, os.Geteuid())}
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return &wire.Error{Code: wire.CodeUnsafe, Message: fmt.Sprintf("state directory %s has mode %04o, which lets other users in; run: chmod 700 %s", dir, perm, dir)}
	}
	return nil
}

// checkRegular refuses anything but a regular file (a FIFO, device or
// directory planted at a token path).
func checkRegular(f *os.File, name string) *wire.Error {
	info, err := f.Stat()
	if err != nil {
		return osError("inspect "+name, err, false)
	}
	if !info.Mode().IsRegular() {
		return &wire.Error{Code: wire.CodeUnsafe, Message: fmt.Sprintf("%s is not a regular file (mode %s)", name, info.Mode())}
	}
	return nil
}

// flock takes an exclusive, non-blocking advisory lock on f, released when f
// is closed (by Close or by the process exiting).
func flock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
