// Command startbench measures how long a Go MCP server takes from process
// start to its first Load answer, the cost mcp-resume adds to every launch.
//
//	go run ./host/internal/startbench -server bin/go-server -cli bin/mcp-resume [-n 20]
//
// It launches the example server with MCP_RESUME_BENCH set (the server exits
// right after the measured point) and times spawn to exit, in three modes:
//
//	baseline  the same server startup without mcp-resume
//	cold      Open + Load with an empty compilation cache (a fresh cache dir per run)
//	warm      Open + Load with the compilation cache filled by an earlier run
//
// A token file for this process's identity (as `mcp-resume whoami`, run as
// a child, reports it) is written first, so Load resolves the host, finds
// and validates a token as on a real relaunch. It prints a Markdown table.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"time"

	"github.com/mcp-resume/mcp-resume/plugin"
)

func main() {
	server := flag.String("server", "bin/go-server", "example server binary")
	cli := flag.String("cli", "bin/mcp-resume", "mcp-resume command binary")
	n := flag.Int("n", 20, "runs per mode")
	flag.Parse()
	if err := run(*server, *cli, *n); err != nil {
		fmt.Fprintln(os.Stderr, "startbench:", err)
		os.Exit(1)
	}
}

func run(server, cli string, n int) error {
	tmp, err := os.MkdirTemp("", "startbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	stateDir := filepath.Join(tmp, "state")
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		return err
	}
	// A child's MCP host is this process: ask one for the token file name.
	out, err := exec.Command(cli, "whoami", "--json").Output()
	if err != nil {
		return fmt.Errorf("%s whoami: %w", cli, err)
	}
	var id struct {
		TokenFile string `json:"token_file"`
		Error     string `json:"error"`
	}
	if err := json.Unmarshal(out, &id); err != nil || id.TokenFile == "" {
		return fmt.Errorf("%s whoami: no token file (%v %s)", cli, err, id.Error)
	}
	if err := os.WriteFile(filepath.Join(stateDir, id.TokenFile), []byte("tok-startbench"), 0o600); err != nil {
		return err
	}
	warmCache := filepath.Join(tmp, "warm-cache")
	base := []string{"MCP_RESUME_STATE_DIR=" + stateDir}
	modes := []struct {
		name string
		argv []string
		env  func(i int) []string
	}{
		{"baseline (no resume)", []string{server}, func(int) []string { return []string{"MCP_RESUME_BENCH=baseline"} }},
		{"plugin, cold compile cache", []string{server}, func(i int) []string {
			return []string{"MCP_RESUME_BENCH=load", "XDG_CACHE_HOME=" + filepath.Join(tmp, fmt.Sprintf("cold-%d", i))}
		}},
		{"plugin, warm compile cache", []string{server}, func(int) []string {
			return []string{"MCP_RESUME_BENCH=load", "XDG_CACHE_HOME=" + warmCache}
		}},
	}
	// Fill the warm cache once.
	if _, err := timeOnce([]string{server}, append(base, "MCP_RESUME_BENCH=load", "XDG_CACHE_HOME="+warmCache)); err != nil {
		return err
	}
	fmt.Printf("plugin.wasm: %d bytes (%.2f MiB)\n\n", len(plugin.Wasm), float64(len(plugin.Wasm))/(1<<20))
	fmt.Printf("Process start to first load answer (spawn to exit), %d runs each:\n\n", n)
	fmt.Println("| mode | median | p90 | min |")
	fmt.Println("|---|---:|---:|---:|")
	for _, m := range modes {
		var d []time.Duration
		for i := 0; i < n; i++ {
			t, err := timeOnce(m.argv, append(append([]string{}, base...), m.env(i)...))
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			d = append(d, t)
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		fmt.Printf("| %s | %s | %s | %s |\n", m.name, ms(d[len(d)/2]), ms(d[len(d)*9/10]), ms(d[0]))
	}
	return nil
}

func timeOnce(argv, env []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
