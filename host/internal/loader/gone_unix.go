//go:build unix

package loader

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has pid (kill(pid, 0) fails with
// ESRCH). A process this one may not signal (EPERM) exists.
func processGone(pid int) bool {
	return pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
