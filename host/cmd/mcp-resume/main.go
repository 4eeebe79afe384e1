// Command mcp-resume inspects and tidies mcp-resume state.
//
//	mcp-resume whoami [--json] [--app NAME]   the MCP host this process would resolve, and the chain walked
//	mcp-resume list   [--json] [--app NAME] [--state-dir DIR]   token files per app: host alive or gone
//	mcp-resume prune  [--json] [--app NAME] [--state-dir DIR]   delete token files whose host is gone (the plugin's prune policy)
//
// Without --app, list and prune cover every app under the default state root
// ($XDG_STATE_HOME/mcp-resume or ~/.local/state/mcp-resume on Linux,
// ~/Library/Application Support/mcp-resume on macOS). They never print a token.
// Exit status: 0 on success, 1 on a runtime failure, 2 on bad usage.
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
	"github.com/mcp-resume/mcp-resume/internal/resume"
	"github.com/mcp-resume/mcp-resume/internal/procid"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: mcp-resume <command> [flags]

commands:
  whoami   show the MCP host identity this process resolves and the ancestor chain walked
  list     list token files per app, with whether their host is alive (never the token)
  prune    delete token files whose host process is gone

flags (all commands):
  --json            print JSON instead of a table
  --app NAME        one server app (default: every app under the state root)
  --state-dir DIR   one state directory (list, prune; default: $MCP_RESUME_STATE_DIR or the app's default)
`

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
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	ctx := context.Background()
	var err error
	switch cmd {
	case "whoami":
		err = whoami(stdout, *asJSON, *app)
	case "list", "prune":
		err = listOrPrune(ctx, stdout, *asJSON, cmd == "prune", *app, *stateDir)
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

// whoamiOutput is the JSON form of whoami.
type whoamiOutput struct {
	PID       int       `json:"pid,omitempty"`
	StartTime string    `json:"start_time,omitempty"`
	Stdio     string    `json:"stdio,omitempty"`
	TokenFile string    `json:"token_file,omitempty"`
	StateDir  string    `json:"state_dir,omitempty"`
	Chain     []process `json:"chain"`
	Error     string    `json:"error,omitempty"`
}

func whoami(w io.Writer, asJSON bool, app string) error {
	id, err := procid.Host(nil)
	out := whoamiOutput{Chain: []process{}}
	for _, p := range id.Chain {
		out.Chain = append(out.Chain, process{PID: p.PID, PPID: p.PPID, Name: p.Name, Args: p.Args, StartTime: p.StartTime})
	}
	if err != nil {
		out.Error = err.Error()
	} else {
		out.PID, out.StartTime, out.Stdio = id.PID, id.StartTime, id.Stdio
		out.TokenFile = resume.FileName(id.PID, id.StartTime, "")
	}
	if app != "" {
		out.StateDir = stateDirFor(app)
	}
	if asJSON {
		return writeJSON(w, out)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tPID\tNAME\tSTART TIME")
	for i, p := range out.Chain {
		role := "launcher"
		if i == len(out.Chain)-1 && err == nil {
			role = "host"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", role, p.PID, p.Name, p.StartTime)
	}
	tw.Flush()
	if err != nil {
		fmt.Fprintf(w, "\nresume would be OFF: %v\n", err)
		return nil
	}
	fmt.Fprintf(w, "\nhost: pid %d, start time %s\nstdio: %s\ntoken file: %s\n", out.PID, out.StartTime, out.Stdio, out.TokenFile)
	if out.StateDir != "" {
		fmt.Fprintf(w, "state directory: %s\n", out.StateDir)
	}
	return nil
}

// process is one ancestor in whoami output.
type process struct {
	PID       int      `json:"pid"`
	PPID      int      `json:"ppid"`
	Name      string   `json:"name"`
	Args      []string `json:"args,omitempty"`
	StartTime string   `json:"start_time"`
}

// fileStatus is one token file in list and prune output.
type fileStatus struct {
	App       string `json:"app"`
	StateDir  string `json:"state_dir"`
	File      string `json:"file"`
	PID       int    `json:"pid"`
	StartTime string `json:"start_time"`
	Instance  string `json:"instance,omitempty"`
	// Host is "alive", "gone" or "unknown" (could not tell; prune keeps it).
	Host    string `json:"host"`
	Pruned  bool   `json:"pruned,omitempty"`
	Problem string `json:"problem,omitempty"`
}

func listOrPrune(ctx context.Context, w io.Writer, asJSON, prune bool, app, stateDir string) error {
	dirs, err := stateDirs(app, stateDir)
	if err != nil {
		return err
	}
	quiet := slog.New(slog.DiscardHandler)
	results := []fileStatus{}
	for _, d := range dirs {
		// The app name only picks a default directory; the directory is given.
		store, err := host.Open(ctx, "mcp-resume-cli", &host.Options{StateDir: d.dir, Logger: quiet})
		if err != nil {
			return err
		}
		var removed []string
		if prune {
			removed, err = store.Prune(ctx)
		}
		files, lerr := store.List(ctx)
		store.Close(ctx)
		if err == nil {
			err = lerr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", d.dir, err)
		}
		for _, name := range removed {
			if n, ok := resume.ParseName(resume.FilePrefix, name); ok {
				results = append(results, fileStatus{App: d.app, StateDir: d.dir, File: name, PID: n.PID, StartTime: n.StartTime, Instance: n.Instance, Host: "gone", Pruned: true})
			}
		}
		for _, f := range files {
			st := fileStatus{App: d.app, StateDir: d.dir, File: f.Name, PID: f.PID, StartTime: f.StartTime, Instance: f.Instance, Host: "unknown"}
			alive, err := procid.Alive(f.PID, f.StartTime)
			switch {
			case err != nil:
				st.Problem = err.Error()
			case alive:
				st.Host = "alive"
			default:
				st.Host = "gone"
			}
			results = append(results, st)
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
	fmt.Fprintln(tw, "APP\tPID\tSTART TIME\tHOST\tACTION\tFILE")
	for _, r := range results {
		action := "-"
		if r.Pruned {
			action = "pruned"
		} else if r.Problem != "" {
			action = r.Problem
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", r.App, r.PID, r.StartTime, r.Host, action, filepath.Join(r.StateDir, r.File))
	}
	return tw.Flush()
}

type appDir struct{ app, dir string }

func stateDirFor(app string) string {
	if d := os.Getenv(host.EnvStateDir); d != "" {
		return d
	}
	return host.StateDir(app)
}

// stateDirs returns the state directories to inspect: one when app or dir is
// given, else every app directory under the default state root.
func stateDirs(app, dir string) ([]appDir, error) {
	switch {
	case dir != "":
		if app == "" {
			app = filepath.Base(dir)
		}
		return []appDir{{app, dir}}, nil
	case app != "":
		return []appDir{{app, stateDirFor(app)}}, nil
	}
	root := filepath.Dir(host.StateDir("x"))
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []appDir
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, appDir{e.Name(), filepath.Join(root, e.Name())})
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
