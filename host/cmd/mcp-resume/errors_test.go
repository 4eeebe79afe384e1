package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// whoami --pid of a pid no process has is an error (exit 1, one line on
// stderr), not an identity to show.
func TestWhoamiPID_NoProcess(t *testing.T) {
	child := exec.Command("true")
	if err := child.Run(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(child.Process.Pid) // reaped: no process has it (until the pid is reused)
	code, out, stderr := runCLI("whoami", "--pid", pid)
	want := "mcp-resume whoami: no process has pid " + pid + ": give the pid of a running MCP server\n"
	if code != 1 || out != "" || stderr != want {
		t.Errorf("whoami --pid %s (gone): exit %d, stdout %q, stderr %q; want exit 1 and %q", pid, code, out, stderr, want)
	}
}

// list, prune and state list|gc of an empty or missing root, or naming an
// app that has no directory there, fail naming the root (and the apps it
// holds); an app directory without token files or handles is a normal
// empty answer.
func TestList_RootErrors(t *testing.T) {
	root, _ := fixtureRoot(t) // app-a and app-b, and ".not an app"
	os.MkdirAll(filepath.Join(root, "app-c"), 0o700)
	const hint = ": no server has kept state there; give the root your servers use with --state-dir ROOT or MCP_RESUME_STATE_DIR\n"
	empty := t.TempDir()
	missing := filepath.Join(empty, "missing")
	for _, cmd := range [][]string{{"list"}, {"prune"}, {"state", "list"}, {"state", "gc"}} {
		name := strings.Join(cmd, " ")
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--app", "nope"}, `no app "nope" under ` + root + "; the apps there: app-a, app-b, app-c\n"},
			{[]string{"--json", "--app", "nope"}, `no app "nope" under ` + root + "; the apps there: app-a, app-b, app-c\n"},
			{[]string{"--state-dir", empty}, "no app directories under " + empty + hint},
			{[]string{"--state-dir", missing}, "no app directories under " + missing + hint},
			{[]string{"--state-dir", missing, "--app", "app-a"}, `no app "app-a" under ` + missing + ", which holds no app directories" + hint},
		} {
			args := append(append([]string{}, cmd...), c.args...)
			code, out, stderr := runCLI(args...)
			if want := "mcp-resume " + name + ": " + c.want; code != 1 || out != "" || stderr != want {
				t.Errorf("%v: exit %d, stdout %q, stderr\n%q\nwant exit 1 and\n%q", args, code, out, stderr, want)
			}
		}
		// app-c: a directory, no token file, no handle store.
		want := map[string]string{"list": "no token files\n", "prune": "nothing to prune\n", "state list": "no handle stores\n", "state gc": "no handle stores\n"}[name]
		if code, out, stderr := runCLI(append(append([]string{}, cmd...), "--app", "app-c")...); code != 0 || out != want {
			t.Errorf("%s --app app-c: exit %d, stdout %q, stderr %q; want %q", name, code, out, stderr, want)
		}
	}
	for _, p := range []string{missing, filepath.Join(root, "nope")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("looking made %s: %v", p, err)
		}
	}
}

// Flags may follow arguments, and each other in any order.
func TestFlags_AfterArguments(t *testing.T) {
	stateFixture(t)
	// The handles' ages tick between the runs.
	masked := func(out string) string { return handleAges.ReplaceAllString(out, `"${1}": N`) }
	code, want, stderr := runCLI("state", "list", "--json", "app-b")
	if code != 0 || !strings.HasPrefix(want, "[") {
		t.Fatalf("state list --json app-b: exit %d, %s\n%s", code, stderr, want)
	}
	want = masked(want)
	for _, args := range [][]string{{"state", "list", "app-b", "--json"}, {"state", "list", "app-b", "--json=true"}, {"state", "list", "--app", "app-b", "--json"}, {"state", "list", "--json", "--", "app-b"}} {
		if code, out, stderr := runCLI(args...); code != 0 || masked(out) != want {
			t.Errorf("%v: exit %d, stderr %q, stdout\n%s\nwant\n%s", args, code, stderr, out, want)
		}
	}
	code, want, stderr = runCLI("list", "--json", "--app", "app-a")
	if code != 0 || !strings.HasPrefix(want, "[") {
		t.Fatalf("list --json --app app-a: exit %d, %s\n%s", code, stderr, want)
	}
	if code, out, stderr := runCLI("list", "--app", "app-a", "--json"); code != 0 || out != want {
		t.Errorf("list --app app-a --json: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, stderr, out, want)
	}
	// Still one APP at most, and none for the others; "--" ends the flags.
	for _, args := range [][]string{{"state", "list", "app-a", "--json", "app-b"}, {"list", "x", "--json"}, {"state", "list", "--", "app-a", "--json"}, {"list", "--json", "--", "x"}} {
		if code, out, stderr := runCLI(args...); code != 2 || out != "" || !strings.Contains(stderr, "unexpected argument") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, unexpected argument", args, code, out, stderr)
		}
	}
	// After "--", "--json" is the APP, which the app rule refuses.
	if code, out, stderr := runCLI("state", "list", "--", "--json"); code != 1 || out != "" || !strings.HasPrefix(stderr, `mcp-resume state list: invalid app name "--json"`) {
		t.Errorf("state list -- --json: exit %d, stdout %q, stderr %q; want exit 1, invalid app name", code, out, stderr)
	}
}
