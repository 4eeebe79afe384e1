package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Warm per-call cost of the plugin through the Go host, and what a server
// start costs in host-function primitives. `make bench-go` runs these;
// docs/BENCHMARKS.md has the figures.
//
// Each benchmark runs in a child of the benchmark process, as an MCP server
// does: the child's stdout is a pipe the parent reads, so the plugin
// resolves the parent as the MCP host with the real process tree. (`go test
// -bench` passes its own stdout through to the test binary, so the plugin
// rightly refuses the go command as a host.) ns/op is the child's own
// measurement, without the process start.

const (
	benchChildEnv = "HOST_BENCH_CHILD"
	benchNEnv     = "HOST_BENCH_N"
	benchCacheEnv = "HOST_BENCH_CACHE"
)

// benchResult is what a benchmark child reports on stdout.
type benchResult struct {
	N         int           `json:"n"`
	Elapsed   time.Duration `json:"elapsed"`
	Calls     int           `json:"calls"`
	Inspects  int           `json:"inspects"`
	Ops       int           `json:"ops"`
	HostTime  time.Duration `json:"host_time"`
	InspTime  time.Duration `json:"inspect_time"`
	OpenTime  time.Duration `json:"open_time"` // OpenLoad: in Open
	LoadTime  time.Duration `json:"load_time"` // OpenLoad: in the first Load
	Error     string        `json:"error,omitempty"`
	TokenFile string        `json:"token_file,omitempty"`
}

// inChild runs benchmark name for b.N iterations in a child process and
// reports its figures.
func inChild(b *testing.B, name string) benchResult {
	b.StopTimer()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+name, benchNEnv+"="+strconv.Itoa(b.N), benchCacheEnv+"="+sharedCacheDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		b.Fatalf("benchmark child: %v\n%s", err, out.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		b.Fatalf("benchmark child printed %q: %v", out.String(), err)
	}
	if r.Error != "" {
		b.Fatal(r.Error)
	}
	b.ReportMetric(float64(r.Elapsed.Nanoseconds())/float64(r.N), "ns/op")
	return r
}

func BenchmarkWasm(b *testing.B) {
	for _, name := range []string{"Load", "Store", "Reject"} {
		b.Run(name, func(b *testing.B) { inChild(b, name) })
	}
}

// BenchmarkOpenLoad is a server start after the module is compiled: Open (a
// fresh plugin instance), then the first Load, which resolves the MCP host
// from nothing (the real process tree, through mcp_resume_inspect), prepares
// the state directory, takes the lock, prunes and reads the token file.
// Besides ns/op it reports the host-function calls of one start, the
// inspect calls and operations among them, and the time spent inside the
// host functions (host-µs) and inside inspect (inspect-µs): the cost of the
// ABI 3 primitives, next to the policy running in Wasm; and the split
// between Open (open-µs: a plugin instance of the module compiled once per
// process) and the first Load (first-load-µs).
func BenchmarkOpenLoad(b *testing.B) {
	r := inChild(b, "OpenLoad")
	n := float64(r.N)
	b.ReportMetric(float64(r.Calls)/n, "hostcalls/op")
	b.ReportMetric(float64(r.Inspects)/n, "inspects/op")
	b.ReportMetric(float64(r.Ops)/n, "inspect-ops/op")
	b.ReportMetric(float64(r.HostTime.Microseconds())/n, "host-µs/op")
	b.ReportMetric(float64(r.InspTime.Microseconds())/n, "inspect-µs/op")
	b.ReportMetric(float64(r.OpenTime.Microseconds())/n, "open-µs/op")
	b.ReportMetric(float64(r.LoadTime.Microseconds())/n, "first-load-µs/op")
}

// callStats counts host-function calls and the time spent in them.
type callStats struct {
	mu sync.Mutex
	r  benchResult
}

func (c *callStats) trace(fn string, req []byte, took time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.r.Calls++
	c.r.HostTime += took
	if fn == hostfuncs.FnInspect {
		var r struct{ Ops []json.RawMessage }
		json.Unmarshal(req, &r)
		c.r.Inspects++
		c.r.Ops += len(r.Ops)
		c.r.InspTime += took
	}
}

// benchChild runs one benchmark in this (child) process and prints its
// benchResult on stdout.
func benchChild(name string) int {
	n, _ := strconv.Atoi(os.Getenv(benchNEnv))
	r := runBench(name, max(n, 1))
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

func runBench(name string, n int) benchResult {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "host-bench-")
	if err != nil {
		return benchResult{Error: err.Error()}
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "state")
	opts := &host.Options{StateRoot: dir, Logger: slog.New(slog.DiscardHandler), CacheDir: sharedCacheDir, Instance: host.NoInstance}
	s, err := host.Open(ctx, "bench-app", opts)
	if err != nil {
		return benchResult{Error: err.Error()}
	}
	id, err := s.Whoami(ctx)
	if err != nil || id.Error != "" {
		return benchResult{Error: fmt.Sprintf("no MCP host identity for the benchmark child: %v %s", err, id.Error)}
	}
	if err := s.Store(ctx, "tok-initial"); err != nil {
		return benchResult{Error: err.Error()}
	}
	r := benchResult{N: n, TokenFile: id.TokenFile}
	var start time.Time
	switch name {
	case "Load":
		start = time.Now()
		for i := 0; i < n; i++ {
			s.Load(ctx)
		}
	case "Store":
		start = time.Now()
		for i := 0; i < n; i++ {
			s.Store(ctx, "tok-"+strconv.Itoa(i))
		}
	case "Reject":
		// Each iteration: store a token, then reject it (read, compare,
		// delete); only the reject is timed.
		for i := 0; i < n; i++ {
			s.Store(ctx, "tok-"+strconv.Itoa(i))
			t := time.Now()
			s.Reject(ctx)
			r.Elapsed += time.Since(t)
		}
	case "OpenLoad":
		s.Store(ctx, "tok-bench")
		s.Close(ctx)
		var stats callStats
		start = time.Now()
		var openTime, loadTime time.Duration
		for i := 0; i < n; i++ {
			t0 := time.Now()
			funcs := primitives.New(primitives.Config{Logger: opts.Logger, Trace: stats.trace})
			o, err := host.OpenWithFuncsForTest(ctx, "bench-app", opts, funcs)
			if err != nil {
				return benchResult{Error: err.Error()}
			}
			t1 := time.Now()
			if tok, ok := o.Load(ctx); !ok || tok != "tok-bench" {
				return benchResult{Error: fmt.Sprintf("Load = %q, %v", tok, ok)}
			}
			openTime, loadTime = openTime+t1.Sub(t0), loadTime+time.Since(t1)
			o.Close(ctx)
		}
		r.Elapsed = time.Since(start)
		st := stats.r
		st.N, st.Elapsed, st.TokenFile, st.OpenTime, st.LoadTime = n, r.Elapsed, r.TokenFile, openTime, loadTime
		return st
	default:
		return benchResult{Error: "unknown benchmark " + name}
	}
	if !start.IsZero() {
		r.Elapsed = time.Since(start)
	}
	s.Close(ctx)
	return r
}
