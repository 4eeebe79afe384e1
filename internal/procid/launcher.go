package procid

import (
	"path"
	"strings"
)

// DefaultLaunchers are the process names [HostOf] always treats as launchers:
// processes that sit between an MCP host and the stdio server it starts and
// live only as long as that server. The shells among them count only when
// they run a command (see the package documentation). It is read on every
// call and must not be modified; add names with [Options.Launchers] or
// [LaunchersEnv] instead.
var DefaultLaunchers = []string{
	// Shells, as used by "sh -c", spawn(..., {shell: true}) and wrapper scripts.
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish",
	// Command wrappers that exec or wait for one command.
	"env", "nice", "nohup", "setsid", "stdbuf", "time", "timeout", "ionice", "taskset", "chrt",
	// Python runners.
	"uv", "uvx", "pipx", "poetry", "hatch", "pdm",
	// JavaScript runners.
	"npm", "npx", "pnpm", "pnpx", "yarn", "bunx",
}

// shells are the launcher names that count only when their arguments show
// they run a command; an interactive shell is a host.
var shells = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "fish": true,
}

// nodeTools are the scripts that make a node process a launcher, without
// their .js, .cjs or .mjs extension.
var nodeTools = map[string]bool{
	"npm": true, "npx": true, "npm-cli": true, "npx-cli": true,
	"pnpm": true, "pnpx": true, "yarn": true, "yarnpkg": true,
}

// reapers are init systems, supervisors and subreapers: processes that adopt
// orphans or start unrelated services and so must never be taken for a host.
var reapers = []string{
	"init", "systemd", "launchd", "kthreadd",
	"tini", "docker-init", "dumb-init", "catatonit",
	"s6-svscan", "s6-supervise", "runit", "runsv", "runsvdir", "openrc-init",
	"containerd-shim", "containerd-shim-runc-v2", "conmon",
}

// launcherSet is the set of launcher names in effect for one resolution.
type launcherSet map[string]bool

// newLauncherSet returns DefaultLaunchers plus extra plus the comma-separated
// names in env (the value of LaunchersEnv).
func newLauncherSet(extra []string, env string) launcherSet {
	set := make(launcherSet, len(DefaultLaunchers)+len(extra))
	for _, n := range DefaultLaunchers {
		set[n] = true
	}
	for _, n := range extra {
		if n = strings.TrimSpace(n); n != "" {
			set[n] = true
		}
	}
	for _, n := range strings.Split(env, ",") {
		if n = strings.TrimSpace(n); n != "" {
			set[n] = true
		}
	}
	return set
}

// isLauncher reports whether p is a launcher under set; see the package
// documentation for the rule.
func (set launcherSet) isLauncher(p Process) bool {
	if isNPMExecTitle(p.Name) {
		return true
	}
	arg0 := ""
	if len(p.Args) > 0 {
		arg0 = p.Args[0]
		if isNPMExecTitle(arg0) {
			return true
		}
		arg0 = path.Base(arg0)
	}
	if len(p.Args) > 1 {
		switch arg0 {
		case "node", "nodejs":
			tool := path.Base(p.Args[1])
			for _, ext := range []string{".js", ".cjs", ".mjs"} {
				tool = strings.TrimSuffix(tool, ext)
			}
			if nodeTools[tool] {
				return true
			}
		case "bun":
			if p.Args[1] == "x" {
				return true
			}
		}
	}
	for name := range set {
		if !nameMatches(p.Name, name) && arg0 != name {
			continue
		}
		if !shells[name] || runsCommand(p.Args) {
			return true
		}
	}
	return false
}

// isNPMExecTitle reports whether s is the process title npm exec (and so
// npx) gives itself, such as "npm exec foo" or "npm x foo", or a 15-byte
// truncation of one.
func isNPMExecTitle(s string) bool {
	return s == "npm exec" || s == "npm x" ||
		strings.HasPrefix(s, "npm exec ") || strings.HasPrefix(s, "npm x ")
}

// runsCommand reports whether a shell with arguments args runs a command
// rather than an interactive session: an option cluster with 'c' ("-c",
// "-lc"), --command, or an operand such as a script path. Unknown args (nil)
// report false.
func runsCommand(args []string) bool {
	if len(args) < 2 {
		return false
	}
	for _, a := range args[1:] {
		switch {
		case a == "--command" || strings.HasPrefix(a, "--command="):
			return true
		case a == "-" || a == "--" || strings.HasPrefix(a, "--"):
			continue
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			if strings.Contains(a[1:], "c") {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// nameMatches reports whether a kernel process name matches want, allowing
// for truncation: Linux keeps 15 bytes of comm and macOS 16 of p_comm, so a
// name of 15 or more bytes also matches any longer want it is a prefix of.
func nameMatches(name, want string) bool {
	if name == want {
		return true
	}
	return len(name) >= 15 && strings.HasPrefix(want, name)
}

// isReaper reports whether p is PID 0 or 1 or an init or reaper by Name or
// the base name of Args[0].
func isReaper(p Process) bool {
	if p.PID <= 1 {
		return true
	}
	arg0 := ""
	if len(p.Args) > 0 {
		arg0 = path.Base(p.Args[0])
	}
	for _, r := range reapers {
		if nameMatches(p.Name, r) || arg0 == r {
			return true
		}
	}
	return false
}
