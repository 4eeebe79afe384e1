package policy

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// This file holds the Linux rules: /proc/<pid>/stat parsing, the boot ID,
// the PID namespace, the own-/proc check and the walk's batched reads.

// Paths of the /proc allowlist (hostfuncs/README.md, "The allowlist").
const (
	procSelf   = "/proc/self"
	procBootID = "/proc/sys/kernel/random/boot_id"
	procSelfNS = "/proc/self/ns/pid"
)

func procStat(pid int) string    { return "/proc/" + strconv.Itoa(pid) + "/stat" }
func procCmdline(pid int) string { return "/proc/" + strconv.Itoa(pid) + "/cmdline" }
func procSelfFD(fd int) string   { return "/proc/self/fd/" + strconv.Itoa(fd) }

// statInfo holds the fields of /proc/<pid>/stat this package uses.
type statInfo struct {
	pid   int
	comm  string
	state byte
	ppid  int
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
	start, err := strconv.ParseUint(rest[22-3], 10, 64)
	if err != nil {
		return statInfo{}, wrap("bad starttime "+quote(rest[22-3]), ErrMalformed)
	}
	return statInfo{
		pid:   pid,
		comm:  string(data[open+1 : end]),
		state: rest[0][0],
		ppid:  ppid,
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
func baseOps() []wire.InspectOp {
	return []wire.InspectOp{opReadlink(procSelf), opRead(procBootID), opReadlink(procSelfNS)}
}

// checkBase reads the answers to baseOps. /proc/self must name facts.pid:
// under `unshare -p` without --mount-proc it names another pid, and
// /proc/<pid> other processes (faults 10b and 11d). Errors wrap
// ErrNamespace or ErrNoBootID.
func checkBase(pid int, res []wire.InspectResult) (linuxBase, error) {
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
func (b linuxBase) process(pid int, stat wire.InspectResult, cmdline, kill0 *wire.InspectResult) (Process, error) {
	name := procStat(pid)
	if code(stat) == wire.CodeNotFound {
		if kill0 != nil && code(*kill0) == wire.CodePermission {
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
		case wire.CodeNotFound:
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

// step implements walker: one call reads the parent's stat and cmdline, the
// child's stat again, and kill(parent, 0) for the hidden-host rule.
func (w linuxWalker) step(child Process) (Process, error, Process, error, error) {
	res, err := inspect(w.in, []wire.InspectOp{
		opRead(procStat(child.PPID)), opRead(procCmdline(child.PPID)),
		opRead(procStat(child.PID)),
		opPID(wire.OpKill0, child.PPID),
	})
	if err != nil {
		return Process{}, nil, Process{}, nil, err
	}
	parent, perr := w.base.process(child.PPID, res[0], &res[1], &res[3])
	again, aerr := w.base.process(child.PID, res[2], nil, nil)
	return parent, perr, again, aerr, nil
}

// resolveLinux implements ResolveFor on Linux for the server process pid.
// The first call reads the base, the server's stat and cmdline, and what its
// stdin and stdout are (fstat and /proc/self/fd of this process; the fds of
// another); then one call per ancestor level; then, for a pipe or socket,
// one call for the stdio check.
func resolveLinux(f wire.Facts, pid int, set LauncherSet, in Inspector) (Identity, error) {
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
	ops := append(baseOps(), opRead(procStat(pid)), opRead(procCmdline(pid)))
	if other {
		ops = append(ops, wire.InspectOp{Op: wire.OpFDs, PID: strconv.Itoa(pid)})
	} else {
		ops = append(ops,
			wire.InspectOp{Op: wire.OpFstat, FD: 0}, wire.InspectOp{Op: wire.OpFstat, FD: 1},
			opReadlink(procSelfFD(0)), opReadlink(procSelfFD(1)))
	}
	res, err := inspect(in, ops)
	if err != nil {
		return fail(err)
	}
	base, err := checkBase(f.PID, res)
	if err != nil {
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
		stdio = fdFactsOf(res[5])
	} else {
		stdio = [2]fdFacts{{fstat: res[5], link: res[7]}, {fstat: res[6], link: res[8]}}
	}
	why, err := checkStdio(in, pid, other, id.Chain[len(id.Chain)-1], stdio)
	if err != nil {
		return Identity{Chain: id.Chain}, err
	}
	id.Stdio = why
	return id, nil
}

// fdFactsOf derives the fstat and readlink answers for fds 0 and 1 of
// another process from its fd list (the fds operation): the file type from
// the link target ("pipe:[N]" a FIFO, "socket:[N]" a socket, a /dev path a
// character device, anything else a file), a missing fd not_found (closed),
// and the list's own error for both when it could not be read.
func fdFactsOf(list wire.InspectResult) [2]fdFacts {
	var out [2]fdFacts
	for fd := 0; fd <= 1; fd++ {
		if list.Error != nil {
			out[fd] = fdFacts{fstat: wire.InspectResult{Error: list.Error}, link: wire.InspectResult{Error: list.Error}}
			continue
		}
		closed := &wire.Error{Code: wire.CodeNotFound, Message: "fd " + itoa(fd) + " is not open"}
		out[fd] = fdFacts{fstat: wire.InspectResult{Error: closed}, link: wire.InspectResult{Error: closed}}
		for _, e := range list.FDs {
			if e.FD != fd {
				continue
			}
			t := wire.FileTypeFile
			switch {
			case strings.HasPrefix(e.Target, "pipe:["):
				t = wire.FileTypeFIFO
			case strings.HasPrefix(e.Target, "socket:["):
				t = wire.FileTypeSocket
			case strings.HasPrefix(e.Target, "/dev/"):
				t = wire.FileTypeChar
			}
			out[fd] = fdFacts{fstat: wire.InspectResult{Type: t}, link: wire.InspectResult{Target: e.Target}}
		}
	}
	return out
}

// linuxAlive answers liveness for one file from the answers to reading
// /proc/<pid>/stat and kill(pid, 0), given the base (see Liveness).
func linuxAlive(b linuxBase, pid int, want string, stat, kill0 wire.InspectResult) string {
	// A start time recorded in another PID namespace names nothing here:
	// cannot tell, never "gone" (faults 10b and 11d).
	if i := strings.LastIndexByte(want, '.'); strings.Count(want, ".") == 2 && want[i+1:] != b.ns {
		return wire.HostUnknown
	}
	p, err := b.process(pid, stat, nil, nil)
	switch {
	case errors.Is(err, ErrNotFound):
		// Gone only when kill(pid, 0) agrees (ESRCH); permission means
		// hidden by hidepid (fault 12), anything else cannot tell.
		if code(kill0) == wire.CodeNotFound {
			return wire.HostGone
		}
		return wire.HostUnknown
	case err != nil:
		return wire.HostUnknown
	case p.zombie:
		return wire.HostGone
	case p.StartTime == want:
		return wire.HostAlive
	default:
		return wire.HostGone
	}
}
