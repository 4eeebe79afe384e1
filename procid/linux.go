package procid

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// This file holds the Linux rules: /proc/<pid>/stat parsing, the boot ID,
// the PID namespace, the own-/proc check and the walk's batched reads.

// The /proc files behind the typed inspect operations (hostfuncs/README.md,
// "mcp_resume_inspect"), named in error messages.
const (
	procSelf   = "/proc/self"
	procBootID = "/proc/sys/kernel/random/boot_id"
	procSelfNS = "/proc/self/ns/pid"
	// procTimens holds the clock offsets of this process's time namespace
	// (for its children, which is the same unless it unshared one itself).
	procTimens = "/proc/self/timens_offsets"
)

func procStat(pid int) string    { return "/proc/" + strconv.Itoa(pid) + "/stat" }
func procCmdline(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/cmdline" }
func procSelfFD(fd int) string   { return "/proc/self/fd/" + strconv.Itoa(fd) }
func procExe(pid int) string     { return "/proc/" + strconv.Itoa(pid) + "/exe" }

// exeID turns the answer of the exe operation into the last component of
// a Linux start time, "<dev>x<ino>" in decimal (at most 41 bytes of
// [0-9x]). Errors wrap ErrExe and the sentinel of the answer's code;
// an answer without two decimal numbers wraps ErrNoAnswer.
func exeID(pid int, r hostfuncs.InspectResult) (string, error) {
	what := "stat " + procExe(pid)
	if err := resultErr(what, r); err != nil {
		return "", wrap("", ErrExe, err)
	}
	dev, err1 := strconv.ParseUint(r.Dev, 10, 64)
	ino, err2 := strconv.ParseUint(r.Ino, 10, 64)
	if err1 != nil || err2 != nil || strconv.FormatUint(dev, 10) != r.Dev || strconv.FormatUint(ino, 10) != r.Ino {
		return "", wrap(what+": answer "+quote(r.Dev)+", "+quote(r.Ino)+" is not two decimal numbers", ErrExe, ErrNoAnswer)
	}
	return r.Dev + "x" + r.Ino, nil
}

// statInfo holds the fields of /proc/<pid>/stat this package uses.
type statInfo struct {
	pid   int
	comm  string
	state byte
	ppid  int
	// tty is field 7, tty_nr: the controlling terminal's device number, 0
	// for none.
	tty int64
	// start is field 22, starttime: clock ticks from boot to process start.
	start uint64
}

// parseStat parses the contents of /proc/<pid>/stat (proc_pid_stat(5)):
//
//	pid (comm) state ppid pgrp ... starttime(22) ...
//
// comm may contain any byte but NUL, spaces and parentheses included, so the
// fields after it are found from the LAST ')'. Errors wrap ErrMalformed.
func parseStat(data []byte) (statInfo, error) {
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return statInfo{}, wrap("no (comm) in "+quote(truncate(data)), ErrMalformed)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(data[:open])))
	if err != nil || pid <= 0 {
		return statInfo{}, wrap("bad pid before (comm) in "+quote(truncate(data)), ErrMalformed)
	}
	// Fields from 3 (state) on; field n is rest[n-3].
	rest := strings.Fields(string(data[end+1:]))
	if len(rest) < 22-2 {
		return statInfo{}, wrap(itoa(len(rest))+" fields after (comm), want at least "+itoa(22-2), ErrMalformed)
	}
	if len(rest[0]) != 1 {
		return statInfo{}, wrap("bad state "+quote(rest[0]), ErrMalformed)
	}
	ppid, err := strconv.Atoi(rest[4-3])
	if err != nil || ppid < 0 {
		return statInfo{}, wrap("bad ppid "+quote(rest[4-3]), ErrMalformed)
	}
	tty, err := strconv.ParseInt(rest[7-3], 10, 64)
	if err != nil {
		return statInfo{}, wrap("bad tty_nr "+quote(rest[7-3]), ErrMalformed)
	}
	start, err := strconv.ParseUint(rest[22-3], 10, 64)
	if err != nil {
		return statInfo{}, wrap("bad starttime "+quote(rest[22-3]), ErrMalformed)
	}
	return statInfo{
		pid:   pid,
		comm:  string(data[open+1 : end]),
		state: rest[0][0],
		ppid:  ppid,
		tty:   tty,
		start: start,
	}, nil
}

// truncate shortens data for error messages.
func truncate(data []byte) []byte {
	if len(data) > 64 {
		return data[:64]
	}
	return data
}

// parseBootID turns the contents of /proc/sys/kernel/random/boot_id, a UUID
// such as "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n", into 32 lowercase hex
// digits. Errors wrap ErrNoBootID.
func parseBootID(data []byte) (string, error) {
	id := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(string(data)), "-", ""))
	if len(id) != 32 {
		return "", wrap("boot ID "+quote(truncate(data))+" is not a UUID", ErrNoBootID)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", wrap("boot ID "+quote(truncate(data))+" is not a UUID", ErrNoBootID)
		}
	}
	return id, nil
}

// parseNS returns the inode number of a PID namespace link
// ("pid:[4026531836]"). Errors wrap ErrNamespace.
func parseNS(link string) (string, error) {
	ino, ok := strings.CutPrefix(link, "pid:[")
	ino, ok2 := strings.CutSuffix(ino, "]")
	if _, err := strconv.ParseUint(ino, 10, 64); !ok || !ok2 || err != nil {
		return "", wrap(procSelfNS+" links to "+quote(link)+", not pid:[<inode>]", ErrNamespace)
	}
	return ino, nil
}

// splitCmdline splits /proc/<pid>/cmdline: NUL-separated arguments, of
// which trailing empty ones (the terminator, or the padding a retitled
// process leaves) are dropped; nil when nothing is left.
func splitCmdline(data []byte) []string {
	args := strings.Split(string(data), "\x00")
	for len(args) > 0 && args[len(args)-1] == "" {
		args = args[:len(args)-1]
	}
	if len(args) == 0 {
		return nil
	}
	return args
}

// linuxStartTime formats the Linux start time: "<ticks>.<boot ID>.<pid namespace inode>".
func linuxStartTime(ticks uint64, bootID, ns string) string {
	return strconv.FormatUint(ticks, 10) + "." + bootID + "." + ns
}

// linuxBase is what every Linux question starts from: this /proc verified
// to be this process's, the boot ID and the PID namespace.
type linuxBase struct {
	boot string
	ns   string
}

// baseOps are the first three operations of every Linux batch: readlink
// /proc/self, the boot ID, /proc/self/ns/pid.
func baseOps() []hostfuncs.InspectOp {
	return []hostfuncs.InspectOp{opSelf(), opBootID(), opSelfNS()}
}

// checkBase reads the answers to baseOps. /proc/self must name facts.pid:
// under `unshare -p` without --mount-proc it names another pid, and
// /proc/<pid> other processes (faults 10b and 11d). Errors wrap
// ErrNamespace or ErrNoBootID.
func checkBase(pid int, res []hostfuncs.InspectResult) (linuxBase, error) {
	if err := resultErr("readlink "+procSelf, res[0]); err != nil {
		return linuxBase{}, wrap("", ErrNamespace, err)
	}
	if self := res[0].Target; self != strconv.Itoa(pid) {
		return linuxBase{}, wrap("/proc/self is pid "+self+" but this process is pid "+itoa(pid)+": /proc belongs to another PID namespace (mount a /proc of this namespace, e.g. unshare --mount-proc)",
			ErrNamespace)
	}
	if err := resultErr("read "+procBootID, res[1]); err != nil {
		return linuxBase{}, wrap("", ErrNoBootID, err)
	}
	boot, err := parseBootID(res[1].Data)
	if err != nil {
		return linuxBase{}, wrap("read "+procBootID, err)
	}
	if err := resultErr("readlink "+procSelfNS, res[2]); err != nil {
		return linuxBase{}, wrap("", ErrNamespace, err)
	}
	ns, err := parseNS(res[2].Target)
	if err != nil {
		return linuxBase{}, err
	}
	return linuxBase{boot: boot, ns: ns}, nil
}

// process builds pid's Process from the answers to reading its stat and
// (when cmdline is not nil) its cmdline. kill0, when not nil, is the answer
// to kill(pid, 0): a stat that is not_found while kill0 answers permission
// is a process hidden by hidepid (ErrHidden), not a gone one. Errors wrap
// ErrNotFound for a gone process.
func (b linuxBase) process(pid int, stat hostfuncs.InspectResult, cmdline, kill0 *hostfuncs.InspectResult) (Process, error) {
	name := procStat(pid)
	if code(stat) == hostfuncs.CodeNotFound {
		if kill0 != nil && code(*kill0) == hostfuncs.CodePermission {
			return Process{}, wrap("read "+name+": pid "+itoa(pid)+" exists but /proc hides it (mounted hidepid=1 or 2) and it belongs to another user",
				ErrHidden, ErrPermission)
		}
		return Process{}, wrap("read "+name, ErrNotFound)
	}
	if err := resultErr("read "+name, stat); err != nil {
		return Process{}, err
	}
	st, err := parseStat(stat.Data)
	if err != nil {
		return Process{}, wrap("parse "+name, err)
	}
	if st.pid != pid {
		return Process{}, wrap("parse "+name+": it describes pid "+itoa(st.pid), ErrMalformed)
	}
	p := Process{PID: st.pid, PPID: st.ppid, Name: st.comm, StartTime: linuxStartTime(st.start, b.boot, b.ns),
		zombie: st.state == 'Z' || st.state == 'X' || st.state == 'x'}
	if cmdline != nil {
		switch code(*cmdline) {
		case "":
			p.Args = splitCmdline(cmdline.Data)
		case hostfuncs.CodeNotFound:
			return Process{}, wrap("read "+procCmdline(pid), ErrNotFound)
		}
	}
	return p, nil
}

// linuxWalker reads one level of the walk per host call.
type linuxWalker struct {
	in   Inspector
	base linuxBase
}

// step implements walker: one call reads the parent's stat, cmdline and
// program image (exe), the child's stat again, and kill(parent, 0) for the
// hidden-host rule. The image is read before the child is re-read, so the
// race check covers it too.
func (w linuxWalker) step(child Process) (stepResult, error) {
	res, err := inspect(w.in, []hostfuncs.InspectOp{
		opStat(child.PPID), opCmdline(child.PPID),
		opPID(hostfuncs.OpExe, child.PPID),
		opStat(child.PID),
		opPID(hostfuncs.OpKill0, child.PPID),
	})
	if err != nil {
		return stepResult{}, err
	}
	var r stepResult
	r.parent, r.parentErr = w.base.process(child.PPID, res[0], &res[1], &res[4])
	if r.parentErr == nil {
		r.parent.exe, r.parent.exeErr = exeID(r.parent.PID, res[2])
	}
	r.again, r.againErr = w.base.process(child.PID, res[3], nil, nil)
	return r, nil
}

// resolveLinux implements ResolveFor on Linux for the server process pid.
// The first call reads the base, the server's stat and cmdline, and what its
// stdin and stdout are (fstat and /proc/self/fd of this process; the fds of
// another); then one call per ancestor level; then, for a pipe or socket,
// one call for the stdio check.
func resolveLinux(f hostfuncs.Facts, pid int, set LauncherSet, in Inspector) (Identity, error) {
	fail := func(err error) (Identity, error) {
		return Identity{}, wrap("resolve MCP host of pid "+itoa(pid), err)
	}
	if f.PID <= 0 {
		return fail(wrap("facts report pid "+itoa(f.PID), ErrNoAnswer))
	}
	if pid <= 0 {
		return fail(ErrNoAnswer)
	}
	other := pid != f.PID
	sfd, err := stdioFDs(f)
	if err != nil {
		return fail(err)
	}
	// base (0-2), the server's stat (3) and cmdline (4), the time-namespace
	// offsets (5), then what its stdin and stdout are: fstat (6, 7) and
	// /proc link (8, 9) of this process's fds, or another's fd list (6).
	ops := append(baseOps(), opStat(pid), opCmdline(pid), opTimens())
	if other {
		ops = append(ops, hostfuncs.InspectOp{Op: hostfuncs.OpFDs, PID: strconv.Itoa(pid)})
	} else {
		ops = append(ops,
			hostfuncs.InspectOp{Op: hostfuncs.OpFstat, FD: sfd[0]}, hostfuncs.InspectOp{Op: hostfuncs.OpFstat, FD: sfd[1]},
			opSelfFD(sfd[0]), opSelfFD(sfd[1]))
	}
	res, err := inspect(in, ops)
	if err != nil {
		return fail(err)
	}
	base, err := checkBase(f.PID, res)
	if err != nil {
		return fail(err)
	}
	if err := checkTimens(res[5]); err != nil {
		return fail(err)
	}
	self, err := base.process(pid, res[3], &res[4], nil)
	if err != nil {
		return fail(err)
	}
	id, err := walk(linuxWalker{in: in, base: base}, self, set)
	if err != nil {
		return id, err
	}
	var stdio [2]fdFacts
	if other {
		stdio = fdFactsOf(res[6])
	} else {
		stdio = [2]fdFacts{{fd: sfd[0], fstat: res[6], link: res[8]}, {fd: sfd[1], fstat: res[7], link: res[9]}}
	}
	why, err := checkStdio(in, pid, other, id.Chain[len(id.Chain)-1], stdio)
	if err != nil {
		return Identity{Chain: id.Chain}, err
	}
	id.Stdio = why
	// A process keeps its pid and start time across execve(2): the
	// program image makes a host that exec'd into another program a new
	// host.
	host := id.Chain[len(id.Chain)-1]
	if host.exeErr != nil {
		return Identity{Chain: id.Chain}, wrap("resolve MCP host of pid "+itoa(f.PID)+": the host "+describe(host)+" cannot be told apart from another program it might exec into; session resume is off", host.exeErr)
	}
	id.StartTime += "." + host.exe
	return id, nil
}

// checkTimens reads the answer to reading /proc/self/timens_offsets
// (time_namespaces(7)): lines "<clock> <seconds> <nanoseconds>" for the
// clocks monotonic and boottime. A non-zero boottime offset shifts the
// starttime field of every /proc/<pid>/stat read here, so a sandbox whose
// boot clock starts near zero, in a fresh PID namespace whose pids and
// recycled namespace inode repeat an earlier sandbox's, names its host
// exactly as that sandbox named its own (docs/RELIABILITY.md, fault 24):
// ErrTimeNamespace, resume off. The monotonic offset does not enter any
// start time and is ignored. A missing file (not_found: a kernel without
// time namespaces, before Linux 5.6) is the initial time namespace; any
// other failure, or contents that do not parse, cannot tell (also
// ErrTimeNamespace).
func checkTimens(r hostfuncs.InspectResult) error {
	switch code(r) {
	case hostfuncs.CodeNotFound:
		return nil
	case "":
	default:
		return wrap("read "+procTimens+": "+r.Error.Code+": cannot tell whether this time namespace shifts the boot clock; session resume is off", ErrTimeNamespace)
	}
	boot := ""
	for _, line := range strings.Split(string(r.Data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return wrap(procTimens+" has the line "+quote(truncate([]byte(line)))+", want \"<clock> <seconds> <nanoseconds>\"; session resume is off", ErrTimeNamespace)
		}
		if f[0] == "boottime" || f[0] == "7" { // 7 is CLOCK_BOOTTIME
			boot = f[1] + " " + f[2]
		}
	}
	switch boot {
	case "":
		return wrap(procTimens+" has no boottime line; session resume is off", ErrTimeNamespace)
	case "0 0":
		return nil
	}
	return wrap("this process runs in a time namespace whose boot clock is shifted (boottime offset "+boot+" s ns in "+procTimens+"), as sandboxes that start the clock near zero and checkpoint/restore tools do: process start times read here can repeat those of an earlier such sandbox; session resume is off", ErrTimeNamespace)
}

// fdFactsOf derives the fstat and readlink answers for fds 0 and 1 of
// another process from its fd list (the fds operation): the file type from
// the link target ("pipe:[N]" a FIFO, "socket:[N]" a socket, a /dev path a
// character device, anything else a file), a missing fd not_found (closed),
// and the list's own error for both when it could not be read.
func fdFactsOf(list hostfuncs.InspectResult) [2]fdFacts {
	var out [2]fdFacts
	for fd := 0; fd <= 1; fd++ {
		if list.Error != nil {
			out[fd] = fdFacts{fd: fd, fstat: hostfuncs.InspectResult{Error: list.Error}, link: hostfuncs.InspectResult{Error: list.Error}}
			continue
		}
		closed := &hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: "fd " + itoa(fd) + " is not open"}
		out[fd] = fdFacts{fd: fd, fstat: hostfuncs.InspectResult{Error: closed}, link: hostfuncs.InspectResult{Error: closed}}
		for _, e := range list.FDs {
			if e.FD != fd {
				continue
			}
			t := hostfuncs.FileTypeFile
			switch {
			case strings.HasPrefix(e.Target, "pipe:["):
				t = hostfuncs.FileTypeFIFO
			case strings.HasPrefix(e.Target, "socket:["):
				t = hostfuncs.FileTypeSocket
			case strings.HasPrefix(e.Target, "/dev/"):
				t = hostfuncs.FileTypeChar
			}
			out[fd] = fdFacts{fd: fd, fstat: hostfuncs.InspectResult{Type: t}, link: hostfuncs.InspectResult{Target: e.Target}}
		}
	}
	return out
}

// linuxAlive answers liveness for one file from the answers to reading
// /proc/<pid>/stat, kill(pid, 0) and the exe operation, given the base (see
// Liveness). want is "<ticks>.<boot_id>.<pid_ns>.<dev>x<ino>", or the form
// without the image that files written before it was added carry (their
// host is alive while the first three parts match).
func linuxAlive(b linuxBase, pid int, want string, stat, kill0, exe hostfuncs.InspectResult) string {
	parts := strings.Split(want, ".")
	// A start time recorded in another PID namespace names nothing here:
	// cannot tell, never "gone" (faults 10b and 11d).
	if (len(parts) == 3 || len(parts) == 4) && parts[2] != b.ns {
		return hostfuncs.HostUnknown
	}
	p, err := b.process(pid, stat, nil, nil)
	switch {
	case errors.Is(err, ErrNotFound):
		// Gone only when kill(pid, 0) agrees (ESRCH); permission means
		// hidden by hidepid (fault 12), anything else cannot tell.
		if code(kill0) == hostfuncs.CodeNotFound {
			return hostfuncs.HostGone
		}
		return hostfuncs.HostUnknown
	case err != nil:
		return hostfuncs.HostUnknown
	case p.zombie:
		return hostfuncs.HostGone
	case p.StartTime == want:
		return hostfuncs.HostAlive
	case len(parts) != 4 || p.StartTime != strings.Join(parts[:3], "."):
		return hostfuncs.HostGone
	}
	// Same process start; the image tells whether it exec'd since.
	img, err := exeID(pid, exe)
	switch {
	case err != nil:
		return hostfuncs.HostUnknown
	case img == parts[3]:
		return hostfuncs.HostAlive
	default:
		return hostfuncs.HostGone
	}
}
