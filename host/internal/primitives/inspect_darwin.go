//go:build darwin

package primitives

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// peer answers "peer": macOS has no SO_PEERCRED (its LOCAL_PEERPID is not
// what the contract asks for), so the plugin decides without it.
func peer(int) result { return failed(unsupported("no SO_PEERCRED on macOS")) }

// sysctlProc returns the raw struct kinfo_proc of pid from sysctl
// kern.proc.pid.<pid>; an empty answer or ESRCH is not_found. The plugin
// decodes it (start time, parent, name, state).
func sysctlProc(pid int) result {
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return failed(osError("sysctl kern.proc.pid", err, false))
	}
	if len(b) == 0 {
		return failed(&hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: "sysctl kern.proc.pid: no such process"})
	}
	return result{"data": b}
}

// sysctlProcargs returns the raw sysctl kern.procargs2.<pid>. The kernel
// answers EPERM or EINVAL for another user's process: permission.
func sysctlProcargs(pid int) result {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	switch {
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EPERM):
		return failed(&hostfuncs.Error{Code: hostfuncs.CodePermission, Message: "sysctl kern.procargs2: " + err.Error()})
	case err != nil:
		return failed(osError("sysctl kern.procargs2", err, false))
	case len(b) == 0:
		return failed(&hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: "sysctl kern.procargs2: no such process"})
	}
	return result{"data": b}
}

// exeStat answers "exe": /proc exists on Linux only.
func exeStat(string, string) result { return failed(unsupported("no /proc on this system")) }
