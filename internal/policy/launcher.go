package policy

import (
	"path"
	"strings"
)

// This file is the one place in the repository that lists launchers, shells,
// node tools and reapers (issue 9: no list or rule exists twice).

// defaultLaunchers are the process names the walk always treats as
// launchers: processes that sit between an MCP host and the stdio server it
// starts and live only as long as that server. The shells among them count
// only when they run a command (see the package documentation). Read it
// through [DefaultLaunchers], which returns a copy; add names with the open
// option "launchers" or [EnvLaunchers].
var defaultLaunchers = []string{
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

// DefaultLaunchers returns a copy of the default launcher names, in the
// order of the package documentation.
func DefaultLaunchers() []string {
	return append([]string(nil), defaultLaunchers...)
}

// Reapers returns a copy of the names of init systems, supervisors and
// subreapers that are never taken for the MCP host.
func Reapers() []string {
	return append([]string(nil), reapers...)
}

// LauncherSet is the set of launcher names in effect for one store: the
// defaults plus the names the server declared and those of [EnvLaunchers].
// Build it with [NewLauncherSet].
type LauncherSet map[string]bool

// NewLauncherSet returns the default launchers plus extra (the open option
// "launchers") plus the comma-separated names in env (the value of
// MCP_RESUME_LAUNCHERS, for example "my-wrapper,direnv"). Spaces around
// names and empty names are ignored. Neither can remove a default.
func NewLauncherSet(extra []string, env string) LauncherSet {
	set := make(LauncherSet, len(defaultLaunchers)+len(extra))
	for _, n := range defaultLaunchers {
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
func (set LauncherSet) isLauncher(p Process) bool {
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
