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

// startTime formats the Linux StartTime: "<ticks>.<boot ID>".
func startTime(ticks uint64, bootID string) string {
	return strconv.FormatUint(ticks, 10) + "." + bootID
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
	return Process{
		PID:       st.pid,
		PPID:      st.ppid,
		Name:      st.comm,
		Args:      args,
		StartTime: startTime(st.start, boot),
	}, nil
}

// alive implements source. A zombie (state Z) or dead (X) process is not
// alive.
func (r *linuxReader) alive(pid int, want string) (bool, error) {
	boot, err := r.bootID()
	if err != nil {
		return false, err
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
	return startTime(st.start, boot) == want, nil
}
