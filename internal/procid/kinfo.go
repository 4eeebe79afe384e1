package procid

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// This file decodes the macOS sysctl records kern.proc.pid (struct
// kinfo_proc) and kern.procargs2. It builds on every system so that its
// tests, which run against fixture bytes, run everywhere; procid_darwin.go
// checks the offsets against golang.org/x/sys/unix.KinfoProc at compile time.

// Layout of struct kinfo_proc on darwin/amd64 and darwin/arm64, which agree
// (both LP64, little-endian; see KinfoProc in x/sys/unix
// ztypes_darwin_{amd64,arm64}.go and <sys/sysctl.h>).
const (
	// kinfoSize is sizeof(struct kinfo_proc).
	kinfoSize = 648
	// kinfoStartSec is kp_proc.p_starttime.tv_sec, an int64 (seconds since
	// the Unix epoch).
	kinfoStartSec = 0
	// kinfoStartUsec is kp_proc.p_starttime.tv_usec, an int32.
	kinfoStartUsec = 8
	// kinfoStat is kp_proc.p_stat, an int8 (SIDL 1 ... SZOMB 5).
	kinfoStat = 36
	// kinfoPID is kp_proc.p_pid, an int32.
	kinfoPID = 40
	// kinfoComm is kp_proc.p_comm, MAXCOMLEN+1 = 17 bytes, NUL-terminated.
	kinfoComm = 243
	// kinfoCommLen is the size of p_comm.
	kinfoCommLen = 17
	// kinfoPPID is kp_eproc.e_ppid, an int32.
	kinfoPPID = 560
)

// darwinZombie is p_stat for a process that exited and was not yet reaped
// (SZOMB in <sys/proc.h>).
const darwinZombie = 5

// kinfo holds the fields of struct kinfo_proc this package uses.
type kinfo struct {
	pid  int
	ppid int
	comm string
	stat int8
	sec  int64
	usec int32
}

// decodeKinfo decodes one struct kinfo_proc from b, as returned by sysctl
// kern.proc.pid. Errors wrap ErrMalformed: b shorter than kinfoSize, pid 0
// (the kernel's answer for an absent process is an empty buffer, never a
// zeroed record, so a zero pid means garbage), an empty p_comm, or tv_usec
// outside 0..999999.
func decodeKinfo(b []byte) (kinfo, error) {
	if len(b) < kinfoSize {
		return kinfo{}, fmt.Errorf("kinfo_proc is %d bytes, want %d: %w", len(b), kinfoSize, ErrMalformed)
	}
	le := binary.LittleEndian
	k := kinfo{
		pid:  int(int32(le.Uint32(b[kinfoPID:]))),
		ppid: int(int32(le.Uint32(b[kinfoPPID:]))),
		stat: int8(b[kinfoStat]),
		sec:  int64(le.Uint64(b[kinfoStartSec:])),
		usec: int32(le.Uint32(b[kinfoStartUsec:])),
	}
	comm := b[kinfoComm : kinfoComm+kinfoCommLen]
	if i := bytes.IndexByte(comm, 0); i >= 0 {
		comm = comm[:i]
	}
	k.comm = string(comm)
	switch {
	case k.pid <= 0:
		return kinfo{}, fmt.Errorf("kinfo_proc has pid %d: %w", k.pid, ErrMalformed)
	case k.ppid < 0:
		return kinfo{}, fmt.Errorf("kinfo_proc of pid %d has ppid %d: %w", k.pid, k.ppid, ErrMalformed)
	case k.comm == "":
		return kinfo{}, fmt.Errorf("kinfo_proc of pid %d has an empty p_comm: %w", k.pid, ErrMalformed)
	case k.sec <= 0 || k.usec < 0 || k.usec > 999999:
		return kinfo{}, fmt.Errorf("kinfo_proc of pid %d has start time %d s %d us: %w", k.pid, k.sec, k.usec, ErrMalformed)
	}
	return k, nil
}

// startTime formats the macOS StartTime: "<tv_sec>.<tv_usec as 6 digits>".
func (k kinfo) startTime() string {
	return strconv.FormatInt(k.sec, 10) + "." + fmt.Sprintf("%06d", k.usec)
}

// process converts k to a Process with the given args.
func (k kinfo) process(args []string) Process {
	return Process{PID: k.pid, PPID: k.ppid, Name: k.comm, Args: args, StartTime: k.startTime()}
}

// decodeProcArgs decodes a kern.procargs2 record: a little-endian int32
// argc, the executable path NUL-terminated, NUL padding, then argc
// NUL-terminated arguments, then the environment (ignored). Trailing empty
// arguments are dropped, as on Linux, since a retitled process (node, npm)
// leaves its old argument area NUL-padded. Errors wrap ErrMalformed.
func decodeProcArgs(b []byte) ([]string, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("procargs2 is %d bytes: %w", len(b), ErrMalformed)
	}
	argc := int32(binary.LittleEndian.Uint32(b))
	if argc < 0 || int(argc) > len(b) {
		return nil, fmt.Errorf("procargs2 has argc %d: %w", argc, ErrMalformed)
	}
	rest := b[4:]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return nil, fmt.Errorf("procargs2 has no executable path: %w", ErrMalformed)
	}
	rest = bytes.TrimLeft(rest[i:], "\x00")
	args := make([]string, 0, argc)
	for len(args) < int(argc) {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return nil, fmt.Errorf("procargs2 ends after %d of %d arguments: %w", len(args), argc, ErrMalformed)
		}
		args = append(args, string(rest[:i]))
		rest = rest[i+1:]
	}
	for len(args) > 0 && args[len(args)-1] == "" {
		args = args[:len(args)-1]
	}
	if len(args) == 0 {
		return nil, nil
	}
	return args, nil
}

// startTimeMatches reports whether the macOS start time have
// ("<tv_sec>.<tv_usec>") is the one recorded as want. Hosts that cannot read
// microseconds (Node has no sysctl; it reads ps's whole seconds) record
// "<tv_sec>": that matches on seconds alone. Erring towards "alive" only ever
// keeps a file that prune could have deleted, never resumes a session.
func startTimeMatches(have, want string) bool {
	if have == want {
		return true
	}
	sec, _, ok := strings.Cut(have, ".")
	return ok && !strings.Contains(want, ".") && want == sec
}
