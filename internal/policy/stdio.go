package policy

import (
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// This file checks that the resolved host holds the other end of the
// server's stdin or stdout (docs/RELIABILITY.md, fault 11c); see the package
// documentation, "Stdio".

// Linux access modes (open(2)), as the fdinfo "flags:" value encodes them.
const (
	oRDONLY  = 0
	oWRONLY  = 1
	oRDWR    = 2
	oACCMODE = 3
)

// fdFacts are the answers of the first identity call about one stdio fd:
// fstat and readlink /proc/self/fd/<n>.
type fdFacts struct {
	fstat wire.InspectResult
	link  wire.InspectResult
}

// verdict is the outcome of checking one stdio fd.
type verdict int

const (
	notChecked verdict = iota // the fd cannot tell (tty, file, unreadable host)
	verified                  // the host holds the fd's other end
	disproved                 // the host provably does not
)

// stdioNames names fds 0 and 1 in messages.
var stdioNames = [2]string{"stdin", "stdout"}

// isAnonPipe reports whether link, an fd's /proc link, names an anonymous
// pipe ("pipe:[1234]"); a named FIFO's link is its path.
func isAnonPipe(link string) bool {
	n, ok := strings.CutPrefix(link, "pipe:[")
	n, ok2 := strings.CutSuffix(n, "]")
	_, err := strconv.ParseUint(n, 10, 64)
	return ok && ok2 && err == nil
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

// checkStdio verifies that host, the resolved MCP host of the server
// process self, holds the other end of the server's stdin or stdout. An MCP
// host always does: it created the pipes or socket pair it speaks MCP
// through. A subreaper that adopted an orphaned server does not, and neither
// does a process the server's stdio was passed through.
//
// The first identity call already answered fstat and readlink for both fds
// (fds); when one is an anonymous pipe or a socket, one more call asks for
// this process's flags on the pipes (fds self), the host's fds holding them
// (fds <host>) and the socket peers (peer).
//
// other is true when the server is another process than this one
// (ResolveFor): its own fds are then listed by pid, and a socket cannot tell
// (only its holder can ask for the peer).
//
// It returns "verified: ..." when an fd is verified, "not checked: ..."
// when neither fd can tell. Errors: ErrAdopted when no fd is verified and
// one is disproved; ErrRace when the host exits during the check;
// ErrNoAnswer when the host gave no usable answer.
func checkStdio(in Inspector, self int, other bool, host Process, fds [2]fdFacts) (string, error) {
	fail := func(msg string, errs ...error) (string, error) {
		return "", wrap("resolve MCP host of pid "+itoa(self)+": "+msg, errs...)
	}
	// What each fd is, and what else to ask.
	type plan struct {
		why     string // set when the fd is already not checked
		link    string
		pipe    bool
		socket  bool
		peerIdx int
	}
	var plans [2]plan
	var ops []wire.InspectOp
	var targets []string
	for fd := 0; fd <= 1; fd++ {
		name, f, p := stdioNames[fd], fds[fd], &plans[fd]
		if code(f.link) == "" {
			p.link = f.link.Target
		}
		switch {
		case code(f.fstat) == wire.CodeNotFound:
			p.why = name + " is closed"
		case f.fstat.Error != nil:
			p.why = name + ": cannot tell what it is (fstat: " + f.fstat.Error.Code + ")"
		case f.fstat.Type == wire.FileTypeSocket && other:
			p.why = name + " " + p.link + " is a socket, whose peer only the server itself can read"
		case f.fstat.Type == wire.FileTypeSocket:
			p.socket = true
			p.peerIdx = len(ops)
			ops = append(ops, wire.InspectOp{Op: wire.OpPeer, FD: fd})
		case f.fstat.Type == wire.FileTypeFIFO && isAnonPipe(p.link):
			p.pipe = true
			targets = append(targets, p.link)
		case f.fstat.Type == wire.FileTypeFIFO && f.link.Error != nil:
			p.why = name + " is a pipe whose /proc link cannot be read (" + f.link.Error.Code + ")"
		case f.fstat.Type == wire.FileTypeFIFO:
			p.why = name + " is a named FIFO"
		default:
			p.why = name + " is not a pipe or socket"
		}
	}
	selfIdx, hostIdx := -1, -1
	selfRef := "self"
	if other {
		selfRef = strconv.Itoa(self)
	}
	if len(targets) > 0 {
		selfIdx, hostIdx = len(ops), len(ops)+1
		ops = append(ops,
			wire.InspectOp{Op: wire.OpFDs, PID: selfRef, Targets: targets},
			wire.InspectOp{Op: wire.OpFDs, PID: strconv.Itoa(host.PID), Targets: targets})
	}
	var res []wire.InspectResult
	if len(ops) > 0 {
		var err error
		if res, err = inspect(in, ops); err != nil {
			return fail("check the stdio of the host "+describe(host), err)
		}
		if hostIdx >= 0 && code(res[hostIdx]) == wire.CodeNotFound {
			return fail("the host "+describe(host)+" exited during the stdio check; retry", ErrRace)
		}
	}

	var verifiedWhy string
	var disprovedWhy, uncheckedWhy []string
	for fd := 0; fd <= 1; fd++ {
		name, p := stdioNames[fd], plans[fd]
		v, why := notChecked, p.why
		switch {
		case p.socket:
			v, why = checkPeer(name, p.link, host, res[p.peerIdx])
		case p.pipe:
			v, why = checkPipe(fd, name, p.link, host, res[selfIdx], res[hostIdx])
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
		return fail("the host "+describe(host)+" does not hold the other end of the server's stdio ("+strings.Join(disprovedWhy, "; ")+"): the server was probably orphaned and adopted by a subreaper, or "+quote(host.Name)+" passes its own stdio through (if it only launches servers, add it to "+EnvLaunchers+"); session resume is off",
			ErrAdopted)
	default:
		return "not checked: " + strings.Join(uncheckedWhy, "; "), nil
	}
}

// checkPeer judges a socket fd from the answer to peer (SO_PEERCRED, the
// process that created the socket pair or connected): the host verifies,
// another pid disproves, and no credentials (unsupported, 0 for a peer
// outside this PID namespace, no answer) cannot tell.
func checkPeer(name, link string, host Process, r wire.InspectResult) (verdict, string) {
	label := name + " " + link
	if link == "" {
		label = name
	}
	switch {
	case r.Error != nil || r.PeerPID == nil || *r.PeerPID <= 0:
		return notChecked, label + " is a socket without peer credentials"
	case *r.PeerPID == host.PID:
		return verified, label + " peer is the host"
	default:
		return disproved, label + " peer is pid " + itoa(*r.PeerPID) + ", not the host"
	}
}

// checkPipe looks for the other end of the anonymous pipe link, this
// process's fd, among the host's fds holding it (hostFDs), given this
// process's own fds on the pipes (selfFDs).
func checkPipe(fd int, name, link string, host Process, selfFDs, hostFDs wire.InspectResult) (verdict, string) {
	if selfFDs.Error != nil {
		return notChecked, name + " " + link + ": cannot list this process's fds: " + selfFDs.Error.Code
	}
	mine := -1
	for _, e := range selfFDs.FDs {
		if e.FD == fd && e.Target == link && e.Flags >= 0 {
			mine = e.Flags & oACCMODE
		}
	}
	if mine < 0 {
		return notChecked, name + " " + link + ": cannot read its fdinfo flags"
	}
	if hostFDs.Error != nil {
		return notChecked, name + " " + link + ": cannot list the host's fds: " + hostFDs.Error.Code
	}
	// An answer without "fds" is an empty list: wire.InspectResult's
	// omitempty tag drops an empty one, so the Go host sends {} for a host
	// that holds none of the pipes, which is the adopted case of fault 11c.
	for _, e := range hostFDs.FDs {
		if e.Target != link || e.Flags < 0 {
			continue
		}
		if otherEnd(mine, e.Flags&oACCMODE) {
			return verified, name + " " + link + " is held by the host as fd " + itoa(e.FD)
		}
	}
	return disproved, name + " " + link + " is not held by the host"
}
