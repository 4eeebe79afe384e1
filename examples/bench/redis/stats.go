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

// median of xs (the mean of the two middle ones for an even count), 0 for none.
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

// us is a duration in microseconds as a float.
func us(d time.Duration) float64 { return float64(d) / 1e3 }

// verdict says whether x meets a target: at most (upper) or at least.
func verdict(x, target float64, upper bool) string {
	if upper == (x <= target) {
		return "met"
	}
	return "missed"
}

// spread is "min–max" of xs with the given format, for the noise column.
func spread(format string, xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	c := append([]float64{}, xs...)
	sort.Float64s(c)
	return fmt.Sprintf(format+"–"+format, c[0], c[len(c)-1])
}
