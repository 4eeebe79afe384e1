package primitives

import (
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func init() {
	bindAbstract = bindAbstractLinux
	peerPID = func(fd int) (int, error) {
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			return 0, err
		}
		return int(cred.Pid), nil
	}
}

// sunPathLen is the size of sockaddr_un.sun_path on Linux.
const sunPathLen = 108

// bindAbstractLinux binds the lock's abstract Unix socket name in both forms
// hosts use (hostfuncs/README.md, mcp_resume_lock): first the address Node
// binds, a NUL and name padded with NULs to the whole 108-byte sun_path,
// then the unpadded address (a NUL and name only). Each is a close-on-exec
// stream socket, freed by the kernel when the last descriptor closes,
// however the process exits. It returns the descriptors; EADDRINUSE means
// another process (or socket) holds either form, and nothing stays bound.
// Always padded first, so two hosts that both bind both never each hold one.
func bindAbstractLinux(name string) ([]int, error) {
	if len(name) >= sunPathLen {
		return nil, syscall.ENAMETOOLONG
	}
	var fds []int
	for _, addr := range []string{name + strings.Repeat("\x00", sunPathLen-1-len(name)), name} {
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
		if err == nil {
			// A leading '@' makes Go write a NUL: the abstract namespace,
			// with an address length counting exactly these bytes
			// (package syscall: x/sys/unix refuses the full 108 bytes).
			if err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: "@" + addr}); err != nil {
				syscall.Close(fd)
			}
		}
		if err != nil {
			for _, fd := range fds {
				syscall.Close(fd)
			}
			return nil, err
		}
		fds = append(fds, fd)
	}
	return fds, nil
}
