package policy

import (
	"path"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// Environment variables the plugin reads from facts.env (the host reports
// every variable named MCP_RESUME or starting with MCP_RESUME_, and no other).
const (
	// EnvSwitch set to "off" turns resume off: nothing is inspected, read
	// or written.
	EnvSwitch = "MCP_RESUME"
	// EnvStateDir overrides the default state directory (an absolute path).
	EnvStateDir = "MCP_RESUME_STATE_DIR"
	// EnvInstance sets the instance key when the server declares none.
	EnvInstance = "MCP_RESUME_INSTANCE"
)

// NoInstance, as the declared instance key (or MCP_RESUME_INSTANCE), means
// "no instance": every instance under one host shares the spec's plain
// token-<pid>-<start_time>, and only one at a time resumes. "" means the same.
const NoInstance = "-"

// MaxAppLen is the longest app name, in bytes.
const MaxAppLen = 64

// ValidApp reports whether app obeys the app-name rule: 1-64 bytes of
// [A-Za-z0-9._-], starting with a letter or digit. The app name is the last
// element of the default state directory, so the rule keeps it one safe
// path element.
func ValidApp(app string) bool {
	if len(app) == 0 || len(app) > MaxAppLen || !isAlnum(app[0]) {
		return false
	}
	for i := 0; i < len(app); i++ {
		if c := app[i]; !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Config is what the open export settles from the server's declaration and
// the host's facts.
type Config struct {
	// App is the validated app name.
	App string
	// StateDir is the absolute, clean state directory; "" when it cannot be
	// computed (no home directory), and then Problem says why.
	StateDir string
	// StateRoot is the directory that holds every app's default state
	// directory (the default without its last element); "" when unknown.
	StateRoot string
	// InstanceKey is the instance key; "" for none.
	InstanceKey string
	// Launchers is the launcher set in effect.
	Launchers LauncherSet
	// Off is set by MCP_RESUME=off.
	Off bool
	// Problem, when not "", is why resume is off for this store although
	// it was not switched off: an unsupported system, or no state directory.
	Problem string
}

// Resume reports whether resume may still work for this store: not
// switched off and no problem known at open.
func (c Config) Resume() bool { return !c.Off && c.Problem == "" }

// Configure validates the open input and fills the defaults from the facts
// (hostfuncs/README.md, "Plugin exports", open):
//
//   - app must be given (in.AppMissing false) and pass ValidApp, else the
//     error code is wire.CodeInvalidApp;
//   - state_dir: the declared one (absolute, else wire.CodeInvalidOption),
//     else env MCP_RESUME_STATE_DIR (absolute, else wire.CodeInvalidOption),
//     else per user and app: on macOS <home>/Library/Application
//     Support/mcp-resume/<app>; elsewhere <xdg_state_home>/mcp-resume/<app>
//     when xdg_state_home is absolute, else <home>/.local/state/mcp-resume/<app>;
//     always cleaned;
//   - the instance key: the declared one if any (nil is "not declared"),
//     else env MCP_RESUME_INSTANCE if not empty, else facts.args joined with
//     NUL; "" or "-" is no instance;
//   - launchers: the defaults, the declared ones, and env MCP_RESUME_LAUNCHERS;
//   - env MCP_RESUME=off switches resume off.
//
// factsOK is false when mcp_resume_facts gave no usable answer: then resume
// is off ("cannot tell"), and only a declared state directory is known.
func Configure(in wire.OpenInput, f wire.Facts, factsOK bool) (Config, *wire.Error) {
	if in.AppMissing {
		return Config{}, &wire.Error{Code: wire.CodeInvalidApp, Message: "app name missing: give the server's application name, 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
	}
	if !ValidApp(in.App) {
		return Config{}, &wire.Error{Code: wire.CodeInvalidApp, Message: "invalid app name " + strconv.Quote(in.App) + ": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"}
	}
	c := Config{App: in.App}
	if !factsOK {
		f = wire.Facts{}
		c.Problem = "mcp_resume_facts gave no usable answer"
	}
	env := func(k string) string { return f.Env[k] }
	if root := stateRoot(f); root != "" {
		c.StateRoot = root
	}
	switch {
	case in.StateDir != "":
		if !path.IsAbs(in.StateDir) {
			return Config{}, &wire.Error{Code: wire.CodeInvalidOption, Message: "state_dir " + strconv.Quote(in.StateDir) + " is not an absolute path"}
		}
		c.StateDir = path.Clean(in.StateDir)
	case env(EnvStateDir) != "":
		if !path.IsAbs(env(EnvStateDir)) {
			return Config{}, &wire.Error{Code: wire.CodeInvalidOption, Message: EnvStateDir + " " + strconv.Quote(env(EnvStateDir)) + " is not an absolute path"}
		}
		c.StateDir = path.Clean(env(EnvStateDir))
	case c.StateRoot != "":
		c.StateDir = c.StateRoot + "/" + in.App
	default:
		if c.Problem == "" {
			c.Problem = "no home directory to put the default state directory in: set " + EnvStateDir
		}
	}
	key := ""
	switch {
	case in.Instance != nil:
		key = *in.Instance
	case env(EnvInstance) != "":
		key = env(EnvInstance)
	default:
		key = strings.Join(f.Args, "\x00")
	}
	if key == NoInstance {
		key = ""
	}
	c.InstanceKey = key
	c.Launchers = NewLauncherSet(in.Launchers, env(EnvLaunchers))
	c.Off = env(EnvSwitch) == "off"
	if c.Problem == "" && f.OS != "linux" && f.OS != "darwin" {
		c.Problem = "process identity is not supported on " + strconv.Quote(f.OS) + " (spec 000, Platform Support)"
	}
	return c, nil
}

// stateRoot returns the directory holding every app's default state
// directory, or "" when there is no home directory to put it in.
func stateRoot(f wire.Facts) string {
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
