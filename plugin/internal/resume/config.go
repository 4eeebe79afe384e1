package resume

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/procid"
)

// Environment variables the plugin reads from facts.env (the host reports
// every variable of the server process).
const (
	// EnvSwitch set to "off" turns resume off: nothing is inspected, read
	// or written. Set to "on" it vouches for the MCP host: the trust rule
	// (procid.CheckTrust) is skipped (Config.Vouch).
	EnvSwitch = "MCP_RESUME"
	// EnvStateDir overrides the default state root, the directory that
	// holds one state directory per app (an absolute path).
	EnvStateDir = "MCP_RESUME_STATE_DIR"
	// EnvInstance sets the instance key when the server declares none.
	// Set non-empty it also vouches for the MCP host, as a per-tenant key
	// a gateway sets for each of its users (Config.Vouch).
	EnvInstance = "MCP_RESUME_INSTANCE"
)

// NoInstance, as the declared instance key (or MCP_RESUME_INSTANCE), means
// "no instance": every instance under one host shares the spec's plain
// token-<pid>-<start_time>, and only one at a time resumes. "" means the same.
const NoInstance = "-"

// MaxAppLen is the longest app name, in bytes.
const MaxAppLen = 64

// ValidApp reports whether app obeys the app-name rule: 1-64 bytes of
// [A-Za-z0-9._-], starting with a letter or digit. The app's state
// directory is named after it (AppDirName), so the rule keeps it one safe
// path element.
func ValidApp(app string) bool {
	if len(app) == 0 || len(app) > MaxAppLen || !isAlnum(app[0]) {
		return false
	}
	for i := 0; i < len(app); i++ {
		if !isNameByte(app[i]) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// isNameByte reports whether c is in [A-Za-z0-9._-], the bytes of app names
// (ValidApp) and of the plugin's file names (ValidFileName).
func isNameByte(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '-'
}

// AppDirName returns the name of app's state directory inside the state
// root: app itself with every uppercase ASCII letter written as '+'
// followed by the letter in lowercase ("MyApp" -> "+my+app", "my-app" ->
// "my-app"). On a case-insensitive file system (the macOS default, and
// Windows shares) "MyApp" and "myapp" would otherwise name one directory,
// and two different apps would share one token file. The result holds no
// uppercase letter, and '+' is not allowed in app names, so two different
// valid app names never map to names that are equal, even ignoring case.
// app must pass ValidApp.
func AppDirName(app string) string {
	var b strings.Builder
	for i := 0; i < len(app); i++ {
		c := app[i]
		if c >= 'A' && c <= 'Z' {
			b.WriteByte('+')
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// AppFromDirName inverts AppDirName: the app whose state directory is
// named name, and false when name is not such a directory name.
func AppFromDirName(name string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '+' && i+1 < len(name) && name[i+1] >= 'a' && name[i+1] <= 'z':
			i++
			b.WriteByte(name[i] - ('a' - 'A'))
		case c >= 'A' && c <= 'Z', c == '+':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	app := b.String()
	return app, ValidApp(app)
}

// VolatileEnv lists the environment variables left out of the default
// instance key: each changes from one launch of the same server entry to
// the next (or between a launch and its relaunch), so keeping it would
// lose every resume, while leaving it out cannot make two entries alike
// that differ in anything they were configured with:
//
//   - set by shells on every command: _ (the program path), SHLVL, PWD and
//     OLDPWD (the working directory is part of the key itself), COLUMNS,
//     LINES (the terminal size at launch);
//   - set per connection by sshd: SSH_CLIENT, SSH_CONNECTION, SSH_TTY
//     (the client's source port changes on every connection);
//   - set per terminal window or tab: TERM_SESSION_ID (macOS Terminal),
//     ITERM_SESSION_ID (iTerm2), WINDOWID (X11 terminals);
//   - set per start by systemd (a server or launcher started as a unit or
//     scope, systemd.exec(5)): INVOCATION_ID, JOURNAL_STREAM,
//     SYSTEMD_EXEC_PID, MANAGERPID, WATCHDOG_PID, WATCHDOG_USEC,
//     LISTEN_PID, LISTEN_FDS, LISTEN_FDNAMES;
//   - per-launch startup-notification tokens of desktops:
//     XDG_ACTIVATION_TOKEN (Wayland), DESKTOP_STARTUP_ID (X11).
//
// Hosts built on the official MCP SDKs pass a stdio server only a fixed
// allowlist of the host's variables (HOME, LOGNAME, PATH, SHELL, TERM,
// USER on Unix) plus the entry's own "env", and some hosts clear the
// environment to such a list themselves: the same on every launch of one
// entry. npm/npx (npm_* variables, INIT_CWD, NODE), uv/uvx (VIRTUAL_ENV,
// UV_*) and hosts that pass their whole environment (VS Code's VSCODE_*,
// ELECTRON_RUN_AS_NODE) add values that stay the same for one entry, one
// working directory and one host process, so they stay in the key. Names
// are compared exactly.
var VolatileEnv = []string{
	"_", "SHLVL", "PWD", "OLDPWD", "COLUMNS", "LINES",
	"SSH_CLIENT", "SSH_CONNECTION", "SSH_TTY",
	"TERM_SESSION_ID", "ITERM_SESSION_ID", "WINDOWID",
	"INVOCATION_ID", "JOURNAL_STREAM", "SYSTEMD_EXEC_PID", "MANAGERPID",
	"WATCHDOG_PID", "WATCHDOG_USEC", "LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES",
	"XDG_ACTIVATION_TOKEN", "DESKTOP_STARTUP_ID",
}

// defaultKeyTag starts every default instance key, so that the encoding
// of one launch can equal no other's and no declared key a user would
// write (a declared key is used as it is). v1 keys (facts.args, facts.cwd,
// facts.env as the host reported them) are no longer made.
const defaultKeyTag = "mcp-resume default instance key v2"

// materialTag starts every instance key material (KeyMaterial).
const materialTag = "mcp-resume instance key material v2"

// Launch is what the default instance key is made of: the server process
// as it was started, read from the system rather than from the host's
// facts, so that a server that changes its arguments, environment or
// working directory before it opens the store keeps the key of its launch.
type Launch struct {
	// Args is the argument vector as exec'd: /proc/self/cmdline split at
	// its NULs (Linux), or the argv of kern.procargs2 (macOS, Go and
	// Python hosts). argv[0] and, for an interpreter, the script path or
	// -m module are in it. Nil when PSArgs is used instead.
	Args []string
	// PSArgs is the output of `ps -o args=` for the server (macOS hosts
	// that cannot call sysctl: Node): the arguments joined by spaces, so
	// arguments that differ only in where the spaces are cannot be told
	// apart there. "" when Args is used.
	PSArgs string
	// Env is the environment as exec'd, one "NAME=value" entry each:
	// /proc/self/environ (Linux), the environment of kern.procargs2
	// (macOS, Go and Python), or facts.env where nothing better exists
	// (macOS Node: the environment at import of the binding).
	Env []string
	// Cwd is the working directory the host captured at import (facts.cwd).
	Cwd string
}

// DefaultInstanceKey returns the instance key (v2) of a server that
// declares none: an unambiguous encoding of l, the launch as exec'd,
// without the variables of VolatileEnv and MCP_RESUME_STATE_DIR. Every
// element is written as a netstring (<decimal length>:<bytes>,), in the
// order: the tag "mcp-resume default instance key v2"; "argv", the count,
// each argument (or "ps args" and the line, PSArgs); "cwd", the working
// directory; "env", the count, then each kept entry "NAME=value" as it is,
// sorted byte-wise (a host may pass the environment in any order; an entry
// without "=" is kept whole, a name given twice twice). So two launches that
// differ in any byte of program, arguments, working directory or kept
// environment never encode alike. Only a digest of it, inside KeyMaterial,
// reaches a file name.
func DefaultInstanceKey(l Launch) string {
	var b strings.Builder
	ns := netstring(&b)
	ns(defaultKeyTag)
	if l.Args == nil && l.PSArgs != "" {
		ns("ps args")
		ns(l.PSArgs)
	} else {
		ns("argv")
		ns(strconv.Itoa(len(l.Args)))
		for _, a := range l.Args {
			ns(a)
		}
	}
	ns("cwd")
	ns(l.Cwd)
	env := keyEnv(l.Env)
	ns("env")
	ns(strconv.Itoa(len(env)))
	for _, e := range env {
		ns(e)
	}
	return b.String()
}

// KeyMaterial returns what the instance suffix of the file names and the
// ambiguity marker are the digest of: the netstrings of the tag "mcp-resume
// instance key material v2", "ns", the count and each namespace link
// target (net, mnt, uts, ipc, user, cgroup of the server, in that order,
// e.g. "net:[4026531840]"; none on macOS), then "key" and the instance key
// (declared or default; "" for none). The namespaces are in it whatever the
// key: two servers launched alike in two network namespaces (ip netns
// exec) are two instances even when they declare one key.
func KeyMaterial(namespaces []string, key string) string {
	var b strings.Builder
	ns := netstring(&b)
	ns(materialTag)
	ns("ns")
	ns(strconv.Itoa(len(namespaces)))
	for _, n := range namespaces {
		ns(n)
	}
	ns("key")
	ns(key)
	return b.String()
}

// netstring returns a writer of one netstring to b.
func netstring(b *strings.Builder) func(string) {
	return func(s string) {
		b.WriteString(strconv.Itoa(len(s)))
		b.WriteByte(':')
		b.WriteString(s)
		b.WriteByte(',')
	}
}

// keyEnv returns the entries of env ("NAME=value") that are part of the
// default instance key, sorted byte-wise: all but those named in
// VolatileEnv and MCP_RESUME_STATE_DIR (the state root already separates
// launches that differ in it: their files live in different directories).
func keyEnv(env []string) []string {
	var out []string
	for _, e := range env {
		n, _, _ := strings.Cut(e, "=")
		if !slices.Contains(VolatileEnv, n) && n != EnvStateDir {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out
}

// envEntries returns env as "NAME=value" entries (facts.env, where the
// environment at exec cannot be read).
func envEntries(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for n, v := range env {
		out = append(out, n+"="+v)
	}
	return out
}

// undecodable reports whether s may not be what the process was given:
// it holds U+FFFD, which every host puts in place of bytes that are not
// UTF-8 (Go's JSON encoder, Python's surrogateescape replaced, Node's argv
// decoding), or it is not valid UTF-8 at all. Two inputs that differ only
// in such bytes reach the plugin equal.
func undecodable(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError)
}

// inexactFix ends every message about an input the host could not carry
// exactly.
const inexactFix = ": bytes that are not UTF-8 reach the plugin as U+FFFD, so launches that differ only in them would share a session; give this server entry an ASCII instance name (MCP_RESUME_INSTANCE or the instance option)"

// keyProblem says which input of the instance key that the host reports
// (rather than the system) cannot be told apart from another launch's
// because the host could not carry it exactly, or "" when every such input
// is exact. declared is the declared key (option or MCP_RESUME_INSTANCE),
// nil when the default key is used: then the working directory (facts.cwd)
// is checked; the arguments and environment come from the system
// (Launch) and are exact. It never quotes a value: arguments and
// environment may hold secrets.
func keyProblem(declared *string, declaredFrom string, f hostfuncs.Facts) string {
	if declared != nil {
		if undecodable(*declared) {
			return "the instance key from " + declaredFrom + " is not exact" + inexactFix
		}
		return ""
	}
	if undecodable(f.Cwd) {
		return "the working directory is not exact" + inexactFix
	}
	return ""
}

// envProblem is keyProblem for facts.env where it stands in for the
// environment at exec (macOS Node): the first variable kept in the key
// that is not exact, or "".
func envProblem(env map[string]string) string {
	for _, e := range keyEnv(envEntries(env)) {
		if undecodable(e) {
			n, _, _ := strings.Cut(e, "=")
			return "environment variable " + strconv.QuoteToASCII(n) + " is not exact" + inexactFix
		}
	}
	return ""
}

// declaredRoot is the state root of a declared state_root option, which hosts pass
// exactly as their user gave it: an absolute one cleaned, a relative one
// joined to the server's working directory cwd (facts.cwd) and cleaned, as
// a path the user typed is read (hostfuncs/README.md, open). Error:
// hostfuncs.CodeInvalidOption for a relative state_root when cwd is not an
// absolute path (getcwd failed) or holds bytes the host could not carry
// exactly (U+FFFD), so that the directory is never a guess.
func declaredRoot(dir, cwd string, n Names) (string, *hostfuncs.Error) {
	if path.IsAbs(dir) {
		return path.Clean(dir), nil
	}
	why := ""
	switch {
	case !path.IsAbs(cwd):
		why = "the server's working directory is unknown (the host could not read it)"
	case undecodable(cwd):
		why = "the server's working directory holds bytes the host could not carry exactly"
	default:
		return path.Join(cwd, dir), nil
	}
	return "", &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: n.Option("state_root") + " " + strconv.Quote(dir) + " is a relative path and " + why + "; give an absolute path"}
}

// Config is what the open export settles from the server's declaration and
// the host's facts.
type Config struct {
	// Names words options and operations in the caller's language
	// (the open input's caller).
	Names Names
	// App is the validated app name.
	App string
	// StateDir is the absolute, clean state directory of this app,
	// StateRoot/AppDirName(App); "" when it cannot be computed (no home
	// directory), and then Problem says why.
	StateDir string
	// StateRoot is the directory that holds one state directory per app:
	// the state_root option, else MCP_RESUME_STATE_DIR, else the default
	// root; "" when unknown.
	StateRoot string
	// InstanceKey is the declared instance key; "" for none or when
	// DefaultKey is set.
	InstanceKey string
	// DefaultKey is set when no key was declared: the key is then
	// DefaultInstanceKey of the launch, read from the system when the
	// identity is first resolved.
	DefaultKey bool
	// InstanceFrom names where a declared key came from ("the instance
	// option", MCP_RESUME_INSTANCE); "" for the default key.
	InstanceFrom string
	// KeyProblem, when not "", is why the instance key cannot be trusted
	// (an input the host could not carry exactly): resume is off.
	KeyProblem string
	// Launchers is the launcher set in effect.
	Launchers procid.LauncherSet
	// Off is set by MCP_RESUME=off.
	Off bool
	// Vouch names the switch of facts.env by which the deployer vouches
	// that the MCP host acts for one person, so that the trust rule
	// (procid.CheckTrust) is skipped: "MCP_RESUME=on", or
	// "MCP_RESUME_INSTANCE" when that is set to a key (not empty, not "-",
	// which declares no instance): a per-tenant key a gateway sets for
	// each user; "" when neither is set. Only the environment vouches,
	// never the instance option a server declares.
	Vouch string
	// Problem, when not "", is why resume is off for this store although
	// it was not switched off: an unsupported system, or no state directory.
	Problem string
}

// Resume reports whether resume may still work for this store: not
// switched off and no problem known at open.
func (c Config) Resume() bool { return !c.Off && c.Problem == "" && c.KeyProblem == "" }

// Configure validates the open input and fills the defaults from the facts
// (hostfuncs/README.md, "Plugin exports", open):
//
//   - app must be given (in.AppMissing false) and pass ValidApp, else the
//     error code is hostfuncs.CodeInvalidApp;
//   - the state root: the declared state_root as the user gave it (a
//     relative one is taken from facts.cwd: declaredRoot), else env
//     MCP_RESUME_STATE_DIR (absolute, else
//     hostfuncs.CodeInvalidOption), else per user: on macOS
//     <home>/Library/Application Support/mcp-resume; elsewhere
//     <xdg_state_home>/mcp-resume when xdg_state_home is absolute, else
//     <home>/.local/state/mcp-resume; always cleaned. The state directory
//     is always <root>/<AppDirName(app)>, so two apps never share a token,
//     lock or prune decision, whatever directory they are given;
//   - the instance key: the declared one if any (nil is "not declared"),
//     else env MCP_RESUME_INSTANCE if not empty, each used exactly as
//     given ("" or "-" is no instance), else DefaultKey: the default key
//     (DefaultInstanceKey: program, arguments and environment as exec'd,
//     working directory), which the store reads from the system when it
//     first resolves the identity. A key input that the host could not
//     carry exactly (U+FFFD, see keyProblem) sets KeyProblem: resume off;
//   - launchers: the defaults, the declared ones, and env MCP_RESUME_LAUNCHERS;
//   - env MCP_RESUME=off switches resume off;
//   - env MCP_RESUME=on, or an MCP_RESUME_INSTANCE that is a key (not
//     empty, not "-"), vouches for the MCP host (Vouch): the trust rule is
//     skipped.
//
// factsOK is false when mcp_resume_facts gave no usable answer: then resume
// is off ("cannot tell"), and only a declared state root is known.
func Configure(in hostfuncs.OpenInput, f hostfuncs.Facts, factsOK bool) (Config, *hostfuncs.Error) {
	names, werr := NamesFor(in.Caller)
	if werr != nil {
		return Config{}, werr
	}
	if in.AppMissing {
		return Config{}, &hostfuncs.Error{Code: hostfuncs.CodeInvalidApp, Message: "app name missing: give the server's application name, 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
	}
	if !ValidApp(in.App) {
		// An app's state directory name (AppDirName) stands for the app, so
		// a CLI that lists a state root can open each app it finds there
		// without knowing the encoding: '+' is in no app name, so this
		// alias cannot make two apps alike.
		if app, ok := AppFromDirName(in.App); ok && strings.Contains(in.App, "+") {
			in.App = app
		}
	}
	if !ValidApp(in.App) {
		return Config{}, &hostfuncs.Error{Code: hostfuncs.CodeInvalidApp, Message: "invalid app name " + strconv.Quote(in.App) + ": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
	}
	c := Config{App: in.App, Names: names}
	if !factsOK {
		f = hostfuncs.Facts{}
		c.Problem = "mcp_resume_facts gave no usable answer"
	}
	env := func(k string) string { return f.Env[k] }
	switch {
	case in.StateRoot != "":
		root, werr := declaredRoot(in.StateRoot, f.Cwd, names)
		if werr != nil {
			return Config{}, werr
		}
		c.StateRoot = root
	case env(EnvStateDir) != "":
		if !path.IsAbs(env(EnvStateDir)) {
			return Config{}, &hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: EnvStateDir + " " + strconv.Quote(env(EnvStateDir)) + " is not an absolute path"}
		}
		c.StateRoot = path.Clean(env(EnvStateDir))
	default:
		c.StateRoot = stateRoot(f)
	}
	switch {
	case c.StateRoot == "/":
		c.StateDir = "/" + AppDirName(in.App)
	case c.StateRoot != "":
		c.StateDir = c.StateRoot + "/" + AppDirName(in.App)
	case c.Problem == "":
		c.Problem = "no home directory to put the default state directory in: set " + EnvStateDir
	}
	var declared *string
	from := ""
	switch {
	case in.Instance != nil:
		declared, from = in.Instance, "the "+names.Option("instance")+" option"
	case env(EnvInstance) != "":
		v := env(EnvInstance)
		declared, from = &v, EnvInstance
	}
	if declared != nil {
		c.InstanceKey, c.InstanceFrom = *declared, from
	} else {
		c.DefaultKey = true
	}
	if c.InstanceKey == NoInstance {
		c.InstanceKey = ""
	}
	if c.InstanceKey != "" || c.DefaultKey {
		c.KeyProblem = keyProblem(declared, from, f)
	}
	c.Launchers = procid.NewLauncherSet(in.Launchers, env(procid.EnvLaunchers))
	c.Off = env(EnvSwitch) == "off"
	switch {
	case env(EnvSwitch) == "on":
		c.Vouch = EnvSwitch + "=on"
	case env(EnvInstance) != "" && env(EnvInstance) != NoInstance:
		c.Vouch = EnvInstance
	}
	if c.Problem == "" && f.OS != "linux" && f.OS != "darwin" {
		c.Problem = "process identity is not supported on " + strconv.Quote(f.OS) + " (spec 000, Platform Support)"
	}
	return c, nil
}

// stateRoot returns the directory holding every app's default state
// directory, or "" when there is no home directory to put it in.
func stateRoot(f hostfuncs.Facts) string {
	home := ""
	if path.IsAbs(f.Home) {
		home = path.Clean(f.Home)
	}
	switch {
	case f.OS == "darwin":
		if home == "" {
			return ""
		}
		return home + "/Library/Application Support/mcp-resume"
	case path.IsAbs(f.XDGStateHome):
		return path.Clean(f.XDGStateHome) + "/mcp-resume"
	case home != "":
		return home + "/.local/state/mcp-resume"
	}
	return ""
}
