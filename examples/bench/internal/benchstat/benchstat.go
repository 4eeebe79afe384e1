// Package benchstat holds the small statistics the Go benchmarks share
// (examples/bench/handles, examples/bench/redis): percentiles of samples,
// medians over rounds, a round's spread and a target's verdict, so that
// every table of docs/BENCHMARKS.md is computed the same way.
package benchstat

import (
	"fmt"
	"sort"
	"time"
)

// Samples are durations of one measured thing.
type Samples []time.Duration

// Pct is the p-th percentile (0..100, nearest rank) of s; 0 for no samples.
func (s Samples) Pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := append(Samples{}, s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	i := int(p/100*float64(len(c))+0.5) - 1
	return c[max(0, min(i, len(c)-1))]
}

// Median is the median of xs (the mean of the two middle ones for an even
// count); 0 for none.
func Median(xs []float64) float64 {
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

// Verdict says whether x meets target: "met" or "missed", target being an
// upper bound when upper, else a lower one.
func Verdict(x, target float64, upper bool) string {
	if upper == (x <= target) {
		return "met"
	}
	return "missed"
}

// Spread is "min–max" of xs, each written with format (the noise column of
// the tables); "" for none.
func Spread(format string, xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	c := append([]float64{}, xs...)
	sort.Float64s(c)
	return fmt.Sprintf(format+"–"+format, c[0], c[len(c)-1])
}
