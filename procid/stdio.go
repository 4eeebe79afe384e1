package procid

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// This file checks that the resolved host holds the other end of the
// server's stdin or stdout (docs/RELIABILITY.md, faults 11c, 22 and 23);
// see the package documentation, "Stdio".

// Linux access modes (open(2)), as the fdinfo "flags:" value encodes them.
const (
	oRDONLY  = 0
	oWRONLY  = 1
	oRDWR    = 2
	oACCMODE = 3
)

// fdFacts are the answers of the first identity call about one stdio fd:
// its number (facts.stdio_fds), fstat and readlink /proc/self/fd/<n>.
type fdFacts struct {
	fd    int
	fstat hostfuncs.InspectResult
	link  hostfuncs.InspectResult
}

// verdict is the outcome of checking one stdio fd.
type verdict int

const (
	unknown   verdict = iota // the fd cannot tell: resume off unless another fd verifies
	verified                 // the host holds the fd's other end
	disproved                // the host provably does not
	residual                 // a socket without peer credentials: documented residual, stands
)

// stdioNames names the two stdio fds in messages.
var stdioNames = [2]string{"stdin", "stdout"}

// isTerminal reports whether link, the /proc link of a character device,
// names one terminal: a pseudo-terminal's slave side (/dev/pts/<n>), a
// virtual console or serial line (/dev/tty<name>), or /dev/console. Not
// /dev/tty, which names each process's own controlling terminal, nor the
// master side /dev/ptmx (/dev/pts/ptmx), which every pseudo-terminal a
// multiplexer or terminal emulator runs shares.
func isTerminal(link string) bool {
	if n, ok := strings.CutPrefix(link, "/dev/pts/"); ok {
		_, err := strconv.ParseUint(n, 10, 32)
		return err == nil
	}
	if n, ok := strings.CutPrefix(link, "/dev/tty"); ok {
		return n != "" && !strings.Contains(n, "/")
	}
	return link == "/dev/console"
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

// stdioFDs returns the fds that hold the server's stdin and stdout
// (facts.stdio_fds; absent means 0 and 1). Error: ErrNoAnswer when the
// host reported anything but two fds of at least 0.
func stdioFDs(f hostfuncs.Facts) ([2]int, error) {
	if f.StdioFDs == nil {
		return [2]int{0, 1}, nil
	}
	if len(f.StdioFDs) != 2 || f.StdioFDs[0] < 0 || f.StdioFDs[1] < 0 {
		return [2]int{}, wrap("facts report stdio_fds "+quote(fmtInts(f.StdioFDs))+", want two fds of at least 0 (stdin, stdout)", ErrNoAnswer)
	}
	return [2]int{f.StdioFDs[0], f.StdioFDs[1]}, nil
}

// fmtInts formats ns as "[a b]" for messages.
func fmtInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = itoa(n)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// checkStdio verifies that host, the resolved MCP host of the server
// process self, holds the other end of the server's stdin or stdout (the
// fds of facts.stdio_fds). An MCP host always does: it created the pipes or
// socket pair it speaks MCP through, or, for a server started by hand, it
// is the shell that holds the terminal. A subreaper that adopted an
// orphaned server does not, nor does a terminal multiplexer or emulator
// that runs the server as a window command (it holds only the master side
// /dev/ptmx), nor a process the server's stdio was passed through.
//
// The first identity call already answered fstat and readlink for both fds
// (fds); when one is a pipe, a named FIFO, a terminal or a socket, one more
// call asks for this process's flags on them (fds self), the host's fds
// holding them (fds <host>), the socket peers (peer) and this network
// namespace's Unix sockets (/proc/self/net/unix): a socket must be listed
// there (the stdio socket rule, checkUnixSockets), else the check fails
// with ErrNetworkStdio whatever the other fd shows.
//
// It returns "verified: ..." when an fd is verified, and "not checked:
// ..." when both fds are sockets without peer credentials (the documented
// residual: Node cannot read SO_PEERCRED). Errors: ErrAdopted when no fd is
// verified and one is disproved; ErrUnverified when nothing verifies the
// host otherwise (/dev/null, a file, a closed fd, a host whose fds cannot be
// listed: "cannot tell" never lets an identity stand); ErrRace when the host
// exits during the check; ErrNoAnswer when the host gave no usable answer.
//
// other is true when the server is another process than this one
// (ResolveFor, for whoami --pid): its own fds are then listed by pid, and a
// socket cannot tell, since only its holder can ask for the peer; it stands
// as "not checked", like the socket residual, so that whoami shows the chain
// the server would resolve rather than a refusal the server would not make.
func checkStdio(in Inspector, self int, other bool, host Process, fds [2]fdFacts) (string, error) {
	fail := func(msg string, errs ...error) (string, error) {
		return "", wrap("resolve MCP host of pid "+itoa(self)+": "+msg, errs...)
	}
	// What each fd is, and what else to ask.
	type plan struct {
		why      string // set when the fd is already decided
		v        verdict
		link     string
		held     bool // a pipe, named FIFO or terminal: look for it among the host's fds
		anyMode  bool // a terminal: any access mode of the host counts
		socket   bool
		peerIdx  int
		devNull  bool
		terminal bool
	}
	var plans [2]plan
	var ops []hostfuncs.InspectOp
	unixIdx := -1 // the read of /proc/self/net/unix, for a socket
	var targets []string
	for i := 0; i <= 1; i++ {
		name, f, p := stdioNames[i], fds[i], &plans[i]
		if code(f.link) == "" {
			p.link = f.link.Target
		}
		switch {
		case code(f.fstat) == hostfuncs.CodeNotFound:
			p.why = name + " is closed"
		case f.fstat.Error != nil:
			p.why = name + ": cannot tell what it is (fstat: " + f.fstat.Error.Code + ")"
		case f.fstat.Type == hostfuncs.FileTypeSocket && other:
			p.why, p.v = name+" "+p.link+" is a socket, whose peer only the server itself can read", residual
		case f.fstat.Type == hostfuncs.FileTypeSocket:
			p.socket = true
			p.peerIdx = len(ops)
			ops = append(ops, hostfuncs.InspectOp{Op: hostfuncs.OpPeer, FD: f.fd})
			if unixIdx < 0 {
				unixIdx = len(ops)
				ops = append(ops, hostfuncs.InspectOp{Op: hostfuncs.OpNet, PID: hostfuncs.PIDSelf, Table: "unix"})
			}
		case f.link.Error != nil || p.link == "":
			p.why = name + " (a " + f.fstat.Type + ") has a /proc link that cannot be read (" + code(f.link) + ")"
		case f.fstat.Type == hostfuncs.FileTypeFIFO:
			// An anonymous pipe ("pipe:[N]") or a named FIFO (its path):
			// either way the host must hold the other end of the same one.
			p.held = true
		case f.fstat.Type == hostfuncs.FileTypeChar && isTerminal(p.link):
			p.held, p.anyMode, p.terminal = true, true, true
		case f.fstat.Type == hostfuncs.FileTypeChar && p.link == "/dev/null":
			p.why, p.devNull = name+" is /dev/null, which proves nothing about who launched the server", true
		default:
			p.why = name + " is " + quote(p.link) + " (a " + f.fstat.Type + "), which proves nothing about who launched the server"
		}
		if p.held && !slicesContains(targets, p.link) {
			targets = append(targets, p.link)
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
			hostfuncs.InspectOp{Op: hostfuncs.OpFDs, PID: selfRef, Targets: targets},
			hostfuncs.InspectOp{Op: hostfuncs.OpFDs, PID: strconv.Itoa(host.PID), Targets: targets})
	}
	var res []hostfuncs.InspectResult
	if len(ops) > 0 {
		var err error
		if res, err = inspect(in, ops); err != nil {
			return fail("check the stdio of the host "+describe(host), err)
		}
		if hostIdx >= 0 && code(res[hostIdx]) == hostfuncs.CodeNotFound {
			return fail("the host "+describe(host)+" exited during the stdio check; retry", ErrRace)
		}
	}
	if unixIdx >= 0 {
		var links []string
		for i := 0; i <= 1; i++ {
			if plans[i].socket {
				links = append(links, stdioNames[i]+" "+plans[i].link)
			}
		}
		if why, err := checkUnixSockets(in, links, res[unixIdx]); err != nil {
			return fail(why, err)
		}
	}

	var verifiedWhy string
	var disprovedWhy, unknownWhy, residualWhy []string
	var devNull, unlisted, terminal bool
	for i := 0; i <= 1; i++ {
		name, p := stdioNames[i], plans[i]
		v, why := p.v, p.why
		switch {
		case p.socket:
			v, why = checkPeer(name, p.link, host, res[p.peerIdx])
		case p.held:
			v, why = checkHeld(fds[i].fd, name, p.link, p.anyMode, res[selfIdx], res[hostIdx])
			if v == unknown && res[hostIdx].Error != nil {
				unlisted = true
			}
			terminal = terminal || p.terminal && v == disproved
		}
		devNull = devNull || p.devNull
		switch v {
		case verified:
			if verifiedWhy == "" {
				verifiedWhy = why
			}
		case disproved:
			disprovedWhy = append(disprovedWhy, why)
		case residual:
			residualWhy = append(residualWhy, why)
		default:
			unknownWhy = append(unknownWhy, why)
		}
	}
	switch {
	case verifiedWhy != "":
		return "verified: " + verifiedWhy, nil
	case len(disprovedWhy) > 0:
		how := "the server was probably orphaned and adopted by a subreaper, or "
		sdkAlso := ""
		if devNull {
			// Or no adoption at all: an SDK's diversion of fds 0 and 1 (stdout a copy of stderr) is what the check saw.
			sdkAlso = "; or " + sdkDiverted
		}
		if terminal {
			how = "the server was probably started as the window command of a terminal multiplexer or emulator (tmux, screen, a terminal server: it holds only the master side of the terminal, shared by every window), or orphaned and adopted by a subreaper, or "
		}
		return fail("the host "+describe(host)+" does not hold the other end of the server's stdio ("+strings.Join(disprovedWhy, "; ")+"): "+how+quote(host.Name)+" passes its own stdio through (if it only launches servers, add it to "+EnvLaunchers+")"+sdkAlso+"; session resume is off",
			ErrAdopted)
	case len(unknownWhy) == 0:
		return "not checked: " + strings.Join(residualWhy, "; "), nil
	default:
		var hints []string
		if devNull {
			hints = append(hints, sdkDiverted)
		}
		if unlisted {
			hints = append(hints, "the host's open files cannot be listed: it runs as another user, or is not dumpable (as sshd, ssh-agent and setuid programs are)")
		}
		msg := "nothing shows that the host " + describe(host) + " launched this server (" + strings.Join(append(unknownWhy, residualWhy...), "; ") + ")"
		if len(hints) > 0 {
			msg += ": " + strings.Join(hints, "; ")
		}
		return fail(msg+"; session resume is off", ErrUnverified)
	}
}

// sdkDiverted is the hint for a stdin at /dev/null: the Python MCP SDK's
// stdio transport points fds 0 and 1 at /dev/null and a copy of stderr
// while it serves, and a binding that was loaded only after that has no
// copies of the MCP host's pipes to report in facts.stdio_fds.
const sdkDiverted = "an MCP SDK may have pointed stdin and stdout at /dev/null and stderr before the store resolved its host (the Python MCP SDK does while it serves stdio): import mcp_resume before the SDK starts serving (at the top of the server's script), so the binding reports the copies of fds 0 and 1 it took at import"

// slicesContains reports whether s holds v (slices.Contains, kept local so
// the guest links no more than it needs).
func slicesContains(s []string, v string) bool {
	for _, e := range s {
		if e == v {
			return true
		}
	}
	return false
}

// checkPeer judges socket fd from the answer to peer (SO_PEERCRED, the
// process that created the socket pair or connected): the host verifies,
// another pid disproves. No credentials at all (peer unsupported, as in
// Node) is the residual; 0 (a peer outside this PID namespace, so not the
// host, which is inside) and any other failure cannot tell.
func checkPeer(name, link string, host Process, r hostfuncs.InspectResult) (verdict, string) {
	label := name + " " + link
	if link == "" {
		label = name
	}
	switch {
	case code(r) == hostfuncs.CodeUnsupported:
		return residual, label + " is a socket without peer credentials (this host cannot read SO_PEERCRED)"
	case r.Error != nil:
		return unknown, label + ": cannot read its peer credentials (" + r.Error.Code + ")"
	case r.PeerPID == nil:
		return unknown, label + ": the peer answer has no pid"
	case *r.PeerPID <= 0:
		return unknown, label + " peer is outside this PID namespace"
	case *r.PeerPID == host.PID:
		return verified, label + " peer is the host"
	default:
		return disproved, label + " peer is pid " + itoa(*r.PeerPID) + ", not the host"
	}
}

// checkHeld looks for link, this process's fd (an anonymous pipe, a named
// FIFO or a terminal), among the host's fds holding it (hostFDs), given this
// process's own fds on them (selfFDs). For a pipe or FIFO the host's fd must
// be the other end (otherEnd); for a terminal (anyMode) any fd on the same
// terminal counts.
func checkHeld(fd int, name, link string, anyMode bool, selfFDs, hostFDs hostfuncs.InspectResult) (verdict, string) {
	label := name + " " + link
	mine := oRDWR
	if !anyMode {
		if selfFDs.Error != nil {
			return unknown, label + ": cannot list this process's fds: " + selfFDs.Error.Code
		}
		mine = -1
		for _, e := range selfFDs.FDs {
			if e.FD == fd && e.Target == link && e.Flags >= 0 {
				mine = e.Flags & oACCMODE
			}
		}
		if mine < 0 {
			return unknown, label + ": cannot read its fdinfo flags"
		}
	}
	if hostFDs.Error != nil {
		return unknown, label + ": cannot list the host's fds (" + hostFDs.Error.Code + ")"
	}
	// An answer without "fds" is an empty list: hostfuncs.InspectResult's
	// omitempty tag drops an empty one, so the Go host sends {} for a host
	// that holds none of them, which is the adopted case of fault 11c.
	for _, e := range hostFDs.FDs {
		if e.Target != link || e.Flags < 0 {
			continue
		}
		if anyMode || otherEnd(mine, e.Flags&oACCMODE) {
			return verified, label + " is held by the host as fd " + itoa(e.FD)
		}
	}
	return disproved, label + " is not held by the host"
}

// checkUnixSockets applies the stdio socket rule to the sockets on the
// server's stdio, links ("stdin socket:[N]", as named in messages) and
// unix, the answer to reading /proc/self/net/unix: each must be a Unix
// socket of this network namespace, listed there by its inode, for the
// peer check to stand. A socket found in tcp, tcp6, udp or udp6 instead,
// or in none, or one whose link or table cannot be read, fails with
// ErrNetworkStdio: a network socket on stdio (socat TCP-LISTEN:...
// EXEC:server) lets any network client in, and only the Go and Python
// hosts could tell it from its missing peer credentials (Node cannot read
// SO_PEERCRED), so the rule is here, the same for every host. One more
// call reads the four network tables to name the socket in the message.
func checkUnixSockets(in Inspector, links []string, unix hostfuncs.InspectResult) (string, error) {
	rows, err := netTable("/proc/self/net/unix", "unix", unix)
	if err != nil && unix.Error == nil && len(unix.Data) >= hostfuncs.MaxProcTableRead {
		// Cut short at the read limit: the complete lines still name
		// sockets that exist; one missing from them cannot tell.
		if cut := bytes.LastIndexByte(unix.Data, '\n'); cut >= 0 {
			if part, perr := parseNetTable("unix", unix.Data[:cut+1]); perr == nil {
				rows = part
			}
		}
	}
	if err != nil && rows == nil {
		return "cannot tell whether the socket on the server's stdio (" + strings.Join(links, ", ") + ") is a Unix socket", wrap("", ErrNetworkStdio, err)
	}
	var missing []string
	var inodes []uint64
	for _, l := range links {
		_, link, _ := strings.Cut(l, " ")
		ino, ok := socketInode(link)
		if !ok {
			return l + ": cannot tell what socket it is (its /proc link is not socket:[N])", ErrNetworkStdio
		}
		found := false
		for _, r := range rows {
			found = found || r.inode == ino
		}
		switch {
		case !found && err != nil:
			return "cannot tell whether " + l + " is a Unix socket", wrap("", ErrNetworkStdio, err)
		case !found:
			missing, inodes = append(missing, l), append(inodes, ino)
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	tables := []string{"tcp", "tcp6", "udp", "udp6"}
	ops := make([]hostfuncs.InspectOp, len(tables))
	for i, t := range tables {
		ops[i] = hostfuncs.InspectOp{Op: hostfuncs.OpNet, PID: hostfuncs.PIDSelf, Table: t}
	}
	named := make([]string, len(missing))
	for i := range missing {
		named[i] = missing[i] + " is not a Unix socket (/proc/self/net/unix does not list it)"
	}
	if res, err := inspect(in, ops); err == nil {
		for i, t := range tables {
			rows, err := netTable("/proc/self/net/"+t, t, res[i])
			if err != nil {
				continue
			}
			for _, r := range rows {
				for j, ino := range inodes {
					if r.inode == ino {
						family := "a TCP"
						if t == "udp" || t == "udp6" {
							family = "a UDP"
						}
						named[j] = missing[j] + " is " + family + " socket (local address " + r.String() + ")"
					}
				}
			}
		}
	}
	return strings.Join(named, "; ") + ": a network client may be at the other end (as with socat TCP-LISTEN:... EXEC:server), whom the MCP host does not vouch for; session resume is off", ErrNetworkStdio
}
