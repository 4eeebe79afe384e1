package procid

import (
	"path"
	"strings"
)

// This file is the one place in the repository that lists launchers, shells,
// node tools and reapers: no list or rule exists twice, so a name added here
// reaches every host language through the plugin.

// defaultLaunchers are the process names the walk always treats as
// launchers: processes that sit between an MCP host and the stdio server it
// starts and live only as long as that server. The shells among them count
// only when they run a command (see the package documentation). Add names
// with the open option "launchers" or [EnvLaunchers] ([NewLauncherSet]).
//
// The runners, as observed (pnpm 12.21.0, yarn 1.22.22, bun 1.4.5, deno
// 2.9.6, uv, pdm, hatch, poetry and pipx from PyPI): each runs one script or
// command as its child and exits with it, or replaces itself with it, and
// none holds another session, so each is a launcher:
//
//   - npm run/start/test/... and npm exec/npx: npm retitles itself (see
//     isNPMTitle).
//   - pnpm (native binary, comm pnpm, also pn, pnpx and pnx; or node
//     running pnpm.cjs): "pnpm start" runs "sh -c <script>" as its child.
//   - yarn: node running yarn.js ("yarn start", "yarn <script>" run "/bin/sh
//     -c <script>").
//   - bun x / bunx, bun run <script>: the script's command is bun's child
//     (see bunRunsScript).
//   - deno task: the task's command is deno's child.
//   - uv run, uv tool run, uvx (which execs "uv tool uvx"): comm uv.
//   - pdm run, hatch run: python running the pdm or hatch script, comm pdm
//     or hatch; hatch runs the command through "sh -c".
//   - poetry run, pipx run: exec the command, so no process of theirs is
//     left above the server; their names stay on the list for older
//     versions.
//
// sudo, doas, su and similar are deliberately absent: they change the user,
// and a session must not be resumed across users.
var defaultLaunchers = []string{
	// Shells, as used by "sh -c", spawn(..., {shell: true}) and wrapper scripts.
	"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish",
	// Command wrappers that exec or wait for one command.
	"env", "nice", "nohup", "setsid", "stdbuf", "time", "timeout", "ionice", "taskset", "chrt",
	// Python runners.
	"uv", "uvx", "pipx", "poetry", "hatch", "pdm",
	// JavaScript runners.
	"npm", "npx", "pnpm", "pnpx", "pn", "pnx", "yarn", "bunx",
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

// sharedServers are the processes that are never taken for the MCP host,
// because every session they serve, of any user or terminal, has them as
// its parent:
//
//   - Remote-login servers. With ssh connection sharing (ControlMaster,
//     ControlPersist) every channel of one connection, so every "ssh host
//     server" run by any local MCP host, is a child of the same "sshd:
//     user@notty" process (comm sshd, or sshd-session from OpenSSH 9.8),
//     which also holds the channel's pipes. Without sharing each launch gets
//     a new sshd and a resume could never happen anyway.
//   - Terminal multiplexers: one server process ("tmux: server", SCREEN,
//     zellij --server, dtach, abduco) is the parent of every window and pane.
//   - Terminal emulators and terminal servers: one process (often a single
//     server for all windows: gnome-terminal-server, kitty, wezterm,
//     konsole, foot --server, urxvtd) is the parent of every tab's shell.
//     Terminals that are themselves MCP hosts (VS Code, Warp and other
//     editors or AI terminals) are deliberately absent: their own servers
//     must resume, and a terminal tab's interactive shell is a host of its
//     own before the walk reaches them.
//
// The list also holds, marked gateway, the MCP gateways and proxies that
// expose stdio servers to remote clients (supergateway, mcp-proxy, mcpo,
// mcp-hub, mcphub): one process serves every client that connects over the
// network, and each server it starts has it as its parent. They are the
// MCP host, so the walk takes them: the trust rule refuses them
// (CheckTrust, rule 1; trust.go), which a deployer can skip (MCP_RESUME=on,
// or a per-tenant MCP_RESUME_INSTANCE the gateway sets). The rule that
// catches them and their unlisted kin is the listening socket (rules 2 and
// 3); the names are defence in depth.
//
// Each entry is a kind, worded for the message after "the host would be pid
// N (...), ", and its names, separated and surrounded by spaces: a string
// rather than a slice or map, so that the list is static data in the plugin.
// gateway marks the entry the trust rule checks instead of the walk.
var sharedServers = [...]struct {
	kind, names string
	gateway     bool
}{
	{"a remote-login server that every channel of a shared connection (ssh ControlMaster) runs under",
		" sshd sshd-session dropbear mosh-server telnetd in.telnetd rlogind in.rlogind rshd in.rshd ", false},
	{"a terminal multiplexer that every window and pane shares",
		" tmux screen SCREEN zellij dtach abduco byobu ", false},
	{"a terminal emulator or terminal server that every tab's shell shares",
		" gnome-terminal-server gnome-terminal kgx ptyxis ptyxis-agent konsole yakuake" +
			" xterm uxterm rxvt urxvt urxvtd rxvt-unicode kitty alacritty foot footclient" +
			" wezterm wezterm-gui wezterm-mux-server tilix terminator xfce4-terminal mate-terminal" +
			" lxterminal qterminal terminology sakura guake tilda st ghostty contour" +
			" cool-retro-term deepin-terminal cosmic-term blackbox rio Terminal iTerm2 iTermServer ", false},
	{"an MCP gateway or proxy that exposes stdio servers to remote clients",
		" supergateway mcp-proxy mcpo mcp-hub mcphub ", true},
}

// sharedServerKind returns what kind of shared server p is (see
// [sharedServers]), or "" when it is none. The candidates are Name, the
// base name of Args[0], and each of them cut before a ": " title ("sshd:
// alice@notty", "tmux: server"). A candidate matches a listed name exactly;
// a Name of 15 or more bytes also matches every listed name it is a prefix
// of (comm truncation, as for reapers: "gnome-terminal-"). The gateway
// entry is not checked here: gateways are hosts, refused by the trust rule
// (gatewayKind, trust.go).
func sharedServerKind(p Process) string {
	title := func(s string) string {
		if i := strings.Index(s, ": "); i > 0 {
			return s[:i]
		}
		return s
	}
	var cands [4]string
	cands[0], cands[1] = p.Name, title(p.Name)
	if len(p.Args) > 0 {
		cands[2], cands[3] = path.Base(p.Args[0]), path.Base(title(p.Args[0]))
	}
	for _, s := range sharedServers {
		if s.gateway {
			continue
		}
		for i, c := range cands {
			if c == "" || strings.ContainsRune(c, ' ') {
				continue
			}
			if strings.Contains(s.names, " "+c+" ") || i < 2 && len(c) >= 15 && strings.Contains(s.names, " "+c) {
				return s.kind
			}
		}
	}
	return ""
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
	if isNPMTitle(p.Name) {
		return true
	}
	arg0 := ""
	if len(p.Args) > 0 {
		arg0 = p.Args[0]
		if isNPMTitle(arg0) {
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
			if nodeTools[tool] || isYarnRelease(tool) {
				return true
			}
		case "bun":
			if bunRunsScript(p.Args[1:]) {
				return true
			}
		case "deno":
			if firstWord(p.Args[1:]) == "task" {
				return true
			}
		}
	}
	for name := range set {
		if !nameMatches(p.Name, name) && arg0 != name {
			continue
		}
		spec, shell := shellSpecOf(name)
		if !shell || spec.runsCommand(p.Args) {
			return true
		}
	}
	return false
}

// isYarnRelease reports whether tool (a base name without extension) is a
// Yarn 2+ release file, as a project pins it in .yarn/releases and runs it
// with node: "yarn-4.5.0" from "yarn-4.5.0.cjs".
func isYarnRelease(tool string) bool {
	v, ok := strings.CutPrefix(tool, "yarn-")
	return ok && v != "" && v[0] >= '0' && v[0] <= '9'
}

// isNPMTitle reports whether s is a process title npm gives itself: "npm",
// a space and the command line's positional words, such as "npm exec foo",
// "npm x foo", "npm start", "npm run dev --port" or "npm run-script dev",
// or the 15-byte truncation of one in comm ("npm run-script "). npm 7 and
// later set process.title to "npm" and the positional arguments once the
// command is parsed (npm 11.19.1, lib/npm.js; options are left out so that
// secrets do not show), which overwrites both comm and the argument area.
// Every npm command is a launcher, whatever its name: an npm process is one
// CLI invocation that runs at most one script or package binary at a time
// (exec, run, start, test, restart, stop, their aliases and abbreviations)
// and exits when it is done, and it holds no session of its own, just as
// the name "npm" is a launcher before the title is set.
func isNPMTitle(s string) bool {
	return strings.HasPrefix(s, "npm ") && len(s) > len("npm ")
}

// firstWord returns the first of args that does not start with '-', or ""
// when there is none.
func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// bunRunsScript reports whether bun, with arguments args after its own
// name, runs a package script or a package binary in a child process and
// waits for it: "bun x ...", "bun run <script>" or "bun <script>", where the
// script is not a file. A file ("bun run host.ts", "bun ./cli.js": anything
// with a '/' or a JavaScript or TypeScript extension) runs inside the bun
// process, which is then a program in its own right and may be the MCP host;
// so do bun's own commands (install, build, repl, test, ...). Observed with
// bun 1.4.5: under "bun run who" and "bun who" the script's command is a
// direct child of bun, and under a script "bun host.js" the file runs in a
// second bun process.
func bunRunsScript(args []string) bool {
	w, rest, ok := bunWord(args)
	switch {
	case !ok:
		return false
	case w == "x":
		return true
	case w == "run":
		if w, _, ok = bunWord(rest); !ok {
			return false
		}
	}
	// bun's own commands, which start nothing.
	if w == "" || strings.Contains(" install i add a remove rm update link unlink pm build init create c upgrade repl test publish outdated patch info audit help ", " "+w+" ") {
		return false
	}
	if strings.Contains(w, "/") {
		return false
	}
	for _, ext := range []string{".js", ".cjs", ".mjs", ".jsx", ".ts", ".cts", ".mts", ".tsx"} {
		if strings.HasSuffix(w, ext) {
			return false
		}
	}
	return true
}

// bunWord returns the first word of args that is not a flag, and the words
// after it. A flag before it may take the next word ("--cwd dir",
// "--env-file f"), so only flags known to take none, or that carry their
// value after '=', are skipped; any other flag cannot tell (ok false).
func bunWord(args []string) (string, []string, bool) {
	for i, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a, args[i+1:], true
		}
		if !strings.Contains(a, "=") && !strings.Contains(" --bun -b --silent --smol --hot --watch --no-install --if-present --no-clear-screen ", " "+a+" ") {
			return "", nil, false
		}
	}
	return "", nil, true
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
