package procid

import (
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// HostRef names the host a token or lock file was written under: the pid
// and start time parsed from its name.
type HostRef struct {
	PID       int
	StartTime string
}

// Liveness reports, for each ref, whether that host process is still
// running: hostfuncs.HostAlive (that pid runs with that start time), hostfuncs.HostGone
// (no such process, a zombie, or the pid now names another process or boot)
// or hostfuncs.HostUnknown (cannot tell). It is how a stale file is recognised
// (spec 000, "PID Reuse").
//
// Linux: one call per 20 files reads /proc/<pid>/stat, asks kill(pid, 0)
// and stats /proc/<pid>/exe for each, after the own-/proc check, the boot
// ID and the PID namespace. A host whose image differs from the one in the
// name exec'd into another program (or its pid was reused): gone; an image
// that cannot be read: unknown.
// Unknown: any of those three fails (a /proc of another PID namespace), a
// start time recorded in another PID namespace, a stat that is missing while
// kill answers anything but not_found (hidden by hidepid, fault 12), or any
// answer that is not usable. A start time in another format (another boot,
// another system) names a process that is gone.
//
// macOS: one call asks sysctl for every file; where the host answers
// unsupported, one more call asks ps. A zombie is gone.
//
// Other systems, and a host function that gives no usable answer: unknown.
// Unknown never means gone: prune keeps such a file until it is old.
func Liveness(f hostfuncs.Facts, in Inspector, refs []HostRef) []string {
	out := make([]string, len(refs))
	for i := range out {
		out[i] = hostfuncs.HostUnknown
	}
	if f.PID <= 0 {
		return out
	}
	switch f.OS {
	case "linux":
		const per = (hostfuncs.MaxInspectOps - 3) / 3
		for lo := 0; lo < len(refs); lo += per {
			hi := min(lo+per, len(refs))
			ops := baseOps()
			for _, r := range refs[lo:hi] {
				ops = append(ops, opStat(r.PID), opPID(hostfuncs.OpKill0, r.PID), opPID(hostfuncs.OpExe, r.PID))
			}
			res, err := inspect(in, ops)
			if err != nil {
				continue
			}
			base, err := checkBase(f.PID, res)
			if err != nil {
				continue
			}
			for i, r := range refs[lo:hi] {
				out[lo+i] = linuxAlive(base, r.PID, r.StartTime, res[3+3*i], res[4+3*i], res[5+3*i])
			}
		}
	case "darwin":
		var retry []int // indexes to ask ps about
		for lo := 0; lo < len(refs); lo += hostfuncs.MaxInspectOps {
			hi := min(lo+hostfuncs.MaxInspectOps, len(refs))
			var ops []hostfuncs.InspectOp
			for _, r := range refs[lo:hi] {
				ops = append(ops, opPID(hostfuncs.OpSysctl, r.PID))
			}
			res, err := inspect(in, ops)
			if err != nil {
				continue
			}
			for i, r := range refs[lo:hi] {
				if code(res[i]) == hostfuncs.CodeUnsupported {
					retry = append(retry, lo+i)
					continue
				}
				out[lo+i] = darwinAlive(r.PID, r.StartTime, res[i], false)
			}
		}
		for lo := 0; lo < len(retry); lo += hostfuncs.MaxInspectOps {
			idx := retry[lo:min(lo+hostfuncs.MaxInspectOps, len(retry))]
			var ops []hostfuncs.InspectOp
			for _, i := range idx {
				ops = append(ops, opPID(hostfuncs.OpPs, refs[i].PID))
			}
			res, err := inspect(in, ops)
			if err != nil {
				continue
			}
			for j, i := range idx {
				out[i] = darwinAlive(refs[i].PID, refs[i].StartTime, res[j], true)
			}
		}
	}
	return out
}
