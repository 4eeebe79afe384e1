package main

// One replica vs two: the same 16-caller load (window in load.go) in one
// child process, or in two at once, on the same Redis and the same
// handles. Children warm up, say "ready" on stdout, start their window
// when the parent writes a line to their stdin (so two replicas overlap
// exactly), and print their result as JSON.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mcp-resume/mcp-resume/examples/bench/internal/benchstat"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// job is what a replica child is told (the -child flag's JSON).
type job struct {
	URL     string        `json:"url"`
	Handles []string      `json:"handles"`
	Callers int           `json:"callers"`
	Window  time.Duration `json:"window"`
}

// childResult is a replica child's answer.
type childResult struct {
	Ops     int           `json:"ops"`
	Elapsed time.Duration `json:"elapsed"`
	GetP50  time.Duration `json:"get_p50"`
	PutP50  time.Duration `json:"put_p50"`
}

// child runs one replica: open, warm up, "ready", wait for the go line,
// the window, the result.
func child(spec string) {
	var j job
	if err := json.Unmarshal([]byte(spec), &j); err != nil {
		fatal("child job", err)
	}
	store := open(j.URL)
	defer store.Close(context.Background())
	get, put := storeOps(store, j.Handles)
	window(j.Callers, len(j.Handles), 500*time.Millisecond, get, put)
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fatal("child: waiting for the start", err)
	}
	r := window(j.Callers, len(j.Handles), j.Window, get, put)
	b, _ := json.Marshal(childResult{Ops: r.ops, Elapsed: r.elapsed, GetP50: r.get.Pct(50), PutP50: r.put.Pct(50)})
	fmt.Println(string(b))
}

// runReplicas runs n replica children at once and returns their results.
func runReplicas(n int, j job) []childResult {
	exe, err := os.Executable()
	if err != nil {
		fatal("replicas", err)
	}
	spec, _ := json.Marshal(j)
	type proc struct {
		cmd *exec.Cmd
		in  io.WriteCloser
		out *bufio.Reader
	}
	procs := make([]proc, n)
	for i := range procs {
		cmd := exec.Command(exe, "-child", string(spec), "-pool", fmt.Sprint(*flagPool), "-timeout", flagTimeout.String(), "-value", fmt.Sprint(*flagValue))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			fatal("replicas", err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			fatal("replicas", err)
		}
		if err := cmd.Start(); err != nil {
			fatal("replicas", err)
		}
		procs[i] = proc{cmd: cmd, in: stdin, out: bufio.NewReader(stdout)}
	}
	for _, p := range procs {
		if l, err := p.out.ReadString('\n'); err != nil || strings.TrimSpace(l) != "ready" {
			fatal("replicas", fmt.Errorf("a replica answered %q, %v instead of ready", l, err))
		}
	}
	for _, p := range procs {
		fmt.Fprintln(p.in, "go")
	}
	out := make([]childResult, n)
	for i, p := range procs {
		l, err := p.out.ReadString('\n')
		if err == nil {
			err = json.Unmarshal([]byte(l), &out[i])
		}
		if err != nil {
			fatal("replicas", fmt.Errorf("a replica's result: %v", err))
		}
		p.in.Close()
		if err := p.cmd.Wait(); err != nil {
			fatal("replicas", err)
		}
	}
	return out
}

// replicas alternates one-process and two-process windows and prints the
// medians of the total ops/s.
func replicas(handles []string) {
	j := job{URL: srv.URL, Handles: handles, Callers: *flagCallers, Window: *flagWindow}
	total := func(rs []childResult) (rate float64, getP50 float64) {
		var g []float64
		for _, r := range rs {
			rate += float64(r.Ops) / r.Elapsed.Seconds()
			g = append(g, us(r.GetP50))
		}
		return rate, benchstat.Median(g)
	}
	var one, two, oneGet, twoGet []float64
	for r := range *flagRounds {
		progress("replicas: round %d of %d", r+1, *flagRounds)
		for k := range 2 {
			if (k+r)%2 == 0 {
				rate, g := total(runReplicas(1, j))
				one, oneGet = append(one, rate), append(oneGet, g)
			} else {
				rate, g := total(runReplicas(2, j))
				two, twoGet = append(two, rate), append(twoGet, g)
			}
		}
	}
	ratio := benchstat.Median(two) / benchstat.Median(one)
	fmt.Printf("### One replica vs two on one Redis, %d callers each (median of %d rounds of %s)\n\n", *flagCallers, len(one), *flagWindow)
	fmt.Printf("| processes | total ops/s | get p50 (µs) | rounds |\n|---|---:|---:|---|\n")
	fmt.Printf("| 1 × %d callers | %.0f | %.0f | %s |\n", *flagCallers, benchstat.Median(one), benchstat.Median(oneGet), benchstat.Spread("%.0f", one))
	fmt.Printf("| 2 × %d callers | %.0f | %.0f | %s |\n", *flagCallers, benchstat.Median(two), benchstat.Median(twoGet), benchstat.Spread("%.0f", two))
	fmt.Printf("| two / one | %.2f× | | |\n\n", ratio)
}

// runOut runs a program and returns its standard output.
func runOut(name string, args ...string) (string, error) {
	b, err := exec.Command(name, args...).Output()
	return string(b), err
}
