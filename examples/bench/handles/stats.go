package main

import (
	"fmt"
	"sort"
	"time"
)

// samples are durations of one measured thing.
type samples []time.Duration

// pct is the p-th percentile (nearest rank), 0 for no samples.
func (s samples) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := append(samples{}, s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	i := int(p/100*float64(len(c))+0.5) - 1
	return c[max(0, min(i, len(c)-1))]
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := append([]float64{}, xs...)
	sort.Float64s(c)
	if len(c)%2 == 1 {
		return c[len(c)/2]
	}
	return (c[len(c)/2-1] + c[len(c)/2]) / 2
}

// ms formats a duration in milliseconds with 3 decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/1e6) }

// verdict says whether ratio meets a target: at most (upper) or at least.
func verdict(ratio, target float64, upper bool) string {
	if upper == (ratio <= target) {
		return "met"
	}
	return "missed"
}

// timed runs fn and returns its duration; it stops the program on error.
func timed(what string, fn func() error) time.Duration {
	t := time.Now()
	if err := fn(); err != nil {
		fatal(what, err)
	}
	return time.Since(t)
}
