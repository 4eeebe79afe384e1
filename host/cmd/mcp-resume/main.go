// Command mcp-resume inspects and tidies mcp-resume state. Every answer is
// the plugin's (its whoami, list and prune exports), so it is the same as
// the Python and TypeScript hosts would give.
//
//	mcp-resume whoami [--json] [--app NAME] [--instance KEY]   the MCP host this process resolves, and the chain walked
//	mcp-resume list   [--json] [--app NAME] [--state-dir DIR]  token files per app: host alive, gone or unknown
//	mcp-resume prune  [--json] [--app NAME] [--state-dir DIR]  delete the files of hosts that are gone, and old unknown ones
//
// Without --app or --state-dir, list and prune cover every app under the
// plugin's default state root (for example ~/.local/state/mcp-resume on
// Linux, ~/Library/Application Support/mcp-resume on macOS). They never
// print a token. Exit status: 0 on success, 1 on a runtime failure, 2 on
// bad usage.
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
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/internal/policy"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: mcp-resume <command> [flags]

commands:
  whoami   show the MCP host identity this process resolves and the ancestor chain walked
  list     list token files per app, with whether their host is alive (never the token)
  prune    delete token and lock files whose host is gone, and token files older
           than 30 days whose host cannot be checked

flags:
  --json            print JSON instead of a table
  --app NAME        one server app (default: every app under the state root)
  --state-dir DIR   one state directory (list, prune; default: $MCP_RESUME_STATE_DIR or the app's default)
  --instance KEY    the instance key whose file names whoami shows (default: $MCP_RESUME_INSTANCE, else none)
`

// cliApp is the app name the CLI opens stores with when it is given a
// directory rather than an app: the name only picks a default directory.
const cliApp = "mcp-resume"

// run is main without the exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	app := fs.String("app", "", "server app name")
	stateDir := fs.String("state-dir", "", "state directory")
	instance := fs.String("instance", "", "instance key")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	ctx := context.Background()
	var err error
	switch cmd {
	case "whoami":
		err = whoami(ctx, stdout, *asJSON, *app, *instance)
	case "list":
		err = list(ctx, stdout, *asJSON, *app, *stateDir)
	case "prune":
		err = prune(ctx, stdout, *asJSON, *app, *stateDir)
	default:
		fmt.Fprintf(stderr, "mcp-resume: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcp-resume %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// openStore opens a store quietly. The instance key is the declared one,
// else $MCP_RESUME_INSTANCE (read by the plugin), else none: the CLI's own
// arguments are not a server's.
func openStore(ctx context.Context, app, dir, instance string) (*host.Store, error) {
	if instance == "" && os.Getenv(host.EnvInstance) == "" {
		instance = host.NoInstance
	}
	return host.Open(ctx, app, &host.Options{StateDir: dir, Instance: instance, Logger: slog.New(slog.DiscardHandler)})
}

func whoami(ctx context.Context, w io.Writer, asJSON bool, app, instance string) error {
	name := app
	if name == "" {
		name = cliApp
	}
	store, err := openStore(ctx, name, "", instance)
	if err != nil {
		return err
	}
	defer store.Close(ctx)
	id, err := store.Whoami(ctx)
	if err != nil {
		return err
	}
	if app == "" {
		id.StateDir = "" // no app, no state directory to speak of
	}
	if asJSON {
		return writeJSON(w, id)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tPID\tNAME\tSTART TIME")
	for _, p := range id.Chain {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", p.Role, p.PID, p.Name, p.StartTime)
	}
	tw.Flush()
	if id.Error != "" {
		fmt.Fprintf(w, "\nresume would be OFF: %s\n", id.Error)
		return nil
	}
	suffix := id.InstanceSuffix
	if suffix == "" {
		suffix = "(none)"
	}
	fmt.Fprintf(w, "\nhost: pid %d, start time %s\nstdio: %s\ninstance suffix: %s\ntoken file: %s\nlock file: %s\n",
		id.PID, id.StartTime, id.Stdio, suffix, id.TokenFile, id.LockFile)
	if id.StateDir != "" {
		fmt.Fprintf(w, "state directory: %s\n", id.StateDir)
	}
	return nil
}

// listed is one token file in list output.
type listed struct {
	App      string `json:"app"`
	StateDir string `json:"state_dir"`
	host.TokenFile
}

func list(ctx context.Context, w io.Writer, asJSON bool, app, stateDir string) error {
	dirs, err := stateDirs(ctx, app, stateDir)
	if err != nil {
		return err
	}
	results := []listed{}
	for _, d := range dirs {
		files, err := eachStore(ctx, d, func(s *host.Store) ([]host.TokenFile, error) { return s.List(ctx) })
		if err != nil {
			return err
		}
		for _, f := range files {
			results = append(results, listed{d.app, d.dir, f})
		}
	}
	if asJSON {
		return writeJSON(w, results)
	}
	if len(results) == 0 {
		fmt.Fprintln(w, "no token files")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tPID\tSTART TIME\tINSTANCE\tHOST\tAGE\tFILE")
	for _, r := range results {
		inst := r.Instance
		if inst == "" {
			inst = "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.App, r.PID, r.StartTime, inst, r.Host, age(r.AgeSeconds), filepath.Join(r.StateDir, r.Name))
	}
	return tw.Flush()
}

// pruned is one removed file in prune output.
type pruned struct {
	App      string `json:"app"`
	StateDir string `json:"state_dir"`
	host.PrunedFile
}

func prune(ctx context.Context, w io.Writer, asJSON bool, app, stateDir string) error {
	dirs, err := stateDirs(ctx, app, stateDir)
	if err != nil {
		return err
	}
	results := []pruned{}
	for _, d := range dirs {
		removed, err := eachStore(ctx, d, func(s *host.Store) ([]host.PrunedFile, error) { return s.Prune(ctx) })
		if err != nil {
			return err
		}
		for _, f := range removed {
			results = append(results, pruned{d.app, d.dir, f})
		}
	}
	if asJSON {
		return writeJSON(w, results)
	}
	if len(results) == 0 {
		fmt.Fprintln(w, "nothing to prune")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tREMOVED BECAUSE\tFILE")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.App, reason(r.PrunedFile), filepath.Join(r.StateDir, r.Name))
	}
	return tw.Flush()
}

// reason says why prune removed a file, age-based removals as such.
func reason(f host.PrunedFile) string {
	switch f.Reason {
	case host.ReasonHostGone:
		return "host gone"
	case host.ReasonAged:
		return "aged: older than 30 days, host " + string(f.Host)
	}
	return string(f.Reason)
}

func age(s int64) string {
	switch {
	case s < 120:
		return fmt.Sprintf("%ds", s)
	case s < 2*3600:
		return fmt.Sprintf("%dm", s/60)
	case s < 2*86400:
		return fmt.Sprintf("%dh", s/3600)
	}
	return fmt.Sprintf("%dd", s/86400)
}

type appDir struct{ app, dir string }

// eachStore opens a store on d and runs fn; a missing directory has no files.
// The plugin always uses <root>/<app directory name>, so d.dir is opened as
// the app its name encodes (policy.AppFromDirName) under its parent.
func eachStore[T any](ctx context.Context, d appDir, fn func(*host.Store) ([]T, error)) ([]T, error) {
	if _, err := os.Lstat(d.dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	app, ok := policy.AppFromDirName(filepath.Base(d.dir))
	if !ok {
		return nil, fmt.Errorf("%s is not an app's state directory: its name must be an app name (uppercase letters written as '+' and the lowercase letter)", d.dir)
	}
	store, err := openStore(ctx, app, filepath.Dir(d.dir), "")
	if err != nil {
		return nil, err
	}
	defer store.Close(ctx)
	out, err := fn(store)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.dir, err)
	}
	return out, nil
}

// stateDirs returns the state directories to inspect: one when app or dir is
// given, else every app directory under the plugin's default state root.
func stateDirs(ctx context.Context, app, dir string) ([]appDir, error) {
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		if app == "" {
			app, _ = policy.AppFromDirName(filepath.Base(abs))
		}
		return []appDir{{app, abs}}, nil
	}
	name := app
	if name == "" {
		name = cliApp
	}
	store, err := openStore(ctx, name, "", "")
	if err != nil {
		return nil, err
	}
	defer store.Close(ctx)
	if app != "" {
		return []appDir{{app, store.StateDirectory()}}, nil
	}
	root := store.StateRoot()
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []appDir
	for _, e := range entries {
		if app, ok := policy.AppFromDirName(e.Name()); ok && e.IsDir() {
			out = append(out, appDir{app, filepath.Join(root, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].app < out[j].app })
	return out, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
