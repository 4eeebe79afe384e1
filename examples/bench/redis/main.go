// Command redis measures the handle store on Redis through the Go API
// (host.OpenHandles with StateURL), each figure beside a baseline measured
// in the same run on the same redis-server (one started here on a free
// loopback port, hostfuncs/conformance/redistest.Launch):
//
//	go run ./examples/bench/redis [-parts ops,anatomy,replicas,size] [-record calls.json] [-pool N] [-cpuprofile f]
//
// Parts (docs/BENCHMARKS.md, "Handle store on Redis", gives the method and
// figures):
//
//	ops       16 goroutines doing get and unconditional put on pre-created
//	          handles (1 KiB values) for a window, against the floor: go-redis
//	          running the same Lua scripts with the same keys and arguments
//	          (recorded off the wire with MONITOR, record.go); store and floor
//	          windows alternate (which goes first too), medians over rounds;
//	          targets ops/s ≥ 0.35× the floor, p50 ≤ floor + 200 µs per op
//	anatomy   one caller, no concurrency: where a get's time goes (a call
//	          the plugin refuses before any host call, a get of a deleted
//	          handle: one host call and no value, the store's get and put,
//	          the floor's EVALSHA, a PING round trip), interleaved; target
//	          get p50 ≤ the floor's read EVALSHA + 150 µs
//	replicas  one process with 16 callers vs two processes with 16 each on
//	          the same Redis, total ops/s (replicas.go)
//	size      plugin.wasm's size vs the file backend's 3,818,992 bytes;
//	          target at most +150 KiB
//
// -record writes the recorded calls (scripts, create, read, put) to a JSON
// file, which examples/bench/python/bench_redis.py and
// examples/bench/typescript/redis.mjs replay as their floors. Progress goes
// to stderr, the Markdown tables to stdout. The exit status is 1 only when
// an operation fails, not when a target is missed.
package main

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"github.com/mcp-resume/mcp-resume/examples/bench/internal/benchstat"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

var (
	flagParts   = flag.String("parts", "ops,anatomy,replicas,size", "comma-separated parts to run")
	flagCallers = flag.Int("callers", 16, "ops, replicas: concurrent goroutines per process")
	flagHandles = flag.Int("handles", 256, "handles created before measuring (and recorded for the floor)")
	flagValue   = flag.Int("value", 1024, "value size in bytes")
	flagRounds  = flag.Int("rounds", 5, "ops, replicas: rounds, each one window of each kind")
	flagWindow  = flag.Duration("window", 2*time.Second, "ops, replicas: length of one window")
	flagAnatN   = flag.Int("anatomy-n", 1000, "anatomy: rounds of one call of each kind")
	flagPool    = flag.Int("pool", 0, "Pool option of the stores (0: the default, GOMAXPROCS)")
	flagTimeout = flag.Duration("timeout", 2*time.Second, "Timeout option of the stores, and the floor's deadline per call")
	flagRecord  = flag.String("record", "", "write the recorded calls to this JSON file (for the Python and TypeScript floors)")
	flagLua     = flag.String("lua", "plugin/luascripts/scripts.lua", "the plugin's scripts as it sends them (redis.lua stripped), to name the recorded calls")
	flagWasm    = flag.String("wasm", "plugin/plugin.wasm", "size: the plugin to weigh")
	flagBase    = flag.Int64("wasm-base", 3818992, "size: the plugin's size with the file backend only (ABI 7 before the Redis backend), bytes")
	flagProf    = flag.String("cpuprofile", "", "write a CPU profile of the parts after the recording to this file (go tool pprof)")
	flagChild   = flag.String("child", "", "internal (replicas): run as a replica process with this JSON job")
)

var (
	quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv   *redistest.Server
)

func fatal(what string, err error) {
	fmt.Fprintf(os.Stderr, "redis bench: %s: %v\n", what, err)
	if srv != nil {
		srv.Close()
	}
	os.Exit(1)
}

func progress(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, a...)...)
}

// open opens the benchmark's handle store on url.
func open(url string) *host.Handles {
	h, err := host.OpenHandles(context.Background(), "bench-redis", &host.HandleOptions{StateURL: url, Timeout: *flagTimeout, Pool: *flagPool, Logger: quiet})
	if err != nil {
		fatal("open", err)
	}
	if p := h.Policy(); p.Backend != "redis" {
		fatal("open", fmt.Errorf("the store answered backend %q, not redis: a plugin without the Redis backend?", p.Backend))
	}
	return h
}

func value() []byte {
	v := make([]byte, *flagValue)
	rand.Read(v)
	return v
}

func main() {
	flag.Parse()
	if *flagChild != "" {
		child(*flagChild)
		return
	}
	parts := map[string]bool{}
	for _, p := range strings.Split(*flagParts, ",") {
		parts[strings.TrimSpace(p)] = true
	}
	fmt.Printf("Handle store on Redis, Go, %s, %d cores (GOMAXPROCS %d), pool %d (0 = the default, GOMAXPROCS), value %d bytes, %s\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.GOMAXPROCS(0), *flagPool, *flagValue, redisVersion())
	if parts["size"] {
		size()
	}
	if !parts["ops"] && !parts["anatomy"] && !parts["replicas"] && *flagRecord == "" {
		return
	}
	var err error
	if srv, err = redistest.Launch(); err != nil {
		fatal("redis-server", err)
	}
	defer srv.Close()
	progress("redis-server on %s", srv.Addr)
	warm()
	store := open(srv.URL)
	defer store.Close(context.Background())
	handles, rec := prepare(store)
	if *flagRecord != "" {
		if err := rec.write(*flagRecord); err != nil {
			fatal("record", err)
		}
		progress("recorded calls written to %s", *flagRecord)
	}
	floor, err := floorClient(srv.URL)
	if err != nil {
		fatal("floor client", err)
	}
	defer floor.Close()
	if *flagProf != "" {
		f, err := os.Create(*flagProf)
		if err != nil {
			fatal("cpuprofile", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal("cpuprofile", err)
		}
		defer pprof.StopCPUProfile()
	}
	if parts["ops"] {
		ops(store, floor, handles, rec)
	}
	if parts["anatomy"] {
		anatomy(store, floor, handles, rec)
	}
	if parts["replicas"] {
		replicas(handles)
	}
}

// redisVersion is the redis-server's version line, for the header.
func redisVersion() string {
	out, err := runOut(redistest.ServerBinary(), "--version")
	if err != nil {
		return "redis-server ?"
	}
	return strings.TrimSpace(out)
}

// prepare creates the handles through store while MONITOR records what the
// host sends, then one get and one put of each, and returns the handles
// and the recorded calls (one create, read and put per handle, in order).
func prepare(store *host.Handles) ([]string, *Recording) {
	scripts, err := luaScripts(*flagLua)
	if err != nil {
		fatal("scripts", err)
	}
	mon, err := startMonitor(srv.Addr)
	if err != nil {
		fatal("monitor", err)
	}
	defer mon.stop()
	if err := mon.ready(func() error { _, err := srv.Do("ECHO", "mcp-resume-bench-start"); return err }, "mcp-resume-bench-start"); err != nil {
		fatal("monitor", err)
	}
	ctx := context.Background()
	v := value()
	handles := make([]string, *flagHandles)
	for i := range handles {
		c, err := store.Create(ctx, "", v)
		if err != nil {
			fatal("create", err)
		}
		handles[i] = c.Handle
	}
	for _, h := range handles {
		if _, err := store.Get(ctx, h, ""); err != nil {
			fatal("get", err)
		}
	}
	for _, h := range handles {
		if _, err := store.Put(ctx, h, "", v); err != nil {
			fatal("put", err)
		}
	}
	const marker = "mcp-resume-bench-recorded"
	if _, err := srv.Do("ECHO", marker); err != nil {
		fatal("monitor", err)
	}
	lines, err := mon.until(marker)
	if err != nil {
		fatal("monitor", err)
	}
	rec := &Recording{Scripts: map[string]Script{}}
	for name, dst := range map[string]*[]Call{"create": &rec.Create, "read": &rec.Read, "put": &rec.Put} {
		sc, ok := scripts[name]
		if !ok {
			fatal("scripts", fmt.Errorf("%s has no script %q", *flagLua, name))
		}
		rec.Scripts[name] = sc
		if *dst, err = calls(lines, sc.Sha); err != nil {
			fatal("monitor", err)
		}
		if len(*dst) != len(handles) {
			fatal("monitor", fmt.Errorf("recorded %d %s calls of sha %s for %d handles: does %s match plugin.wasm?", len(*dst), name, sc.Sha, len(handles), *flagLua))
		}
	}
	progress("%d handles created; their create, read and put calls recorded (%d MONITOR lines)", len(handles), len(lines))
	return handles, rec
}

// warm returns once new plugin instances run compiled code (as in
// examples/bench/handles: on a cold compilation cache a process's first
// instances run on wazero's interpreter, ~30x slower, and keep it): a
// fresh file store's get p50 under 3 ms, or under a fifth of the first's.
func warm() {
	dir, err := os.MkdirTemp("", "redis-bench-warm-")
	if err != nil {
		fatal("warm-up", err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	probe := func() time.Duration {
		s, err := host.OpenHandles(context.Background(), "bench-warm", &host.HandleOptions{StateRoot: dir, Pool: 1, Logger: quiet})
		if err != nil {
			fatal("warm-up", err)
		}
		defer s.Close(context.Background())
		c, err := s.Create(ctx, "", make([]byte, 1024))
		if err != nil {
			fatal("warm-up", err)
		}
		var t benchstat.Samples
		for range 15 {
			st := time.Now()
			if _, err := s.Get(ctx, c.Handle, ""); err != nil {
				fatal("warm-up", err)
			}
			t = append(t, time.Since(st))
		}
		return t.Pct(50)
	}
	first := probe()
	for start := time.Now(); ; time.Sleep(time.Second) {
		m := probe()
		if m < 3*time.Millisecond || m < first/5 {
			progress("warm: a new instance's get p50 is %.0f µs (the first's %.0f µs): compiled", us(m), us(first))
			return
		}
		if time.Since(start) > 2*time.Minute {
			fatal("warm-up", fmt.Errorf("new instances still answer get in %.0f µs after 2 minutes: not compiled?", us(m)))
		}
	}
}

// size weighs the plugin against the file backend's.
func size() {
	st, err := os.Stat(*flagWasm)
	if err != nil {
		fatal("size", err)
	}
	grow := st.Size() - *flagBase
	fmt.Printf("### plugin.wasm size\n\n| plugin | bytes | growth | target | |\n|---|---:|---:|---|---|\n")
	fmt.Printf("| file backend only (ABI 7, before) | %d | | | |\n", *flagBase)
	fmt.Printf("| %s | %d | %+d bytes = %+.1f KiB | ≤ +150 KiB | %s |\n\n", *flagWasm, st.Size(), grow, float64(grow)/1024,
		benchstat.Verdict(float64(grow), 150*1024, true))
}
