//go:build linux

package procid

import (
	"errors"

	"golang.org/x/sys/unix"
)

// newSource returns the Linux process source, reading /proc, once /proc is
// verified to be this PID namespace's.
func newSource() (source, error) {
	r := &linuxReader{root: "/proc", hidden: hiddenPID}
	if err := r.checkOwnProc(); err != nil {
		return nil, err
	}
	return r, nil
}

// hiddenPID reports whether pid exists although its /proc entry is missing:
// kill(pid, 0) fails with EPERM only for a process that exists and belongs
// to another user, which a /proc mounted hidepid=1 or 2 does not show.
func hiddenPID(pid int) bool {
	return errors.Is(unix.Kill(pid, 0), unix.EPERM)
}
