package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

// No file of this host may land on fds 0-2: a server started with one of
// them closed (a host running `server 2>&-`) would later write its protocol
// or its logs into it. Go's runtime opens /dev/null onto a closed fd 0-2
// before main runs (runtime.checkfds, Go 1.22 and later); this test pins
// that for a real store on the real plugin, compiled in the background
// from an empty cache (the most files opened).

const fdsChildEnv = "HOST_FDS_CHILD" // the file the child writes its report to

// fdsChild opens a store, stores and loads a token, waits for the
// background compile, and writes the targets of its fds 0-2 as JSON.
func fdsChild(report string) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "mcp-resume-fds-")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := host.Open(ctx, "fds-app", &host.Options{CacheDir: filepath.Join(dir, "cache"), StateRoot: filepath.Join(dir, "state"), Instance: host.NoInstance, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 1
	}
	s.Store(ctx, "tok-fds")
	s.Load(ctx)
	host.WaitAllCompilesForTest(ctx)
	std := map[string]string{}
	for fd := range 3 {
		target, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err != nil {
			target = "closed"
		}
		std[strconv.Itoa(fd)] = target
	}
	b, _ := json.Marshal(std)
	s.Close(ctx)
	if os.WriteFile(report, b, 0o600) != nil {
		return 1
	}
	return 0
}

func TestStdFDs_ClosedAtStartGetDevNull(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/fd")
	}
	for fd := range 3 {
		t.Run(strconv.Itoa(fd), func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.json")
			cmd := exec.Command("sh", "-c", fmt.Sprintf(`exec "$0" -test.run='^$' %d>&-`, fd), os.Args[0])
			cmd.Env = append(os.Environ(), fdsChildEnv+"="+report)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd.Stdin, cmd.Stdout, cmd.Stderr = r, w, w
			err = cmd.Run()
			w.Close()
			if err != nil {
				t.Fatalf("child: %v", err)
			}
			b, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var std map[string]string
			if err := json.Unmarshal(b, &std); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				want := "pipe:"
				if i == fd {
					want = "/dev/null"
				}
				if got := std[strconv.Itoa(i)]; len(got) < len(want) || got[:len(want)] != want {
					t.Errorf("fd %d is %q, want %s…", i, got, want)
				}
			}
		})
	}
}
