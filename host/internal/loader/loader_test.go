package loader

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	extism "github.com/extism/go-sdk"
)

// housekeep removes what killed processes and old versions left, and
// nothing in use.
func TestHousekeep(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-31 * 24 * time.Hour)
	mk := func(name string, mtime time.Time) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "wazero-v1.9.0-amd64-linux"), 0o700); err != nil {
			t.Fatal(err)
		}
		if !mtime.IsZero() {
			os.Chtimes(p, mtime, mtime)
		}
	}
	mk("tmp-"+strconv.Itoa(gone.Process.Pid)+"-1", time.Time{})              // its process is gone
	mk("tmp-"+strconv.Itoa(os.Getpid())+"-2", time.Time{})                   // this process: in use
	mk("tmp-"+strconv.Itoa(os.Getppid())+"-3", time.Time{})                  // a live process
	mk("tmp-"+strconv.Itoa(os.Getppid())+"-4", time.Now().Add(-2*time.Hour)) // live pid, but too old
	mk("plugin-fresh", time.Time{})
	mk("plugin-old", old)
	mk("wazero-v1.9.0-amd64-linux", old) // the earlier layout
	mk("other", old)                     // not ours to judge
	housekeep(dir)
	want := map[string]bool{
		"tmp-" + strconv.Itoa(os.Getpid()) + "-2":  true,
		"tmp-" + strconv.Itoa(os.Getppid()) + "-3": true,
		"plugin-fresh": true,
		"other":        true,
	}
	entries, _ := os.ReadDir(dir)
	got := map[string]bool{}
	for _, e := range entries {
		got[e.Name()] = true
		if !want[e.Name()] {
			t.Errorf("housekeep kept %s", e.Name())
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("housekeep removed %s", name)
		}
	}
}

// The entry's name depends on the module's bytes, and on nothing that
// changes between two processes of the same binary.
func TestEntryDir(t *testing.T) {
	a, b := []byte("\x00asm module a"), []byte("\x00asm module b")
	if EntryDir(a, "/c") != EntryDir(append([]byte(nil), a...), "/c") {
		t.Error("the same bytes name two entries")
	}
	if EntryDir(a, "/c") == EntryDir(b, "/c") {
		t.Error("two modules share an entry")
	}
	if filepath.Dir(EntryDir(a, "/c")) != "/c" || EntryDir(a, NoCache) != "" {
		t.Errorf("EntryDir(/c) = %q, EntryDir(-) = %q", EntryDir(a, "/c"), EntryDir(a, NoCache))
	}
}

// The guest's WASI stdout never reaches this process's stdout (the MCP
// protocol's), even with EXTISM_ENABLE_WASI_OUTPUT set, with which go-sdk
// connects it: a child process instantiates a guest that writes to its
// stdout, through Instance and, as the control that shows the variable
// matters, through go-sdk alone. Its stderr is passed through either way.
func TestInstance_GuestStdoutDiscarded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Wasm module")
	}
	wasm := filepath.Join(t.TempDir(), "stdoutguest.wasm")
	build := exec.Command("go", "build", "-buildmode=c-shared", "-o", wasm, "./testdata/stdoutguest")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guest: %v\n%s", err, out)
	}
	for _, mode := range []string{"loader", "bare"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestGuestStdoutChild$")
		cmd.Env = append(os.Environ(), "EXTISM_ENABLE_WASI_OUTPUT=1", "LOADER_TEST_GUEST="+wasm, "LOADER_TEST_MODE="+mode)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s child: %v\n%s%s", mode, err, stdout.String(), stderr.String())
		}
		leaked := strings.Contains(stdout.String(), "guest stdout")
		if mode == "loader" && leaked || mode == "bare" && !leaked {
			t.Errorf("%s: guest stdout reached the process's stdout: %v (stdout %q)", mode, leaked, stdout.String())
		}
		if !strings.Contains(stderr.String(), "guest stderr") {
			t.Errorf("%s: guest stderr lost: %q", mode, stderr.String())
		}
		if mode == "loader" && !strings.Contains(stdout.String(), "env kept") {
			t.Errorf("loader: EXTISM_ENABLE_WASI_OUTPUT not set back: %q", stdout.String())
		}
	}
}

// TestGuestStdoutChild is the child of TestInstance_GuestStdoutDiscarded.
func TestGuestStdoutChild(t *testing.T) {
	path := os.Getenv("LOADER_TEST_GUEST")
	if path == "" {
		t.Skip("child of TestInstance_GuestStdoutDiscarded")
	}
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var p *extism.Plugin
	if os.Getenv("LOADER_TEST_MODE") == "bare" {
		p, err = extism.NewPlugin(ctx, extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}}, extism.PluginConfig{EnableWasi: true}, nil)
	} else {
		p, _, err = Instance(ctx, wasm, NoCache, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if _, _, err := p.Call("run", nil); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("EXTISM_ENABLE_WASI_OUTPUT") == "1" {
		os.Stdout.WriteString("env kept\n")
	}
}
