package resume

// The instance key as the system shows it: the launch (program, arguments
// and environment as exec'd, working directory) and the namespaces of the
// server, read through mcp_resume_inspect when the identity is first
// resolved (README.md, "Several instances under one host").

import (
	"bytes"
	"strconv"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/procid"
)

// KeyNamespaces are the namespaces that are part of every instance key
// material, in the order KeyMaterial writes them: each is a view of the
// system a server can be launched into (ip netns exec, unshare, a
// container) while its MCP host stays the same. The PID namespace is
// already part of the host's start time.
var KeyNamespaces = []string{"net", "mnt", "uts", "ipc", "user", "cgroup"}

// keyDone is what the key step settled: the suffix of the file names and
// the marker name, or why resume is off.
type keyDone struct {
	suffix string // "" for the plain spec names
	marker string // "" when no marker applies (no instance)
	event  string // EventKeyUnreadable or EventKeyInexact when problem is set
	msg    string
	detail string
}

// nsFix ends every message about a namespace that could not be read.
const nsFix = "; the namespaces are part of every instance key, so declaring MCP_RESUME_INSTANCE (or the instance option) does not help: run the server where /proc/self/ns is readable (a /proc mounted for its PID namespace), or set MCP_RESUME=off to silence this"

// launchFix ends every message about the launch (program, arguments,
// environment) that could not be read.
const launchFix = "; the default instance key needs it to tell this server's launches apart: give this server entry its own instance name (MCP_RESUME_INSTANCE or the instance option), which replaces the default key"

// keyFor reads what the instance key of server pid (PIDSelf for this
// process) is made of and returns the names' suffix and marker, or a
// problem. host is the resolved MCP host's pid, whose namespaces are read
// when there is no instance key: a server in the host's namespaces with no
// instance keeps the plain token-<pid>-<start_time>. cwd is the server's
// working directory (facts.cwd); withDefault is false when the default key
// cannot be computed for pid (another process, whose cwd is unknown), and
// then suffix and marker are "" for the default key.
func (s *Store) keyFor(pid string, host int, cwd string, withDefault bool) keyDone {
	f := s.facts
	key, declared := s.cfg.InstanceKey, !s.cfg.DefaultKey
	var launch Launch
	var namespaces []string
	switch f.OS {
	case "linux":
		var ops []hostfuncs.InspectOp
		wantLaunch := !declared && withDefault
		if wantLaunch {
			ops = append(ops, hostfuncs.InspectOp{Op: hostfuncs.OpCmdline, PID: pid}, hostfuncs.InspectOp{Op: hostfuncs.OpEnviron, PID: pid})
		}
		for _, n := range KeyNamespaces {
			ops = append(ops, hostfuncs.InspectOp{Op: hostfuncs.OpNS, PID: pid, NS: n})
		}
		hostNS := declared && key == ""
		if hostNS {
			for _, n := range KeyNamespaces {
				ops = append(ops, hostfuncs.InspectOp{Op: hostfuncs.OpNS, PID: strconv.Itoa(host), NS: n})
			}
		}
		res, err := s.inspect(ops)
		if err == nil && len(res) != len(ops) {
			err = &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: "mcp_resume_inspect answered " + strconv.Itoa(len(res)) + " results for " + strconv.Itoa(len(ops)) + " operations"}
		}
		if err != nil {
			return unreadable("cannot inspect the server process for its instance key: " + err.Error() + launchFix)
		}
		who := "/proc/" + pid
		if wantLaunch {
			if p := procData(res[0], who+"/cmdline", "the server's program and arguments as exec'd", hostfuncs.MaxProcRead); p != "" {
				return unreadable(p + launchFix)
			}
			if p := procData(res[1], who+"/environ", "the server's environment as exec'd", hostfuncs.MaxProcTableRead); p != "" {
				return unreadable(p + launchFix)
			}
			launch.Args = splitNUL(res[0].Data)
			launch.Env = splitNUL(res[1].Data)
			res = res[2:]
		}
		for i, n := range KeyNamespaces {
			if res[i].Error != nil || res[i].Target == "" {
				return unreadable("cannot read " + who + "/ns/" + n + " (the server's " + n + " namespace): " + resultText(res[i]) + nsFix)
			}
			namespaces = append(namespaces, res[i].Target)
		}
		if hostNS {
			same := true
			for i, n := range KeyNamespaces {
				r := res[len(KeyNamespaces)+i]
				if r.Error != nil || r.Target == "" {
					return unreadable("cannot read /proc/" + strconv.Itoa(host) + "/ns/" + n + " (the " + n + " namespace of the MCP host, pid " + strconv.Itoa(host) + "): " + resultText(r) +
						"; with no instance key the server's namespaces are compared with the host's, so declaring MCP_RESUME_INSTANCE=- does not help: run the server as the host's user, or set MCP_RESUME=off to silence this")
				}
				same = same && r.Target == namespaces[i]
			}
			if same {
				return keyDone{}
			}
		}
	case "darwin":
		// No namespaces; with no instance the plain names stay.
		if declared && key == "" {
			return keyDone{}
		}
		if !declared && withDefault {
			var d keyDone
			if launch, d = s.darwinLaunch(); d.event != "" {
				return d
			}
		}
	default:
		return unreadable("process identity is not supported on " + strconv.Quote(f.OS))
	}
	if !declared {
		if !withDefault {
			return keyDone{}
		}
		launch.Cwd = cwd
		key = DefaultInstanceKey(launch)
	}
	suffix, err := InstanceSuffix(s.call, KeyMaterial(namespaces, key))
	if err != nil {
		return unreadable("the host cannot compute the instance key's digest (mcp_resume_crypto sha256): " + err.Error())
	}
	d := keyDone{suffix: suffix}
	if key != "" {
		d.marker = MarkerPrefix + suffix
	}
	return d
}

// darwinLaunch reads the server's launch on macOS: kern.procargs2 of the
// server (argv and environment as exec'd: Go and Python hosts), else, where
// the host cannot call sysctl (Node), ps's args line and facts.env, the
// environment at import of the binding.
func (s *Store) darwinLaunch() (Launch, keyDone) {
	pid := strconv.Itoa(s.facts.PID)
	res, err := s.inspect([]hostfuncs.InspectOp{{Op: hostfuncs.OpProcargs, PID: pid}})
	if err != nil {
		return Launch{}, unreadable("cannot inspect the server process for its instance key: " + err.Error() + launchFix)
	}
	if res[0].Error == nil {
		args, env, err := procid.DecodeProcArgs2(res[0].Data)
		if err != nil {
			return Launch{}, unreadable("cannot read the server's program, arguments and environment as exec'd (kern.procargs2 of pid " + pid + "): " + err.Error() + launchFix)
		}
		return Launch{Args: args, Env: env}, keyDone{}
	}
	if res[0].Error.Code != hostfuncs.CodeUnsupported {
		return Launch{}, unreadable("cannot read the server's program, arguments and environment as exec'd (kern.procargs2 of pid " + pid + "): " + resultText(res[0]) + launchFix)
	}
	if res, err = s.inspect([]hostfuncs.InspectOp{{Op: hostfuncs.OpPs, PID: pid}}); err != nil || res[0].Error != nil || len(bytes.TrimSpace(res[0].Args)) == 0 {
		why := "no arguments"
		switch {
		case err != nil:
			why = err.Error()
		case res[0].Error != nil:
			why = resultText(res[0])
		}
		return Launch{}, unreadable("cannot read the server's program and arguments (ps -p " + pid + "): " + why + launchFix)
	}
	if p := envProblem(s.facts.Env); p != "" {
		return Launch{}, keyDone{event: EventKeyInexact, msg: MsgKeyInexact, detail: p}
	}
	return Launch{PSArgs: string(bytes.TrimSpace(res[0].Args)), Env: envEntries(s.facts.Env)}, keyDone{}
}

// unreadable is the key problem detail for something that could not be read.
func unreadable(detail string) keyDone {
	return keyDone{event: EventKeyUnreadable, msg: MsgKeyUnreadable, detail: detail}
}

// procData returns "" when r is a usable answer to a read of path, else
// what went wrong: an error, or an answer of max bytes (the file may have
// been longer: cannot tell).
func procData(r hostfuncs.InspectResult, path, what string, max int) string {
	switch {
	case r.Error != nil:
		return "cannot read " + path + " (" + what + "): " + resultText(r)
	case len(r.Data) >= max:
		return "cannot read " + path + " (" + what + ") whole: it is " + strconv.Itoa(max) + " bytes or longer"
	case len(r.Data) == 0 && path[len(path)-len("cmdline"):] == "cmdline":
		return "cannot read " + path + " (" + what + "): it is empty"
	}
	return ""
}

// resultText is an inspect result's error as "<code>: <message>".
func resultText(r hostfuncs.InspectResult) string {
	if r.Error == nil {
		return "the answer has no target"
	}
	return r.Error.Code + ": " + r.Error.Message
}

// splitNUL splits a /proc list of NUL-terminated strings (cmdline,
// environ) exactly: one string per terminator, empty ones included; bytes
// after the last NUL (a process that rewrote its argument area) are one
// more string.
func splitNUL(b []byte) []string {
	out := []string{}
	for len(b) > 0 {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			out = append(out, string(b))
			break
		}
		out = append(out, string(b[:i]))
		b = b[i+1:]
	}
	return out
}
