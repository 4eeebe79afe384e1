package main

// Scale, capacity, gc and concurrency: stores filled through the API by a
// pool of goroutines, then measured against a same-options baseline store
// in the same run, alternating.

import (
	"errors"
	"fmt"
	"github.com/mcp-resume/mcp-resume/examples/bench/internal/benchstat"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
)

// fill creates n handles in store with -fill-workers goroutines and
// returns them.
func fill(name string, store *host.Handles, n int) []string {
	out := make([]string, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	v := value()
	start := time.Now()
	for range *flagFillW {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				c, err := store.Create(ctx, "", v)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				out[i] = c.Handle
				if (i+1)%20000 == 0 {
					progress("%s: %d created (%.0f/s)", name, i+1, float64(i+1)/time.Since(start).Seconds())
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		fatal("fill "+name, firstErr)
	}
	progress("%s: %d handles in %.1f s (%.0f creates/s with %d goroutines)", name, n, time.Since(start).Seconds(),
		float64(n)/time.Since(start).Seconds(), *flagFillW)
	return out
}

// alternate runs n rounds of a then b (b then a every other round) and
// returns their durations.
func alternate(n int, a, b func(i int) error) (sa, sb benchstat.Samples) {
	for i := range n {
		if i%2 == 0 {
			sa = append(sa, timed("a", func() error { return a(i) }))
			sb = append(sb, timed("b", func() error { return b(i) }))
		} else {
			sb = append(sb, timed("b", func() error { return b(i) }))
			sa = append(sa, timed("a", func() error { return a(i) }))
		}
	}
	return sa, sb
}

// scale compares get and put in a store of -big live handles with one of
// -small, both max_handles 200,000; then times gc over the big one. Gets
// are measured twice: right after the fill (the handles' last use is
// within the refresh resolution: the hot get, the record alone), and with
// the stores' clock moved two minutes on, each handle read once (the slow
// get: the lock, the index, the last use written back).
func scale(doScale, doGC bool) {
	var skew atomic.Int64 // added to the stores' clock (host.HandleOptions.Now)
	opts := host.HandleOptions{MaxHandles: 200000, MaxHandlesPerPrincipal: 200000, // one principal fills both stores
		Now: func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }}
	small, big := open("bench-small", opts), open("bench-big", opts)
	defer small.Close(ctx)
	defer big.Close(ctx)
	hs := fill("small store", small, *flagSmall)
	hb := fill("big store", big, *flagBig)
	if doScale {
		n := *flagScN
		v := value()
		pick := func(h []string) string { return h[rand.IntN(len(h))] }
		progress("scale: %d gets and %d puts per store, alternating", n, n)
		gb, gs := alternate(n, func(int) error { _, err := big.Get(ctx, pick(hb), ""); return err },
			func(int) error { _, err := small.Get(ctx, pick(hs), ""); return err })
		pb, ps := alternate(n, func(int) error { _, err := big.Put(ctx, pick(hb), "", v); return err },
			func(int) error { _, err := small.Put(ctx, pick(hs), "", v); return err })
		// Two minutes on: every handle's last use is past the resolution;
		// each is read once (distinct handles), so every get is a slow one.
		skew.Add(int64(2 * time.Minute))
		pb2, ps2 := rand.Perm(len(hb)), rand.Perm(len(hs))
		sb, ss := alternate(min(n, len(hs)), func(i int) error { _, err := big.Get(ctx, hb[pb2[i]], ""); return err },
			func(i int) error { _, err := small.Get(ctx, hs[ps2[i]], ""); return err })
		fmt.Printf("### Scale: %d vs %d live handles (max_handles 200,000, %d shards; %d operations each; ms)\n\n",
			*flagBig, *flagSmall, big.Policy().Shards, n)
		fmt.Printf("| operation | %d p50 | %d p99 | %d p50 | %d p99 | p50 ratio | target | |\n|---|---:|---:|---:|---:|---:|---|---|\n",
			*flagBig, *flagBig, *flagSmall, *flagSmall)
		for _, r := range []struct {
			name string
			b, s benchstat.Samples
		}{{"get", gb, gs}, {"put", pb, ps}, {"get, last use over a minute before (slow path)", sb, ss}} {
			ratio := float64(r.b.Pct(50)) / float64(r.s.Pct(50))
			fmt.Printf("| %s | %s | %s | %s | %s | %.2f× | ≤ 1.25× | %s |\n", r.name, ms(r.b.Pct(50)), ms(r.b.Pct(99)),
				ms(r.s.Pct(50)), ms(r.s.Pct(99)), ratio, benchstat.Verdict(ratio, 1.25, true))
		}
		fmt.Println()
	}
	if doGC {
		var gcs, dirs benchstat.Samples
		var res host.GCResult
		dir := big.Policy().StateDir
		files := 0
		for range 3 {
			gcs = append(gcs, timed("gc", func() (err error) { res, err = big.GC(ctx); return err }))
			dirs = append(dirs, timed("readdir", func() error {
				f, err := os.ReadDir(dir)
				files = len(f)
				return err
			}))
		}
		fmt.Printf("### gc over %d live handles (3 runs)\n\n| | median ms | min ms | max ms |\n|---|---:|---:|---:|\n", res.Live)
		fmt.Printf("| `GC` (live after: %d) | %s | %s | %s |\n", res.Live, ms(gcs.Pct(50)), ms(gcs.Pct(0)), ms(gcs.Pct(100)))
		fmt.Printf("| native: `os.ReadDir` of the store's directory (%d entries) | %s | %s | %s |\n\n", files,
			ms(dirs.Pct(50)), ms(dirs.Pct(0)), ms(dirs.Pct(100)))
	}
}

// capacity compares create in a store at its cap (every create evicts the
// least recently used handle of its shard) with create in a store of the
// same options a tenth full.
func capacity() {
	opts := host.HandleOptions{MaxHandles: *flagCap, MaxHandlesPerPrincipal: *flagCap} // one principal: evictions by the cap
	full, below := open("bench-full", opts), open("bench-below", opts)
	defer full.Close(ctx)
	defer below.Close(ctx)
	shards := full.Policy().Shards
	perShard := (*flagCap + shards - 1) / shards
	fill("full store", full, *flagCap*14/10)
	fill("store below its cap", below, *flagCap/10)
	count := func(s *host.Handles) int {
		l, err := s.List(ctx)
		if err != nil {
			fatal("list", err)
		}
		return int(l.Live)
	}
	if got := count(full); got != shards*perShard {
		fatal("capacity", fmt.Errorf("the full store holds %d live handles, not %d×%d: fill it more (-cap)", got, shards, perShard))
	}
	n := *flagScN
	v := value()
	progress("cap: %d creates per store, alternating", n)
	cf, cb := alternate(n, func(int) error { _, err := full.Create(ctx, "", v); return err },
		func(int) error { _, err := below.Create(ctx, "", v); return err })
	if got := count(full); got != shards*perShard {
		fatal("capacity", errors.New("the full store left its cap"))
	}
	ratio := float64(cf.Pct(50)) / float64(cb.Pct(50))
	fmt.Printf("### Create at the capacity limit (max_handles %d: %d shards of %d; %d creates each; ms)\n\n", *flagCap, shards, perShard, n)
	fmt.Printf("| store | p50 | p99 | p50 ratio | target | |\n|---|---:|---:|---:|---|---|\n")
	fmt.Printf("| at the cap (%d live, every create evicts) | %s | %s | %.2f× | ≤ 2× | %s |\n", shards*perShard, ms(cf.Pct(50)), ms(cf.Pct(99)), ratio, benchstat.Verdict(ratio, 2, true))
	fmt.Printf("| below it (%d → %d live) | %s | %s | 1.00× | | |\n\n", *flagCap/10, *flagCap/10+n, ms(cb.Pct(50)), ms(cb.Pct(99)))
}

// concurrency compares the throughput of 8 goroutines with 1, each on its
// own handles (a get then a put, two operations), in windows of -window,
// 1 and 8 alternating.
func concurrency() {
	store := open("bench-conc", host.HandleOptions{})
	defer store.Close(ctx)
	const per = 8
	hs := fill("conc store", store, 8*per)
	v := value()
	window := func(g int) float64 {
		var ops atomic.Int64
		var wg sync.WaitGroup
		stop := time.Now().Add(*flagWin)
		start := time.Now()
		for w := range g {
			wg.Go(func() {
				for i := 0; time.Now().Before(stop); i++ {
					h := hs[w*per+i%per]
					if _, err := store.Get(ctx, h, ""); err != nil {
						fatal("conc get", err)
					}
					if _, err := store.Put(ctx, h, "", v); err != nil {
						fatal("conc put", err)
					}
					ops.Add(2)
				}
			})
		}
		wg.Wait()
		return float64(ops.Load()) / time.Since(start).Seconds()
	}
	window(8) // warm-up: grows the pool to its size
	var one, eight, ratios []float64
	progress("conc: %d rounds of two %v windows", *flagRound, *flagWin)
	for r := range *flagRound {
		var a, b float64
		if r%2 == 0 {
			a = window(1)
			b = window(8)
		} else {
			b = window(8)
			a = window(1)
		}
		one, eight, ratios = append(one, a), append(eight, b), append(ratios, b/a)
	}
	ratio := benchstat.Median(eight) / benchstat.Median(one)
	fmt.Printf("### Concurrency: 8 goroutines vs 1, distinct handles, get + put (%d rounds of %v windows)\n\n", *flagRound, *flagWin)
	fmt.Printf("| goroutines | ops/s (median) | min | max |\n|---|---:|---:|---:|\n")
	mm := func(x []float64) (float64, float64) {
		lo, hi := x[0], x[0]
		for _, y := range x {
			lo, hi = min(lo, y), max(hi, y)
		}
		return lo, hi
	}
	lo, hi := mm(one)
	fmt.Printf("| 1 | %.0f | %.0f | %.0f |\n", benchstat.Median(one), lo, hi)
	lo, hi = mm(eight)
	fmt.Printf("| 8 | %.0f | %.0f | %.0f |\n\n", benchstat.Median(eight), lo, hi)
	fmt.Printf("8 vs 1: **%.2f×** (median of the per-round ratios %.2f×; target ≥ 1.6×: %s); pool %d instances (0 = GOMAXPROCS)\n\n",
		ratio, benchstat.Median(ratios), benchstat.Verdict(ratio, 1.6, false), *flagPool)
}
