//go:build linux

package primitives

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// peer reports SO_PEERCRED (unix(7)) of this process's socket fd: the pid of
// the process that called socketpair or connect, 0 when it is outside this
// PID namespace. Not a socket answers io, a closed fd not_found.
func peer(fd int) result {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	switch {
	case errors.Is(err, unix.EBADF):
		return failed(&hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: fmt.Sprintf("fd %d is closed", fd)})
	case err != nil:
		return failed(osError(fmt.Sprintf("getsockopt(%d, SO_PEERCRED)", fd), err, false))
	}
	pid := int(cred.Pid)
	return result{"peer_pid": pid}
}

// sysctlProc answers "sysctl": macOS only.
func sysctlProc(int) result { return failed(unsupported("sysctl kern.proc.pid exists on macOS only")) }

// sysctlProcargs answers "procargs": macOS only.
func sysctlProcargs(int) result {
	return failed(unsupported("sysctl kern.procargs2 exists on macOS only"))
}

// exeStat answers "exe": stat(2) of path (/proc/<pid>/exe, or its fixture
// mapping), which follows the link to the program file the process runs,
// even a deleted one. ENOENT (the process is gone, or a kernel thread)
// answers not_found; EACCES or EPERM (another user's process, or one that
// is not dumpable) answer permission. name is the path the plugin asked for.
func exeStat(path, name string) result {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return failed(osError("stat "+name, err, false))
	}
	return result{"dev": strconv.FormatUint(uint64(st.Dev), 10), "ino": strconv.FormatUint(uint64(st.Ino), 10)}
}
