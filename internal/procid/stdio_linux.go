//go:build linux

package procid

import (
	"os"

	"golang.org/x/sys/unix"
)

// verifyStdio checks that id's host holds the other end of this process's
// stdin or stdout (see checkStdio) and records the outcome in id.Stdio.
func verifyStdio(id Identity) (Identity, error) {
	r := &linuxReader{root: "/proc"}
	host := id.Chain[len(id.Chain)-1]
	why, err := r.checkStdio(os.Getpid(), host, probeFD)
	if err != nil {
		return Identity{}, err
	}
	id.Stdio = why
	return id, nil
}

// probeFD describes fd of this process with fstat and, for a socket,
// SO_PEERCRED (unix(7)): the pid of the process that called socketpair or
// connect, which for an MCP host's socket pair (Node and libuv create one
// per stdio stream) is the host.
func probeFD(fd int) fdInfo {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fdInfo{kind: fdClosed}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return fdInfo{kind: fdPipe}
	case unix.S_IFSOCK:
		cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err != nil {
			return fdInfo{kind: fdSocket}
		}
		return fdInfo{kind: fdSocket, peerPID: int(cred.Pid)}
	default:
		return fdInfo{kind: fdOther}
	}
}
