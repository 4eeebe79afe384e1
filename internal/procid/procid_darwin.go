//go:build darwin

package procid

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Compile-time checks that kinfo.go's offsets match unix.KinfoProc: each
// pair of constants overflows uintptr, failing the build, unless the two
// sides are equal.
var layout unix.KinfoProc

const (
	_ = uintptr(unsafe.Sizeof(layout) - kinfoSize)
	_ = uintptr(kinfoSize - unsafe.Sizeof(layout))
	_ = uintptr(unsafe.Offsetof(layout.Proc) + unsafe.Offsetof(layout.Proc.P_starttime) - kinfoStartSec)
	_ = uintptr(kinfoStartSec - unsafe.Offsetof(layout.Proc) - unsafe.Offsetof(layout.Proc.P_starttime))
	_ = uintptr(unsafe.Offsetof(layout.Proc.P_starttime.Usec) - kinfoStartUsec)
	_ = uintptr(kinfoStartUsec - unsafe.Offsetof(layout.Proc.P_starttime.Usec))
	_ = uintptr(unsafe.Offsetof(layout.Proc.P_stat) - kinfoStat)
	_ = uintptr(kinfoStat - unsafe.Offsetof(layout.Proc.P_stat))
	_ = uintptr(unsafe.Offsetof(layout.Proc.P_pid) - kinfoPID)
	_ = uintptr(kinfoPID - unsafe.Offsetof(layout.Proc.P_pid))
	_ = uintptr(unsafe.Offsetof(layout.Proc.P_comm) - kinfoComm)
	_ = uintptr(kinfoComm - unsafe.Offsetof(layout.Proc.P_comm))
	_ = uintptr(unsafe.Sizeof(layout.Proc.P_comm) - kinfoCommLen)
	_ = uintptr(kinfoCommLen - unsafe.Sizeof(layout.Proc.P_comm))
	_ = uintptr(unsafe.Offsetof(layout.Eproc) + unsafe.Offsetof(layout.Eproc.Ppid) - kinfoPPID)
	_ = uintptr(kinfoPPID - unsafe.Offsetof(layout.Eproc) - unsafe.Offsetof(layout.Eproc.Ppid))
)

// darwinSource reads processes with sysctl kern.proc.pid and kern.procargs2.
type darwinSource struct{}

// newSource returns the macOS process source.
func newSource() (source, error) {
	return darwinSource{}, nil
}

// kinfo reads and decodes struct kinfo_proc for pid. Errors wrap ErrNotFound
// when the process does not exist.
func (darwinSource) kinfo(pid int) (kinfo, error) {
	if pid <= 0 {
		return kinfo{}, fmt.Errorf("pid %d is not positive: %w", pid, ErrNotFound)
	}
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return kinfo{}, fmt.Errorf("sysctl kern.proc.pid: %w", ErrNotFound)
		}
		return kinfo{}, fmt.Errorf("sysctl kern.proc.pid: %w", err)
	}
	if len(b) == 0 {
		return kinfo{}, fmt.Errorf("sysctl kern.proc.pid: %w", ErrNotFound)
	}
	k, err := decodeKinfo(b)
	if err != nil {
		return kinfo{}, fmt.Errorf("sysctl kern.proc.pid: %w", err)
	}
	if k.pid != pid {
		return kinfo{}, fmt.Errorf("sysctl kern.proc.pid returned pid %d: %w", k.pid, ErrMalformed)
	}
	return k, nil
}

// lookup implements source. Args are best effort: the kernel gives
// kern.procargs2 only for the caller's own user's processes (or to root).
func (s darwinSource) lookup(pid int) (Process, error) {
	k, err := s.kinfo(pid)
	if err != nil {
		return Process{}, err
	}
	var args []string
	if b, err := unix.SysctlRaw("kern.procargs2", pid); err == nil {
		args, _ = decodeProcArgs(b)
	}
	return k.process(args), nil
}

// alive implements source. A zombie is not alive. A want of whole seconds
// (written by the TypeScript host, which reads start times with ps) matches
// on tv_sec alone; see startTimeMatches.
func (s darwinSource) alive(pid int, want string) (bool, error) {
	k, err := s.kinfo(pid)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	if k.stat == darwinZombie {
		return false, nil
	}
	return startTimeMatches(k.startTime(), want), nil
}
