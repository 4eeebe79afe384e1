package procid

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// This file reads Linux /proc. It builds on every system so that its tests,
// which run against fixture trees, run everywhere.

// linuxReader reads processes from a /proc tree rooted at root ("/proc" in
// production, a t.TempDir() fixture in tests). It is not safe for concurrent
// use; HostOf makes one per call.
type linuxReader struct {
	root string
	// afterStat, when set, is called after every successful read of
	// <root>/<pid>/stat. Tests use it to change the tree mid-walk.
	afterStat func(pid int)
	// boot caches the boot ID after its first successful read, so that one
	// walk uses one boot ID throughout.
	boot string
	// hidden, when set, reports whether a pid whose /proc entry is missing
	// exists all the same, hidden by a /proc mounted hidepid=1/2 (Linux:
	// kill(pid, 0) answers EPERM). Fixture trees leave it nil: their pids
	// are not this machine's.
	hidden func(pid int) bool
}

// pidNS returns the inode number of pid's PID namespace, from the link
// <root>/<pid>/ns/pid ("pid:[4026531836]"); pid 0 means <root>/self. Two
// PID namespaces hand out the same pids and share the boot ID and clock, so
// this is what tells their processes apart. Errors wrap ErrNamespace (or
// ErrNotFound for a vanished pid).
func (r *linuxReader) pidNS(pid int) (string, error) {
	who := "self"
	if pid != 0 {
		who = strconv.Itoa(pid)
	}
	name := filepath.Join(r.root, who, "ns", "pid")
	link, err := os.Readlink(name)
	if err != nil {
		if pid != 0 && gone(err) {
			return "", fmt.Errorf("read %s: %w", name, ErrNotFound)
		}
		return "", fmt.Errorf("read %s: %w: %w", name, ErrNamespace, err)
	}
	ino, ok := strings.CutPrefix(link, "pid:[")
	ino, ok2 := strings.CutSuffix(ino, "]")
	if _, err := strconv.ParseUint(ino, 10, 64); !ok || !ok2 || err != nil {
		return "", fmt.Errorf("%s links to %q, not pid:[<inode>]: %w", name, link, ErrNamespace)
	}
	return ino, nil
}

// checkOwnProc verifies that <root> is the /proc of this process's PID
// namespace: <root>/self must name os.Getpid(). Under `unshare -p` without
// --mount-proc it names another pid, and /proc/<pid> other processes.
func (r *linuxReader) checkOwnProc() error {
	self, err := os.Readlink(filepath.Join(r.root, "self"))
	if err != nil {
		return fmt.Errorf("read %s/self: %w: %w", r.root, ErrNamespace, err)
	}
	if self != strconv.Itoa(os.Getpid()) {
		return fmt.Errorf("%s/self is pid %s but this process is pid %d: %s belongs to another PID namespace (mount a /proc of this namespace, e.g. unshare --mount-proc): %w",
			r.root, self, os.Getpid(), r.root, ErrNamespace)
	}
	return nil
}

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
// fields after it are found from the last ')'. Errors wrap ErrMalformed.
func parseStat(data []byte) (statInfo, error) {
	open := bytes.IndexByte(data, '(')
	end := bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return statInfo{}, fmt.Errorf("no (comm) in %q: %w", truncate(data), ErrMalformed)
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(data[:open])))
	if err != nil || pid <= 0 {
		return statInfo{}, fmt.Errorf("bad pid before (comm) in %q: %w", truncate(data), ErrMalformed)
	}
	// Fields from 3 (state) on; field n is rest[n-3].
	rest := strings.Fields(string(data[end+1:]))
	if len(rest) < 22-2 {
		return statInfo{}, fmt.Errorf("%d fields after (comm), want at least %d: %w", len(rest), 22-2, ErrMalformed)
	}
	if len(rest[0]) != 1 {
		return statInfo{}, fmt.Errorf("bad state %q: %w", rest[0], ErrMalformed)
	}
	ppid, err := strconv.Atoi(rest[4-3])
	if err != nil || ppid < 0 {
		return statInfo{}, fmt.Errorf("bad ppid %q: %w", rest[4-3], ErrMalformed)
	}
	start, err := strconv.ParseUint(rest[22-3], 10, 64)
	if err != nil {
		return statInfo{}, fmt.Errorf("bad starttime %q: %w", rest[22-3], ErrMalformed)
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
		return "", fmt.Errorf("boot ID %q is not a UUID: %w", truncate(data), ErrNoBootID)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return "", fmt.Errorf("boot ID %q is not a UUID: %w", truncate(data), ErrNoBootID)
		}
	}
	return id, nil
}

// bootID returns the boot ID as 32 lowercase hex digits, reading it once.
func (r *linuxReader) bootID() (string, error) {
	if r.boot != "" {
		return r.boot, nil
	}
	name := filepath.Join(r.root, "sys", "kernel", "random", "boot_id")
	data, err := os.ReadFile(name)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNoBootID, err)
	}
	id, err := parseBootID(data)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	r.boot = id
	return id, nil
}

// stat reads and parses <root>/<pid>/stat. Errors wrap ErrNotFound when the
// process does not exist, ErrMalformed when the file cannot be parsed.
func (r *linuxReader) stat(pid int) (statInfo, error) {
	if pid <= 0 {
		return statInfo{}, fmt.Errorf("pid %d is not positive: %w", pid, ErrNotFound)
	}
	name := filepath.Join(r.root, strconv.Itoa(pid), "stat")
	data, err := os.ReadFile(name)
	if err != nil {
		if gone(err) {
			if r.hidden != nil && r.hidden(pid) {
				return statInfo{}, fmt.Errorf("read %s: pid %d exists but %s hides it (mounted hidepid=1 or 2) and it belongs to another user: %w",
					name, pid, r.root, fs.ErrPermission)
			}
			return statInfo{}, fmt.Errorf("read %s: %w", name, ErrNotFound)
		}
		return statInfo{}, err
	}
	st, err := parseStat(data)
	if err != nil {
		return statInfo{}, fmt.Errorf("parse %s: %w", name, err)
	}
	if st.pid != pid {
		return statInfo{}, fmt.Errorf("parse %s: it describes pid %d: %w", name, st.pid, ErrMalformed)
	}
	if r.afterStat != nil {
		r.afterStat(pid)
	}
	return st, nil
}

// gone reports whether err from reading /proc/<pid>/... means the process
// does not exist (any more).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// args reads <root>/<pid>/cmdline: NUL-separated arguments, of which trailing
// empty ones (the terminator, or the padding a retitled process leaves) are
// dropped. It returns nil when the file is empty or unreadable for a reason
// other than the process being gone, which wraps ErrNotFound.
func (r *linuxReader) args(pid int) ([]string, error) {
	name := filepath.Join(r.root, strconv.Itoa(pid), "cmdline")
	data, err := os.ReadFile(name)
	if err != nil {
		if gone(err) {
			return nil, fmt.Errorf("read %s: %w", name, ErrNotFound)
		}
		return nil, nil
	}
	args := strings.Split(string(data), "\x00")
	for len(args) > 0 && args[len(args)-1] == "" {
		args = args[:len(args)-1]
	}
	if len(args) == 0 {
		return nil, nil
	}
	return args, nil
}

// startTime formats the Linux StartTime: "<ticks>.<boot ID>.<pid namespace inode>".
func startTime(ticks uint64, bootID, ns string) string {
	return strconv.FormatUint(ticks, 10) + "." + bootID + "." + ns
}

// lookup implements source.
func (r *linuxReader) lookup(pid int) (Process, error) {
	boot, err := r.bootID()
	if err != nil {
		return Process{}, err
	}
	st, err := r.stat(pid)
	if err != nil {
		return Process{}, err
	}
	args, err := r.args(pid)
	if err != nil {
		return Process{}, err
	}
	// A process visible in this /proc (checked to be ours) is in this PID
	// namespace, so ours names it; /proc/self/ns/pid is always readable,
	// where another user's /proc/<pid>/ns/pid is not.
	ns, err := r.pidNS(0)
	if err != nil {
		return Process{}, err
	}
	return Process{
		PID:       st.pid,
		PPID:      st.ppid,
		Name:      st.comm,
		Args:      args,
		StartTime: startTime(st.start, boot, ns),
	}, nil
}

// alive implements source. A zombie (state Z) or dead (X) process is not
// alive. A start time recorded in another PID namespace (its last field is
// not this process's namespace) cannot be checked from here: ErrNamespace.
func (r *linuxReader) alive(pid int, want string) (bool, error) {
	boot, err := r.bootID()
	if err != nil {
		return false, err
	}
	self, err := r.pidNS(0)
	if err != nil {
		return false, err
	}
	if i := strings.LastIndexByte(want, '.'); strings.Count(want, ".") == 2 && want[i+1:] != self {
		return false, fmt.Errorf("start time %q was recorded in PID namespace %s, this is %s: %w", want, want[i+1:], self, ErrNamespace)
	}
	st, err := r.stat(pid)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if st.state == 'Z' || st.state == 'X' || st.state == 'x' {
		return false, nil
	}
	return startTime(st.start, boot, self) == want, nil
}
