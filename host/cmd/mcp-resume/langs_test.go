package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// repoRoot is the repository root, from this file's place in it.
func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// clis are the three command lines: this package built as a binary, the
// Python module and the TypeScript bin, each run as a real process.
func clis(t *testing.T) map[string][]string {
	t.Helper()
	root := repoRoot(t)
	py := filepath.Join(root, ".venv", "bin", "python")
	// The bin npm links into a project that depends on the package, run as
	// `npx mcp-resume` runs it: as an executable, through its #! line.
	ts := filepath.Join(root, "examples", "typescript-server", "node_modules", ".bin", "mcp-resume")
	for _, p := range []string{py, ts} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is missing: run make python-setup typescript-setup", p)
		}
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node on PATH")
	}
	bin := filepath.Join(t.TempDir(), "mcp-resume")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return map[string][]string{"go": {bin}, "python": {py, "-m", "mcp_resume"}, "typescript": {ts}}
}

// ages masks the ages of list --json, which tick between the runs;
// handleAges those of state list --json.
var (
	ages       = regexp.MustCompile(`"age_seconds": [0-9]+`)
	handleAges = regexp.MustCompile(`"(age_ms|idle_ms)": [0-9]+`)
)

// oldHandles gives app-a and app-b handle stores under root whose handles
// were made at created (so that their ages print the same in every run)
// with lifetimes that keep them live.
func oldHandles(t *testing.T, root string, created time.Time) {
	t.Helper()
	for app, n := range map[string]int{"app-a": 2, "app-b": 1} {
		hs, err := host.OpenHandles(context.Background(), app, &host.HandleOptions{StateRoot: root, IdleTTL: 100 * time.Hour,
			Now: func() time.Time { return created }, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := hs.Create(context.Background(), "", []byte(`{"notes":["x"]}`)); err != nil {
				t.Fatal(err)
			}
		}
		hs.Close(context.Background())
	}
}

// copyTree copies the directories (0700) and regular files (0600) under
// src into dst, as a state root holds them.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			if err := os.MkdirAll(to, 0o700); err != nil {
				return err
			}
			return os.Chmod(to, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The Go, Python and TypeScript command lines print the same bytes to
// stdout and stderr, and exit the same, for the same state: every format
// is the plugin's (plugin/internal/render), every answer too.
func TestCLIs_SameOutput(t *testing.T) {
	cmds := clis(t)
	child := exec.Command("sleep", "60")
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); child.Process.Kill(); child.Wait() }()
	pid := strconv.Itoa(child.Process.Pid)
	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	gone := strconv.Itoa(reaped.Process.Pid) // no process has it (until the pid is reused)
	missing := filepath.Join(t.TempDir(), "missing")

	cases := [][]string{
		{"list"}, {"list", "--json"}, {"list", "--app", "app-b"}, {"list", "--json", "--app", "app-a"},
		{"prune"}, {"prune", "--json"},
		{"whoami", "--pid", pid}, {"whoami", "--json", "--pid", pid, "--app", "app-a", "--instance", "work"},
		{"whoami", "--pid", "1"},
		{"list", "--app", "a/b"}, {"list", "--bogus"}, {"nope"}, {}, {"--help"},
		{"state", "list"}, {"state", "list", "--json"}, {"state", "list", "app-b"}, {"state", "gc"}, {"state", "gc", "--json", "app-a"},
		{"state", "show"}, {"state", "list", "a/b"},
		// Errors: a pid no process has; an app with no directory under
		// the root, and a root without app directories.
		{"whoami", "--pid", gone},
		{"list", "--app", "nope"}, {"list", "--json", "--app", "nope"}, {"prune", "--app", "nope"}, {"list", "--state-dir", missing},
		{"prune", "--state-dir", missing, "--app", "app-a"},
		{"state", "list", "nope"}, {"state", "gc", "--json", "--app", "nope"}, {"state", "list", "--state-dir", missing},
		// Flags after arguments.
		{"state", "list", "app-b", "--json"}, {"list", "--app", "app-b", "--json"}, {"state", "gc", "app-a", "--json", "--state-dir", "$ROOT"},
		{"state", "list", "app-a", "--json", "app-b"}, {"list", "x", "--json"}, {"state", "list", "--", "--json"},
	}
	for _, args := range cases {
		t.Run(fmt.Sprint(args), func(t *testing.T) {
			var first string
			var firstOut []byte
			old := time.Now().Add(-50 * time.Hour) // "2d" in every run: a fresh file's "0s" could tick
			// One set of handles for the three languages (each gets a copy):
			// handles are random, and the key hashes list shows must match.
			handles := ""
			if len(args) > 0 && args[0] == "state" {
				handles = t.TempDir()
				oldHandles(t, handles, old)
			}
			for _, lang := range []string{"go", "python", "typescript"} {
				root, _ := fixtureRoot(t) // a fresh root each: prune removes files
				gone := filepath.Join(root, "app-b", "token-2147480002-7.0f1e.4026531836")
				os.WriteFile(gone, []byte("tok"), 0o600)
				os.Chtimes(gone, old, old)
				if handles != "" {
					copyTree(t, handles, root)
				}
				argv := append([]string{}, cmds[lang]...)
				for _, a := range args {
					argv = append(argv, strings.ReplaceAll(a, "$ROOT", root))
				}
				out := transcript(t, lang, argv)
				out = bytes.ReplaceAll(ages.ReplaceAll(out, []byte(`"age_seconds": N`)), []byte(root), []byte("$ROOT"))
				out = bytes.ReplaceAll(out, []byte(missing), []byte("$MISSING"))
				out = handleAges.ReplaceAll(out, []byte(`"${1}": N`))
				if first == "" {
					first, firstOut = lang, out
					continue
				}
				if !bytes.Equal(out, firstOut) {
					t.Errorf("%v: %s and %s differ:\n--- %s\n%s\n--- %s\n%s", args, first, lang, first, firstOut, lang, out)
				}
			}
			t.Logf("%v:\n%s", args, firstOut)
		})
	}
}

// On Redis (MCP_RESUME_STATE_URL) the three command lines also print and
// exit the same: an app's store by its URL with the password as ***, and
// the error that names the app to give when none is.
func TestCLIs_SameOutputRedis(t *testing.T) {
	cmds := clis(t)
	srv := redistest.Start(t, redistest.Password("pw-langs"))
	fixtureRoot(t)
	t.Setenv(host.EnvStateURL, srv.URL+"/0")
	// Made 50 hours back, so that its ages print "2d" in every run.
	created := time.Now().Add(-50 * time.Hour)
	hs, err := host.OpenHandles(context.Background(), "app-r", &host.HandleOptions{IdleTTL: 100 * time.Hour, Now: func() time.Time { return created },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.Create(context.Background(), "", []byte(`{"notes":["x"]}`)); err != nil {
		t.Fatal(err)
	}
	hs.Close(context.Background())
	for _, args := range [][]string{{"state", "list", "app-r"}, {"state", "list", "--json", "app-r"}, {"state", "gc", "app-r", "--json"}, {"state", "list"}, {"state", "gc"}} {
		var first string
		var firstOut []byte
		for _, lang := range []string{"go", "python", "typescript"} {
			argv := append(append([]string{}, cmds[lang]...), args...)
			out := handleAges.ReplaceAll(transcript(t, lang, argv), []byte(`"${1}": N`))
			if bytes.Contains(out, []byte("pw-langs")) {
				t.Errorf("%v: %s shows the password:\n%s", args, lang, out)
			}
			if first == "" {
				first, firstOut = lang, out
				continue
			}
			if !bytes.Equal(out, firstOut) {
				t.Errorf("%v: %s and %s differ:\n--- %s\n%s\n--- %s\n%s", args, first, lang, first, firstOut, lang, out)
			}
		}
		t.Logf("%v:\n%s", args, firstOut)
	}
}

// transcript runs argv, lang's command line, and returns what the three
// languages must print alike: "exit N", its stdout and its stderr.
func transcript(t *testing.T, lang string, argv []string) []byte {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%s: %v", lang, err)
	}
	return []byte(fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.Bytes(), stderr.Bytes()))
}
