package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcp-resume/mcp-resume/examples/bench/internal/benchstat"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/mcp-resume/mcp-resume/host"
)

// result is one window of concurrent callers: operations done, the window's
// real length and each operation's latency by kind.
type result struct {
	ops      int
	elapsed  time.Duration
	get, put benchstat.Samples
	callers  []int // operations done by each caller (fairness)
}

func (r result) rate() float64 { return float64(r.ops) / r.elapsed.Seconds() }

// window runs callers goroutines for d, each alternating get(i) and put(i)
// over the handle indices 0..n-1 (caller c starts at c*n/callers), and
// returns what they did. An error stops the program.
func window(callers, n int, d time.Duration, get, put func(i int) error) result {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		res  result
		stop atomic.Bool
		fail atomic.Pointer[error]
	)
	start := time.Now()
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var g, p benchstat.Samples
			for k := 0; !stop.Load(); k++ {
				i := (c*n/callers + k/2) % n
				op, dst := get, &g
				if k%2 == 1 {
					op, dst = put, &p
				}
				t := time.Now()
				if err := op(i); err != nil {
					fail.CompareAndSwap(nil, &err)
					stop.Store(true)
					return
				}
				*dst = append(*dst, time.Since(t))
			}
			mu.Lock()
			res.get, res.put = append(res.get, g...), append(res.put, p...)
			res.callers = append(res.callers, len(g)+len(p))
			mu.Unlock()
		}()
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	if e := fail.Load(); e != nil {
		fatal("window", *e)
	}
	res.elapsed = time.Since(start)
	res.ops = len(res.get) + len(res.put)
	return res
}

// storeOps and floorOps are the get and put of the store and of the floor
// (the recorded read and put calls, by EVALSHA).
func storeOps(store *host.Handles, handles []string) (get, put func(int) error) {
	ctx := context.Background()
	v := value()
	get = func(i int) error {
		got, err := store.Get(ctx, handles[i], "")
		if err == nil && len(got.Data) != len(v) {
			err = fmt.Errorf("got %d bytes", len(got.Data))
		}
		return err
	}
	put = func(i int) error { _, err := store.Put(ctx, handles[i], "", v); return err }
	return get, put
}

func floorOps(floor *redis.Client, rec *Recording) (get, put func(int) error) {
	get = func(i int) error { return replay(floor, &rec.Read[i], *flagTimeout) }
	put = func(i int) error { return replayPut(floor, &rec.Put[i], *flagTimeout) }
	return get, put
}

// ops alternates store and floor windows of 16 callers and prints the
// medians over the rounds beside the targets.
func ops(store *host.Handles, floor *redis.Client, handles []string, rec *Recording) {
	sg, sp := storeOps(store, handles)
	fg, fp := floorOps(floor, rec)
	n := len(handles)
	progress("ops: warm-up")
	window(*flagCallers, n, *flagWindow/4, sg, sp)
	window(*flagCallers, n, *flagWindow/4, fg, fp)
	var st, fl []result
	for r := range *flagRounds {
		progress("ops: round %d of %d (%s windows, %d callers)", r+1, *flagRounds, *flagWindow, *flagCallers)
		if r%2 == 0 {
			st = append(st, window(*flagCallers, n, *flagWindow, sg, sp))
			fl = append(fl, window(*flagCallers, n, *flagWindow, fg, fp))
		} else {
			fl = append(fl, window(*flagCallers, n, *flagWindow, fg, fp))
			st = append(st, window(*flagCallers, n, *flagWindow, sg, sp))
		}
	}
	printLoad("Go", *flagCallers, st, fl)
}

// printLoad prints the table of one language's load: medians over rounds of
// ops/s and of each round's p50 and p99 per operation (µs).
func printLoad(lang string, callers int, st, fl []result) {
	col := func(rs []result, f func(result) float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = f(r)
		}
		return out
	}
	rate := func(r result) float64 { return r.rate() }
	fmt.Printf("### %s, %d concurrent callers, get and put alternating (median of %d rounds of %s)\n\n", lang, callers, len(st), *flagWindow)
	fmt.Printf("| measure | store | floor | store vs floor | target | | rounds: store, floor |\n|---|---:|---:|---:|---|---|---|\n")
	sr, fr := col(st, rate), col(fl, rate)
	ratio := benchstat.Median(sr) / benchstat.Median(fr)
	fmt.Printf("| ops/s | %.0f | %.0f | %.2f× | ≥ 0.35× | %s | %s; %s |\n", benchstat.Median(sr), benchstat.Median(fr), ratio, benchstat.Verdict(ratio, 0.35, false),
		benchstat.Spread("%.0f", sr), benchstat.Spread("%.0f", fr))
	little := func(rs []float64) []float64 {
		out := make([]float64, len(rs))
		for i, r := range rs {
			out[i] = float64(callers) / r * 1e6
		}
		return out
	}
	sl, fll := little(sr), little(fr)
	fmt.Printf("| mean time per op, callers ÷ ops/s (µs) | %.0f | %.0f | %+.0f µs (%.2f×) | | | %s; %s |\n", benchstat.Median(sl), benchstat.Median(fll),
		benchstat.Median(sl)-benchstat.Median(fll), benchstat.Median(sl)/benchstat.Median(fll), benchstat.Spread("%.0f", sl), benchstat.Spread("%.0f", fll))
	for _, op := range []string{"get", "put"} {
		for _, p := range []float64{50, 99} {
			f := func(r result) float64 {
				if op == "get" {
					return us(r.get.Pct(p))
				}
				return us(r.put.Pct(p))
			}
			s, fv := col(st, f), col(fl, f)
			diff := benchstat.Median(s) - benchstat.Median(fv)
			target, verd := "", ""
			if p == 50 {
				target, verd = "≤ floor + 200 µs", benchstat.Verdict(diff, 200, true)
			}
			fmt.Printf("| %s p%.0f (µs) | %.0f | %.0f | %+.0f µs (%.2f×) | %s | %s | %s; %s |\n", op, p, benchstat.Median(s), benchstat.Median(fv), diff,
				benchstat.Median(s)/benchstat.Median(fv), target, verd, benchstat.Spread("%.0f", s), benchstat.Spread("%.0f", fv))
		}
	}
	share := func(r result) float64 {
		lo, sum := r.callers[0], 0
		for _, c := range r.callers {
			lo, sum = min(lo, c), sum+c
		}
		return float64(lo) / (float64(sum) / float64(len(r.callers)))
	}
	s, f := col(st, share), col(fl, share)
	fmt.Printf("| slowest caller's ops / mean caller's | %.2f | %.2f | | | | %s; %s |\n\n", benchstat.Median(s), benchstat.Median(f), benchstat.Spread("%.2f", s), benchstat.Spread("%.2f", f))
}

// anatomy times one caller's calls, one of each kind per round: a get the
// plugin refuses before any host call (a malformed handle: the export
// call, JSON and the pool), the store's get and put, the floor's read and
// put scripts by EVALSHA, a get of a deleted handle (one host call, the
// script's refusal: no value, no AES-GCM, no base64), and a PING (the bare round trip).
func anatomy(store *host.Handles, floor *redis.Client, handles []string, rec *Recording) {
	sg, sp := storeOps(store, handles)
	fg, fp := floorOps(floor, rec)
	ctx := context.Background()
	gone, err := store.Create(ctx, "", value())
	if err == nil {
		err = store.Delete(ctx, gone.Handle, "")
	}
	if err != nil {
		fatal("anatomy", err)
	}
	kinds := []struct {
		what string
		fn   func(i int) error
	}{
		{"PING (go-redis)", func(int) error { return floor.Ping(ctx).Err() }},
		{"floor: read script by EVALSHA", fg},
		{"floor: put script by EVALSHA", fp},
		{"store: get of a malformed handle (no host call)", func(int) error {
			if _, err := store.Get(ctx, "mrh1_not-a-handle", ""); !errors.Is(err, host.ErrInvalidHandle) {
				return fmt.Errorf("a malformed handle answered %v", err)
			}
			return nil
		}},
		{"store: get of a deleted handle (one host call, no value)", func(int) error {
			if _, err := store.Get(ctx, gone.Handle, ""); !errors.Is(err, host.ErrHandleNotFound) {
				return fmt.Errorf("a deleted handle answered %v", err)
			}
			return nil
		}},
		{"store: get", sg},
		{"store: put", sp},
	}
	t := make([]benchstat.Samples, len(kinds))
	n := *flagAnatN
	progress("anatomy: %d rounds, one caller", n)
	for r := range n {
		for k := range kinds {
			k = (k + r) % len(kinds) // which goes first rotates
			s := time.Now()
			if err := kinds[k].fn(r % len(handles)); err != nil {
				fatal("anatomy: "+kinds[k].what, err)
			}
			t[k] = append(t[k], time.Since(s))
		}
	}
	fmt.Printf("### Anatomy, one caller (%d rounds, kinds interleaved; µs)\n\n| call | p50 | p99 |\n|---|---:|---:|\n", n)
	for k, kd := range kinds {
		fmt.Printf("| %s | %.0f | %.0f |\n", kd.what, us(t[k].Pct(50)), us(t[k].Pct(99)))
	}
	// kinds[1] is the floor's read script, kinds[5] the store's get.
	diff := us(t[5].Pct(50)) - us(t[1].Pct(50))
	fmt.Printf("\nSingle-caller get p50 vs the floor's EVALSHA of the same read script: %+.0f µs (target ≤ floor + 150 µs: %s)\n\n",
		diff, benchstat.Verdict(diff, 150, true))
}
