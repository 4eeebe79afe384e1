// Command mcp-resume inspects and tidies mcp-resume state. Every answer is
// the plugin's (its whoami, list and prune exports), and so is every byte
// it prints, stdout and the usage text alike (the plugin's render export,
// which the Python and TypeScript commands call too), so `python -m
// mcp_resume` and `npx mcp-resume` print exactly the same:
//
//	mcp-resume whoami [--json] [--app NAME] [--instance KEY] [--pid PID]  the MCP host this process (or PID) resolves, and the chain walked
//	mcp-resume list   [--json] [--app NAME] [--state-dir ROOT]             token files per app: host alive, gone or unknown
//	mcp-resume prune  [--json] [--app NAME] [--state-dir ROOT]             delete the files of hosts that are gone, and old unknown ones
//	mcp-resume state list|gc [--json] [--state-dir ROOT] [APP]              the handle store of each app: list its handles, or sweep it
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
// the server by its URL with the password as ***. Exit status: 0 on success, 1 on a runtime failure
// (one line on stderr: "mcp-resume <command>: <what was wrong and what to
// do>"), 2 on bad usage.
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
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, usage())
			return 0
		}
		fmt.Fprintf(stderr, "mcp-resume %s: %v\n\n%s", cmd, err, usage())
		return 2
	}
	if strings.HasPrefix(cmd, "state ") && fs.NArg() == 1 && (*app == "" || *app == fs.Arg(0)) {
		*app = fs.Arg(0) // state list|gc APP
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mcp-resume %s: unexpected argument %q\n\n%s", cmd, fs.Arg(fs.NArg()-1), usage())
		return 2
	}
	req := renderRequest{Command: cmd, JSON: *asJSON}
	var err error
	switch cmd {
	case "whoami":
		req.ShowStateDir = *app != ""
		req.Whoami, err = whoami(ctx, *app, *instance, *pid)
	case "list", "prune":
		req.Apps, err = collect(ctx, cmd, *app, *stateRoot)
	case "state list", "state gc":
		req.Command = strings.Replace(cmd, " ", "_", 1)
		req.States, err = collectStates(ctx, cmd == "state gc", *app, *stateRoot)
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

// renderRequest is the input of the plugin's render export.
type renderRequest struct {
	Command      string        `json:"command"`
	JSON         bool          `json:"json,omitempty"`
	ShowStateDir bool          `json:"show_state_dir,omitempty"`
	Whoami       host.Identity `json:"whoami"`
	Apps         []appResult   `json:"apps"`
	// States replaces Apps for state_list and state_gc (the same member).
	States []stateResult `json:"-"`
}

// MarshalJSON writes States as "apps" for the state commands.
func (r renderRequest) MarshalJSON() ([]byte, error) {
	type plain renderRequest
	if !strings.HasPrefix(r.Command, "state_") {
		return json.Marshal(plain(r))
	}
	return json.Marshal(struct {
		Command string        `json:"command"`
		JSON    bool          `json:"json,omitempty"`
		Apps    []stateResult `json:"apps"`
	}{r.Command, r.JSON, r.States})
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
// state root, dir or the plugin's default.
func collect(ctx context.Context, cmd, app, dir string) ([]appResult, error) {
	apps, err := targetApps(ctx, app, dir)
	if err != nil {
		return nil, err
	}
	results := []appResult{}
	for _, a := range apps {
		store, err := openStore(ctx, a, dir, "")
		if errors.Is(err, host.ErrInvalidApp) && app == "" {
			continue // not an app's directory: the plugin's app rule decides
		}
		if err != nil {
			return nil, err
		}
		r := appResult{App: a, StateDir: store.StateDir()}
		if cmd == "list" {
			r.Files, err = store.List(ctx)
		} else {
			r.Removed, err = store.Prune(ctx)
		}
		store.Close(ctx)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// targetApps is the apps a list, prune, state list or state gc command
// covers: app, or, when app is "", the directories directly in the state
// root (dir or the plugin's default; subdirs), which need not all be apps.
func targetApps(ctx context.Context, app, dir string) ([]string, error) {
	if app != "" {
		return []string{app}, nil
	}
	root, err := stateRoot(ctx, dir)
	if err != nil {
		return nil, err
	}
	return subdirs(root)
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
// following symlinks), sorted; a missing root has none.
func subdirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state root %s: %v", root, errors.Unwrap(err))
	}
	var out []string
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
// (an error says so).
func collectStates(ctx context.Context, gc bool, app, dir string) ([]stateResult, error) {
	openQuiet := func(a string) (*host.Handles, error) {
		return host.OpenHandles(context.Background(), a, &host.HandleOptions{StateRoot: dir, Pool: 1, Logger: slog.New(slog.DiscardHandler)})
	}
	if app == "" {
		// OpenHandles touches nothing: this only reads the backend the
		// environment selects.
		if hs, err := openQuiet(cliApp); err == nil {
			p := hs.Policy()
			hs.Close(context.Background())
			if p.Backend == hostfuncs.BackendRedis {
				return nil, fmt.Errorf("the handle stores are on %s (%s): name the app, as in `mcp-resume state list APP`; a Redis server has no app directories to list", p.StateURL, host.EnvStateURL)
			}
		}
	}
	apps, err := targetApps(ctx, app, dir)
	if err != nil {
		return nil, err
	}
	results := []stateResult{}
	for _, a := range apps {
		hs, err := openQuiet(a)
		if errors.Is(err, host.ErrInvalidApp) && app == "" {
			continue // not an app's directory: the plugin's app rule decides
		}
		if err != nil {
			return nil, err
		}
		p := hs.Policy()
		r := stateResult{App: a, StateDir: p.StateDir}
		if p.Backend == hostfuncs.BackendRedis {
			r.Backend, r.StateURL = p.Backend, p.StateURL
		} else if info, serr := os.Lstat(r.StateDir); serr != nil || !info.IsDir() {
			hs.Close(context.Background())
			continue
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
		hs.Close(context.Background())
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}
