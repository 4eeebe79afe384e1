package procid

import (
	"errors"
	"path"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// This file holds the trust rule: after the host is resolved, resume stays
// on only under a host that can be shown to act for one person at a time
// (the package documentation, "Who is trusted"; README.md, "Who is
// trusted"). A host that serves several people (an MCP gateway such as
// supergateway, an agent service) would otherwise give all of them one
// host identity, and so one another's sessions.

// ErrSharedHost: the resolved MCP host may act for several people at once,
// or it cannot be told whether it does ([CheckTrust]): it is an MCP gateway,
// it listens on the network, it listens on loopback and is not a known
// single-user MCP host, it runs without terminal or desktop session and is
// not one, or its open files, environment or socket tables cannot be read.
// Session resume is off, as for an identity failure; MCP_RESUME=on or a
// non-empty MCP_RESUME_INSTANCE skips the rule (the deployer vouches).
var ErrSharedHost = errors.New("the MCP host may act for several people")

// ErrNetworkStdio: on Linux the server's stdin or stdout is a socket that
// is not a Unix socket of this network namespace (/proc/self/net/unix does
// not list it): a TCP or UDP socket (socat TCP-LISTEN:... EXEC:server lets
// any network client in), or one whose family cannot be told. Session
// resume is off, in every host language (Node cannot read SO_PEERCRED, so
// the rule is the plugin's).
var ErrNetworkStdio = errors.New("a network socket is on the server's stdio")

// trustOff ends every message of a refusal: what happens and the opt-in.
const trustOff = "; session resume disabled for this instance (set MCP_RESUME=on if it acts for one person)"

// knownHosts are the MCP hosts known to act for one person, with the
// reason: each is an application a person runs for themself (an editor, a
// desktop app, a command-line agent), so a server it starts serves that
// person alone, even when it has no terminal (a desktop app started by the
// session manager, the VS Code Remote-SSH server) or listens on loopback
// (an editor's own local services). Known hosts skip rules 3 and 4 of
// [CheckTrust], never 1 and 2. names are matched like the gateway names
// (programNames); dirs are path components of the program or script
// (Args[0] or the script an interpreter runs), for servers whose process
// is a plain node.
var knownHosts = [...]struct{ names, dirs, why string }{
	{" code code-insiders codium cursor windsurf ",
		" .vscode-server .vscode-server-insiders .cursor-server .windsurf-server Visual\\ Studio\\ Code.app Cursor.app Windsurf.app ",
		"VS Code or a fork of it, an editor one person runs; the Remote-SSH server is that person's editor on another machine"},
	{" claude Claude claude-desktop claude-code @anthropic-ai/claude-code ", " Claude.app ",
		"Claude Desktop or Claude Code, run by one person"},
	{" codex @openai/codex ", "", "the Codex CLI, run by one person"},
	{" zed zed-editor Zed ", " Zed.app ", "the Zed editor, run by one person"},
}

// interpreterScript returns, for a process running an interpreter (node,
// nodejs, bun, deno, python*, pypy*), the script or module it runs: the
// first argument that is not a flag (deno: after "run"), or the module of
// python's "-m module". ok is false for other programs.
func interpreterScript(p Process) (script string, ok bool) {
	if len(p.Args) == 0 {
		return "", false
	}
	prog := path.Base(p.Args[0])
	py := strings.HasPrefix(prog, "python") || strings.HasPrefix(prog, "pypy")
	if !py && prog != "node" && prog != "nodejs" && prog != "bun" && prog != "deno" {
		return "", false
	}
	args := p.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case py && a == "-m" && i+1 < len(args):
			return args[i+1], true
		case py && strings.HasPrefix(a, "-m") && len(a) > 2:
			return a[2:], true
		case prog == "deno" && a == "run":
			continue
		case strings.HasPrefix(a, "-"):
			continue
		}
		return a, true
	}
	return "", true
}

// programNames returns the names p runs as, for the gateway and known-host
// lists: the base name of Args[0]; for an interpreter the base name of its
// script without a .js, .cjs, .mjs, .ts or .py extension (or python's -m
// module); and for every argument with a node_modules/<name>/ path
// component (node_modules/@scope/<name>/ and node_modules/.bin/<name>
// too), that package name. Name (comm) is matched separately, allowing for
// truncation (nameMatches).
func programNames(p Process) []string {
	var out []string
	if len(p.Args) > 0 {
		out = append(out, path.Base(p.Args[0]))
	}
	if s, ok := interpreterScript(p); ok && s != "" {
		b := path.Base(s)
		for _, ext := range []string{".js", ".cjs", ".mjs", ".ts", ".py"} {
			b = strings.TrimSuffix(b, ext)
		}
		out = append(out, b)
	}
	for _, a := range p.Args {
		for rest := a; ; {
			i := strings.Index(rest, "node_modules/")
			if i < 0 {
				break
			}
			rest = rest[i+len("node_modules/"):]
			parts := strings.SplitN(rest, "/", 3)
			switch {
			case parts[0] == ".bin" && len(parts) > 1:
				out = append(out, parts[1])
			case strings.HasPrefix(parts[0], "@") && len(parts) > 1:
				out = append(out, parts[0]+"/"+parts[1])
			case parts[0] != "":
				out = append(out, parts[0])
			}
		}
	}
	return out
}

// listed reports whether p's Name (allowing for comm truncation) or one of
// its programNames is among names (separated and surrounded by spaces).
func listed(p Process, names string) bool {
	if p.Name != "" && !strings.ContainsRune(p.Name, ' ') && (strings.Contains(names, " "+p.Name+" ") || len(p.Name) >= 15 && strings.Contains(names, " "+p.Name)) {
		return true
	}
	for _, n := range programNames(p) {
		if n != "" && !strings.ContainsRune(n, ' ') && strings.Contains(names, " "+n+" ") {
			return true
		}
	}
	return false
}

// gatewayKind returns the kind of the gateway entry of sharedServers when p
// is a listed MCP gateway or proxy (rule 1 of CheckTrust), else "".
func gatewayKind(p Process) string {
	for _, s := range sharedServers {
		if s.gateway && listed(p, s.names) {
			return s.kind
		}
	}
	return ""
}

// knownHost returns why p is a known single-user MCP host (knownHosts), or
// "" when it is none. Besides the listed names, the Codex CLI's native
// binary is named after its target ("codex-x86_64-unknown-linux-musl",
// comm "codex-x86_64-un"), and a program or script path with a listed
// directory component counts.
func knownHost(p Process) string {
	for _, k := range knownHosts {
		if listed(p, k.names) {
			return k.why
		}
	}
	for _, n := range append(programNames(p), p.Name) {
		if strings.HasPrefix(n, "codex-x86_64-") || strings.HasPrefix(n, "codex-aarch64-") {
			return knownHosts[2].why
		}
	}
	var paths []string
	if len(p.Args) > 0 {
		paths = append(paths, p.Args[0])
	}
	if s, ok := interpreterScript(p); ok && s != "" {
		paths = append(paths, s)
	}
	for _, k := range knownHosts {
		if k.dirs == "" {
			continue
		}
		for _, pth := range paths {
			for _, c := range strings.Split(pth, "/") {
				if c != "" && strings.Contains(k.dirs, " "+strings.ReplaceAll(c, " ", "\\ ")+" ") {
					return k.why
				}
			}
		}
	}
	return ""
}

// Desktop-session variables of a host's environment (rule 4): a Linux
// process of an X11 or Wayland session has DISPLAY or WAYLAND_DISPLAY.
var desktopVars = []string{"DISPLAY", "WAYLAND_DISPLAY"}

// darwinNoDev is NODEV, the e_tdev of a macOS process without a
// controlling terminal (<sys/param.h>: (dev_t)-1).
const darwinNoDev = -1

// refuse returns the ErrSharedHost error for host, with why after "The MCP
// host pid N (name) ", wrapping errs too.
func refuse(host Process, why string, errs ...error) error {
	return &wrapError{msg: "The MCP host " + describe(host) + " " + why + trustOff, errs: append([]error{ErrSharedHost}, errs...)}
}

// cannotTell returns the ErrSharedHost error of rule 5 for host: what could
// not be read, wrapping err.
func cannotTell(host Process, what string, err error) error {
	msg := "Cannot tell whether the MCP host " + describe(host) + " acts for one person (" + what
	errs := []error{ErrSharedHost}
	if err != nil {
		msg += ": " + err.Error()
		errs = append(errs, err)
	}
	return &wrapError{msg: msg + ")" + trustOff, errs: errs}
}

// CheckTrust applies the trust rule to the host of id, an identity
// [Resolve] or [ResolveFor] returned without error, on the system f.OS,
// reading through in. The rule, first match deciding:
//
//  1. the host is a known MCP gateway or proxy that exposes stdio servers
//     to remote clients (the gateway entry of sharedServers, matched by
//     comm, program, interpreter script or node_modules package): off;
//  2. (Linux) it has a TCP socket in state LISTEN on a non-loopback local
//     address (0.0.0.0, ::, anything outside 127.0.0.0/8, ::1 and
//     ::ffff:127.0.0.0/104): off, it serves others. Its sockets are the
//     inodes of its fd list ("socket:[N]", the fds operation) found in its
//     network namespace's tcp and tcp6 tables (the net operation), which
//     are read only when it has a socket;
//  3. (Linux) it listens on loopback only and is not a known single-user
//     MCP host (knownHosts): off, it may be an MCP server over HTTP or a
//     gateway behind a proxy;
//  4. it has no controlling terminal (Linux: tty_nr, field 7 of
//     /proc/<host>/stat, is 0; macOS: e_tdev of struct kinfo_proc is
//     NODEV, or ps does not show it in the foreground of one) and no
//     desktop session (Linux: its environment at exec, /proc/<host>/environ,
//     read only here, has no non-empty DISPLAY or WAYLAND_DISPLAY; macOS:
//     its kern.procargs2 environment has no __CFBundleIdentifier and no
//     XPC_SERVICE_NAME of a LaunchServices application, "application.*"),
//     and is not a known single-user MCP host: off, a daemon, service or
//     job runner may act for several people;
//  5. what the rule needs cannot be read (the host's fds, its environment,
//     a socket table, the macOS environment or terminal; an answer of
//     exactly the read limit; the host replaced meanwhile): off.
//
// macOS has no listening-socket check (no /proc: a documented residual).
//
// It returns the verdict for whoami and logs ("single user: ..."). Errors
// wrap ErrSharedHost, and for rule 5 the sentinel of the failed answer
// ([ErrPermission], [ErrNoAnswer], [ErrRace]...); the message is the
// sentence the plugin logs with event host_shared, ending with the opt-in.
// The plugin skips the rule when the server's environment vouches for the
// host (MCP_RESUME=on, or a non-empty MCP_RESUME_INSTANCE).
func CheckTrust(f hostfuncs.Facts, id Identity, in Inspector) (string, error) {
	if len(id.Chain) == 0 {
		return "", wrap("check the MCP host: no host was resolved", ErrSharedHost, ErrNoAnswer)
	}
	host := id.Chain[len(id.Chain)-1]
	if kind := gatewayKind(host); kind != "" {
		return "", refuse(host, "is "+kind+", so it may serve several people")
	}
	known := knownHost(host)
	switch f.OS {
	case "linux":
		return trustLinux(host, known, in)
	case "darwin":
		return trustDarwin(host, known)
	}
	return "", wrap("check the MCP host on "+quote(f.OS), ErrSharedHost, ErrUnsupported)
}

// trustLinux applies rules 2 to 5 on Linux. One call lists the host's fds
// and reads its stat again (after the fds, so that a host replaced by
// another process of the same pid meanwhile shows another start time); a
// host with sockets costs one more call for its tcp and tcp6 tables, and
// one without terminal that is not known one more for its environment.
func trustLinux(host Process, known string, in Inspector) (string, error) {
	pid := strconv.Itoa(host.PID)
	res, err := inspect(in, []hostfuncs.InspectOp{{Op: hostfuncs.OpFDs, PID: pid}, opStat(host.PID)})
	if err != nil {
		return "", cannotTell(host, "its open files", err)
	}
	if err := resultErr("list /proc/"+pid+"/fd", res[0]); err != nil {
		return "", cannotTell(host, "its open files cannot be listed", err)
	}
	if err := resultErr("read "+procStat(host.PID), res[1]); err != nil {
		return "", cannotTell(host, "it cannot be read again", err)
	}
	st, err := parseStat(res[1].Data)
	ticks, _, _ := strings.Cut(host.StartTime, ".")
	if err != nil || st.pid != host.PID || strconv.FormatUint(st.start, 10) != ticks {
		return "", cannotTell(host, "it exited or was replaced while its open files were listed", ErrRace)
	}
	socks := map[uint64]bool{}
	for _, e := range res[0].FDs {
		if ino, ok := socketInode(e.Target); ok {
			socks[ino] = true
		}
	}
	var loopback string
	if len(socks) > 0 {
		tr, err := inspect(in, []hostfuncs.InspectOp{
			{Op: hostfuncs.OpNet, PID: pid, Table: "tcp"},
			{Op: hostfuncs.OpNet, PID: pid, Table: "tcp6"},
		})
		if err != nil {
			return "", cannotTell(host, "its sockets", err)
		}
		for i, table := range []string{"tcp", "tcp6"} {
			rows, err := netTable("/proc/"+pid+"/net/"+table, table, tr[i])
			if err != nil {
				return "", cannotTell(host, "its sockets", err)
			}
			for _, s := range rows {
				if s.state != tcpListen || !socks[s.inode] {
					continue
				}
				if !isLoopback(s.addr) {
					return "", refuse(host, "listens on "+s.String()+", so it may serve several people")
				}
				if loopback == "" {
					loopback = s.String()
				}
			}
		}
	}
	if known != "" {
		v := "single user: " + describe(host) + " is a known single-user MCP host (" + known + ")"
		if loopback != "" {
			v += "; it listens on loopback only (" + loopback + ")"
		}
		return v, nil
	}
	if loopback != "" {
		return "", refuse(host, "listens on "+loopback+" and is not a known single-user MCP host: it may be an MCP server over HTTP or a gateway behind a proxy, so it may serve several people")
	}
	if st.tty != 0 {
		return "single user: " + describe(host) + " has a controlling terminal (tty_nr " + strconv.FormatInt(st.tty, 10) + ")", nil
	}
	er, err := inspect(in, []hostfuncs.InspectOp{{Op: hostfuncs.OpEnviron, PID: pid}})
	if err != nil {
		return "", cannotTell(host, "its environment", err)
	}
	if err := resultErr("read /proc/"+pid+"/environ", er[0]); err != nil {
		return "", cannotTell(host, "it has no terminal and its environment cannot be read", err)
	}
	if len(er[0].Data) >= hostfuncs.MaxProcTableRead {
		return "", cannotTell(host, "it has no terminal and its environment fills the read limit of "+itoa(hostfuncs.MaxProcTableRead)+" bytes", ErrNoAnswer)
	}
	if v := desktopVar(strings.Split(string(er[0].Data), "\x00")); v != "" {
		return "single user: " + describe(host) + " runs in a desktop session (" + v + " is set)", nil
	}
	return "", refuse(host, "has no controlling terminal and no desktop session (DISPLAY, WAYLAND_DISPLAY) and is not a known single-user MCP host: a daemon, service or job runner may act for several people")
}

// desktopVar returns the first of desktopVars set non-empty in env
// ("NAME=value" entries), else "".
func desktopVar(env []string) string {
	for _, v := range desktopVars {
		for _, e := range env {
			if val, ok := strings.CutPrefix(e, v+"="); ok && val != "" {
				return v
			}
		}
	}
	return ""
}

// trustDarwin applies rules 4 and 5 on macOS from what the walk read of the
// host: the terminal from struct kinfo_proc (e_tdev) or ps (a "+" in its
// state: in the foreground of its terminal; without it ps cannot tell),
// and the desktop session from its kern.procargs2 environment
// (__CFBundleIdentifier, or an XPC_SERVICE_NAME "application.*", which
// LaunchServices gives the applications it starts; launchd agents and
// daemons get their own label instead). There is no listening-socket check
// on macOS (no /proc): a documented residual.
func trustDarwin(host Process, known string) (string, error) {
	if known != "" {
		return "single user: " + describe(host) + " is a known single-user MCP host (" + known + ")", nil
	}
	switch {
	case host.ttyKnown && host.tty != darwinNoDev:
		return "single user: " + describe(host) + " has a controlling terminal (e_tdev " + strconv.FormatInt(int64(host.tty), 10) + ")", nil
	case host.ttyFG:
		return "single user: " + describe(host) + " runs in the foreground of a terminal (ps)", nil
	}
	if !host.envKnown {
		what := "its terminal and environment cannot be read (ps shows neither; the host's sysctl kern.procargs2 was refused or unavailable)"
		if host.ttyKnown {
			what = "it has no terminal and its environment cannot be read (sysctl kern.procargs2)"
		}
		return "", cannotTell(host, what, nil)
	}
	for _, e := range host.env {
		if v, ok := strings.CutPrefix(e, "__CFBundleIdentifier="); ok && v != "" {
			return "single user: " + describe(host) + " is a desktop application (__CFBundleIdentifier " + v + ")", nil
		}
		if v, ok := strings.CutPrefix(e, "XPC_SERVICE_NAME=application."); ok && v != "" {
			return "single user: " + describe(host) + " is a desktop application (XPC_SERVICE_NAME application." + v + ")", nil
		}
	}
	if !host.ttyKnown {
		return "", cannotTell(host, "ps cannot show whether it has a terminal, and its environment shows no desktop application", nil)
	}
	return "", refuse(host, "has no controlling terminal and is not a desktop application (__CFBundleIdentifier, XPC_SERVICE_NAME) and is not a known single-user MCP host: a daemon, service or job runner may act for several people")
}
