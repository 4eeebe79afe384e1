// Command startbench measures how long a Go MCP server takes from process
// start to its first Load answer, and its peak RSS, against a floor measured
// in the same run: the cost mcp-resume adds to every launch. Its targets:
// warm start within 1.15x of the floor, peak RSS within floor + 6 MiB, a
// first-ever (cold) start within 4x of a warm one.
//
//	go run ./host/internal/startbench -server bin/gostart [-n 20]
//
// The server is examples/bench/gostart, the Go example server's startup
// stopped at the measured point (argument load or baseline), so the example
// server carries no benchmark mode. startbench lives under host/ rather
// than examples/bench/ because its floor and its phase timings open modules
// through host/internal/loader and host/internal/primitives, which Go's
// internal-package rule lets only code under host/ import.
//
// It times each child from spawn to exit; peak RSS is the child's ru_maxrss
// (wait4). The child's stdout is a pipe this process reads, as an MCP
// host's is, so the plugin resolves this process as the host. Modes, run in
// turn (one run of each, n rounds, the order rotating every round so that
// drift on a shared machine hits all modes alike):
//
//	floor          ./floor: the server's startup with a minimal go-pdk module
//	               (./floorguest, one export, built with the plugin's flags)
//	               opened exactly as package host opens the plugin, warm cache
//	baseline       the server without mcp-resume (gostart baseline)
//	warm           Open + Load, compilation cache holding the plugin
//	cold           Open + Load, empty compilation cache (a fresh one per run):
//	               the interpreter answers while the compiler runs in the background
//	               (its own XDG_CACHE_HOME is part of the plugin's default
//	               instance key, so its Load finds no token file)
//	off            warm, with MCP_RESUME=off (the plugin loads, does nothing)
//
// The warm caches are filled before the runs, in this process, through
// host/internal/loader (the same code and cache layout the children use).
// A token file for this process's identity (named after the lock file an
// untimed warm-up Load leaves) is written first, so Load resolves the host,
// finds and validates a token as on a real relaunch. It prints Markdown
// tables.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-resume/mcp-resume/host/internal/loader"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin"
)

func main() {
	server := flag.String("server", "bin/gostart", "the Go example server's startup (examples/bench/gostart)")
	n := flag.Int("n", 20, "runs per mode")
	fillDir := flag.String("fill", "", "internal: fill this cache directory with the plugin and -fill-module, then exit")
	fillModule := flag.String("fill-module", "", "internal: the second module for -fill")
	phaseChild := flag.String("phase-child", "", "internal: time the phases of a warm start of the plugin, or of the module in this file, then exit")
	flag.Parse()
	if *phaseChild != "" {
		if err := phases(*phaseChild); err != nil {
			fmt.Fprintln(os.Stderr, "startbench -phase-child:", err)
			os.Exit(1)
		}
		return
	}
	if *fillDir != "" {
		if err := fillAll(*fillDir, *fillModule); err != nil {
			fmt.Fprintln(os.Stderr, "startbench -fill:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*server, *n); err != nil {
		fmt.Fprintln(os.Stderr, "startbench:", err)
		os.Exit(1)
	}
}

// mode is one kind of child launch.
type mode struct {
	name string
	argv []string
	env  func(i int) []string
	d    []time.Duration
	rss  []int64 // KiB
}

func run(server string, n int) error {
	tmp, err := os.MkdirTemp("", "startbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	floorBin, floorWasm, err := buildFloor(tmp)
	if err != nil {
		return err
	}
	stateDir := filepath.Join(tmp, "state")
	if err := os.Mkdir(stateDir, 0o700); err != nil {
		return err
	}
	// Fill the warm cache for both modules, as a long-running server would,
	// in a child: a child's ru_maxrss starts at this process's peak RSS (exec
	// after a vfork-style clone keeps the parent's high-water mark), so this
	// process must stay small.
	warm := filepath.Join(tmp, "warm-cache")
	warmDir := filepath.Join(warm, "mcp-resume", "wazero") // loader.DefaultCacheDir under XDG_CACHE_HOME
	fillCmd := exec.Command(os.Args[0], "-fill", warmDir, "-fill-module", filepath.Join(tmp, "floor.wasm"))
	fillCmd.Stdout, fillCmd.Stderr = os.Stderr, os.Stderr
	if err := fillCmd.Run(); err != nil {
		return fmt.Errorf("filling the warm cache: %w", err)
	}
	base := []string{"MCP_RESUME_STATE_DIR=" + stateDir, "XDG_CACHE_HOME=" + warm}
	// The children's MCP host is this process: an untimed Load leaves the
	// lock file of its identity, and a token file of that name makes every
	// measured Load take the resume path (find, validate, read).
	if _, _, err := launch([]string{server, "load"}, base); err != nil {
		return fmt.Errorf("warm-up load: %w", err)
	}
	if err := plantToken(filepath.Join(stateDir, "example-go")); err != nil {
		return err
	}
	fixed := func(env ...string) func(int) []string { return func(int) []string { return env } }
	modes := []*mode{
		{name: "floor: minimal go-pdk module, warm", argv: []string{floorBin}, env: fixed()},
		{name: "baseline: server without resume", argv: []string{server, "baseline"}, env: fixed()},
		{name: "plugin, warm cache", argv: []string{server, "load"}, env: fixed()},
		{name: "plugin, cold cache (first start)", argv: []string{server, "load"}, env: func(i int) []string {
			return []string{"XDG_CACHE_HOME=" + filepath.Join(tmp, fmt.Sprintf("cold-%d", i))}
		}},
		{name: "plugin, warm, MCP_RESUME=off", argv: []string{server, "load"}, env: fixed("MCP_RESUME=off")},
	}
	// One untimed launch of each binary, so the page cache holds them.
	for _, m := range modes[:2] {
		if _, _, err := launch(m.argv, append(slices.Clone(base), m.env(0)...)); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	for i := 0; i < n; i++ {
		for j := range modes {
			m := modes[(i+j)%len(modes)]
			d, rss, err := launch(m.argv, append(slices.Clone(base), m.env(i)...))
			if err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			m.d, m.rss = append(m.d, d), append(m.rss, rss)
		}
	}
	floor, warmM, cold := modes[0], modes[2], modes[3]
	fmt.Printf("plugin.wasm: %d bytes (%.2f MiB); floor module: %d bytes (%.2f MiB); GOMAXPROCS %d\n\n",
		len(plugin.Wasm), mib(len(plugin.Wasm)), len(floorWasm), mib(len(floorWasm)), runtime.GOMAXPROCS(0))
	fmt.Printf("Process start to first load answer (spawn to exit), %d runs each, alternating:\n\n", n)
	fmt.Println("| mode | median | p90 | min | vs floor | peak RSS (median) | vs floor |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, m := range modes {
		fmt.Printf("| %s | %s | %s | %s | %.2f× | %.1f MiB | %+.1f MiB |\n", m.name,
			ms(median(m.d)), ms(quantile(m.d, 0.9)), ms(quantile(m.d, 0)),
			ratio(median(m.d), median(floor.d)),
			float64(median(m.rss))/1024, float64(median(m.rss)-median(floor.rss))/1024)
	}
	fmt.Println()
	// Where a warm start goes, in-process (children of this process, warm cache).
	fmt.Printf("Phases of a warm start, in-process, median of %d children each (ms):\n\n", n)
	fmt.Println("| module | compile (from cache) | instantiate | first call (guest runtime init) | open | first load | total | of which in host functions |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, who := range []string{filepath.Join(tmp, "floor.wasm"), "plugin"} {
		var all []phaseTimes
		for i := 0; i < n; i++ {
			cmd := exec.Command(os.Args[0], "-phase-child", who)
			cmd.Env = append(os.Environ(), base...)
			cmd.Stderr = os.Stderr
			out, err := cmd.Output()
			if err != nil {
				return fmt.Errorf("phase child: %w", err)
			}
			var p phaseTimes
			if err := json.Unmarshal(out, &p); err != nil {
				return fmt.Errorf("phase child printed %q: %w", out, err)
			}
			all = append(all, p)
		}
		col := func(f func(phaseTimes) time.Duration) string {
			if f(all[0]) == 0 {
				return "—"
			}
			var d []time.Duration
			for _, p := range all {
				d = append(d, f(p))
			}
			return fmt.Sprintf("%.1f", float64(median(d).Microseconds())/1000)
		}
		name := "floor"
		if who == "plugin" {
			name = "plugin"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s | %s (%d calls) |\n", name,
			col(func(p phaseTimes) time.Duration { return p.Compile }),
			col(func(p phaseTimes) time.Duration { return p.Instantiate }),
			col(func(p phaseTimes) time.Duration { return p.FirstCall }),
			col(func(p phaseTimes) time.Duration { return p.Open }),
			col(func(p phaseTimes) time.Duration { return p.Load }),
			col(func(p phaseTimes) time.Duration { return p.Compile + p.Instantiate + p.FirstCall + p.Open + p.Load }),
			col(func(p phaseTimes) time.Duration { return p.HostTime }), all[0].HostCalls)
	}
	fmt.Println()
	fmt.Printf("Targets: warm ≤ 1.15× floor: %.2f× (%s); peak RSS ≤ floor + 6 MiB: %+.1f MiB (%s); cold ≤ 4× warm: %.2f× (%s)\n",
		ratio(median(warmM.d), median(floor.d)), met(ratio(median(warmM.d), median(floor.d)) <= 1.15),
		float64(median(warmM.rss)-median(floor.rss))/1024, met(median(warmM.rss)-median(floor.rss) <= 6*1024),
		ratio(median(cold.d), median(warmM.d)), met(ratio(median(cold.d), median(warmM.d)) <= 4))
	return nil
}

// phaseTimes is what a -phase-child reports.
type phaseTimes struct {
	Compile, Instantiate, FirstCall, Open, Load time.Duration
	// HostCalls and HostTime: the host-function calls of open and the
	// first load, and the time spent in them (native Go, /proc and files).
	HostCalls int
	HostTime  time.Duration
}

// phases times, in this process, the phases of a warm start of who ("plugin",
// or the path of the floor module) and prints them as JSON: compile (wazero
// loading the module from the cache, with decoding and validation, plus
// Extism's setup), instantiate, the first call (the floor's export; the
// plugin's ABI version check, which runs the guest's Go runtime init), and
// for the plugin the open call and the first load (the policy and its host
// calls). It opens the module through host/internal/loader, as package host
// does.
func phases(who string) error {
	ctx := context.Background()
	wasm := plugin.Wasm
	if who != "plugin" {
		var err error
		if wasm, err = os.ReadFile(who); err != nil {
			return err
		}
	}
	var t phaseTimes
	t0 := time.Now()
	p, engine, err := loader.Instance(ctx, wasm, "", nil)
	if err != nil {
		return err
	}
	if engine != loader.Compiled {
		return fmt.Errorf("the cache is not warm: %s", engine)
	}
	t1 := time.Now()
	p.Close(ctx)
	t2 := time.Now()
	p, _, err = loader.Instance(ctx, wasm, "", nil) // compiled now: instantiation alone
	if err != nil {
		return err
	}
	t3 := time.Now()
	t.Instantiate = t3.Sub(t2)
	t.Compile = t1.Sub(t0) - t.Instantiate
	funcs := primitives.New(primitives.Config{Trace: func(_ string, _ []byte, took time.Duration) {
		t.HostCalls++
		t.HostTime += took
	}})
	cctx := primitives.NewContext(ctx, funcs)
	call := func(name string, in []byte) (time.Duration, error) {
		start := time.Now()
		_, _, err := p.CallWithContext(cctx, name, in)
		return time.Since(start), err
	}
	if who != "plugin" {
		t.FirstCall, err = call("run", []byte("floor"))
	} else {
		if t.FirstCall, err = call(hostfuncs.ExportABIVersion, nil); err == nil {
			if t.Open, err = call(hostfuncs.ExportOpen, []byte(`{"app":"example-go"}`)); err == nil {
				t.Load, err = call(hostfuncs.ExportLoad, nil)
			}
		}
	}
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(t)
}

// buildFloor builds ./floorguest with the plugin's flags and ./floor
// embedding it (through -overlay) into dir; it returns the binary's path and
// the module.
func buildFloor(dir string) (string, []byte, error) {
	src, err := sourceDir()
	if err != nil {
		return "", nil, err
	}
	wasmPath := filepath.Join(dir, "floor.wasm")
	guest := exec.Command("go", "build", "-buildmode=c-shared", "-trimpath", "-ldflags=-buildid= -s -w", "-o", wasmPath, "./floorguest")
	guest.Dir, guest.Env = src, append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := guest.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building the floor module: %v\n%s", err, out)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(src, "floor", "floor.wasm"): wasmPath}})
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o600); err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "floor")
	host := exec.Command("go", "build", "-tags", "startbench", "-overlay", overlayPath, "-o", bin, "./floor")
	host.Dir = src
	if out, err := host.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("building the floor program: %v\n%s", err, out)
	}
	wasm, err := os.ReadFile(wasmPath)
	return bin, wasm, err
}

// sourceDir is this command's source directory (it runs from the module root
// under `make bench-go`).
func sourceDir() (string, error) {
	for _, d := range []string{"host/internal/startbench", "."} {
		if _, err := os.Stat(filepath.Join(d, "floorguest", "main.go")); err == nil {
			return filepath.Abs(d)
		}
	}
	return "", errors.New("run from the repository root: host/internal/startbench/floorguest not found")
}

// fillAll fills cacheDir with the plugin and the module in file floor.
func fillAll(cacheDir, floor string) error {
	floorWasm, err := os.ReadFile(floor)
	if err != nil {
		return err
	}
	for _, wasm := range [][]byte{plugin.Wasm, floorWasm} {
		if err := fill(wasm, cacheDir); err != nil {
			return err
		}
	}
	return nil
}

// fill compiles wasm into cacheDir as a long-running server does, and waits
// for the background compile.
func fill(wasm []byte, cacheDir string) error {
	ctx := context.Background()
	p, _, err := loader.Instance(ctx, wasm, cacheDir, nil)
	if err != nil {
		return err
	}
	p.Close(ctx)
	if err := loader.WaitBackground(ctx, wasm, cacheDir); err != nil {
		return err
	}
	if _, err := os.Stat(loader.EntryDir(wasm, cacheDir)); err != nil {
		return fmt.Errorf("warm cache not filled: %w", err)
	}
	return nil
}

// plantToken writes a token file next to the one lock file in appDir,
// under the same name: the token of the identity that lock is for.
func plantToken(appDir string) error {
	locks, _ := filepath.Glob(filepath.Join(appDir, "lock-*"))
	if len(locks) != 1 {
		return fmt.Errorf("after the warm-up load, %s holds %d lock files, want 1 (did the plugin resolve this process as the host? see its log above)", appDir, len(locks))
	}
	name := "token-" + strings.TrimPrefix(filepath.Base(locks[0]), "lock-")
	return os.WriteFile(filepath.Join(appDir, name), []byte("tok-startbench"), 0o600)
}

// launch runs argv with env added and returns spawn-to-exit time and the
// child's peak RSS in KiB. The child's stdout is a pipe to this process, as
// an MCP host's is (the plugin checks that its host holds the server's
// stdio); it must stay empty.
func launch(argv, env []string) (time.Duration, int64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, err
	}
	d := time.Since(start)
	if stdout.Len() > 0 {
		return 0, 0, fmt.Errorf("%s wrote to stdout: %q", argv[0], stdout.Bytes())
	}
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = int64(ru.Maxrss) // KiB on Linux
	}
	return d, rss, nil
}

func median[T time.Duration | int64](v []T) T { return quantile(v, 0.5) }

func quantile[T time.Duration | int64](v []T, q float64) T {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1)+0.5)]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func mib(n int) float64 { return float64(n) / (1 << 20) }

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
