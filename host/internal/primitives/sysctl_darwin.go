package primitives

import "golang.org/x/sys/unix"

// macOS answers "sysctl" and "procargs" (sysctl in inspect.go); it has no
// SO_PEERCRED (its LOCAL_PEERPID is not what the contract asks for), so
// "peer" answers unsupported and the plugin decides without it.
func init() { sysctlRaw = unix.SysctlRaw }
