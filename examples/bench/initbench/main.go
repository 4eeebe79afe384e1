// Command initbench measures what session resume adds to the MCP handshake
// of the three example servers: from process start to the `initialize`
// answer, driven by the official Go MCP SDK client exactly as an MCP host
// launches a stdio server (examples/mcphost does the same). The target is
// resume adding at most 5% (-target 1.05): a host waits for initialize
// before it offers the server's tools, so resume must not delay it.
//
//	go run ./examples/bench/initbench -broker bin/broker [-n 20] [-langs go,python,typescript]
//
// For each language it runs the real example server against the real broker
// (examples/broker), with resume on and with MCP_RESUME=off (the baseline:
// the same server, the plugin loaded but doing nothing), alternating the
// order run by run so that machine noise hits both alike, after one
// discarded warm-up run of each. Each run times:
//
//	initialize   process start (fork/exec, inside Connect) to the initialize
//	             answer: Connect returns once it has the answer and has sent
//	             notifications/initialized
//	first tool   process start to the first session_info answer, which waits
//	             for the broker session the server establishes in the background
//
// With resume on, every measured run resumes (the warm-up stored the token):
// session_info must say resumed=true, and resumed=false with MCP_RESUME=off.
//
// For the TypeScript server, whose plugin work is synchronous on the event
// loop, a third variant, "eager" (MCP_EXAMPLE_BENCH_EAGER=1: the store opens
// at once, not after the handshake), runs in the same rotation. Every
// TypeScript run sets MCP_EXAMPLE_BENCH_ELD=1 so the server logs its event
// loop's longest delay up to the handshake and during the store's startup
// (perf_hooks.monitorEventLoopDelay). These two are hooks inside the
// TypeScript server, the only benchmark code left in a server: they watch
// and reorder its own event loop, which nothing outside the process can.
//
// It prints Markdown tables: medians, ratios on/off, and whether on is
// within -target (1.05) of off. The exit status is 1 only when a run fails,
// not when a target is missed.
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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

func main() {
	broker := flag.String("broker", "bin/broker", "examples/broker binary")
	n := flag.Int("n", 20, "measured runs per variant (at least 15)")
	langs := flag.String("langs", "go,python,typescript", "languages to measure, comma-separated")
	goServer := flag.String("go", "bin/go-server", "Go example server command")
	pyServer := flag.String("python", ".venv/bin/python examples/python-server/server.py", "Python example server command")
	tsServer := flag.String("typescript", "node examples/typescript-server/dist/server.js", "TypeScript example server command")
	target := flag.Float64("target", 1.05, "target ratio of the initialize median, resume on / MCP_RESUME=off")
	flag.Parse()
	cmds := map[string]string{"go": *goServer, "python": *pyServer, "typescript": *tsServer}
	var results []langResult
	b, err := mcphost.StartBroker(context.Background(), *broker, nil)
	if err != nil {
		fail(err)
	}
	defer b.Stop()
	for _, lang := range strings.Split(*langs, ",") {
		argv := strings.Fields(cmds[lang])
		if len(argv) == 0 {
			b.Stop()
			fail(fmt.Errorf("unknown language %q: use go, python, typescript", lang))
		}
		r, err := measure(lang, argv, b.URL, *n)
		if err != nil {
			b.Stop()
			fail(fmt.Errorf("%s: %w", lang, err))
		}
		results = append(results, r)
	}
	report(results, *n, *target)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "initbench:", err)
	os.Exit(1)
}

// variant is one way of launching a server: its name and extra environment.
type variant struct {
	name string
	env  []string
	// resumed is what session_info must report after the warm-up.
	resumed bool
}

// sample is one measured run: start to initialize answered, start to the
// first session_info answer, and (TypeScript) the event loop's longest delay
// up to the handshake and during the store's startup, in milliseconds (-1:
// not reported).
type sample struct {
	init, first       time.Duration
	eldMs, startupEld float64
}

// langResult holds every sample of one language, by variant name.
type langResult struct {
	lang     string
	variants []variant
	samples  map[string][]sample
}

func variantsFor(lang string) []variant {
	vs := []variant{
		{name: "on", resumed: true},
		{name: "off", env: []string{"MCP_RESUME=off"}},
	}
	if lang == "typescript" {
		vs = append(vs, variant{name: "eager", env: []string{"MCP_EXAMPLE_BENCH_EAGER=1"}, resumed: true})
		for i := range vs {
			vs[i].env = append(vs[i].env, "MCP_EXAMPLE_BENCH_ELD=1")
		}
	}
	return vs
}

// measure runs one warm-up and n measured runs of every variant, rotating
// the variants' order each round.
func measure(lang string, argv []string, brokerURL string, n int) (langResult, error) {
	tmp, err := os.MkdirTemp("", "initbench-")
	if err != nil {
		return langResult{}, err
	}
	defer os.RemoveAll(tmp)
	base := []string{"MCP_EXAMPLE_BROKER_URL=" + brokerURL, "MCP_RESUME_STATE_DIR=" + filepath.Join(tmp, "state")}
	r := langResult{lang: lang, variants: variantsFor(lang), samples: map[string][]sample{}}
	fmt.Fprintf(os.Stderr, "initbench: %s (%s), %d runs per variant\n", lang, strings.Join(argv, " "), n)
	for _, v := range r.variants {
		if _, err := once(argv, append(base, v.env...), nil); err != nil {
			return r, fmt.Errorf("warm-up %s: %w", v.name, err)
		}
	}
	for i := 0; i < n; i++ {
		for j := range r.variants {
			v := r.variants[(i+j)%len(r.variants)]
			s, err := once(argv, append(base, v.env...), &v.resumed)
			if err != nil {
				return r, fmt.Errorf("run %d %s: %w", i, v.name, err)
			}
			r.samples[v.name] = append(r.samples[v.name], s)
		}
	}
	return r, nil
}

var eldLine = regexp.MustCompile(`event=bench_eld handshake_max_ms="?([0-9.]+)"? startup_max_ms="?([0-9.]+)`)

// once launches the server with env added to this process's environment
// (minus any MCP_RESUME* and MCP_EXAMPLE* variables of its own), completes the handshake,
// calls session_info and kills the server. wantResumed, when set, is what
// session_info must report.
func once(argv, env []string, wantResumed *bool) (sample, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCP_RESUME") && !strings.HasPrefix(kv, "MCP_EXAMPLE") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-resume-initbench", Version: "0.1.0"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := time.Now()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	initDone := time.Since(start)
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
		}
		return sample{}, fmt.Errorf("initialize: %w\nserver stderr:\n%s", err, stderr.String())
	}
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "session_info", Arguments: map[string]any{}})
	firstDone := time.Since(start)
	if err == nil && res.IsError {
		err = errors.New("session_info failed")
	}
	var info struct {
		Resumed bool `json:"resumed"`
	}
	if err == nil {
		if t, ok := res.Content[0].(*mcp.TextContent); ok {
			err = json.Unmarshal([]byte(t.Text), &info)
		}
	}
	if err == nil && wantResumed != nil && info.Resumed != *wantResumed {
		err = fmt.Errorf("session_info resumed=%v, want %v", info.Resumed, *wantResumed)
	}
	// Close stdin and let the server exit on its own (a TypeScript server
	// logs its event-loop figures once the session is established, which
	// session_info waited for), then reap it.
	session.Close()
	cmd.Wait()
	if err != nil {
		return sample{}, fmt.Errorf("session_info: %w\nserver stderr:\n%s", err, stderr.String())
	}
	s := sample{init: initDone, first: firstDone, eldMs: -1, startupEld: -1}
	if m := eldLine.FindStringSubmatch(stderr.String()); m != nil {
		s.eldMs, _ = strconv.ParseFloat(m[1], 64)
		s.startupEld, _ = strconv.ParseFloat(m[2], 64)
	}
	return s, nil
}

// lockedBuffer collects a child's stderr (written from the exec goroutine).
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// median of xs in milliseconds.
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func col(ss []sample, f func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// pairedRatio is the median over rounds of a's time ÷ b's time in that round
// (the runs of one round are adjacent, so slow drifts of the machine's load
// cancel out).
func pairedRatio(r langResult, a, b string) float64 {
	as, bs := r.samples[a], r.samples[b]
	var xs []float64
	for i := range as {
		if i < len(bs) && bs[i].init > 0 {
			xs = append(xs, float64(as[i].init)/float64(bs[i].init))
		}
	}
	return median(xs)
}

func report(results []langResult, n int, target float64) {
	fmt.Printf("\n### MCP handshake: process start to `initialize` answered (median of %d alternating runs, ms)\n\n", n)
	fmt.Println("| server | resume on | MCP_RESUME=off (baseline) | on / off | median of paired ratios | target | |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---|")
	for _, r := range results {
		on := median(col(r.samples["on"], func(s sample) float64 { return ms(s.init) }))
		off := median(col(r.samples["off"], func(s sample) float64 { return ms(s.init) }))
		verdict := "met"
		if on > off*target {
			verdict = "MISSED"
		}
		fmt.Printf("| %s | %.1f | %.1f | %.3f× | %.3f× | ≤ %.2f× | %s |\n", r.lang, on, off, on/off, pairedRatio(r, "on", "off"), target, verdict)
	}
	fmt.Println("\n(on / off: ratio of the medians, the target's measure; paired: the median over rounds of")
	fmt.Println("on ÷ off within the same round, less sensitive to load that drifts during the run.)")
	fmt.Printf("\n### Process start to the first tool answer (`session_info`, waits for the broker session; median, ms)\n\n")
	fmt.Println("| server | resume on (resumed) | MCP_RESUME=off (baseline) | on / off |")
	fmt.Println("|---|---:|---:|---:|")
	for _, r := range results {
		on := median(col(r.samples["on"], func(s sample) float64 { return ms(s.first) }))
		off := median(col(r.samples["off"], func(s sample) float64 { return ms(s.first) }))
		fmt.Printf("| %s | %.1f | %.1f | %.3f× |\n", r.lang, on, off, on/off)
	}
	for _, r := range results {
		if r.lang != "typescript" {
			continue
		}
		fmt.Printf("\n### TypeScript: the event loop during the handshake (same runs; median, ms)\n\n")
		fmt.Println("| variant | initialize | longest event-loop delay up to the handshake | … during the store's startup | first tool |")
		fmt.Println("|---|---:|---:|---:|---:|")
		for _, v := range []struct{ name, label string }{
			{"off", "MCP_RESUME=off (baseline)"},
			{"on", "resume on: store starts after the handshake (this server)"},
			{"eager", "resume on, eager: store starts before the transport connects"},
		} {
			ss := r.samples[v.name]
			fmt.Printf("| %s | %.1f | %.1f | %.1f | %.1f |\n", v.label,
				median(col(ss, func(s sample) float64 { return ms(s.init) })),
				median(col(ss, func(s sample) float64 { return s.eldMs })),
				median(col(ss, func(s sample) float64 { return s.startupEld })),
				median(col(ss, func(s sample) float64 { return ms(s.first) })))
		}
	}
}
