//go:build darwin

package procid

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Compile-time checks that darwin.go's kinfo_proc offsets match
// unix.KinfoProc: each pair of constants overflows uintptr, failing the
// build (GOOS=darwin go vet compiles this file), unless the two sides are
// equal.
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
	_ = uintptr(unsafe.Offsetof(layout.Eproc) + unsafe.Offsetof(layout.Eproc.Tdev) - kinfoTdev)
	_ = uintptr(kinfoTdev - unsafe.Offsetof(layout.Eproc) - unsafe.Offsetof(layout.Eproc.Tdev))
)
