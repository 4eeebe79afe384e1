package procid

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// This file checks that the resolved host holds the other end of the
// server's stdin or stdout (docs/RELIABILITY.md, fault 11c). Like procfs.go it
// builds everywhere and reads a /proc tree rooted at linuxReader.root, so its
// tests run against fixtures; only the fd probe (stdio_linux.go) needs Linux.

// fdKind is what fstat says one of the server's stdio fds is.
type fdKind int

const (
	fdOther  fdKind = iota // a tty, /dev/null, a regular file, ...
	fdClosed               // fstat failed: the fd is not open
	fdPipe                 // S_IFIFO: an anonymous pipe or a named FIFO
	fdSocket               // S_IFSOCK
)

// fdInfo describes one of the server's stdio fds.
type fdInfo struct {
	kind fdKind
	// peerPID is, for a socket, the pid SO_PEERCRED reports: the process
	// that created the socket pair or connected the socket, in this PID
	// namespace. 0 when unknown (not a Unix socket, the peer is outside this
	// namespace, or getsockopt failed).
	peerPID int
}

// Linux access modes (open(2)), as the fdinfo "flags:" line encodes them;
// spelled out because this file also builds where syscall lacks them.
const (
	oRDONLY  = 0
	oWRONLY  = 1
	oRDWR    = 2
	oACCMODE = 3
)

// fdProbe describes fd (0 or 1) of the current process.
type fdProbe func(fd int) fdInfo

// verdict is the outcome of checking one stdio fd.
type verdict int

const (
	notChecked verdict = iota // the fd cannot tell (tty, file, unreadable host)
	verified                  // the host holds the fd's other end
	disproved                 // the host provably does not
)

// stdioNames names fds 0 and 1 in messages.
var stdioNames = [2]string{"stdin", "stdout"}

// checkStdio verifies that host, the resolved MCP host of this process
// (pid self), holds the other end of this process's stdin or stdout, probing
// each with probe. An MCP host always does: it created the pipes or socket
// pair it speaks MCP through. A subreaper that adopted an orphaned server
// does not, and neither does a process the server's stdio was passed
// through.
//
// It returns the one-line description stored in [Identity.Stdio]: "verified:
// ..." when an fd is verified, "not checked: ..." when neither fd can tell.
// Errors: [ErrAdopted] when no fd is verified and one is disproved;
// [ErrRace] when the host exits during the check.
func (r *linuxReader) checkStdio(self int, host Process, probe fdProbe) (string, error) {
	var verifiedWhy string
	var disprovedWhy, uncheckedWhy []string
	for fd := 0; fd <= 1; fd++ {
		v, why, err := r.checkFD(fd, host, probe(fd))
		if err != nil {
			return "", fmt.Errorf("procid: resolve MCP host of pid %d: %w", self, err)
		}
		switch v {
		case verified:
			if verifiedWhy == "" {
				verifiedWhy = why
			}
		case disproved:
			disprovedWhy = append(disprovedWhy, why)
		default:
			uncheckedWhy = append(uncheckedWhy, why)
		}
	}
	switch {
	case verifiedWhy != "":
		return "verified: " + verifiedWhy, nil
	case len(disprovedWhy) > 0:
		return "", fmt.Errorf("procid: resolve MCP host of pid %d: the host %s does not hold the other end of the server's stdio (%s): the server was probably orphaned and adopted by a subreaper, or %q passes its own stdio through (if it only launches servers, add it to %s); session resume is off: %w",
			self, describe(host), strings.Join(disprovedWhy, "; "), host.Name, LaunchersEnv, ErrAdopted)
	default:
		return "not checked: " + strings.Join(uncheckedWhy, "; "), nil
	}
}

// checkFD checks one stdio fd (see checkStdio). The error, only ever
// ErrRace, means the host exited.
func (r *linuxReader) checkFD(fd int, host Process, info fdInfo) (verdict, string, error) {
	name := stdioNames[fd]
	link, _ := os.Readlink(filepath.Join(r.root, "self", "fd", strconv.Itoa(fd)))
	switch info.kind {
	case fdClosed:
		return notChecked, name + " is closed", nil
	case fdSocket:
		switch {
		case info.peerPID <= 0:
			return notChecked, fmt.Sprintf("%s %s is a socket without peer credentials", name, link), nil
		case info.peerPID == host.PID:
			return verified, fmt.Sprintf("%s %s peer is the host", name, link), nil
		default:
			return disproved, fmt.Sprintf("%s %s peer is pid %d, not the host", name, link, info.peerPID), nil
		}
	case fdPipe:
		if !isAnonPipe(link) {
			return notChecked, name + " is a named FIFO", nil
		}
		return r.checkPipe(fd, name, link, host)
	default:
		return notChecked, name + " is not a pipe or socket", nil
	}
}

// checkPipe looks for the other end of the anonymous pipe link ("pipe:[N]"),
// which is this process's fd, among the host's open fds.
func (r *linuxReader) checkPipe(fd int, name, link string, host Process) (verdict, string, error) {
	mine, err := r.accessMode("self", strconv.Itoa(fd))
	if err != nil {
		return notChecked, fmt.Sprintf("%s %s: %v", name, link, err), nil
	}
	dir := filepath.Join(r.root, strconv.Itoa(host.PID), "fd")
	d, err := os.Open(dir)
	var fds []string
	if err == nil {
		fds, err = d.Readdirnames(-1)
		d.Close()
	}
	if err != nil {
		if gone(err) {
			return notChecked, "", fmt.Errorf("the host %s exited during the stdio check; retry: %w", describe(host), ErrRace)
		}
		return notChecked, fmt.Sprintf("%s %s: cannot list the host's fds: %v", name, link, unwrapPath(err)), nil
	}
	for _, hfd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, hfd)); err != nil || l != link {
			continue // not this pipe, or closed since the listing
		}
		theirs, err := r.accessMode(strconv.Itoa(host.PID), hfd)
		if err == nil && otherEnd(mine, theirs) {
			return verified, fmt.Sprintf("%s %s is held by the host as fd %s", name, link, hfd), nil
		}
	}
	return disproved, fmt.Sprintf("%s %s is not held by the host", name, link), nil
}

// isAnonPipe reports whether link, an fd's /proc link, names an anonymous
// pipe ("pipe:[1234]"); a named FIFO's link is its path.
func isAnonPipe(link string) bool {
	n, ok := strings.CutPrefix(link, "pipe:[")
	n, ok2 := strings.CutSuffix(n, "]")
	_, err := strconv.ParseUint(n, 10, 64)
	return ok && ok2 && err == nil
}

// accessMode returns oRDONLY, oWRONLY or oRDWR for fd of process who
// ("self" or a pid), from the octal "flags:" line of
// <root>/<who>/fdinfo/<fd> (proc_pid_fdinfo(5)).
func (r *linuxReader) accessMode(who, fd string) (int, error) {
	name := filepath.Join(r.root, who, "fdinfo", fd)
	data, err := os.ReadFile(name)
	if err != nil {
		return 0, unwrapPath(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				break
			}
			return int(flags & oACCMODE), nil
		}
	}
	return 0, fmt.Errorf("no octal flags: line in %s: %w", name, ErrMalformed)
}

// otherEnd reports whether a pipe fd opened with access mode theirs can be
// the other end of one opened with mine: a reader's peer writes and a
// writer's peer reads. A forking launcher's inherited copy of the server's
// own end is not the other end.
func otherEnd(mine, theirs int) bool {
	if mine == oRDWR || theirs == oRDWR {
		return true
	}
	return mine != theirs
}

// unwrapPath drops the path from an *fs.PathError, leaving "permission
// denied" instead of repeating /proc paths in an already long message.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
