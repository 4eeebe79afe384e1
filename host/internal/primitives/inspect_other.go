//go:build !linux && !darwin

package primitives

// peer answers "peer": SO_PEERCRED is read on Linux only.
func peer(int) result { return failed(unsupported("SO_PEERCRED is read on Linux only")) }

// sysctlProc answers "sysctl": macOS only.
func sysctlProc(int) result { return failed(unsupported("sysctl kern.proc.pid exists on macOS only")) }

// sysctlProcargs answers "procargs": macOS only.
func sysctlProcargs(int) result {
	return failed(unsupported("sysctl kern.procargs2 exists on macOS only"))
}

// exeStat answers "exe": /proc exists on Linux only.
func exeStat(string, string) result { return failed(unsupported("no /proc on this system")) }
