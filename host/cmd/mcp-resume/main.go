// Command mcp-resume inspects and tidies mcp-resume state. Every answer is
// the plugin's (its whoami, list and prune exports), and so is every byte
// it prints, stdout and the usage text alike (the plugin's render export,
// which the Python and TypeScript commands call too), so `python -m
// mcp_resume` and `npx mcp-resume` print exactly the same:
//
//	mcp-resume whoami [--json] [--app NAME] [--instance KEY] [--pid PID]  the MCP host this process (or PID) resolves, and the chain walked
//	mcp-resume list   [--json] [--app NAME] [--state-dir ROOT]             token files per app: host alive, gone or unknown
//	mcp-resume prune  [--json] [--app NAME] [--state-dir ROOT]             delete the files of hosts that are gone, and old unknown ones
//	mcp-resume state list|gc [--json] [--app NAME] [--state-dir ROOT] [APP] the handle store of each app: list its handles, or sweep it
//
// list and prune cover every app directory under the state root (the
// plugin's: --state-dir, else $MCP_RESUME_STATE_DIR, else per user, for
// example ~/.local/state/mcp-resume on Linux), or the one of --app. The APP
// column is the app's name: the name of its directory under the root. They
// never print a token. state list and state gc cover every app under the
// root that has a handle store (a handles/ directory; none is created), or
// APP (--app NAME is the same); they print key-hash prefixes, states,
// generations, sizes, ages and counts, never a value or a handle. With
// $MCP_RESUME_STATE_URL set the handle stores are on that Redis server
// (hostfuncs/README.md, "The Redis backend"): state list and state gc then
// need APP, since a server holds no directory to list apps from, and name
// the server by its URL with the password as ***. Flags may come before or
// after APP, in any order; "--" ends them.
//
// Exit status: 0 on success (an app directory without token files or
// handles is an empty answer: "no token files", "nothing to prune", "no
// handle stores"); 1 on a runtime failure, with one line on stderr,
// "mcp-resume <command>: <what was wrong and what to do>"; 2 on bad usage
// (an unknown command or flag, a flag without its value, an unexpected
// argument), with the usage text. The failures include, each decided by
// the plugin, so that every language says the same:
//
//   - whoami --pid PID of a pid no process has: "no process has pid PID:
//     give the pid of a running MCP server" (a pid of 1 or below 0 too);
//   - list, prune and state list|gc when the state root holds no app
//     directory (it is empty or missing): "no app directories under ROOT:
//     ...";
//   - the same with --app NAME (or APP) naming an app that has no directory
//     under the root: `no app "NAME" under ROOT; the apps there: a, b`;
//   - an app name the plugin refuses, a state directory it will not use (its
//     mode, its owner), an unreadable root, and the handle stores on Redis
//     without APP.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/host/internal/loader"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// cliApp is the app name the CLI opens stores with when it is given no
// app: the name only picks a default directory, and it is never shown.
const cliApp = "mcp-resume"

// run is main without the exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	ctx := context.Background()
	usage := func() string {
		out, err := renderPlugin(ctx, []byte(`{"command":"usage"}`))
		if err != nil {
			return "mcp-resume: " + err.Error() + "\n"
		}
		return string(out)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage())
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, rest := args[0], args[1:]
	if cmd == "state" {
		if len(rest) == 0 || rest[0] != "list" && rest[0] != "gc" {
			fmt.Fprintf(stderr, "mcp-resume state: want \"state list\" or \"state gc\"\n\n%s", usage())
			return 2
		}
		cmd, rest = "state "+rest[0], rest[1:]
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print JSON")
	app := fs.String("app", "", "server app name")
	stateRoot := fs.String("state-dir", "", "state root")
	instance := fs.String("instance", "", "instance key")
	pid := fs.Int("pid", 0, "server pid")
	if cmd != "whoami" && cmd != "list" && cmd != "prune" && cmd != "state list" && cmd != "state gc" {
		fmt.Fprintf(stderr, "mcp-resume: unknown command %q\n\n%s", cmd, usage())
		return 2
	}
	args, err := parseInterspersed(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage())
			return 0
		}
		fmt.Fprintf(stderr, "mcp-resume %s: %v\n\n%s", cmd, err, usage())
		return 2
	}
	if strings.HasPrefix(cmd, "state ") && len(args) == 1 && (*app == "" || *app == args[0]) {
		*app = args[0] // state list|gc APP
	} else if len(args) > 0 {
		fmt.Fprintf(stderr, "mcp-resume %s: unexpected argument %q\n\n%s", cmd, args[len(args)-1], usage())
		return 2
	}
	req := renderRequest{Command: cmd, JSON: *asJSON}
	switch cmd {
	case "whoami":
		req.ShowStateDir = *app != ""
		req.Whoami, err = whoami(ctx, *app, *instance, *pid)
	case "list", "prune":
		req.App = *app
		req.Apps, req.StateRoot, req.RootDirs, err = collect(ctx, cmd, *app, *stateRoot)
	case "state list", "state gc":
		req.Command = strings.Replace(cmd, " ", "_", 1)
		req.App = *app
		req.States, req.StateRoot, req.RootDirs, err = collectStates(ctx, cmd == "state gc", *app, *stateRoot)
	}
	if err == nil {
		var b, out []byte
		if b, err = json.Marshal(req); err == nil {
			if out, err = renderPlugin(ctx, b); err == nil {
				_, err = stdout.Write(out)
			}
		}
	}
	if err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "mcp-resume "+cmd+": ") {
			msg = "mcp-resume " + cmd + ": " + msg
		}
		fmt.Fprintln(stderr, msg)
		return 1
	}
	return 0
}

// parseInterspersed parses args with fs, flags and arguments in any order
// (Go's flag package alone stops at the first argument: `state list APP
// --json` would leave --json unread): it returns the arguments, in order.
// "--" ends the flags; everything after it is an argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var out []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return out, nil
		}
		if i := len(args) - len(rest) - 1; i >= 0 && args[i] == "--" && !takesValue(fs, args[:i]) {
			return append(out, rest...), nil // the terminator, not a flag's value
		}
		out, args = append(out, rest[0]), rest[1:]
	}
}

// takesValue reports whether the last of before is a flag of fs that takes
// its value from the next argument ("--app", not "--app=x" nor "--json"), so
// that a "--" after it is that value.
func takesValue(fs *flag.FlagSet, before []string) bool {
	if len(before) == 0 {
		return false
	}
	name, ok := strings.CutPrefix(before[len(before)-1], "-")
	name = strings.TrimPrefix(name, "-")
	f := fs.Lookup(name)
	if !ok || f == nil || strings.Contains(name, "=") {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}

// renderRequest is the input of the plugin's render export. For list,
// prune and the state commands it carries what was found under the state
// root (StateRoot; RootDirs, the names of the directories directly in it,
// nil when no root was listed, such as for handle stores on Redis) and the
// app the user named (App), from which the plugin decides that a command
// looked in the wrong place (an error it answers instead of the output).
type renderRequest struct {
	Command      string        `json:"command"`
	JSON         bool          `json:"json,omitempty"`
	ShowStateDir bool          `json:"show_state_dir,omitempty"`
	Whoami       host.Identity `json:"whoami"`
	Apps         []appResult   `json:"apps"`
	StateRoot    string        `json:"state_root,omitempty"`
	RootDirs     []string      `json:"root_dirs,omitempty"`
	App          string        `json:"app,omitempty"`
	// States replaces Apps for state_list and state_gc (the same member).
	States []stateResult `json:"-"`
}

// MarshalJSON writes States as "apps" for the state commands, and
// RootDirs as [] when it is empty but not nil (a root without
// directories, which the plugin checks, unlike none listed).
func (r renderRequest) MarshalJSON() ([]byte, error) {
	type plain renderRequest
	var dirs *[]string
	if r.RootDirs != nil {
		dirs = &r.RootDirs
	}
	if !strings.HasPrefix(r.Command, "state_") {
		return json.Marshal(struct {
			plain
			RootDirs *[]string `json:"root_dirs,omitempty"`
		}{plain(r), dirs})
	}
	return json.Marshal(struct {
		Command   string        `json:"command"`
		JSON      bool          `json:"json,omitempty"`
		Apps      []stateResult `json:"apps"`
		StateRoot string        `json:"state_root,omitempty"`
		RootDirs  *[]string     `json:"root_dirs,omitempty"`
		App       string        `json:"app,omitempty"`
	}{r.Command, r.JSON, r.States, r.StateRoot, dirs, r.App})
}

// stateResult is one app's handle store for the render export: its
// handle_list output (state list) or handle_gc output (state gc); on the
// Redis backend StateDir is "" and Backend and StateURL (the password as
// ***) say where the store is.
type stateResult struct {
	App      string           `json:"app"`
	StateDir string           `json:"state_dir"`
	Backend  string           `json:"backend,omitempty"`
	StateURL string           `json:"state_url,omitempty"`
	List     *host.HandleList `json:"list,omitempty"`
	GC       *host.GCResult   `json:"gc,omitempty"`
}

// appResult is one app's list or prune answer for the render export.
type appResult struct {
	App      string            `json:"app"`
	StateDir string            `json:"state_dir"`
	Files    []host.TokenFile  `json:"files,omitempty"`
	Removed  []host.PrunedFile `json:"removed,omitempty"`
}

// openStore opens a store quietly. The instance key is the declared one,
// else $MCP_RESUME_INSTANCE (read by the plugin), else none: the CLI's own
// arguments are not a server's.
func openStore(ctx context.Context, app, dir, instance string) (*host.Store, error) {
	if instance == "" && os.Getenv(host.EnvInstance) == "" {
		instance = host.NoInstance
	}
	return host.Open(ctx, app, &host.Options{StateRoot: dir, Instance: instance, Logger: slog.New(slog.DiscardHandler)})
}

// whoami is the plugin's answer for this process, or for the server pid.
func whoami(ctx context.Context, app, instance string, pid int) (host.Identity, error) {
	if app == "" {
		app = cliApp
	}
	store, err := openStore(ctx, app, "", instance)
	if err != nil {
		return host.Identity{}, err
	}
	defer store.Close(ctx)
	if pid != 0 {
		return store.WhoamiFor(ctx, pid)
	}
	return store.Whoami(ctx)
}

// collect runs list or prune (cmd) for app, or for every app under the
// state root, dir or the plugin's default. It also returns the root and
// the names of the directories directly in it ([] for a missing root), for
// the plugin's check that app, or any app, is there.
func collect(ctx context.Context, cmd, app, dir string) ([]appResult, string, []string, error) {
	root, dirs, err := listRoot(ctx, dir)
	if err != nil {
		return nil, "", nil, err
	}
	apps := dirs
	if app != "" {
		apps = []string{app}
	}
	results := []appResult{}
	for _, a := range apps {
		store, err := openStore(ctx, a, dir, "")
		if errors.Is(err, host.ErrInvalidApp) && app == "" {
			continue // not an app's directory: the plugin's app rule decides
		}
		if err != nil {
			return nil, "", nil, err
		}
		r := appResult{App: a, StateDir: store.StateDir()}
		if cmd == "list" {
			r.Files, err = store.List(ctx)
		} else {
			r.Removed, err = store.Prune(ctx)
		}
		store.Close(ctx)
		if err != nil {
			return nil, "", nil, err
		}
		results = append(results, r)
	}
	return results, root, dirs, nil
}

// listRoot is the state root (dir or the plugin's default) and the names
// of the directories directly in it (subdirs), which need not all be apps.
func listRoot(ctx context.Context, dir string) (string, []string, error) {
	root, err := stateRoot(ctx, dir)
	if err != nil {
		return "", nil, err
	}
	dirs, err := subdirs(root)
	return root, dirs, err
}

// stateRoot is the directory holding one directory per app, as the plugin's
// open decides it for the declared root dir, $MCP_RESUME_STATE_DIR or the
// default.
func stateRoot(ctx context.Context, dir string) (string, error) {
	store, err := openStore(ctx, cliApp, dir, "")
	if err != nil {
		return "", err
	}
	defer store.Close(ctx)
	if store.StateRoot() == "" {
		return "", errors.New("no state root: set " + host.EnvStateDir + " or HOME")
	}
	return store.StateRoot(), nil
}

// subdirs lists the names of the directories directly in root (not
// following symlinks), sorted; a missing root has none (an empty list, not
// nil).
func subdirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return []string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state root %s: %v", root, errors.Unwrap(err))
	}
	out := []string{}
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// renderPlugin runs the plugin's render export (hostfuncs/README.md, "Plugin
// exports") on input, a render request as JSON, in a plugin instance of its
// own: the bytes to print, or the plugin's error (its message, which says
// what was wrong), or the runtime's when the module cannot run.
func renderPlugin(ctx context.Context, input []byte) ([]byte, error) {
	p, _, err := loader.Instance(ctx, plugin.Wasm, "", nil)
	if err != nil {
		return nil, fmt.Errorf("cannot run the plugin: %w", err)
	}
	defer p.Close(ctx)
	rc, out, err := p.Call(hostfuncs.ExportRender, input)
	if err != nil || rc != 0 {
		var e hostfuncs.Error
		if err != nil && json.Unmarshal([]byte(err.Error()), &e) == nil && e.Message != "" {
			return nil, errors.New(e.Message)
		}
		return nil, fmt.Errorf("the plugin's render export failed: %v", err)
	}
	return out, nil
}

// collectStates lists (or, with gc, sweeps) the handle store of app, or of
// every app under the state root (dir or the plugin's default) that has
// one. An app without a handles directory is skipped, so that looking
// creates nothing. The stores are opened with the environment, so
// $MCP_RESUME_STATE_URL selects the Redis backend; there app is required
// (an error says so). It also returns the root and the names of the
// directories directly in it, as collect does; on Redis none (nil).
func collectStates(ctx context.Context, gc bool, app, dir string) ([]stateResult, string, []string, error) {
	openQuiet := func(a string) (*host.Handles, error) {
		return host.OpenHandles(context.Background(), a, &host.HandleOptions{StateRoot: dir, Pool: 1, Logger: slog.New(slog.DiscardHandler)})
	}
	// OpenHandles touches nothing: this only reads the backend the
	// environment selects.
	if hs, err := openQuiet(cliApp); err == nil {
		p := hs.Policy()
		hs.Close(context.Background())
		if p.Backend == hostfuncs.BackendRedis && app == "" {
			sub := "list"
			if gc {
				sub = "gc"
			}
			return nil, "", nil, fmt.Errorf("the handle stores are on %s (%s): name the app, as in `mcp-resume state %s APP`; a Redis server has no app directories to list", p.StateURL, host.EnvStateURL, sub)
		}
		if p.Backend == hostfuncs.BackendRedis {
			r, err := stateOf(ctx, gc, app, openQuiet)
			return r, "", nil, err
		}
	}
	root, dirs, err := listRoot(ctx, dir)
	if err != nil {
		return nil, "", nil, err
	}
	apps := dirs
	if app != "" {
		apps = []string{app}
	}
	results := []stateResult{}
	for _, a := range apps {
		r, err := stateOf(ctx, gc, a, openQuiet)
		if errors.Is(err, host.ErrInvalidApp) && app == "" {
			continue // not an app's directory: the plugin's app rule decides
		}
		if err != nil {
			return nil, "", nil, err
		}
		results = append(results, r...)
	}
	return results, root, dirs, nil
}

// stateOf lists (or, with gc, sweeps) the handle store of app, opened with
// open: one result, or none when app has no handles directory on the file
// backend.
func stateOf(ctx context.Context, gc bool, app string, open func(string) (*host.Handles, error)) ([]stateResult, error) {
	hs, err := open(app)
	if err != nil {
		return nil, err
	}
	defer hs.Close(context.Background())
	p := hs.Policy()
	r := stateResult{App: app, StateDir: p.StateDir}
	if p.Backend == hostfuncs.BackendRedis {
		r.Backend, r.StateURL = p.Backend, p.StateURL
	} else if info, serr := os.Lstat(r.StateDir); serr != nil || !info.IsDir() {
		return nil, nil
	}
	if gc {
		var out host.GCResult
		out, err = hs.GC(ctx)
		r.GC = &out
	} else {
		var out host.HandleList
		out, err = hs.List(ctx)
		r.List = &out
	}
	if err != nil {
		return nil, err
	}
	return []stateResult{r}, nil
}
