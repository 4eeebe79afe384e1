package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// whoamiJSON runs `whoami --json` in this process.
func whoamiJSON(t *testing.T, args ...string) host.Identity {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(append([]string{"whoami", "--json"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got host.Identity
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	return got
}

func TestWhoami(t *testing.T) {
	t.Setenv(host.EnvInstance, "")
	got := whoamiJSON(t)
	if len(got.Chain) == 0 {
		t.Fatalf("no chain in %+v", got)
	}
	if got.Error != "" {
		t.Skip("no identity here:", got.Error)
	}
	if got.PID == 0 || got.Stdio == "" || got.InstanceSuffix != "" || !strings.HasPrefix(got.TokenFile, fmt.Sprintf("token-%d-%s", got.PID, got.StartTime)) || got.StateDir != "" {
		t.Errorf("whoami = %+v", got)
	}
	inst := whoamiJSON(t, "--instance", "work", "--app", "some-app")
	if len(inst.InstanceSuffix) != 16 || !strings.HasSuffix(inst.TokenFile, "-"+inst.InstanceSuffix) || filepath.Base(inst.StateDir) != "some-app" {
		t.Errorf("whoami --instance work --app some-app = %+v", inst)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"whoami", "--instance", "work"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "instance suffix: "+inst.InstanceSuffix) {
		t.Errorf("whoami table (exit %d):\n%s", code, out.String())
	}
}

// list tells the live host's file from a gone one's; prune deletes the gone
// one's, labelled, and keeps the live one's.
func TestListPrune(t *testing.T) {
	me := whoamiJSON(t)
	if me.Error != "" {
		t.Skip("no identity here:", me.Error)
	}
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	t.Setenv(host.EnvStateDir, "")
	dir := filepath.Join(xdg, "mcp-resume", "app")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	live := fmt.Sprintf("token-%d-%s", me.PID, me.StartTime)
	gone := fmt.Sprintf("token-%d-%s", child.Process.Pid, me.StartTime)
	for _, n := range []string{live, gone} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("secret-token"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	var out, errOut bytes.Buffer
	if code := run([]string{"list", "--json", "--app", "app"}, &out, &errOut); code != 0 {
		t.Fatalf("list exit %d: %s", code, errOut.String())
	}
	if strings.Contains(out.String(), "secret-token") {
		t.Fatal("list printed a token")
	}
	var listed []struct {
		App string `json:"app"`
		host.TokenFile
	}
	if err := json.Unmarshal(out.Bytes(), &listed); err != nil || len(listed) != 2 {
		t.Fatalf("list = %s (%v)", out.String(), err)
	}
	status := map[string]string{}
	for _, f := range listed {
		status[f.Name] = f.Host
	}
	if status[live] != hostfuncs.HostAlive || status[gone] != hostfuncs.HostGone {
		t.Fatalf("list statuses = %v", status)
	}

	out.Reset()
	if code := run([]string{"prune"}, &out, &errOut); code != 0 {
		t.Fatalf("prune exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "host gone") || !strings.Contains(out.String(), gone) {
		t.Errorf("prune output:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
		t.Errorf("prune kept the dead host's file (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(dir, live)); err != nil {
		t.Errorf("prune removed the live host's file: %v", err)
	}
}

func TestRun_Usage(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(nil, &out, &errOut); code != 2 {
		t.Errorf("no args: exit %d, want 2", code)
	}
	if code := run([]string{"bogus"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("bogus: exit %d, stderr %q", code, errOut.String())
	}
}

// runCLI runs the Go command in this process: its exit code, stdout, stderr.
func runCLI(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// whoami --pid answers for another running server: a child of this test
// process, reading its stdin from a pipe this process holds, resolves this
// process as its host, verified by the pipe, whatever the CLI's own
// ancestors are.
func TestWhoamiPID(t *testing.T) {
	child := exec.Command("sleep", "60")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); child.Process.Kill(); child.Wait() }()

	got := whoamiJSON(t, "--pid", fmt.Sprint(child.Process.Pid))
	if got.Error != "" {
		t.Skip("no identity here:", got.Error)
	}
	if got.PID != os.Getpid() || len(got.Chain) != 1 || got.Chain[0].Role != "host" || !strings.HasPrefix(got.Stdio, "verified: stdin pipe:[") {
		t.Errorf("whoami --pid %d = %+v; want this test process (%d) as the host, verified by the stdin pipe", child.Process.Pid, got, os.Getpid())
	}
	me := whoamiJSON(t)
	if me.PID == got.PID {
		t.Errorf("whoami and whoami --pid agree (%d): the --pid answer is not the child's", me.PID)
	}
	for _, bad := range []string{"1", "-3", "x"} {
		if code, _, stderr := runCLI("whoami", "--pid", bad); code == 0 || !strings.Contains(stderr, "pid") {
			t.Errorf("whoami --pid %s: exit %d, stderr %q", bad, code, stderr)
		}
	}
}

// fixtureRoot makes a state root under XDG_STATE_HOME (the plugin's default
// root, the same whatever the state_root option means) with two apps' token
// files dated three days back, a directory that is no app's name, and a
// stray file.
func fixtureRoot(t *testing.T) (root string, files map[string]string) {
	t.Helper()
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	t.Setenv(host.EnvStateDir, "")
	root = filepath.Join(xdg, "mcp-resume")
	files = map[string]string{
		"app-a": "token-2147480000-5.0f1e.4026531836",
		"app-b": "token-2147480001-6.0f1e.4026531836-0123456789abcdef",
	}
	old := time.Now().Add(-72 * time.Hour)
	for app, name := range files {
		dir := filepath.Join(root, app)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("secret-token"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	os.MkdirAll(filepath.Join(root, ".not an app"), 0o700)
	os.WriteFile(filepath.Join(root, "stray-file"), nil, 0o600)
	return root, files
}

// list without --app covers every app directory under the root, the APP
// column naming the app; --app one of them.
func TestListApps(t *testing.T) {
	root, files := fixtureRoot(t)
	code, out, stderr := runCLI("list")
	if code != 0 {
		t.Fatalf("list: exit %d: %s", code, stderr)
	}
	for app, name := range files {
		if !strings.Contains(out, app+"  ") || !strings.Contains(out, filepath.Join(root, app, name)) {
			t.Errorf("list misses %s/%s:\n%s", app, name, out)
		}
	}
	if strings.Contains(out, "secret-token") || strings.Contains(out, "not an app") || !strings.Contains(out, "3d") {
		t.Errorf("list output:\n%s", out)
	}
	code, out, _ = runCLI("list", "--json", "--app", "app-b")
	var rows []struct {
		App      string `json:"app"`
		StateDir string `json:"state_dir"`
		Name     string `json:"name"`
	}
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].App != "app-b" ||
		rows[0].StateDir != filepath.Join(root, "app-b") || rows[0].Name != files["app-b"] {
		t.Errorf("list --json --app app-b (exit %d): %s", code, out)
	}
}

// perAppRoots skips a test that needs the state_root option and MCP_RESUME_STATE_DIR to
// name the root of per-app directories when this plugin still uses them as
// the state directory itself.
func perAppRoots(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	s, err := host.Open(t.Context(), "probe", &host.Options{StateRoot: dir, Instance: host.NoInstance, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Context())
	if s.StateDir() != filepath.Join(dir, "probe") {
		t.Skip("this plugin uses the state root option as the state directory itself, not as the root of per-app directories")
	}
}

// MCP_RESUME_STATE_DIR and --state-dir name the root: list covers the apps
// under it, each named for its directory, not the root's basename.
func TestListStateRoot(t *testing.T) {
	perAppRoots(t)
	root, files := fixtureRoot(t)
	for _, args := range [][]string{{"list", "--json"}, {"list", "--json", "--state-dir", root}} {
		if len(args) == 2 {
			t.Setenv("XDG_STATE_HOME", t.TempDir())
			t.Setenv(host.EnvStateDir, root)
		} else {
			t.Setenv(host.EnvStateDir, "")
		}
		code, out, stderr := runCLI(args...)
		var rows []struct {
			App  string `json:"app"`
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 2 {
			t.Fatalf("%v (exit %d, %s): %s", args, code, stderr, out)
		}
		for _, r := range rows {
			if files[r.App] != r.Name {
				t.Errorf("%v: row %+v; want the apps %v", args, r, files)
			}
		}
	}
}

// A refused state directory is one line on stderr that says it once: the
// command, the directory, what is wrong and the fix.
func TestListError_SaidOnce(t *testing.T) {
	root, _ := fixtureRoot(t)
	dir := filepath.Join(root, "app-a")
	os.Chmod(dir, 0o755)
	code, out, stderr := runCLI("list", "--app", "app-a")
	want := "mcp-resume list: state directory " + dir + " has mode 0755, which lets other users in; run: chmod 700 " + dir + "\n"
	if code != 1 || out != "" || stderr != want {
		t.Errorf("list of a 0755 directory: exit %d, stdout %q, stderr\n%q\nwant\n%q", code, out, stderr, want)
	}
	code, _, stderr = runCLI("list", "--app", "a/b")
	if want := "mcp-resume list: invalid app name \"a/b\": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit\n"; code != 1 || stderr != want {
		t.Errorf("list --app a/b: exit %d, stderr %q; want %q", code, stderr, want)
	}
}
